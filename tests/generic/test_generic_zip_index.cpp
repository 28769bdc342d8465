// Two-array and index-aware algorithms, find_if, scans without an init, and the array's own copy,
// view and element access, with user structs and functors, against serial references on the host,
// at every rank count, in the block partition and in ragged ones (empty ranks). Compiled by nvcc
// where the build has CUDA (TESSERA_TEST_BACKEND=cuda runs them on the device backend).
#include "generic_test_util.hpp"

namespace tessera {
namespace {

using test::Affine;
using test::ComposeAffine;
using test::expect_gathered;
using test::small_sizes;

// 16 bytes: a user struct as the result of a two-array transform.
struct Scaled {
  std::uint32_t a = 0;
  std::uint32_t b = 0;
  std::int64_t product = 0;
  friend bool operator==(const Scaled&, const Scaled&) = default;
};

// Affine maps with an offset shifted by an integer: combine(f, k) = x -> f.a x + (f.b + k).
struct ShiftAffine {
  TESSERA_HOST_DEVICE Affine operator()(const Affine& f, std::int32_t k) const {
    return Affine{f.a, f.b + static_cast<std::uint32_t>(k)};
  }
};
struct ScaleBy {
  TESSERA_HOST_DEVICE Scaled operator()(const Affine& f, std::int32_t k) const {
    return Scaled{f.a, f.b, static_cast<std::int64_t>(f.a) * k};
  }
};
struct TimesIndex {
  TESSERA_HOST_DEVICE Scaled operator()(index_t i, const Affine& f) const {
    return Scaled{f.a, f.b, static_cast<std::int64_t>(f.b % 1000) * i};
  }
};
struct AddIndex {
  TESSERA_HOST_DEVICE void operator()(index_t i, std::int64_t& x) const { x = x * 3 + i; }
};
struct IsMarked {
  TESSERA_HOST_DEVICE bool operator()(const Affine& f) const { return f.a == 7u; }
};

std::vector<std::int32_t> random_ints(index_t n, std::uint64_t s) { return test::random_vector<std::int32_t>(n, s); }

// The same partition as `like`, for a second array of other data.
template <class T, class U>
DistArray<T> alike(const DistArray<U>& like, const std::vector<T>& global) {
  return DistArray<T>::from_replicated(like.context(), global, like.partition());
}

void two_arrays() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 53 + static_cast<std::uint64_t>(n);
    const auto maps = test::random_affines(n, s);
    const auto ks = random_ints(n, s + 1);
    std::vector<Scaled> want_scaled;
    Affine want_fold{};  // identity, composed in index order
    for (index_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      want_scaled.push_back(ScaleBy{}(maps[k], ks[k]));
      want_fold = ComposeAffine{}(want_fold, ShiftAffine{}(maps[k], ks[k]));
    }
    for (const auto& a : test::layouts(maps, s)) {
      const auto b = alike(a, ks);
      const std::string at = test::where(n, s) + (a.partition().is_block() ? " block" : " ragged");
      const DistArray<Scaled> scaled = transform(a, b, ScaleBy{});
      EXPECT_TRUE(scaled.partition() == a.partition()) << at;
      expect_gathered(scaled, want_scaled, "transform(a, b, f) " + at);
      // Not commutative: only index order gives the serial fold.
      EXPECT_EQ(transform_reduce(a, b, ShiftAffine{}, ComposeAffine{}, Affine{}), want_fold) << at;
    }
    // dot and inner_product, exact in int64 (|products| <= 10^6, sums far from 2^63).
    const auto x = test::random_vector<std::int64_t>(n, s + 2);
    const auto y = test::random_vector<std::int64_t>(n, s + 3);
    std::int64_t want_dot = 0;
    for (index_t i = 0; i < n; ++i) want_dot += x[static_cast<std::size_t>(i)] * y[static_cast<std::size_t>(i)];
    for (const auto& a : test::layouts(x, s)) {
      const auto b = alike(a, y);
      EXPECT_EQ(dot(a, b), want_dot) << test::where(n, s);
      EXPECT_EQ(inner_product(a, b, 5), want_dot + 5) << test::where(n, s);
    }
  }
}

TEST(GenericZip, TransformAndTransformReduceOfTwoArraysDotInnerProduct) { two_arrays(); }

void different_partitions() {
  const Context& world = test::world();
  const index_t n = 101;
  const auto x = test::random_vector<std::int64_t>(n, test::seed() + 5);
  const auto y = test::random_vector<std::int64_t>(n, test::seed() + 6);
  const auto a = DistArray<std::int64_t>::from_replicated(world, x);
  std::vector<index_t> counts(static_cast<std::size_t>(world.size()), 0);
  counts.back() = n;  // everything on the last rank
  const auto b = DistArray<std::int64_t>::from_replicated(world, y, Partition::from_counts(counts));
  std::int64_t want = 0;
  for (index_t i = 0; i < n; ++i) want += x[static_cast<std::size_t>(i)] * y[static_cast<std::size_t>(i)];
  if (world.size() > 1) {
    EXPECT_THROW(dot(a, b), UsageError);
    EXPECT_THROW(transform(a, b, multiplies{}), UsageError);
    EXPECT_THROW(transform_reduce(a, b, multiplies{}, plus{}, std::int64_t(0)), UsageError);
  }
  // Lined up by one exchange, then accepted.
  const DistArray<std::int64_t> moved = repartition(b, a.partition());
  EXPECT_TRUE(moved.partition() == a.partition());
  expect_gathered(moved, y, "repartition to the block partition");
  EXPECT_EQ(dot(a, moved), want);
  // Any partition to any other, empty ranks included.
  for (std::uint64_t s = 0; s < 4; ++s) {
    const Partition to = test::random_partition(n, world.size(), test::seed() + s);
    const DistArray<std::int64_t> c = repartition(b, to);
    EXPECT_TRUE(c.partition() == to);
    expect_gathered(c, y, "repartition to a ragged partition");
  }
  EXPECT_THROW(repartition(a, Partition::block(n + 1, world.size())), UsageError);
}

TEST(GenericZip, DifferentPartitionsAreRefusedAndRepartitionLinesThemUp) { different_partitions(); }

void index_aware() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 59 + static_cast<std::uint64_t>(n);
    const auto maps = test::random_affines(n, s);
    const auto values = test::random_vector<std::int64_t>(n, s + 1);
    std::vector<Scaled> want_scaled;
    std::vector<std::int64_t> want_values;
    for (index_t i = 0; i < n; ++i) {
      want_scaled.push_back(TimesIndex{}(i, maps[static_cast<std::size_t>(i)]));
      want_values.push_back(values[static_cast<std::size_t>(i)] * 3 + i);
    }
    for (const auto& a : test::layouts(maps, s)) {
      const std::string at = test::where(n, s) + (a.partition().is_block() ? " block" : " ragged");
      expect_gathered(transform_index(a, TimesIndex{}), want_scaled, "transform_index " + at);
      DistArray<std::int64_t> v = alike(a, values);
      for_each_index(v, AddIndex{});
      expect_gathered(v, want_values, "for_each_index " + at);
    }
  }
}

TEST(GenericIndex, TransformIndexAndForEachIndexSeeTheGlobalIndex) { index_aware(); }

void find_first() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 61 + static_cast<std::uint64_t>(n);
    auto maps = test::random_affines(n, s);  // odd multipliers: a == 7 only where planted
    for (auto& f : maps)
      if (f.a == 7u) f.a = 9u;
    // No hit, then hits planted at every position of a small array (every border) or at a few.
    std::vector<index_t> plants = {-1};
    for (index_t p = 0; p < n; p += (n > 40 ? n / 7 + 1 : 1)) plants.push_back(p);
    if (n > 0) plants.push_back(n - 1);
    for (index_t p : plants) {
      auto v = maps;
      if (p >= 0) {
        v[static_cast<std::size_t>(p)].a = 7u;
        if (p + 3 < n) v[static_cast<std::size_t>(p + 3)].a = 7u;  // a later hit, which must not win
      }
      for (const auto& a : test::layouts(v, s + static_cast<std::uint64_t>(p + 1))) {
        EXPECT_EQ(find_if(a, IsMarked{}), p >= 0 ? p : n) << test::where(n, s) << " planted at " << p;
      }
      std::vector<std::int32_t> ints(static_cast<std::size_t>(n), 1);
      if (p >= 0) ints[static_cast<std::size_t>(p)] = 2;
      const auto b = DistArray<std::int32_t>::from_replicated(world, ints);
      EXPECT_EQ(find(b, std::int32_t(2)), p >= 0 ? p : n) << test::where(n, s);
    }
  }
}

TEST(GenericFind, FindIfGivesTheLowestGlobalIndex) { find_first(); }

void scans_without_init() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 67 + static_cast<std::uint64_t>(n);
    const auto maps = test::random_affines(n, s);
    std::vector<Affine> want(maps.size());
    for (std::size_t i = 0; i < maps.size(); ++i) want[i] = i == 0 ? maps[0] : ComposeAffine{}(want[i - 1], maps[i]);
    const auto xs = test::random_vector<float>(n, s + 1);
    std::vector<float> want_max(xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) want_max[i] = i == 0 ? xs[0] : std::max(want_max[i - 1], xs[i]);
    const auto ints = test::random_vector<std::int64_t>(n, s + 2);
    std::vector<std::int64_t> want_sum(ints.size());
    for (std::size_t i = 0; i < ints.size(); ++i) want_sum[i] = (i == 0 ? 0 : want_sum[i - 1]) + ints[i];
    for (const auto& a : test::layouts(maps, s)) {
      const std::string at = test::where(n, s) + (a.partition().is_block() ? " block" : " ragged");
      const DistArray<Affine> scanned = inclusive_scan(a, ComposeAffine{});
      EXPECT_TRUE(scanned.partition() == a.partition());
      expect_gathered(scanned, want, "inclusive_scan(a, op) " + at);
      expect_gathered(inclusive_scan(alike(a, xs), maximum{}), want_max, "inclusive_scan(a, maximum) " + at);
      expect_gathered(inclusive_scan(alike(a, ints), plus{}), want_sum, "inclusive_scan(a, plus) " + at);
    }
  }
}

TEST(GenericScan, InclusiveScanWithoutInit) { scans_without_init(); }

struct Triple {
  TESSERA_HOST_DEVICE void operator()(std::int64_t& x) const { x *= 3; }
};

void copies_views_and_at() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 71 + static_cast<std::uint64_t>(n);
    const auto values = test::random_vector<std::int64_t>(n, s);
    for (const auto& original : test::layouts(values, s)) {
      const std::string at = test::where(n, s) + (original.partition().is_block() ? " block" : " ragged");
      // copy: the same contents and partition, storage of its own.
      DistArray<std::int64_t> copied = original.copy();
      EXPECT_TRUE(copied.partition() == original.partition()) << at;
      for_each(copied, Triple{});
      expect_gathered(original, values, "the original after its copy changed " + at);
      std::vector<std::int64_t> tripled = values;
      for (auto& x : tripled) x *= 3;
      expect_gathered(copied, tripled, "copy " + at);
      expect_gathered(original.clone(), values, "clone " + at);
      // Views of several ranges: contents, an algorithm on them, and writes through to the parent.
      std::vector<std::pair<index_t, index_t>> ranges = {{0, n}, {0, 0}, {n / 3, n - n / 4}, {n / 2, n / 2 + 1}};
      if (n > 5000) ranges = {{n / 3, n - n / 4}};  // the large size once: the run time is shared
      for (auto [first, last] : ranges) {
        if (last > n || last < first) continue;
        const std::string range = at + " view [" + std::to_string(first) + ", " + std::to_string(last) + ")";
        const std::vector<std::int64_t> part(values.begin() + first, values.begin() + last);
        DistArray<std::int64_t> parent = original.copy();
        DistArray<std::int64_t> v = parent.view(first, last);
        EXPECT_TRUE(v.is_view()) << range;
        EXPECT_EQ(v.global_size(), last - first) << range;
        expect_gathered(v, part, range);
        std::int64_t sum = 0;
        for (auto x : part) sum += x;
        EXPECT_EQ(reduce(v, plus{}), sum) << range;
        expect_gathered(sort(v), [&] {
          auto sorted = part;
          std::sort(sorted.begin(), sorted.end());
          return sorted;
        }(), "sort of " + range);
        for_each(v, Triple{});
        std::vector<std::int64_t> want = values;
        for (index_t i = first; i < last; ++i) want[static_cast<std::size_t>(i)] *= 3;
        expect_gathered(parent, want, "parent after writing through " + range);
        EXPECT_TRUE(rebalance(std::move(v)).partition() == Partition::block(last - first, world.size())) << range;
      }
      // at(i) on every rank: the first, the last and every rank border.
      std::vector<index_t> where = {0, n - 1};
      for (int r = 0; r < world.size(); ++r) where.push_back(original.partition().offset(r));
      for (index_t i : where) {
        if (i < 0 || i >= n) continue;
        EXPECT_EQ(original.at(i), values[static_cast<std::size_t>(i)]) << at << " at(" << i << ")";
      }
      EXPECT_THROW((void)original.at(n), UsageError);
      EXPECT_THROW((void)original.at(-1), UsageError);
    }
  }
  DistArray<std::int64_t> a(world, 10);
  EXPECT_THROW((void)a.view(3, 11), UsageError);
  EXPECT_THROW((void)a.view(4, 3), UsageError);
}

TEST(GenericArray, CopyViewAndAt) { copies_views_and_at(); }

}  // namespace
}  // namespace tessera
