// Distributed calls queued back to back on the context's one queue, with no host synchronisation
// between them: under cuda a call may return while its device work is still queued, and the next
// call must read what it wrote. Each chain (scan -> filter -> rebalance -> reduce; filter with its
// exact-size copy -> scan -> count_if; sort -> scan; matmul -> transpose -> matmul), some of its
// calls timed and some not, is checked against a serial computation on the host. Then PhaseClock's
// bookkeeping: what an untimed clock leaves alone, where a timed one adds its phases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/redistribute.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

// 2^20 + 1: several waves of thread blocks per rank under cuda, where the order of the queue's
// work is what these tests check; the CPU backend runs every call in order, and stops at 100003.
std::vector<index_t> chain_sizes(const Context& world) {
  std::vector<index_t> sizes{0, 1, index_t(world.size()) + 1, 31, 33, 4099, 100003};
  if (world.backend() == Backend::cuda) sizes.push_back((index_t(1) << 20) + 1);
  return sizes;
}

void expect_valid(const PhaseTimes& t, const std::string& where) {
  for (double s : {t.local, t.communication, t.fixup, t.host}) {
    EXPECT_TRUE(std::isfinite(s)) << where;
    EXPECT_GE(s, 0.0) << where;
  }
}

TEST(StreamOrder, ScanFilterRebalanceReduceBackToBack) {
  const Context& world = test::world();
  for (index_t n : chain_sizes(world)) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const std::string where = test::where(n, s);
    const auto global = test::random_vector<std::int64_t>(n, s);
    std::vector<std::int64_t> prefix(global.size());
    std::inclusive_scan(global.begin(), global.end(), prefix.begin());
    std::vector<std::int64_t> positive;
    std::copy_if(prefix.begin(), prefix.end(), std::back_inserter(positive), [](std::int64_t v) { return v > 0; });
    const std::int64_t positive_sum = std::accumulate(positive.begin(), positive.end(), std::int64_t(0));

    const auto x = DistArray<std::int64_t>::from_replicated(world, global);
    PhaseTimes times;
    const DistArray<std::int64_t> y = inclusive_scan(x);                      // fix-up left queued
    const DistArray<std::int64_t> kept = filter(y, greater_than<std::int64_t>(0), &times);
    const DistArray<std::int64_t> balanced = rebalance(kept);                 // an all-to-all of the kept blocks
    const std::int64_t total = reduce(balanced, ReduceOp::sum, &times);
    expect_valid(times, where);

    EXPECT_EQ(total, positive_sum) << where;
    EXPECT_EQ(balanced.global_size(), static_cast<index_t>(positive.size())) << where;
    const std::vector<std::int64_t> got = balanced.gather(0);
    if (world.rank() == 0) {
      EXPECT_EQ(got, positive) << where;
    }
  }
}

TEST(StreamOrder, ExactSizeFilterThenScanThenCount) {
  const Context& world = test::world();
  for (index_t n : chain_sizes(world)) {
    const std::uint64_t s = test::seed() + 7 + static_cast<std::uint64_t>(n);
    const std::string where = test::where(n, s);
    const auto global = test::random_vector<double>(n, s);
    // About 5% kept: the result moves to an exact-size block (a copy queued in stream order) on
    // every rank whose block is not tiny.
    std::vector<double> few;
    std::copy_if(global.begin(), global.end(), std::back_inserter(few), [](double v) { return -0.05 <= v && v <= 0.05; });
    std::vector<double> prefix(few.size());
    std::exclusive_scan(few.begin(), few.end(), prefix.begin(), 0.0);

    const auto x = DistArray<double>::from_replicated(world, global);
    const DistArray<double> kept = filter(x, in_range(-0.05, 0.05));
    if (kept.local_size() * 3 < x.local_size()) {
      EXPECT_EQ(kept.local_capacity(), kept.local_size()) << where;
    }
    PhaseTimes times;
    const DistArray<double> scanned = exclusive_scan(kept, &times);
    const index_t negative = count_if(scanned, less_than(0.0));
    expect_valid(times, where);

    const std::vector<double> got = scanned.gather(0);
    if (world.rank() == 0) {
      ASSERT_EQ(got.size(), prefix.size()) << where;
      // The scan adds in another order than the host: each prefix within the rounding of its terms.
      long double magnitude = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double tolerance = static_cast<double>(i + 2) * std::numeric_limits<double>::epsilon() *
                                 static_cast<double>(magnitude);
        EXPECT_NEAR(got[i], prefix[i], tolerance) << where << " element " << i;
        magnitude += std::fabs(few[i]);
      }
      // count_if read the scan's output (checked above) straight after it.
      EXPECT_EQ(negative, std::count_if(got.begin(), got.end(), [](double v) { return v < 0; })) << where;
    }
  }
}

TEST(StreamOrder, SortThenScan) {
  const Context& world = test::world();
  for (index_t n : chain_sizes(world)) {
    const std::uint64_t s = test::seed() + 11 + static_cast<std::uint64_t>(n);
    const std::string where = test::where(n, s);
    const auto global = test::random_vector<std::int32_t>(n, s);
    std::vector<std::int32_t> sorted_host = global;
    std::sort(sorted_host.begin(), sorted_host.end());
    std::vector<std::int32_t> prefix(sorted_host.size());
    std::inclusive_scan(sorted_host.begin(), sorted_host.end(), prefix.begin());  // |sum| <= 1000 (2^20 + 1): no wrap

    const auto x = DistArray<std::int32_t>::from_replicated(world, global);
    SortPhaseTimes steps;
    const DistArray<std::int32_t> sorted = sort(x, nullptr, &steps);
    const DistArray<std::int32_t> scanned = inclusive_scan(sorted);
    EXPECT_GE(steps.local_sort + steps.splitters + steps.exchange + steps.merge, 0.0) << where;

    const std::vector<std::int32_t> got = scanned.gather(0);
    if (world.rank() == 0) {
      EXPECT_EQ(got, prefix) << where;
    }
  }
}

// C = A B, then C^T, then E = C^T A: each call reads the matrix the one before left in the queue.
TEST(StreamOrder, MatmulTransposeMatmul) {
  const Context& world = test::world();
  struct Shape {
    index_t m, k, n;
  };
  for (const Shape sh : {Shape{1, 1, 1}, Shape{17, 13, 19}, Shape{33, 70, 5}, Shape{129, 65, 127}}) {
    const ProcessGrid grid = ProcessGrid::create(world);
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(sh.m * 10000 + sh.k * 100 + sh.n);
    const std::string where = "shape " + std::to_string(sh.m) + "x" + std::to_string(sh.k) + "x" + std::to_string(sh.n) +
                              " seed=" + std::to_string(s);
    const auto a_global = test::random_vector<double>(sh.m * sh.k, s);
    const auto b_global = test::random_vector<double>(sh.k * sh.n, s + 1);
    const auto a = DistMatrix<double>::from_replicated(grid, sh.m, sh.k, a_global);
    const auto b = DistMatrix<double>::from_replicated(grid, sh.k, sh.n, b_global);
    MatmulOptions options;
    options.panel_width = 8;  // several SUMMA steps, each stream-ordered
    PhaseTimes times;
    const DistMatrix<double> c = matmul(a, b, options);
    const DistMatrix<double> ct = transpose(c, &times);
    const DistMatrix<double> e = matmul(ct, a, options, &times);
    expect_valid(times, where);
    ASSERT_EQ(e.rows(), sh.n);
    ASSERT_EQ(e.cols(), sh.k);

    const std::vector<double> got = e.gather(0);
    if (world.rank() != 0) continue;
    // The reference in long double, with the magnitude of its terms for the tolerance.
    std::vector<long double> ab(static_cast<std::size_t>(sh.m * sh.n)), ab_magnitude(ab.size());
    for (index_t i = 0; i < sh.m; ++i)
      for (index_t j = 0; j < sh.n; ++j)
        for (index_t l = 0; l < sh.k; ++l) {
          const long double term = static_cast<long double>(a_global[static_cast<std::size_t>(i * sh.k + l)]) *
                                   b_global[static_cast<std::size_t>(l * sh.n + j)];
          ab[static_cast<std::size_t>(i * sh.n + j)] += term;
          ab_magnitude[static_cast<std::size_t>(i * sh.n + j)] += std::fabs(term);
        }
    for (index_t i = 0; i < sh.n; ++i)
      for (index_t j = 0; j < sh.k; ++j) {
        long double exact = 0, magnitude = 0;
        for (index_t l = 0; l < sh.m; ++l) {
          const long double a_lj = a_global[static_cast<std::size_t>(l * sh.k + j)];
          exact += ab[static_cast<std::size_t>(l * sh.n + i)] * a_lj;
          magnitude += ab_magnitude[static_cast<std::size_t>(l * sh.n + i)] * std::fabs(a_lj);
        }
        const long double tolerance = (sh.k + sh.m + 2) * std::numeric_limits<double>::epsilon() * magnitude;
        ASSERT_LE(std::fabs(got[static_cast<std::size_t>(i * sh.k + j)] - exact), tolerance)
            << where << " E(" << i << "," << j << ")";
      }
  }
}

TEST(PhaseClock, UntimedLeavesEverySlotAlone) {
  const kernels::Queue& queue = test::world().queue();
  double local = 7, communication = 9;
  PhaseClock clock(queue, false);
  EXPECT_FALSE(clock.timed());
  clock.end_phase(&local);
  clock.end_phase(&communication);
  clock.finish();
  EXPECT_EQ(local, 7);
  EXPECT_EQ(communication, 9);
}

TEST(PhaseClock, TimedAddsEachPhaseToTheSlotNamedAtItsEnd) {
  const kernels::Queue& queue = test::world().queue();
  const index_t n = index_t(1) << 20;
  kernels::ScratchBuffer buffer(queue, static_cast<std::size_t>(n) * sizeof(float));
  double local = 1, communication = 2, untouched = 3;
  {
    PhaseClock clock(queue, true);
    EXPECT_TRUE(clock.timed());
    kernels::fill(queue, buffer.as<float>(), n, 1.0f);
    clock.end_phase(&local);
    clock.end_phase(nullptr);  // a phase whose time goes nowhere
    kernels::fill(queue, buffer.as<float>(), n, 2.0f);
    clock.end_phase(&communication);
    kernels::fill(queue, buffer.as<float>(), n, 3.0f);
    clock.end_phase(&local);
    EXPECT_EQ(local, 1) << "times are added at finish(), not before";
    clock.finish();
    EXPECT_TRUE(std::isfinite(local) && std::isfinite(communication));
    EXPECT_GE(local, 1);
    EXPECT_GE(communication, 2);
    EXPECT_EQ(untouched, 3);
    const double local_after = local;
    clock.end_phase(&local);  // finished: nothing more is recorded
    clock.finish();
    EXPECT_EQ(local, local_after);
  }
  {
    // Abandoned (an exception unwinding): nothing added.
    double abandoned = 5;
    {
      PhaseClock clock(queue, true);
      kernels::fill(queue, buffer.as<float>(), n, 4.0f);
      clock.end_phase(&abandoned);
    }
    EXPECT_EQ(abandoned, 5);
  }
  std::vector<float> host(static_cast<std::size_t>(n));
  kernels::copy_to_host(queue, host.data(), buffer.data(), host.size() * sizeof(float));
  EXPECT_EQ(std::count(host.begin(), host.end(), 4.0f), static_cast<std::ptrdiff_t>(n));
}

}  // namespace
}  // namespace tessera
