// The CUDA radix sort (kernels::sort_keys / sort_pairs, Onesweep) against the CPU backend's sort of
// the same keys: every key type, the key patterns of sort_gpu_test_support.hpp, sizes around the
// warp, tile and portion edges, bit ranges, in place, values of 4 and 8 bytes (the input index,
// so that stability is checked), and nothing written outside the outputs. The CPU backend is checked
// against std::stable_sort in the unit tests. Suites *Large* (2^28 + 3 keys, pairs across two
// portions) and *Huge* (2^31 + 12345 keys) run in full-size runs only.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "sort_gpu_test_support.hpp"

namespace tessera::gpu_test {
namespace {

template <class Key>
class SortGpu : public ::testing::Test {};
using KeyTypes = ::testing::Types<std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, float, double>;
TYPED_TEST_SUITE(SortGpu, KeyTypes);

// The onesweep tiles of tuning/radix_sort.cuh (384 threads): 12288 (4-byte keys), 13056 (4-byte keys
// with 4-byte values staged, one digit place), 9216 (4-byte keys with 8-byte values), 8832 (4-byte
// keys with values held in registers), 7680 (8-byte keys alone, and 4-byte keys with 4-byte values
// packed into 8-byte words), 6144 (4-byte keys with 8-byte values packed into 12-byte words), 5760
// (8-byte keys with 4-byte values), 6912 (8-byte keys with 8-byte values staged, one digit place),
// 4608 (8-byte keys with 8-byte values packed into 16-byte words); the histogram's 2048.
std::vector<index_t> sort_sizes() {
  std::vector<index_t> sizes = odd_sizes();
  for (index_t tile : {index_t(2048), index_t(4608), index_t(5760), index_t(6144), index_t(6912), index_t(7680), index_t(8832),
                       index_t(9216), index_t(12288), index_t(13056)})
    for (index_t k : {index_t(1), index_t(2), index_t(3)})
      for (index_t d : {index_t(-1), index_t(0), index_t(1)}) sizes.push_back(k * tile + d);
  if (!small_mode()) sizes.push_back(index_t(300) * 7680 + 17);
  return sizes;
}

// Sorts `keys` (values: their index, as Value) on both backends and compares every output bit,
// and that nothing outside the outputs was written. out_offset: the separate outputs start that
// many elements past their allocation's alignment.
template <class Key, class Value>
void check_sort(const std::vector<Key>& keys, int begin_bit, int end_bit, bool with_values, bool in_place,
                const std::string& what, index_t out_offset = 0) {
  const auto n = static_cast<index_t>(keys.size());
  std::vector<Value> values(with_values ? keys.size() : 0);
  std::iota(values.begin(), values.end(), Value(0));
  std::vector<Key> want_keys(keys.size());
  std::vector<Value> want_values(values.size());
  if (with_values) {
    kernels::sort_pairs(cpu_queue(), keys.data(), want_keys.data(), values.data(), want_values.data(), n, begin_bit,
                        end_bit);
  } else {
    kernels::sort_keys(cpu_queue(), keys.data(), want_keys.data(), n, begin_bit, end_bit);
  }

  DeviceArray<Key> keys_in(n), keys_separate(in_place ? 0 : n, out_offset);
  DeviceArray<Value> values_in(with_values ? n : 0), values_separate(with_values && !in_place ? n : 0, out_offset);
  DeviceArray<Key>& keys_out = in_place ? keys_in : keys_separate;
  DeviceArray<Value>& values_out = in_place ? values_in : values_separate;
  keys_in.poison();
  keys_out.poison();
  keys_in.upload(keys);
  if (with_values) {
    values_in.poison();
    values_out.poison();
    values_in.upload(values);
    kernels::sort_pairs(cuda_queue(), keys_in.data(), keys_out.data(), values_in.data(), values_out.data(), n,
                        begin_bit, end_bit);
  } else {
    kernels::sort_keys(cuda_queue(), keys_in.data(), keys_out.data(), n, begin_bit, end_bit);
  }
  const std::string context = what + " " + where(n) + " bits [" + std::to_string(begin_bit) + ", " +
                              std::to_string(end_bit) + ")" + (in_place ? " in place" : "") +
                              (out_offset ? " outputs offset by " + std::to_string(out_offset) : "") +
                              (with_values ? " pairs" : " keys");
  ASSERT_TRUE(keys_out.untouched_outside(n)) << context;
  ASSERT_TRUE(same_bits(keys_out.download(), want_keys, "keys")) << context;
  if (!in_place) {
    EXPECT_TRUE(same_bits(keys_in.download(), keys, "input keys")) << context;
  }
  if (with_values) {
    ASSERT_TRUE(values_out.untouched_outside(n)) << context;
    ASSERT_TRUE(same_bits(values_out.download(), want_values, "values")) << context;
  }
}

TYPED_TEST(SortGpu, KeysMatchTheCpuBackendAtEveryEdge) {
  using Key = TypeParam;
  for (index_t n : sort_sizes()) {
    const auto keys = make_keys<Key>(n, KeyPattern::random_bits, test_seed() + static_cast<std::uint64_t>(n));
    check_sort<Key, std::int64_t>(keys, 0, 8 * sizeof(Key), false, false, "random-bits");
    // Pairs packed into one word each (4 + 4, 4 + 8, 8 + 8 bytes), at the same edges.
    using Half = std::conditional_t<sizeof(Key) == 4, std::uint32_t, std::uint64_t>;
    check_sort<Key, Half>(keys, 0, 8 * sizeof(Key), true, false, "random-bits");
    if constexpr (sizeof(Key) == 4) check_sort<Key, std::uint64_t>(keys, 0, 8 * sizeof(Key), true, false, "random-bits");
  }
}

TYPED_TEST(SortGpu, PairsAreStableForEveryPattern) {
  using Key = TypeParam;
  const std::vector<index_t> sizes = small_mode() ? std::vector<index_t>{0, 1, 33, 7681, 20483}
                                                  : std::vector<index_t>{0, 1, 33, 7681, 20483, 1000003};
  for (KeyPattern pattern : {KeyPattern::random_bits, KeyPattern::few_unique, KeyPattern::specials,
                             KeyPattern::sorted, KeyPattern::reverse, KeyPattern::all_equal})
    for (index_t n : sizes) {
      const auto keys = make_keys<Key>(n, pattern, test_seed() + 7 * static_cast<std::uint64_t>(n));
      check_sort<Key, std::int64_t>(keys, 0, 8 * sizeof(Key), true, false, to_string(pattern));
      check_sort<Key, std::uint32_t>(keys, 0, 8 * sizeof(Key), true, false, to_string(pattern));
      check_sort<Key, std::int64_t>(keys, 0, 8 * sizeof(Key), false, false, to_string(pattern));
    }
}

TYPED_TEST(SortGpu, BitRangesAndInPlace) {
  using Key = TypeParam;
  constexpr int kBits = 8 * sizeof(Key);
  const std::vector<index_t> sizes = small_mode() ? std::vector<index_t>{1, 33, 9001}
                                                  : std::vector<index_t>{1, 33, 9001, (index_t(1) << 20) + 1};
  const int ranges[][2] = {{0, kBits}, {0, 12}, {4, 20}, {8, 8}, {0, 24}, {kBits - 5, kBits}, {3, kBits - 1}};
  for (index_t n : sizes) {
    const auto keys = make_keys<Key>(n, KeyPattern::specials, test_seed() + 3 * static_cast<std::uint64_t>(n));
    for (const auto& range : ranges)
      for (bool in_place : {false, true}) {
        check_sort<Key, std::int64_t>(keys, range[0], range[1], true, in_place, "specials");
        check_sort<Key, std::uint32_t>(keys, range[0], range[1], true, in_place, "specials");
        check_sort<Key, std::int64_t>(keys, range[0], range[1], false, in_place, "specials");
      }
  }
}

// Packed pairs sort as words laid over the output arrays where those start on a word's alignment;
// one element further they take a second spare array instead (4 + 4 and 8 + 8 bytes; 12-byte words
// take 4-byte alignment, so 4 + 8 bytes lie over the outputs at both offsets). Sizes of every
// remainder modulo 2 and 3 (the word left over for the scratch), two, three and all places.
TEST(SortGpuPacked, OutputsOffTheWordsAlignment) {
  for (index_t n : {index_t(1), index_t(2), index_t(33), index_t(7681), index_t(100003), index_t(100004)}) {
    const auto floats = make_keys<float>(n, KeyPattern::specials, test_seed() + 17 * static_cast<std::uint64_t>(n));
    const auto doubles = make_keys<double>(n, KeyPattern::specials, test_seed() + 19 * static_cast<std::uint64_t>(n));
    for (index_t offset : {index_t(0), index_t(1)}) {
      for (const auto& range : {std::array<int, 2>{0, 32}, std::array<int, 2>{0, 24}, std::array<int, 2>{4, 20}}) {
        check_sort<float, std::uint32_t>(floats, range[0], range[1], true, false, "specials", offset);
        check_sort<float, std::uint64_t>(floats, range[0], range[1], true, false, "specials", offset);
      }
      for (const auto& range : {std::array<int, 2>{0, 64}, std::array<int, 2>{8, 32}, std::array<int, 2>{4, 20}})
        check_sort<double, std::uint64_t>(doubles, range[0], range[1], true, false, "specials", offset);
    }
  }
}

TEST(SortGpuSearch, BoundsMatchTheCpuBackend) {
  for (index_t n : {index_t(0), index_t(1), index_t(33), index_t(100003)}) {
    auto keys = make_keys<double>(n, KeyPattern::specials, test_seed() + 11);
    kernels::sort_keys(cpu_queue(), keys.data(), keys.data(), n);
    const auto needles = make_keys<double>(1001, KeyPattern::specials, test_seed() + 13);
    DeviceArray<double> sorted(n), device_needles(1001);
    DeviceArray<index_t> positions(1001);
    sorted.upload(keys);
    device_needles.upload(needles);
    for (bool upper : {false, true}) {
      std::vector<index_t> want(needles.size());
      if (upper) {
        kernels::sorted_upper_bound(cpu_queue(), keys.data(), n, needles.data(), 1001, want.data());
        kernels::sorted_upper_bound(cuda_queue(), sorted.data(), n, device_needles.data(), 1001, positions.data());
      } else {
        kernels::sorted_lower_bound(cpu_queue(), keys.data(), n, needles.data(), 1001, want.data());
        kernels::sorted_lower_bound(cuda_queue(), sorted.data(), n, device_needles.data(), 1001, positions.data());
      }
      EXPECT_EQ(positions.download(), want) << where(n) << " upper=" << upper;
    }
  }
}

TEST(SortGpuLarge, KeysAndPairsBeyondOnePortion) {
  if (small_mode()) GTEST_SKIP() << "full-size runs only";
  {
    const index_t n = (index_t(1) << 28) + 3;
    const auto keys = make_keys<float>(n, KeyPattern::random_bits, test_seed() + 101);
    check_sort<float, std::int64_t>(keys, 0, 32, false, false, "random-bits");
  }
  {
    // Portions hold < 2^29 keys: these pairs take two portions per place.
    const index_t n = (index_t(1) << 29) + (index_t(1) << 20) + 7;
    const auto keys = make_keys<std::int32_t>(n, KeyPattern::few_unique, test_seed() + 103);
    check_sort<std::int32_t, std::uint32_t>(keys, 0, 32, true, false, "few-unique");
    check_sort<std::int32_t, std::int64_t>(keys, 0, 32, true, false, "few-unique");
  }
}

TEST(SortGpuHuge, KeysAboveTwoToThe31) {
  if (small_mode()) GTEST_SKIP() << "full-size runs only";
  const index_t n = (index_t(1) << 31) + 12345;
  std::size_t free_bytes = 0, total_bytes = 0;
  TESSERA_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < 4 * sizeof(std::uint32_t) * static_cast<std::size_t>(n))
    GTEST_SKIP() << "needs " << 4 * sizeof(std::uint32_t) * n << " bytes of device memory";
  const auto keys = make_keys<std::uint32_t>(n, KeyPattern::random_bits, test_seed() + 107);
  check_sort<std::uint32_t, std::int64_t>(keys, 0, 32, false, false, "random-bits");
}

}  // namespace
}  // namespace tessera::gpu_test
