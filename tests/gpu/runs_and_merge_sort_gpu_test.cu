// The device passes of the by-key operations (scan_indexed: kernels/cuda/device_scan_indexed.cuh)
// and of the comparator sort (kernels/cuda/device_merge_sort.cuh) against the CPU backend: runs of
// every length across tile edges, a non-commutative operation, a carry into the first run, in-place
// scans, stability with many ties, keys alone and with values, inputs off 16-byte boundaries. Output
// buffers are poisoned first and their guard zones checked afterwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "generic/generic_test_types.hpp"
#include "generic_gpu_inputs.hpp"
#include "gpu_test_support.hpp"
#include "tessera/kernels/by_key.hpp"
#include "tessera/kernels/merge_sort.hpp"

namespace tessera::gpu_test {
namespace {

using test::Affine;
using test::ComposeAffine;

// Tile edges of the passes under test (scan_indexed of 16-byte items: 2048; merge sort tiles of
// 768, 1024 and 3840 elements) and sizes of several merge passes.
std::vector<index_t> sizes() {
  std::vector<index_t> s = odd_sizes();
  for (index_t n : {767, 768, 769, 2047, 2048, 2049, 3839, 3840, 3841, 7681, 15361, 123457}) s.push_back(n);
  if (!small_mode()) s.push_back((index_t(1) << 22) + 5);
  std::sort(s.begin(), s.end());
  return s;
}

std::vector<std::int32_t> run_keys(index_t n, std::uint64_t seed, index_t longest) {
  std::mt19937_64 gen(seed);
  std::vector<std::int32_t> keys;
  std::int32_t key = 0;
  while (static_cast<index_t>(keys.size()) < n) {
    const index_t length = 1 + static_cast<index_t>(gen() % static_cast<std::uint64_t>(longest));
    for (index_t k = 0; k < length && static_cast<index_t>(keys.size()) < n; ++k) keys.push_back(key);
    key += 1 + static_cast<std::int32_t>(gen() % 3);
  }
  return keys;
}

template <class T>
::testing::AssertionResult same(const std::vector<T>& got, const std::vector<T>& want, index_t count) {
  for (index_t i = 0; i < count; ++i)
    if (!(got[static_cast<std::size_t>(i)] == want[static_cast<std::size_t>(i)]))
      return ::testing::AssertionFailure() << "first difference at " << i << " of " << count;
  return ::testing::AssertionSuccess();
}

void check_runs(index_t n, index_t longest) {
  const std::uint64_t s = test_seed() + static_cast<std::uint64_t>(n) * 3 + static_cast<std::uint64_t>(longest);
  const auto keys = run_keys(n, s, longest);
  const auto maps = test::random_affines(n, s + 1);
  const Affine init{3, 1}, carry{5, 9};
  // The CPU backend's results.
  std::vector<std::int32_t> want_keys(keys.size());
  std::vector<Affine> want_values(maps.size()), want_unique_values(maps.size());
  index_t want_runs = 0, want_kept = 0;
  kernels::reduce_by_key(cpu_queue(), keys.data(), maps.data(), n, equal_to{}, ComposeAffine{}, want_keys.data(),
                         want_values.data(), &want_runs);
  std::vector<std::int32_t> want_unique_keys(keys.size());
  kernels::unique_by_key(cpu_queue(), keys.data(), maps.data(), n, equal_to{}, want_unique_keys.data(),
                         want_unique_values.data(), &want_kept);
  std::vector<Affine> want_inclusive(maps.size()), want_exclusive(maps.size()), want_carried(maps.size());
  kernels::scan_by_key(cpu_queue(), keys.data(), maps.data(), want_inclusive.data(), n, ScanKind::inclusive,
                       ComposeAffine{}, Affine{}, equal_to{});
  kernels::scan_by_key(cpu_queue(), keys.data(), maps.data(), want_exclusive.data(), n, ScanKind::exclusive,
                       ComposeAffine{}, init, equal_to{});
  kernels::scan_by_key(cpu_queue(), keys.data(), maps.data(), want_carried.data(), n, ScanKind::inclusive,
                       ComposeAffine{}, Affine{}, equal_to{}, carry);
  RunFold<Affine> want_total;
  kernels::reduce_by_key_total(cpu_queue(), keys.data(), maps.data(), n, equal_to{}, ComposeAffine{}, &want_total);

  for (index_t offset : kOffsets) {
    const std::string at = where(n) + " longest=" + std::to_string(longest) + " offset=" + std::to_string(offset);
    DeviceArray<std::int32_t> d_keys(n, offset), d_out_keys(n, offset);
    DeviceArray<Affine> d_maps(n, offset), d_out_values(n, offset);
    DeviceArray<index_t> d_count(1);
    DeviceArray<RunFold<Affine>> d_total(1);
    d_keys.upload(keys);
    d_maps.upload(maps);
    d_out_keys.poison();
    d_out_values.poison();
    kernels::reduce_by_key(cuda_queue(), d_keys.data(), d_maps.data(), n, equal_to{}, ComposeAffine{},
                           d_out_keys.data(), d_out_values.data(), d_count.data());
    const index_t runs = d_count.download()[0];
    ASSERT_EQ(runs, want_runs) << at << " reduce_by_key";
    EXPECT_TRUE(same(d_out_keys.download(), want_keys, runs)) << at << " reduce_by_key keys";
    EXPECT_TRUE(same(d_out_values.download(), want_values, runs)) << at << " reduce_by_key values";
    EXPECT_TRUE(d_out_keys.untouched_outside(runs)) << at;
    EXPECT_TRUE(d_out_values.untouched_outside(runs)) << at;

    kernels::reduce_by_key_total(cuda_queue(), d_keys.data(), d_maps.data(), n, equal_to{}, ComposeAffine{},
                                 d_total.data());
    const RunFold<Affine> total = d_total.download()[0];
    EXPECT_EQ(total.runs, want_total.runs) << at << " reduce_by_key_total";
    if (n > 0) EXPECT_EQ(total.value, want_total.value) << at << " reduce_by_key_total";

    d_out_keys.poison();
    d_out_values.poison();
    kernels::unique_by_key(cuda_queue(), d_keys.data(), d_maps.data(), n, equal_to{}, d_out_keys.data(),
                           d_out_values.data(), d_count.data());
    const index_t kept = d_count.download()[0];
    ASSERT_EQ(kept, want_kept) << at << " unique_by_key";
    EXPECT_TRUE(same(d_out_keys.download(), want_unique_keys, kept)) << at << " unique_by_key keys";
    EXPECT_TRUE(same(d_out_values.download(), want_unique_values, kept)) << at << " unique_by_key values";
    EXPECT_TRUE(d_out_values.untouched_outside(kept)) << at;
    d_out_keys.poison();
    kernels::unique(cuda_queue(), d_keys.data(), n, equal_to{}, d_out_keys.data(), d_count.data());
    ASSERT_EQ(d_count.download()[0], want_kept) << at << " unique";
    EXPECT_TRUE(same(d_out_keys.download(), want_unique_keys, kept)) << at << " unique";

    d_out_values.poison();
    kernels::scan_by_key(cuda_queue(), d_keys.data(), d_maps.data(), d_out_values.data(), n, ScanKind::inclusive,
                         ComposeAffine{}, Affine{}, equal_to{});
    EXPECT_TRUE(same(d_out_values.download(), want_inclusive, n)) << at << " inclusive_scan_by_key";
    EXPECT_TRUE(d_out_values.untouched_outside(n)) << at;
    kernels::scan_by_key(cuda_queue(), d_keys.data(), d_maps.data(), d_out_values.data(), n, ScanKind::exclusive,
                         ComposeAffine{}, init, equal_to{});
    EXPECT_TRUE(same(d_out_values.download(), want_exclusive, n)) << at << " exclusive_scan_by_key";
    // In place, with a carry into the first run.
    kernels::scan_by_key(cuda_queue(), d_keys.data(), d_maps.data(), d_maps.data(), n, ScanKind::inclusive,
                         ComposeAffine{}, Affine{}, equal_to{}, carry);
    EXPECT_TRUE(same(d_maps.download(), want_carried, n)) << at << " in place, with a carry";
  }
}

TEST(RunsGpu, ReduceUniqueAndScanByKeyMatchTheCpu) {
  for (index_t n : sizes())
    for (index_t longest : {index_t(1), index_t(7), index_t(5000), index_t(1) << 30}) check_runs(n, longest);
}

struct Item {
  std::int32_t key = 0;
  std::int32_t position = 0;
  double weight = 0;
  friend bool operator==(const Item&, const Item&) = default;
};
struct ByKeyDescending {
  TESSERA_HOST_DEVICE bool operator()(const Item& a, const Item& b) const { return a.key > b.key; }
};
struct IntLess {
  TESSERA_HOST_DEVICE bool operator()(std::int32_t a, std::int32_t b) const { return a < b; }
};

void check_merge_sort(index_t n, int distinct) {
  const std::uint64_t s = test_seed() * 7 + static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(distinct);
  std::mt19937_64 gen(s);
  std::vector<Item> items(static_cast<std::size_t>(n));
  std::vector<std::int32_t> keys(items.size());
  for (index_t i = 0; i < n; ++i) {
    items[static_cast<std::size_t>(i)] = Item{static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(distinct)),
                                              static_cast<std::int32_t>(i), static_cast<double>(gen() % 1000)};
    keys[static_cast<std::size_t>(i)] = items[static_cast<std::size_t>(i)].key;
  }
  std::vector<Item> want(items.size()), want_values(items.size());
  std::vector<std::int32_t> want_keys(keys.size());
  kernels::merge_sort(cpu_queue(), items.data(), want.data(), n, ByKeyDescending{});
  kernels::merge_sort_pairs(cpu_queue(), keys.data(), want_keys.data(), items.data(), want_values.data(), n, IntLess{});
  for (index_t offset : kOffsets) {
    const std::string at = where(n) + " distinct=" + std::to_string(distinct) + " offset=" + std::to_string(offset);
    DeviceArray<Item> d_items(n, offset), d_out(n, offset);
    DeviceArray<std::int32_t> d_keys(n, offset), d_out_keys(n, offset);
    d_items.upload(items);
    d_keys.upload(keys);
    d_out.poison();
    kernels::merge_sort(cuda_queue(), d_items.data(), d_out.data(), n, ByKeyDescending{});
    EXPECT_TRUE(same(d_out.download(), want, n)) << at << " merge_sort";
    EXPECT_TRUE(d_out.untouched_outside(n)) << at;
    d_out.poison();
    d_out_keys.poison();
    kernels::merge_sort_pairs(cuda_queue(), d_keys.data(), d_out_keys.data(), d_items.data(), d_out.data(), n, IntLess{});
    EXPECT_TRUE(same(d_out_keys.download(), want_keys, n)) << at << " merge_sort_pairs keys";
    EXPECT_TRUE(same(d_out.download(), want_values, n)) << at << " merge_sort_pairs values";
    EXPECT_TRUE(d_out_keys.untouched_outside(n)) << at;
    // In place.
    kernels::merge_sort(cuda_queue(), d_items.data(), d_items.data(), n, ByKeyDescending{});
    EXPECT_TRUE(same(d_items.download(), want, n)) << at << " merge_sort in place";
    // Bounds of keys present and absent, against the CPU's.
    const std::vector<std::int32_t> needles = {-1, 0, 1, distinct / 2, distinct - 1, distinct};
    const auto m = static_cast<index_t>(needles.size());
    DeviceArray<std::int32_t> d_needles(m);
    DeviceArray<index_t> d_positions(m);
    d_needles.upload(needles);
    for (bool upper : {false, true}) {
      std::vector<index_t> want_positions(needles.size());
      kernels::sorted_bound(cpu_queue(), want_keys.data(), n, needles.data(), m, IntLess{}, upper, want_positions.data());
      kernels::sorted_bound(cuda_queue(), d_out_keys.data(), n, d_needles.data(), m, IntLess{}, upper,
                            d_positions.data());
      EXPECT_EQ(d_positions.download(), want_positions) << at << (upper ? " upper" : " lower") << " bounds";
    }
  }
}

TEST(MergeSortGpu, StableByComparatorKeysAndPairsInPlace) {
  for (index_t n : sizes())
    for (int distinct : {1, 13, 1 << 30}) check_merge_sort(n, distinct);
}

}  // namespace
}  // namespace tessera::gpu_test
