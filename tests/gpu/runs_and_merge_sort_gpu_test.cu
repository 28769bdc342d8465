// The device passes of the by-key operations (reduce_by_key's own and unique's select pass:
// kernels/cuda/device_by_key.cuh; the scans' scan_indexed: device_scan_indexed.cuh) and of the
// comparator sort (kernels/cuda/device_merge_sort.cuh) against the CPU backend: runs of every
// length across tile edges, a non-commutative operation, a carry into the first run, in-place scans,
// stability with many ties, keys alone and with values, keys and values of sizes that read 4, 2 and
// 1 elements per load, inputs off 16-byte boundaries. Output buffers are poisoned first and their
// guard zones checked afterwards.
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

// Tile edges of the passes under test (scan_indexed of 16-byte items: 2048; reduce_by_key of int32
// keys: 4096 with 8-byte values, 8192 with 4-byte ones, 2048 with 12-byte ones; unique of int32
// keys: 8192, with values 5120; merge sort tiles of 1280 (int32 keys with 16-byte values) and 1792
// (16-byte elements), most of them in odd_sizes) and sizes of several merge passes.
std::vector<index_t> sizes() {
  std::vector<index_t> s = odd_sizes();
  for (index_t n : {1279, 1280, 1281, 1791, 1792, 1793, 2047, 2048, 2049, 5119, 5120, 5121, 3583, 3585, 7169, 123457})
    s.push_back(n);
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
  index_t want_kept = 0;
  std::vector<std::int32_t> want_unique_keys(keys.size());
  kernels::unique(cpu_queue(), keys.data(), n, equal_to{}, want_unique_keys.data(), &want_kept);
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
    kernels::reduce_by_key_total(cuda_queue(), d_keys.data(), d_maps.data(), n, equal_to{}, ComposeAffine{},
                                 d_total.data());
    const RunFold<Affine> total = d_total.download()[0];
    EXPECT_EQ(total.runs, want_total.runs) << at << " reduce_by_key_total";
    if (n > 0) EXPECT_EQ(total.value, want_total.value) << at << " reduce_by_key_total";

    d_out_keys.poison();
    kernels::unique(cuda_queue(), d_keys.data(), n, equal_to{}, d_out_keys.data(), d_count.data());
    ASSERT_EQ(d_count.download()[0], want_kept) << at << " unique";
    EXPECT_TRUE(same(d_out_keys.download(), want_unique_keys, want_kept)) << at << " unique";
    EXPECT_TRUE(d_out_keys.untouched_outside(want_kept)) << at;

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

// reduce_by_key and unique_by_key with keys of K and values of V (from make_values), against the CPU.
template <class K, class V, class Op, class MakeValues>
void check_reduce_and_unique(index_t n, index_t longest, Op op, MakeValues make_values) {
  const std::uint64_t s = test_seed() + static_cast<std::uint64_t>(n) * 5 + static_cast<std::uint64_t>(longest);
  const auto int_keys = run_keys(n, s, longest);
  const std::vector<K> keys(int_keys.begin(), int_keys.end());
  const std::vector<V> values = make_values(n, s + 1);
  std::vector<K> want_keys(keys.size()), want_unique_keys(keys.size());
  std::vector<V> want_values(values.size()), want_unique_values(values.size());
  index_t want_runs = 0, want_kept = 0;
  kernels::reduce_by_key(cpu_queue(), keys.data(), values.data(), n, equal_to{}, op, want_keys.data(),
                         want_values.data(), &want_runs);
  kernels::unique_by_key(cpu_queue(), keys.data(), values.data(), n, equal_to{}, want_unique_keys.data(),
                         want_unique_values.data(), &want_kept);
  for (index_t offset : kOffsets) {
    const std::string at = where(n) + " key bytes=" + std::to_string(sizeof(K)) + " value bytes=" +
                           std::to_string(sizeof(V)) + " longest=" + std::to_string(longest) +
                           " offset=" + std::to_string(offset);
    DeviceArray<K> d_keys(n, offset), d_out_keys(n, offset);
    DeviceArray<V> d_values(n, offset), d_out_values(n, offset);
    DeviceArray<index_t> d_count(1);
    d_keys.upload(keys);
    d_values.upload(values);
    // One operation into poisoned outputs: its count, its first `count` keys and values, the rest
    // untouched.
    const auto check = [&](const char* what, auto run, index_t want_count, const std::vector<K>& want_k,
                           const std::vector<V>& want_v) {
      d_out_keys.poison();
      d_out_values.poison();
      run();
      const index_t count = d_count.download()[0];
      ASSERT_EQ(count, want_count) << at << " " << what;
      EXPECT_TRUE(same(d_out_keys.download(), want_k, count)) << at << " " << what << " keys";
      EXPECT_TRUE(same(d_out_values.download(), want_v, count)) << at << " " << what << " values";
      EXPECT_TRUE(d_out_keys.untouched_outside(count)) << at << " " << what;
      EXPECT_TRUE(d_out_values.untouched_outside(count)) << at << " " << what;
    };
    check("reduce_by_key", [&] {
      kernels::reduce_by_key(cuda_queue(), d_keys.data(), d_values.data(), n, equal_to{}, op, d_out_keys.data(),
                             d_out_values.data(), d_count.data());
    }, want_runs, want_keys, want_values);
    if (::testing::Test::HasFatalFailure()) return;
    check("unique_by_key", [&] {
      kernels::unique_by_key(cuda_queue(), d_keys.data(), d_values.data(), n, equal_to{}, d_out_keys.data(),
                             d_out_values.data(), d_count.data());
    }, want_kept, want_unique_keys, want_unique_values);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

std::vector<std::uint32_t> random_words(index_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::uint32_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<std::uint32_t>(gen());
  return v;
}

struct AddWords {
  TESSERA_HOST_DEVICE std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const { return a + b; }
};

// Keys with 8-byte values under a non-commutative operation: reduce_by_key and unique_by_key, and
// the scans, the total and unique of the keys alone.
TEST(RunsGpu, ReduceUniqueAndScanByKeyMatchTheCpu) {
  for (index_t n : sizes())
    for (index_t longest : {index_t(1), index_t(7), index_t(5000), index_t(1) << 30}) {
      check_reduce_and_unique<std::int32_t, Affine>(n, longest, ComposeAffine{}, test::random_affines);
      check_runs(n, longest);
    }
}

// Keys and values of 4 bytes (four of each per load), 8-byte keys with 4-byte values (two), and
// 12-byte values (one element per load).
TEST(RunsGpu, ReduceAndUniqueByKeyOfEveryLoadWidthMatchTheCpu) {
  for (index_t n : sizes())
    for (index_t longest : {index_t(1), index_t(8), index_t(5000)}) {
      check_reduce_and_unique<std::int32_t, std::uint32_t>(n, longest, AddWords{}, random_words);
      check_reduce_and_unique<std::int64_t, std::uint32_t>(n, longest, AddWords{}, random_words);
      check_reduce_and_unique<std::int32_t, test::Tagged>(n, longest, test::ComposeTagged{}, test::random_tagged);
    }
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
