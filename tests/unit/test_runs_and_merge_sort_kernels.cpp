// The local operations on runs of keys (kernels/by_key.hpp, on scan_indexed) and the comparator
// sort (kernels/merge_sort.hpp) on the CPU backend, with 1 to 4 OpenMP threads (so that every
// chunked path runs), against serial references: runs that cross chunk borders, a carry into the
// first run, a non-commutative operation, stability with many ties, in place.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "generic/generic_test_types.hpp"
#include "support/omp_threads_test.hpp"
#include "support/test_support.hpp"
#include "tessera/kernels/by_key.hpp"
#include "tessera/kernels/merge_sort.hpp"

namespace tessera {
namespace {

const kernels::Queue kCpu{};

class RunsAndMergeSortCpu : public test::OmpThreadsTest {};
INSTANTIATE_TEST_SUITE_P(Threads, RunsAndMergeSortCpu, ::testing::Values(1, 2, 3, 4));

// Odd sizes, and one of several chunks per thread (chunks start at kSerialCutoff elements).
std::vector<index_t> sizes() { return {0, 1, 2, 3, 31, 33, 257, 4099, 65537, 262147}; }
constexpr index_t kLarge = 65537;

// Keys with runs of 1 to `longest` equal values.
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

TEST_P(RunsAndMergeSortCpu, ReduceScanAndUniqueByKey) {
  using test::Affine;
  using test::ComposeAffine;
  for (index_t n : sizes())
    for (index_t longest : {index_t(1), index_t(5), index_t(100000)}) {
      if (n > kLarge && longest != 5) continue;
      const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n) * 7 + static_cast<std::uint64_t>(longest);
      const auto keys = run_keys(n, s, longest);
      const auto maps = test::random_affines(n, s + 1);
      const Affine carry{5, 9}, init{3, 1};
      std::vector<std::int32_t> want_keys;
      std::vector<Affine> want_values, want_reduced, want_inclusive(maps.size()), want_exclusive(maps.size()),
          want_carried(maps.size());
      for (std::size_t i = 0; i < keys.size(); ++i) {
        const bool head = i == 0 || keys[i - 1] != keys[i];
        if (head) {
          want_keys.push_back(keys[i]);
          want_values.push_back(maps[i]);
          want_reduced.push_back(maps[i]);
          want_inclusive[i] = maps[i];
          want_exclusive[i] = init;
        } else {
          want_reduced.back() = ComposeAffine{}(want_reduced.back(), maps[i]);
          want_inclusive[i] = ComposeAffine{}(want_inclusive[i - 1], maps[i]);
          want_exclusive[i] = ComposeAffine{}(want_exclusive[i - 1], maps[i - 1]);
        }
        // With a carry the first run continues one that began before index 0.
        want_carried[i] = keys[i] == keys[0] ? ComposeAffine{}(carry, want_inclusive[i]) : want_inclusive[i];
      }
      std::vector<std::int32_t> out_keys(keys.size());
      std::vector<Affine> out_values(maps.size());
      index_t runs = -1;
      kernels::reduce_by_key(kCpu, keys.data(), maps.data(), n, equal_to{}, ComposeAffine{}, out_keys.data(),
                             out_values.data(), &runs);
      ASSERT_EQ(runs, static_cast<index_t>(want_keys.size())) << test::where(n, s);
      EXPECT_TRUE(std::equal(want_keys.begin(), want_keys.end(), out_keys.begin())) << test::where(n, s);
      EXPECT_TRUE(std::equal(want_reduced.begin(), want_reduced.end(), out_values.begin())) << test::where(n, s);
      RunFold<Affine> total{-1, {}};
      kernels::reduce_by_key_total(kCpu, keys.data(), maps.data(), n, equal_to{}, ComposeAffine{}, &total);
      EXPECT_EQ(total.runs, runs) << test::where(n, s);
      if (n > 0) {
        EXPECT_EQ(total.value, want_reduced.back()) << test::where(n, s);
      }

      index_t kept = -1;
      std::vector<Affine> kept_values(maps.size());
      kernels::unique_by_key(kCpu, keys.data(), maps.data(), n, equal_to{}, out_keys.data(), kept_values.data(), &kept);
      ASSERT_EQ(kept, runs) << test::where(n, s);
      EXPECT_TRUE(std::equal(want_keys.begin(), want_keys.end(), out_keys.begin())) << test::where(n, s);
      EXPECT_TRUE(std::equal(want_values.begin(), want_values.end(), kept_values.begin())) << test::where(n, s);
      kernels::unique(kCpu, keys.data(), n, equal_to{}, out_keys.data(), &kept);
      ASSERT_EQ(kept, runs) << test::where(n, s);

      std::vector<Affine> scanned(maps.size());
      kernels::scan_by_key(kCpu, keys.data(), maps.data(), scanned.data(), n, ScanKind::inclusive, ComposeAffine{},
                           Affine{}, equal_to{});
      EXPECT_EQ(scanned, want_inclusive) << test::where(n, s);
      kernels::scan_by_key(kCpu, keys.data(), maps.data(), scanned.data(), n, ScanKind::exclusive, ComposeAffine{}, init,
                           equal_to{});
      EXPECT_EQ(scanned, want_exclusive) << test::where(n, s);
      std::vector<Affine> in_place = maps;
      kernels::scan_by_key(kCpu, keys.data(), in_place.data(), in_place.data(), n, ScanKind::inclusive, ComposeAffine{},
                           Affine{}, equal_to{}, carry);
      EXPECT_EQ(in_place, want_carried) << test::where(n, s) << " in place, with a carry";
    }
}

struct Item {
  std::int32_t key = 0;
  std::int32_t position = 0;
  double weight = 0;
  friend bool operator==(const Item&, const Item&) = default;
};
struct ByKeyDescending {
  bool operator()(const Item& a, const Item& b) const { return a.key > b.key; }
};
struct IntLess {
  bool operator()(std::int32_t a, std::int32_t b) const { return a < b; }
};

TEST_P(RunsAndMergeSortCpu, MergeSortIsStableInPlaceAndSearchable) {
  for (index_t n : sizes())
    for (int distinct : {1, 10, 1 << 30}) {
      if (n > kLarge && distinct != 10) continue;
      const std::uint64_t s = test::seed() * 5 + static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(distinct);
      std::mt19937_64 gen(s);
      std::vector<Item> items(static_cast<std::size_t>(n));
      for (index_t i = 0; i < n; ++i)
        items[static_cast<std::size_t>(i)] = Item{static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(distinct)),
                                                  static_cast<std::int32_t>(i), static_cast<double>(gen() % 1000)};
      std::vector<Item> want = items;
      std::stable_sort(want.begin(), want.end(), ByKeyDescending{});
      std::vector<Item> out(items.size());
      kernels::merge_sort(kCpu, items.data(), out.data(), n, ByKeyDescending{});
      EXPECT_EQ(out, want) << test::where(n, s);
      std::vector<Item> in_place = items;
      kernels::merge_sort(kCpu, in_place.data(), in_place.data(), n, ByKeyDescending{});
      EXPECT_EQ(in_place, want) << test::where(n, s) << " in place";
      // Pairs: int32 keys, the items as values.
      std::vector<std::int32_t> keys(items.size()), sorted_keys(items.size());
      for (std::size_t i = 0; i < items.size(); ++i) keys[i] = items[i].key;
      std::vector<Item> values_out(items.size());
      kernels::merge_sort_pairs(kCpu, keys.data(), sorted_keys.data(), items.data(), values_out.data(), n, IntLess{});
      std::vector<Item> want_pairs = items;
      std::stable_sort(want_pairs.begin(), want_pairs.end(), [](const Item& a, const Item& b) { return a.key < b.key; });
      EXPECT_EQ(values_out, want_pairs) << test::where(n, s) << " pairs";
      for (std::size_t i = 0; i < items.size(); ++i) ASSERT_EQ(sorted_keys[i], want_pairs[i].key);
      // Bounds of every key present and of keys outside the range.
      std::vector<std::int32_t> needles = {-1, 0, 5, distinct - 1, distinct};
      std::vector<index_t> lower(needles.size()), upper(needles.size());
      kernels::sorted_bound(kCpu, sorted_keys.data(), n, needles.data(), static_cast<index_t>(needles.size()), IntLess{},
                            false, lower.data());
      kernels::sorted_bound(kCpu, sorted_keys.data(), n, needles.data(), static_cast<index_t>(needles.size()), IntLess{},
                            true, upper.data());
      for (std::size_t j = 0; j < needles.size(); ++j) {
        EXPECT_EQ(lower[j], std::lower_bound(sorted_keys.begin(), sorted_keys.end(), needles[j]) - sorted_keys.begin());
        EXPECT_EQ(upper[j], std::upper_bound(sorted_keys.begin(), sorted_keys.end(), needles[j]) - sorted_keys.begin());
      }
    }
}

}  // namespace
}  // namespace tessera
