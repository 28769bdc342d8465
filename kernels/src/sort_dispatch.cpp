// kernels::sort_keys / sort_pairs / sorted_*_bound of the precompiled types: the key reduced to its
// radix width and order, the values to their width, handed to the backend named by the queue.
#include <cstdint>
#include <string>

#include "backend_dispatch.hpp"
#include "sort_backends.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/sort.hpp"

namespace tessera::kernels::detail {
namespace {

template <class Bits, class Word>
void run_sort(const Queue& q, std::uint64_t sign_mask, std::uint64_t float_mask, const void* keys_in, void* keys_out,
              const void* values_in, void* values_out, index_t n, int begin_bit, int end_bit) {
  const RadixTwiddle<Bits> twiddle{static_cast<Bits>(sign_mask), static_cast<Bits>(float_mask)};
  const auto* bits_in = static_cast<const Bits*>(keys_in);
  auto* bits_out = static_cast<Bits*>(keys_out);
  const auto* words_in = static_cast<const Word*>(values_in);
  auto* words_out = static_cast<Word*>(values_out);
  TESSERA_DISPATCH(q, cpu::radix_sort(twiddle, bits_in, bits_out, words_in, words_out, n, begin_bit, end_bit),
                   cuda::radix_sort(q, twiddle, bits_in, bits_out, words_in, words_out, n, begin_bit, end_bit));
}

template <class Bits>
void run_sort_values(const Queue& q, std::uint64_t sign_mask, std::uint64_t float_mask, const void* keys_in,
                     void* keys_out, int value_bytes, const void* values_in, void* values_out, index_t n,
                     int begin_bit, int end_bit) {
  switch (value_bytes) {
    case 0:
      return run_sort<Bits, RadixNoValue>(q, sign_mask, float_mask, keys_in, keys_out, nullptr, nullptr, n, begin_bit,
                                          end_bit);
    case 4:
      return run_sort<Bits, std::uint32_t>(q, sign_mask, float_mask, keys_in, keys_out, values_in, values_out, n,
                                           begin_bit, end_bit);
    case 8:
      return run_sort<Bits, std::uint64_t>(q, sign_mask, float_mask, keys_in, keys_out, values_in, values_out, n,
                                           begin_bit, end_bit);
    default:
      TESSERA_FATAL("sort", "no precompiled sort for values of " + std::to_string(value_bytes) + " bytes");
  }
}

}  // namespace

void check_sort_arguments(index_t n, int begin_bit, int end_bit, int key_bits, const char* operation) {
  check_count(n, operation);
  if (begin_bit < 0 || begin_bit > end_bit || end_bit > key_bits)
    throw UsageError(std::string(operation) + ": the bit range [" + std::to_string(begin_bit) + ", " +
                     std::to_string(end_bit) + ") is not within the key's " + std::to_string(key_bits) + " bits");
}

void radix_sort_precompiled(const Queue& q, int key_bytes, std::uint64_t sign_mask, std::uint64_t float_mask,
                            const void* keys_in, void* keys_out, int value_bytes, const void* values_in,
                            void* values_out, index_t n, int begin_bit, int end_bit) {
  if (n == 0) return;
  if (key_bytes == 4) {
    run_sort_values<std::uint32_t>(q, sign_mask, float_mask, keys_in, keys_out, value_bytes, values_in, values_out, n,
                                   begin_bit, end_bit);
  } else {
    run_sort_values<std::uint64_t>(q, sign_mask, float_mask, keys_in, keys_out, value_bytes, values_in, values_out, n,
                                   begin_bit, end_bit);
  }
}

void sorted_search_precompiled(const Queue& q, int key_bytes, std::uint64_t sign_mask, std::uint64_t float_mask,
                               const void* sorted, index_t n, const void* needles, index_t m, bool upper,
                               index_t* positions) {
  check_count(n, "sorted search");
  check_count(m, "sorted search");
  if (m == 0) return;
  auto run = [&](auto bits_tag) {
    using Bits = decltype(bits_tag);
    const RadixTwiddle<Bits> twiddle{static_cast<Bits>(sign_mask), static_cast<Bits>(float_mask)};
    const auto* sorted_bits = static_cast<const Bits*>(sorted);
    const auto* needle_bits = static_cast<const Bits*>(needles);
    TESSERA_DISPATCH(q, cpu::sorted_search(twiddle, sorted_bits, n, needle_bits, m, upper, positions),
                     cuda::sorted_search(q, twiddle, sorted_bits, n, needle_bits, m, upper, positions));
  };
  if (key_bytes == 4) {
    run(std::uint32_t{});
  } else {
    run(std::uint64_t{});
  }
}

}  // namespace tessera::kernels::detail
