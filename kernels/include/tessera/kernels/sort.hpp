// Local sort of one rank's block: an LSD radix sort of keys, or of keys with values, stable, in the
// keys' total order, and searches of sorted keys.
//
//   sort_keys(queue, keys_in, keys_out, n [, begin_bit, end_bit])
//   sort_pairs(queue, keys_in, keys_out, values_in, values_out, n [, begin_bit, end_bit])
//   sorted_lower_bound / sorted_upper_bound(queue, sorted, n, needles, m, positions)
//
// Keys: int32, uint32, int64, uint64, float, double. They are sorted by their radix bits (RadixKey):
// integers in numeric order, floating point in IEEE total order
//   -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN
// (std::strong_order; NaN of the usual positive sign last, as numpy puts it). Values: any trivially
// copyable type of 1 to 16 bytes, moved with their keys. Stable: equal keys keep their input order.
// Any n >= 0 (above 2^31 too).
//
// cuda backend: Onesweep (Adinets and Merrill, "Onesweep: A Faster Least Significant Digit Radix
// Sort for GPUs", 2022), as cub::DeviceRadixSort does it on recent GPUs: one pass counts the 8-bit
// digits of every place at once, then one pass per place ranks each tile's digits, takes the tile's
// offsets from a decoupled look-back over the tiles before it, and scatters through shared memory
// (docs/KERNELS.md). cpu backend: the same LSD sort on host threads. Int32/uint32/int64/uint64/float/
// double keys alone or with values of 4 or 8 bytes whose alignment is their size are precompiled;
// other values are header templates (under cuda, from a translation unit nvcc compiles).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/sort.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/kernels/sort_order.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/device_radix_sort.cuh"
#endif

namespace tessera::kernels {

namespace detail {

// The precompiled sorts, with the key's type reduced to its width and its order to a RadixTwiddle,
// the values to their width (0: keys only; 4 or 8). Defined in kernels/src/sort_dispatch.cpp.
void radix_sort_precompiled(const Queue& queue, int key_bytes, std::uint64_t sign_mask, std::uint64_t float_mask,
                            const void* keys_in, void* keys_out, int value_bytes, const void* values_in,
                            void* values_out, index_t n, int begin_bit, int end_bit);
void sorted_search_precompiled(const Queue& queue, int key_bytes, std::uint64_t sign_mask, std::uint64_t float_mask,
                               const void* sorted, index_t n, const void* needles, index_t m, bool upper,
                               index_t* positions);

void check_sort_arguments(index_t n, int begin_bit, int end_bit, int key_bits, const char* operation);

template <class Key>
void require_sort_key() {
  static_assert(is_radix_key_v<Key>,
                "sort: keys must be int32_t, uint32_t, int64_t, uint64_t, float or double");
}

template <class Value>
inline constexpr bool precompiled_value =
    (sizeof(Value) == 4 || sizeof(Value) == 8) && alignof(Value) == sizeof(Value);

}  // namespace detail

// keys_out[0, n) = keys_in[0, n) sorted by bits [begin_bit, end_bit) of their radix bits (RadixKey;
// the whole key by default), ascending and stable. `keys_in` and `keys_out` are backend memory;
// they may be the same array (in place) but must not otherwise overlap. Stream-ordered under
// cuda; temporary storage (n keys and a little more) comes from the queue's pool.
template <class Key>
void sort_keys(const Queue& queue, const Key* keys_in, Key* keys_out, index_t n, int begin_bit = 0,
               int end_bit = 8 * static_cast<int>(sizeof(Key))) {
  detail::require_sort_key<Key>();
  detail::check_sort_arguments(n, begin_bit, end_bit, 8 * static_cast<int>(sizeof(Key)), "sort_keys");
  using Traits = RadixKey<Key>;
  detail::radix_sort_precompiled(queue, sizeof(Key), Traits::kSignMask, Traits::kFloatMask, keys_in, keys_out, 0,
                                 nullptr, nullptr, n, begin_bit, end_bit);
}

// The same, moving values_in[i] with keys_in[i]: afterwards values_out[j] is the value of the key
// at keys_out[j]. Value: trivially copyable, 1 to 16 bytes. Each of the value arrays may be its
// input (in place) as for the keys.
template <class Key, class Value>
void sort_pairs(const Queue& queue, const Key* keys_in, Key* keys_out, const Value* values_in, Value* values_out,
                index_t n, int begin_bit = 0, int end_bit = 8 * static_cast<int>(sizeof(Key))) {
  detail::require_sort_key<Key>();
  static_assert(std::is_trivially_copyable_v<Value>, "sort_pairs: values must be trivially copyable");
  static_assert(sizeof(Value) <= 16, "sort_pairs: values of at most 16 bytes");
  detail::check_sort_arguments(n, begin_bit, end_bit, 8 * static_cast<int>(sizeof(Key)), "sort_pairs");
  using Traits = RadixKey<Key>;
  using Bits = typename Traits::Bits;
  if constexpr (detail::precompiled_value<Value>) {
    detail::radix_sort_precompiled(queue, sizeof(Key), Traits::kSignMask, Traits::kFloatMask, keys_in, keys_out,
                                   sizeof(Value), values_in, values_out, n, begin_bit, end_bit);
  } else {
    using Word = RadixValueWord<Value>;
    const RadixTwiddle<Bits> twiddle{Traits::kSignMask, Traits::kFloatMask};
    const auto* bits_in = reinterpret_cast<const Bits*>(keys_in);
    auto* bits_out = reinterpret_cast<Bits*>(keys_out);
    const auto* words_in = reinterpret_cast<const Word*>(values_in);
    auto* words_out = reinterpret_cast<Word*>(values_out);
    if (queue.backend == Backend::cpu) {
      cpu::radix_sort(twiddle, bits_in, bits_out, words_in, words_out, n, begin_bit, end_bit);
    } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
      cuda::detail::device_radix_sort(queue, twiddle, bits_in, bits_out, words_in, words_out, n, begin_bit, end_bit);
#else
      detail::throw_needs_cuda_compiler("sort_pairs");
#endif
    }
  }
}

// positions[j] = the number of elements of sorted[0, n) that order before needles[j] (lower bound),
// or before or equal to it (upper bound), in the radix order of sort_keys (whole keys). `sorted` is
// ascending in that order; sorted, needles and positions are backend memory. Stream-ordered.
template <class Key>
void sorted_lower_bound(const Queue& queue, const Key* sorted, index_t n, const Key* needles, index_t m,
                        index_t* positions) {
  detail::require_sort_key<Key>();
  using Traits = RadixKey<Key>;
  detail::sorted_search_precompiled(queue, sizeof(Key), Traits::kSignMask, Traits::kFloatMask, sorted, n, needles, m,
                                    false, positions);
}
template <class Key>
void sorted_upper_bound(const Queue& queue, const Key* sorted, index_t n, const Key* needles, index_t m,
                        index_t* positions) {
  detail::require_sort_key<Key>();
  using Traits = RadixKey<Key>;
  detail::sorted_search_precompiled(queue, sizeof(Key), Traits::kSignMask, Traits::kFloatMask, sorted, n, needles, m,
                                    true, positions);
}

}  // namespace tessera::kernels
