// histogram, histogram_distributed, bincount and sample_range across ranks, against a serial
// reference on the host: numpy's edges (linspace in double, rounded to the comparison type) and a
// binary search over them, with samples on the edges, NaN and infinities mixed in. Every rank must
// get the same counts, for block and ragged partitions, sub-groups of ranks and more ranks than
// samples; the distributed counts gathered must be the same counts; bad bins and edges are refused
// on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/device_comm.hpp"

namespace tessera {
namespace {

template <class T>
class HistogramMpi : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(HistogramMpi, ElementTypes);

template <class T>
using Compare = std::conditional_t<std::is_same_v<T, float>, float, double>;

// The serial reference: counts per bin, then below, above, NaN. Edges in the comparison type C;
// x in bin i when e_i <= x < e_{i+1}, the last bin closed.
template <class T, class C = Compare<T>>
std::vector<index_t> reference(const std::vector<T>& samples, const std::vector<C>& edges) {
  const std::size_t bins = edges.size() - 1;
  std::vector<index_t> counts(bins + 3, 0);
  for (const T s : samples) {
    const C x = static_cast<C>(s);
    if (std::isnan(static_cast<double>(x))) ++counts[bins + 2];
    else if (x < edges.front()) ++counts[bins];
    else if (x > edges.back()) ++counts[bins + 1];
    else if (x == edges.back()) ++counts[bins - 1];
    else ++counts[static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), x) - edges.begin()) - 1];
  }
  return counts;
}

// numpy.linspace(lo, hi, bins + 1): i * ((hi - lo) / bins) + lo in double, the last edge hi.
template <class C>
std::vector<C> linspace_edges(double lo, double hi, index_t bins) {
  std::vector<C> e(static_cast<std::size_t>(bins) + 1);
  const double step = (hi - lo) / static_cast<double>(bins);
  for (index_t i = 0; i < bins; ++i) {
    volatile double product = static_cast<double>(i) * step;  // no fused multiply-add
    e[static_cast<std::size_t>(i)] = static_cast<C>(product + lo);
  }
  e.back() = static_cast<C>(hi);
  return e;
}

// Random samples (test::random_vector), a sixth of them replaced by edges, and for floating point a
// few NaN and infinities.
template <class T, class C>
std::vector<T> samples_with_edges(index_t n, const std::vector<C>& edges, std::uint64_t s) {
  std::vector<T> v = test::random_vector<T>(n, s);
  std::mt19937_64 gen(s ^ 0x5DEECE66Dull);
  for (auto& x : v) {
    const auto r = gen();
    const double edge = static_cast<double>(edges[(r >> 8) % edges.size()]);
    if (r % 6 == 0 && (std::isfinite(edge) || std::is_floating_point_v<T>)) x = static_cast<T>(edge);
    if constexpr (std::is_floating_point_v<T>) {
      if (r % 97 == 1) x = std::numeric_limits<T>::quiet_NaN();
      if (r % 97 == 2) x = (r & 256) ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
    }
  }
  return v;
}

template <class T>
void expect_histogram(const Histogram& h, const std::vector<index_t>& want, const std::string& where) {
  const std::size_t bins = want.size() - 3;
  ASSERT_EQ(h.counts.size(), bins) << where;
  EXPECT_TRUE(std::equal(h.counts.begin(), h.counts.end(), want.begin())) << where;
  EXPECT_EQ(h.below, want[bins]) << where;
  EXPECT_EQ(h.above, want[bins + 1]) << where;
  EXPECT_EQ(h.nan, want[bins + 2]) << where;
}

template <class T>
void expect_distributed(const DistributedHistogram& d, const std::vector<index_t>& want, const std::string& where) {
  const Context& ctx = d.counts.context();
  const std::size_t bins = want.size() - 3;
  EXPECT_TRUE(d.counts.partition() == Partition::block(static_cast<index_t>(bins), ctx.size())) << where;
  const std::vector<std::int64_t> mine = d.counts.local_to_host();
  const auto first = want.begin() + d.counts.global_offset();
  EXPECT_TRUE(std::equal(mine.begin(), mine.end(), first)) << where << " (this rank's block of bins)";
  EXPECT_EQ(d.below, want[bins]) << where;
  EXPECT_EQ(d.above, want[bins + 1]) << where;
  EXPECT_EQ(d.nan, want[bins + 2]) << where;
}

template <class T>
std::pair<double, double> test_range() {
  if constexpr (std::is_integral_v<T>) return {-900.5, 1000.0};
  else return {-0.8, 0.9};
}

TYPED_TEST(HistogramMpi, EvenBinsMatchTheSerialReference) {
  using T = TypeParam;
  const Context& world = test::world();
  const auto [lo, hi] = test_range<T>();
  for (index_t bins : {index_t(1), index_t(7), index_t(1000)}) {
    const auto edges = linspace_edges<Compare<T>>(lo, hi, bins);
    for (index_t n : test::algorithm_sizes(world.size())) {
      if (n > 5000 && bins != 7) continue;  // the large size once
      const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n * 7 + bins);
      const auto global = samples_with_edges<T>(n, edges, s);
      const auto want = reference<T>(global, edges);
      const auto array = DistArray<T>::from_replicated(world, global);
      const std::string where = test::where(n, s) + " bins=" + std::to_string(bins);
      PhaseTimes times;
      expect_histogram<T>(histogram(array, EvenBins{lo, hi, bins}, &times), want, where);
      expect_distributed<T>(histogram_distributed(array, EvenBins{lo, hi, bins}), want, where + " distributed");
    }
  }
}

TYPED_TEST(HistogramMpi, GivenEdgesMatchTheSerialReference) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t bins : {index_t(1), index_t(5), index_t(300)}) {
    std::mt19937_64 gen(test::seed() + static_cast<std::uint64_t>(bins));
    std::vector<double> edges(static_cast<std::size_t>(bins) + 1);
    std::uniform_real_distribution<double> u(-1100.0, 1100.0);
    if constexpr (std::is_floating_point_v<T>) u = std::uniform_real_distribution<double>(-1.1, 1.1);
    for (auto& e : edges) e = u(gen);
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    for (bool infinite : {false, true}) {
      std::vector<double> given = edges;
      if (infinite) given.front() = -std::numeric_limits<double>::infinity();
      for (index_t n : {index_t(0), index_t(1), index_t(world.size() - 1), index_t(33), index_t(4099)}) {
        const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n + 3 * bins);
        auto global = samples_with_edges<T>(n, given, s);
        // numpy compares in double: float samples against double edges exactly.
        const auto want = reference<T, double>(global, given);
        const auto array = DistArray<T>::from_replicated(world, global);
        const std::string where = test::where(n, s) + " edges=" + std::to_string(given.size()) + (infinite ? " from -inf" : "");
        expect_histogram<T>(histogram(array, std::span<const double>(given)), want, where);
        expect_distributed<T>(histogram_distributed(array, std::span<const double>(given)), want, where + " distributed");
      }
    }
  }
}

TYPED_TEST(HistogramMpi, RaggedPartitionsSubgroupsAndManyBins) {
  using T = TypeParam;
  const Context& world = test::world();
  const auto [lo, hi] = test_range<T>();
  for (int ranks = 1; ranks <= world.size(); ++ranks) {
    const Context ctx = world.first(ranks);
    if (ctx.is_null()) continue;
    for (index_t bins : {index_t(3), index_t(65537)}) {
      const index_t n = bins > 1000 ? 31 : 777;  // more bins (and ranks' bins) than samples
      const std::uint64_t s = test::seed() * 3 + static_cast<std::uint64_t>(ranks + bins);
      const auto edges = linspace_edges<Compare<T>>(lo, hi, bins);
      const auto global = samples_with_edges<T>(n, edges, s);
      const auto want = reference<T>(global, edges);
      const auto array = DistArray<T>::from_replicated(ctx, global, test::random_partition(n, ranks, s));
      const std::string where = test::where(n, s) + " ranks=" + std::to_string(ranks) + " bins=" + std::to_string(bins);
      expect_histogram<T>(histogram(array, EvenBins{lo, hi, bins}), want, where);
      expect_distributed<T>(histogram_distributed(array, EvenBins{lo, hi, bins}), want, where + " distributed");
    }
  }
}

// Pieces of the reduce-scatter above the MPI message limit go as chunked reductions to each rank.
TEST(HistogramMpiChunks, DistributedCountsBeyondTheMessageLimit) {
  const Context& world = test::world();
  const index_t n = 5003, bins = 1001;
  const auto edges = linspace_edges<double>(-1.0, 1.0, bins);
  const auto global = samples_with_edges<double>(n, edges, test::seed());
  const auto want = reference<double>(global, edges);
  const auto array = DistArray<double>::from_replicated(world, global);
  const std::size_t saved = detail::mpi_message_limit();
  detail::set_mpi_message_limit(40);  // 5 counts per message
  const auto d = histogram_distributed(array, EvenBins{-1.0, 1.0, bins});
  detail::set_mpi_message_limit(saved);
  expect_distributed<double>(d, want, test::where(n) + " message limit 40 bytes");
}

template <class T>
class BincountMpi : public ::testing::Test {};
using IntegerTypes = ::testing::Types<std::int32_t, std::int64_t>;
TYPED_TEST_SUITE(BincountMpi, IntegerTypes);

TYPED_TEST(BincountMpi, CountsEachValue) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t bins : {index_t(1), index_t(500), index_t(2001)}) {
    for (index_t n : {index_t(0), index_t(3), index_t(1025), index_t(10007)}) {
      const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n + bins);
      const auto global = test::random_vector<T>(n, s);  // [-1000, 1000]
      std::vector<index_t> want(static_cast<std::size_t>(bins) + 3, 0);
      for (const T x : global) {
        if (x < 0) ++want[static_cast<std::size_t>(bins)];
        else if (x >= bins) ++want[static_cast<std::size_t>(bins) + 1];
        else ++want[static_cast<std::size_t>(x)];
      }
      const auto array = DistArray<T>::from_replicated(world, global);
      expect_histogram<T>(bincount(array, bins), want, test::where(n, s) + " bincount bins=" + std::to_string(bins));
    }
  }
}

TYPED_TEST(HistogramMpi, SampleRangeSkipsNaN) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t n : test::algorithm_sizes(world.size())) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    auto global = test::random_vector<T>(n, s);
    if constexpr (std::is_floating_point_v<T>) {
      for (index_t i = 0; i < n; i += 5) global[static_cast<std::size_t>(i)] = std::numeric_limits<T>::quiet_NaN();
    }
    index_t count = 0;
    T lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
    for (const T x : global) {
      if (x != x) continue;
      ++count;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    const auto array = DistArray<T>::from_replicated(world, global, test::random_partition(n, world.size(), s));
    const SampleRange<T> r = sample_range(array);
    EXPECT_EQ(r.count, count) << test::where(n, s);
    if (count > 0) {
      EXPECT_EQ(r.min, lo) << test::where(n, s);
      EXPECT_EQ(r.max, hi) << test::where(n, s);
    }
  }
}

TEST(HistogramMpiBadInput, RefusedOnEveryRank) {
  const Context& world = test::world();
  const auto array = DistArray<float>::from_replicated(world, std::vector<float>{1, 2, 3, 4, 5});
  EXPECT_THROW(histogram(array, EvenBins{0, 1, 0}), UsageError);
  EXPECT_THROW(histogram(array, EvenBins{0, 1, -3}), UsageError);
  EXPECT_THROW(histogram(array, EvenBins{1, 1, 10}), UsageError);
  EXPECT_THROW(histogram(array, EvenBins{2, 1, 10}), UsageError);
  EXPECT_THROW(histogram(array, EvenBins{0, std::numeric_limits<double>::infinity(), 10}), UsageError);
  EXPECT_THROW(histogram(array, EvenBins{std::nan(""), 1, 10}), UsageError);
  EXPECT_THROW(histogram(array, EvenBins{0, 1e300, 10}), UsageError);  // beyond float32
  EXPECT_THROW(histogram_distributed(array, EvenBins{1, 0, 10}), UsageError);
  const std::vector<double> flat = {0, 1, 1, 2}, descending = {3, 2, 1}, one = {0}, with_nan = {0, std::nan(""), 2};
  for (const auto* edges : {&flat, &descending, &one, &with_nan}) {
    EXPECT_THROW(histogram(array, std::span<const double>(*edges)), UsageError);
    EXPECT_THROW(histogram_distributed(array, std::span<const double>(*edges)), UsageError);
  }
  const auto ints = DistArray<std::int32_t>::from_replicated(world, std::vector<std::int32_t>{1, 2});
  EXPECT_THROW(bincount(ints, 0), UsageError);
  // The ranks are still in step: a collective after the refusals completes.
  EXPECT_EQ(histogram(array, EvenBins{0, 10, 10}).in_bins(), 5);
}

}  // namespace
}  // namespace tessera
