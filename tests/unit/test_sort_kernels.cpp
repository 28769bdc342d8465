// The CPU backend's local sort (kernels::sort_keys / sort_pairs) and sorted searches against
// std::stable_sort / std::lower_bound with std::strong_order (IEEE total order for floating point)
// or the integers' <: every key type, NaN / infinities / signed zeros, few distinct values, sorted
// and reversed runs, bit ranges, in place, values of 1 to 16 bytes, with 1 and 3 threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <compare>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "support/omp_threads_test.hpp"
#include "support/test_support.hpp"
#include "tessera/kernels/kernels.hpp"

namespace tessera {
namespace {

const kernels::Queue kCpu{};

template <class Key>
bool total_less(Key a, Key b) {
  if constexpr (std::is_floating_point_v<Key>) {
    return std::strong_order(a, b) < 0;
  } else {
    return a < b;
  }
}

// The bits [begin_bit, end_bit) the sort orders by, from the key's total order: an independent
// formulation of the radix map (the rank of the key among all values of its type, as unsigned).
template <class Key>
std::uint64_t order_bits(Key key, int begin_bit, int end_bit) {
  constexpr int kBits = 8 * sizeof(Key);
  using U = std::conditional_t<sizeof(Key) == 4, std::uint32_t, std::uint64_t>;
  U bits;
  std::memcpy(&bits, &key, sizeof bits);
  const U top = U(1) << (kBits - 1);
  if constexpr (std::is_floating_point_v<Key>) {
    bits = (bits & top) ? U(~bits) : U(bits | top);
  } else if constexpr (std::is_signed_v<Key>) {
    bits = U(bits + top);  // -2^(k-1) -> 0
  }
  const int width = end_bit - begin_bit;
  const std::uint64_t mask = width >= 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << width) - 1;
  return (static_cast<std::uint64_t>(bits) >> begin_bit) & mask;
}

enum class Pattern { random, few_unique, specials, sorted, reverse, all_equal };

template <class Key>
std::vector<Key> make_keys(index_t n, Pattern pattern, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  const Key specials[] = {std::numeric_limits<Key>::has_quiet_NaN ? std::numeric_limits<Key>::quiet_NaN() : Key(7),
                          std::numeric_limits<Key>::has_quiet_NaN ? -std::numeric_limits<Key>::quiet_NaN() : Key(3),
                          std::numeric_limits<Key>::has_infinity ? std::numeric_limits<Key>::infinity() : Key(0),
                          std::numeric_limits<Key>::has_infinity ? -std::numeric_limits<Key>::infinity() : Key(1),
                          std::is_signed_v<Key> ? static_cast<Key>(-0.0) : Key(2),
                          Key(0),
                          std::numeric_limits<Key>::max(),
                          std::numeric_limits<Key>::lowest(),
                          std::numeric_limits<Key>::denorm_min(),
                          static_cast<Key>(1),
                          static_cast<Key>(-1)};
  std::vector<Key> keys(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    const std::uint64_t r = gen();
    Key key{};
    switch (pattern) {
      case Pattern::random: {
        const auto bits = static_cast<std::conditional_t<sizeof(Key) == 4, std::uint32_t, std::uint64_t>>(r);
        std::memcpy(&key, &bits, sizeof key);
        break;
      }
      case Pattern::few_unique: key = specials[r % 5 + 3]; break;
      case Pattern::specials: key = specials[r % 11]; break;
      case Pattern::sorted: key = static_cast<Key>(i / 3); break;
      case Pattern::reverse: key = static_cast<Key>((n - i) / 3); break;
      case Pattern::all_equal: key = specials[0]; break;
    }
    keys[static_cast<std::size_t>(i)] = key;
  }
  return keys;
}

class SortKernelsCpu : public test::OmpThreadsTest {};
INSTANTIATE_TEST_SUITE_P(Threads, SortKernelsCpu, ::testing::Values(1, 3));

// Sorts keys with their index as value (Value) and checks keys and values against a stable sort
// of (key, index) by the bit range; then keys alone, and in place.
template <class Key, class Value>
void check_sort(const std::vector<Key>& keys, int begin_bit, int end_bit, const std::string& what) {
  const auto n = static_cast<index_t>(keys.size());
  std::vector<index_t> order(keys.size());
  std::iota(order.begin(), order.end(), index_t(0));
  const bool whole = begin_bit == 0 && end_bit == 8 * static_cast<int>(sizeof(Key));
  std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) {
    const Key ka = keys[static_cast<std::size_t>(a)], kb = keys[static_cast<std::size_t>(b)];
    return whole ? total_less(ka, kb) : order_bits(ka, begin_bit, end_bit) < order_bits(kb, begin_bit, end_bit);
  });
  std::vector<Value> values(keys.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<Value>(i);
  std::vector<Key> got_keys(keys.size());
  std::vector<Value> got_values(keys.size());
  kernels::sort_pairs(kCpu, keys.data(), got_keys.data(), values.data(), got_values.data(), n, begin_bit, end_bit);
  const std::string context = what + " " + test::where(n) + " bits [" + std::to_string(begin_bit) + ", " +
                              std::to_string(end_bit) + ")";
  for (std::size_t j = 0; j < keys.size(); ++j) {
    ASSERT_EQ(std::memcmp(&got_keys[j], &keys[static_cast<std::size_t>(order[j])], sizeof(Key)), 0) << context << " j=" << j;
    ASSERT_EQ(got_values[j], static_cast<Value>(order[j])) << context << " j=" << j;
  }
  std::vector<Key> in_place = keys;
  kernels::sort_keys(kCpu, in_place.data(), in_place.data(), n, begin_bit, end_bit);
  ASSERT_EQ(std::memcmp(in_place.data(), got_keys.data(), sizeof(Key) * keys.size()), 0) << context << " in place";
  std::vector<Value> values_in_place = values;
  std::vector<Key> keys_in_place = keys;
  kernels::sort_pairs(kCpu, keys_in_place.data(), keys_in_place.data(), values_in_place.data(), values_in_place.data(),
                      n, begin_bit, end_bit);
  ASSERT_EQ(values_in_place, got_values) << context << " pairs in place";
}

template <class Key>
void check_key_type() {
  constexpr int kBits = 8 * sizeof(Key);
  for (index_t n : {index_t(0), index_t(1), index_t(2), index_t(31), index_t(33), index_t(1023), index_t(4099),
                    index_t(40009)}) {
    for (Pattern pattern : {Pattern::random, Pattern::few_unique, Pattern::specials, Pattern::sorted, Pattern::reverse,
                            Pattern::all_equal}) {
      const auto keys = make_keys<Key>(n, pattern, test::seed() + static_cast<std::uint64_t>(n) * 7 + int(pattern));
      const std::string what = "pattern " + std::to_string(static_cast<int>(pattern));
      check_sort<Key, std::int64_t>(keys, 0, kBits, what);
      check_sort<Key, std::uint32_t>(keys, 0, kBits, what);
      if (pattern == Pattern::specials || pattern == Pattern::random) {
        check_sort<Key, std::int64_t>(keys, 0, 12, what);
        check_sort<Key, std::int64_t>(keys, 4, 20, what);
        check_sort<Key, std::int64_t>(keys, 8, 8, what);
        check_sort<Key, std::int64_t>(keys, kBits - 5, kBits, what);
        check_sort<Key, std::int64_t>(keys, 3, kBits - 1, what);
      }
    }
  }
}

TEST_P(SortKernelsCpu, Int32) { check_key_type<std::int32_t>(); }
TEST_P(SortKernelsCpu, Uint32) { check_key_type<std::uint32_t>(); }
TEST_P(SortKernelsCpu, Int64) { check_key_type<std::int64_t>(); }
TEST_P(SortKernelsCpu, Uint64) { check_key_type<std::uint64_t>(); }
TEST_P(SortKernelsCpu, Float) { check_key_type<float>(); }
TEST_P(SortKernelsCpu, Double) { check_key_type<double>(); }

struct Triple {
  float weight;
  std::int32_t index;
  std::int32_t tag;
  bool operator==(const Triple&) const = default;
};
struct alignas(16) Quad {
  std::int64_t index;
  double weight;
  bool operator==(const Quad&) const = default;
};

TEST_P(SortKernelsCpu, ValuesOfOtherSizesFollowTheirKeys) {
  const index_t n = 20011;
  const auto keys = make_keys<float>(n, Pattern::specials, test::seed() + 5);
  std::vector<index_t> order(keys.size());
  std::iota(order.begin(), order.end(), index_t(0));
  std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) {
    return total_less(keys[static_cast<std::size_t>(a)], keys[static_cast<std::size_t>(b)]);
  });
  std::vector<Triple> triples(keys.size()), triples_out(keys.size());
  std::vector<Quad> quads(keys.size()), quads_out(keys.size());
  std::vector<std::uint8_t> bytes(keys.size()), bytes_out(keys.size());
  for (index_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    triples[k] = Triple{static_cast<float>(i), static_cast<std::int32_t>(i), 7};
    quads[k] = Quad{i, 0.5 * static_cast<double>(i)};
    bytes[k] = static_cast<std::uint8_t>(i);
  }
  std::vector<float> keys_out(keys.size());
  kernels::sort_pairs(kCpu, keys.data(), keys_out.data(), triples.data(), triples_out.data(), n);
  kernels::sort_pairs(kCpu, keys.data(), keys_out.data(), quads.data(), quads_out.data(), n);
  kernels::sort_pairs(kCpu, keys.data(), keys_out.data(), bytes.data(), bytes_out.data(), n);
  for (std::size_t j = 0; j < keys.size(); ++j) {
    const auto from = static_cast<std::size_t>(order[j]);
    ASSERT_EQ(triples_out[j], triples[from]) << "j=" << j;
    ASSERT_EQ(quads_out[j], quads[from]) << "j=" << j;
    ASSERT_EQ(bytes_out[j], bytes[from]) << "j=" << j;
  }
}

TEST_P(SortKernelsCpu, SearchesAgreeWithTheStandardLibrary) {
  for (index_t n : {index_t(0), index_t(1), index_t(33), index_t(4099)}) {
    auto keys = make_keys<double>(n, Pattern::specials, test::seed() + 9);
    std::stable_sort(keys.begin(), keys.end(), total_less<double>);
    const auto needles = make_keys<double>(257, Pattern::specials, test::seed() + 10);
    std::vector<index_t> lower(needles.size()), upper(needles.size());
    kernels::sorted_lower_bound(kCpu, keys.data(), n, needles.data(), 257, lower.data());
    kernels::sorted_upper_bound(kCpu, keys.data(), n, needles.data(), 257, upper.data());
    for (std::size_t j = 0; j < needles.size(); ++j) {
      EXPECT_EQ(lower[j], std::lower_bound(keys.begin(), keys.end(), needles[j], total_less<double>) - keys.begin())
          << test::where(n) << " j=" << j;
      EXPECT_EQ(upper[j], std::upper_bound(keys.begin(), keys.end(), needles[j], total_less<double>) - keys.begin())
          << test::where(n) << " j=" << j;
    }
  }
}

TEST(SortKernelsArguments, ABitRangeOutsideTheKeyIsAUsageError) {
  std::vector<std::int32_t> keys(4);
  EXPECT_THROW(kernels::sort_keys(kCpu, keys.data(), keys.data(), 4, 0, 33), UsageError);
  EXPECT_THROW(kernels::sort_keys(kCpu, keys.data(), keys.data(), 4, 9, 8), UsageError);
  EXPECT_THROW(kernels::sort_keys(kCpu, keys.data(), keys.data(), 4, -1, 8), UsageError);
}

}  // namespace
}  // namespace tessera
