// unique, unique_by_key, reduce_by_key and the scans by key, with runs of keys that cross rank
// borders (runs of every length, one run over every rank, runs of one), user key structs with an
// equivalence of their own, and an operation that does not commute, against serial references on
// the host, at every rank count, in the block partition and in ragged ones (empty ranks). Compiled
// by nvcc where the build has CUDA (TESSERA_TEST_BACKEND=cuda runs them on the device backend).
#include "generic_test_util.hpp"

namespace tessera {
namespace {

using test::Affine;
using test::ComposeAffine;
using test::expect_gathered;
using test::small_sizes;

// A key whose runs are decided by `group` alone: the results must keep the first key of each run
// (its `tag`), not any other of the run.
struct GroupKey {
  std::int32_t group = 0;
  std::int32_t tag = 0;
  friend bool operator==(const GroupKey&, const GroupKey&) = default;
};
struct SameGroup {
  TESSERA_HOST_DEVICE bool operator()(const GroupKey& a, const GroupKey& b) const { return a.group == b.group; }
};

// Runs of random lengths: mostly short, some as long as a rank's block or the whole array.
std::vector<GroupKey> run_keys(index_t n, std::uint64_t s, int shape) {
  std::mt19937_64 gen(s);
  std::vector<GroupKey> keys;
  std::int32_t group = static_cast<std::int32_t>(gen() % 5);
  while (static_cast<index_t>(keys.size()) < n) {
    index_t length = 1;
    switch (shape) {
      case 0: length = 1 + static_cast<index_t>(gen() % 4); break;            // short runs
      case 1: length = 1 + static_cast<index_t>(gen() % (n / 3 + 1)); break;  // long runs
      case 2: length = n; break;                                              // one run
      default: length = 1; break;                                             // every key its own
    }
    for (index_t k = 0; k < length && static_cast<index_t>(keys.size()) < n; ++k)
      keys.push_back(GroupKey{group, static_cast<std::int32_t>(gen() % 1000)});
    group += 1 + static_cast<std::int32_t>(gen() % 3);
  }
  return keys;
}

template <class K, class Pred>
std::vector<std::size_t> run_starts(const std::vector<K>& keys, Pred pred) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (i == 0 || !pred(keys[i - 1], keys[i])) starts.push_back(i);
  return starts;
}

template <class T, class U>
DistArray<T> alike(const DistArray<U>& like, const std::vector<T>& global) {
  return DistArray<T>::from_replicated(like.context(), global, like.partition());
}

void by_key_runs() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size()))
    for (int shape = 0; shape < 4; ++shape) {
      if (n > 5000 && shape != 1) continue;  // the large size once (long runs): the run time is shared
      const std::uint64_t s = test::seed() * 73 + static_cast<std::uint64_t>(n) * 5 + static_cast<std::uint64_t>(shape);
      const auto keys = run_keys(n, s, shape);
      const auto maps = test::random_affines(n, s + 1);
      const auto starts = run_starts(keys, SameGroup{});
      // Serial references, run by run, in index order.
      std::vector<GroupKey> want_unique_keys;
      std::vector<Affine> want_unique_values, want_reduced, want_inclusive(maps.size()), want_exclusive(maps.size());
      const Affine init{3, 11};
      for (std::size_t r = 0; r < starts.size(); ++r) {
        const std::size_t begin = starts[r], end = r + 1 < starts.size() ? starts[r + 1] : keys.size();
        want_unique_keys.push_back(keys[begin]);
        want_unique_values.push_back(maps[begin]);
        Affine fold = maps[begin];
        Affine before = init;
        for (std::size_t i = begin; i < end; ++i) {
          if (i > begin) fold = ComposeAffine{}(fold, maps[i]);
          want_inclusive[i] = fold;
          want_exclusive[i] = before;
          before = ComposeAffine{}(before, maps[i]);
        }
        want_reduced.push_back(fold);
      }
      for (const auto& k : test::layouts(keys, s)) {
        const std::string at = test::where(n, s) + " shape " + std::to_string(shape) +
                               (k.partition().is_block() ? " block" : " ragged");
        const auto v = alike(k, maps);
        expect_gathered(unique(k, SameGroup{}), want_unique_keys, "unique " + at);
        const KeyedArrays<GroupKey, Affine> uk = unique_by_key(k, v, SameGroup{});
        EXPECT_TRUE(uk.keys.partition() == uk.values.partition()) << at;
        expect_gathered(uk.keys, want_unique_keys, "unique_by_key keys " + at);
        expect_gathered(uk.values, want_unique_values, "unique_by_key values " + at);
        const KeyedArrays<GroupKey, Affine> reduced = reduce_by_key(k, v, ComposeAffine{}, SameGroup{});
        EXPECT_TRUE(reduced.keys.partition() == reduced.values.partition()) << at;
        expect_gathered(reduced.keys, want_unique_keys, "reduce_by_key keys " + at);
        expect_gathered(reduced.values, want_reduced, "reduce_by_key values " + at);
        const DistArray<Affine> inclusive = inclusive_scan_by_key(k, v, ComposeAffine{}, SameGroup{});
        EXPECT_TRUE(inclusive.partition() == k.partition()) << at;
        expect_gathered(inclusive, want_inclusive, "inclusive_scan_by_key " + at);
        expect_gathered(exclusive_scan_by_key(k, v, ComposeAffine{}, SameGroup{}, init), want_exclusive,
                        "exclusive_scan_by_key " + at);
      }
    }
}

TEST(GenericByKey, RunsAcrossRankBordersWithUserKeysAndANonCommutativeOp) { by_key_runs(); }

void integer_keys_and_defaults() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 79 + static_cast<std::uint64_t>(n);
    std::vector<std::int32_t> keys = test::random_vector<std::int32_t>(n, s);
    for (auto& k : keys) k /= 300;  // 7 distinct keys: long runs once sorted
    std::sort(keys.begin(), keys.end());
    const auto values = test::random_vector<std::int64_t>(n, s + 1);
    std::vector<std::int32_t> want_keys;
    std::vector<std::int64_t> want_sums, want_inclusive(values.size()), want_exclusive(values.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const bool head = i == 0 || keys[i - 1] != keys[i];
      if (head) {
        want_keys.push_back(keys[i]);
        want_sums.push_back(0);
      }
      want_exclusive[i] = head ? 0 : want_inclusive[i - 1];
      want_sums.back() += values[i];
      want_inclusive[i] = want_sums.back();
    }
    for (const auto& k : test::layouts(keys, s)) {
      const std::string at = test::where(n, s) + (k.partition().is_block() ? " block" : " ragged");
      const auto v = alike(k, values);
      expect_gathered(unique(k), want_keys, "unique " + at);
      const auto reduced = reduce_by_key(k, v);
      expect_gathered(reduced.keys, want_keys, "reduce_by_key keys " + at);
      expect_gathered(reduced.values, want_sums, "reduce_by_key sums " + at);
      expect_gathered(inclusive_scan_by_key(k, v), want_inclusive, "inclusive_scan_by_key " + at);
      expect_gathered(exclusive_scan_by_key(k, v, plus{}, 0), want_exclusive, "exclusive_scan_by_key " + at);
      // The ragged results go back to the block partition as filter's do.
      const DistArray<std::int32_t> balanced = rebalance(unique(k));
      EXPECT_TRUE(balanced.partition() == Partition::block(static_cast<index_t>(want_keys.size()), world.size()));
      expect_gathered(balanced, want_keys, "rebalanced unique " + at);
    }
  }
}

TEST(GenericByKey, SortedIntegerKeysWithTheDefaultOperations) { integer_keys_and_defaults(); }

void by_key_refusals() {
  const Context& world = test::world();
  const index_t n = 50;
  const auto keys = DistArray<std::int32_t>::from_replicated(world, test::random_vector<std::int32_t>(n, test::seed()));
  const DistArray<float> shorter(world, n - 1);
  EXPECT_THROW(reduce_by_key(keys, shorter), UsageError);
  EXPECT_THROW(unique_by_key(keys, shorter), UsageError);
  EXPECT_THROW(inclusive_scan_by_key(keys, shorter), UsageError);
}

TEST(GenericByKey, KeysAndValuesOfDifferentLayoutsAreRefused) { by_key_refusals(); }

}  // namespace
}  // namespace tessera
