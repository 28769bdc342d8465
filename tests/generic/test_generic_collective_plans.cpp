// Each algorithm makes exactly the collectives its plan declares (collective_plan.hpp), the plan the
// cost model charges: the collectives a call enters are counted, with the bytes this rank gave
// them, and compared with the plan, at every rank count and with empty blocks. Compiled by nvcc where
// the build has CUDA, so that the user functors here run on the device backend as well.
#include <gtest/gtest.h>

#include <array>
#include <span>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mpi/algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/algorithms/sort.hpp"
#include "tessera/framework/algorithms/stencil.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/redistribute.hpp"

namespace tessera {
namespace {

struct Made {
  std::array<std::uint64_t, kCollectives.size()> calls{};
  std::array<double, kCollectives.size()> bytes{};
};

Made snapshot() {
  Made m;
  for (Collective kind : kCollectives) {
    m.calls[static_cast<std::size_t>(kind)] = detail::collective_calls(kind);
    m.bytes[static_cast<std::size_t>(kind)] = detail::collective_bytes(kind);
  }
  return m;
}

// Runs f and compares the collectives it entered with `plan`: the same number of each kind, and
// the same bytes, or for the kind `padded` (when given) the plan's bytes up to `slack` more.
template <class F>
void expect_plan(const CollectivePlan& plan, F&& f, const std::string& what,
                 std::optional<Collective> padded = std::nullopt, double slack = 0) {
  const Made before = snapshot();
  f();
  const Made after = snapshot();
  for (Collective kind : kCollectives) {
    const auto i = static_cast<std::size_t>(kind);
    std::uint64_t planned_calls = 0;
    double planned_bytes = 0;
    for (const CollectiveCall& call : plan)
      if (call.kind == kind) {
        ++planned_calls;
        planned_bytes += call.bytes;
      }
    const double made_bytes = after.bytes[i] - before.bytes[i];
    EXPECT_EQ(after.calls[i] - before.calls[i], planned_calls)
        << what << ": " << to_string(kind) << " calls; the plan says " << describe(plan);
    if (kind == padded) {
      EXPECT_GE(made_bytes, planned_bytes) << what << ": " << to_string(kind) << " bytes";
      EXPECT_LE(made_bytes, planned_bytes + slack) << what << ": " << to_string(kind) << " bytes";
    } else {
      EXPECT_EQ(made_bytes, planned_bytes) << what << ": " << to_string(kind) << " bytes";
    }
  }
}

struct Positive {
  TESSERA_HOST_DEVICE bool operator()(double x) const { return x > 0; }
};
// Bin 0 for the positive samples, below for the others.
struct SignBin {
  TESSERA_HOST_DEVICE int operator()(double x) const { return x > 0 ? 0 : kernels::kBinBelow; }
};
struct Square {
  TESSERA_HOST_DEVICE double operator()(double x) const { return x * x; }
};
// Associative, not declared commutative: its partials are gathered and folded in rank order.
struct SecondOf {
  TESSERA_HOST_DEVICE double operator()(double, double b) const { return b; }
};

TEST(CollectivePlans, EveryAlgorithmMakesWhatItsPlanSays) {
  const Context& world = test::world();
  for (index_t n : {index_t(0), index_t(1), index_t(world.size()) - 1, index_t(4099)}) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<double>(n, s);
    const std::string at = "n=" + std::to_string(n);
    for (const auto& a : {DistArray<double>::from_replicated(world, global),
                          DistArray<double>::from_replicated(world, global, test::random_partition(n, world.size(), s))}) {
      expect_plan(reduce_plan<double>(ReduceOp::sum), [&] { (void)reduce(a, ReduceOp::sum); }, "reduce sum " + at);
      expect_plan(reduce_plan<double>(ReduceOp::max), [&] { (void)reduce(a, ReduceOp::max); }, "reduce max " + at);
      expect_plan(transform_reduce_plan<Square, plus, double>(), [&] { (void)transform_reduce(a, Square{}, plus{}, 0.0); },
                  "transform_reduce " + at);
      expect_plan(transform_reduce_plan<identity_fn, SecondOf, double>(), [&] { (void)reduce(a, SecondOf{}, 0.0); },
                  "ordered reduce " + at);
      expect_plan(scan_plan<double>(), [&] { (void)inclusive_scan(a, plus{}, 0.0); }, "scan " + at);
      expect_plan(filter_plan<double>(), [&] { (void)filter(a, Positive{}); }, "filter " + at);
      expect_plan(filter_plan<double>(), [&] { (void)filter(a, greater_than<double>(0.0)); }, "filter (precompiled) " + at);
      expect_plan(count_if_plan<double, Positive>(), [&] { (void)count_if(a, Positive{}); }, "count_if " + at);
      expect_plan(count_if_plan<double, Predicate<double>>(), [&] { (void)count_if(a, greater_than<double>(0.0)); },
                  "count_if (precompiled) " + at);
      expect_plan(count_if_plan<double, IsGreater<double>>(), [&] { (void)count_if(a, IsGreater<double>{0.0}); },
                  "count_if (a comparison's function object) " + at);
      expect_plan(border_pairs_plan<double>(), [&] { (void)is_sorted(a); }, "is_sorted " + at);
      expect_plan(best_element_plan<double>(), [&] { (void)min_element(a); }, "min_element " + at);
      expect_plan(reproducible_sum_plan<double>(), [&] { (void)reproducible_sum(a); }, "reproducible_sum " + at);
      expect_plan(rebalance_plan<double>(a.partition(), world.rank()), [&] { (void)rebalance(a); }, "rebalance " + at);
      for (index_t bins : {index_t(1), index_t(7), index_t(1000)}) {
        const EvenBins even{-1.0, 1.0, bins};
        expect_plan(histogram_plan(bins), [&] { (void)histogram(a, even); }, "histogram " + at);
        expect_plan(histogram_distributed_plan(bins), [&] { (void)histogram_distributed(a, even); },
                    "histogram_distributed " + at);
        expect_plan(histogram_by_plan(bins), [&] { (void)histogram(a, SignBin{}, bins); }, "histogram by a binner " + at);
        expect_plan(weighted_histogram_plan<double>(bins), [&] { (void)histogram(a, SignBin{}, bins, a); },
                    "weighted histogram " + at);
      }
      expect_plan(sample_range_plan<double>(), [&] { (void)sample_range(a); }, "sample_range " + at);
    }
  }
}

TEST(CollectivePlans, SortMakesOneExchange) {
  const Context& world = test::world();
  for (index_t n : {index_t(0), index_t(1), index_t(world.size()) - 1, index_t(4099)}) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<double>(n, s);
    const Partition partition = test::random_partition(n, world.size(), s);
    const auto keys = DistArray<double>::from_replicated(world, global, partition);
    const std::string at = "n=" + std::to_string(n);
    const int me = world.rank();
    // The exchange sends every element of the block and, again, the few around each bracketing
    // sample (to the ranks on both sides of a boundary): at most a tenth more here. Each message to
    // another rank also starts at the 16-byte boundary before its run: up to 15 bytes more for
    // each array (keys, values) and each other rank.
    auto slack = [&](std::size_t element_bytes, int arrays) {
      return 0.1 * static_cast<double>(partition.local_size(me)) * static_cast<double>(element_bytes) +
             15.0 * arrays * (world.size() - 1);
    };
    expect_plan(sort_plan(partition, me, sizeof(double)), [&] { (void)sort(keys); }, "sort " + at, Collective::alltoallv,
                slack(sizeof(double), 1));
    expect_plan(sort_plan(partition, me, sizeof(double), sizeof(index_t)), [&] { (void)argsort(keys); },
                "argsort " + at, Collective::alltoallv, slack(sizeof(double) + sizeof(index_t), 2));
    expect_plan(sort_plan(partition, me, sizeof(double), sizeof(double)), [&] { (void)sort_by_key(keys, keys); },
                "sort_by_key " + at, Collective::alltoallv, slack(2 * sizeof(double), 2));
  }
}

struct FirstOfPair {
  TESSERA_HOST_DEVICE bool operator()(double a, double b) const { return a < b; }
};
struct Product {
  TESSERA_HOST_DEVICE double operator()(double a, double b) const { return a * b; }
};
struct Above {
  TESSERA_HOST_DEVICE bool operator()(double a) const { return a > 0.9; }
};
struct Bucket {
  TESSERA_HOST_DEVICE std::int32_t operator()(double a) const { return static_cast<std::int32_t>(a * 4); }
};
struct Pair16 {
  double a, b;
};
struct ZipPair {
  TESSERA_HOST_DEVICE Pair16 operator()(double a, double b) const { return {a, b}; }
};
struct PairLess {
  TESSERA_HOST_DEVICE bool operator()(const Pair16& x, const Pair16& y) const { return x.a < y.a; }
};

TEST(CollectivePlans, TheNewerAlgorithmsMakeWhatTheirPlansSay) {
  const Context& world = test::world();
  const int me = world.rank();
  for (index_t n : {index_t(0), index_t(1), index_t(world.size()) - 1, index_t(4099)}) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<double>(n, s);
    std::vector<std::int32_t> keys(global.size());
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = static_cast<std::int32_t>(i / 7);
    const std::string at = "n=" + std::to_string(n);
    const Partition ragged = test::random_partition(n, world.size(), s);
    for (const Partition& partition : {Partition::block(n, world.size()), ragged}) {
      const auto a = DistArray<double>::from_replicated(world, global, partition);
      const auto k = DistArray<std::int32_t>::from_replicated(world, keys, partition);
      expect_plan({}, [&] { (void)transform(a, a, Product{}); }, "transform(a, b, f) " + at);
      expect_plan({}, [&] { (void)a.copy(); }, "copy " + at);
      expect_plan(zip_reduce_plan<Product, plus, double>(), [&] { (void)transform_reduce(a, a, Product{}, plus{}, 0.0); },
                  "transform_reduce(a, b) " + at);
      expect_plan(zip_reduce_plan<multiplies, plus, double>(), [&] { (void)dot(a, a); }, "dot " + at);
      expect_plan(find_if_plan<double>(), [&] { (void)find_if(a, Above{}); }, "find_if " + at);
      expect_plan(scan_plan<double>(), [&] { (void)inclusive_scan(a, SecondOf{}); }, "inclusive_scan(a, op) " + at);
      expect_plan(unique_plan<std::int32_t>(), [&] { (void)unique(k); }, "unique " + at);
      expect_plan(unique_plan<std::int32_t>(), [&] { (void)unique_by_key(k, a); }, "unique_by_key " + at);
      expect_plan(by_key_plan<std::int32_t, double>(), [&] { (void)reduce_by_key(k, a); }, "reduce_by_key " + at);
      expect_plan(by_key_plan<std::int32_t, double>(), [&] { (void)inclusive_scan_by_key(k, a); },
                  "inclusive_scan_by_key " + at);
      expect_plan(by_key_plan<std::int32_t, double>(), [&] { (void)exclusive_scan_by_key(k, a, plus{}, 0.0); },
                  "exclusive_scan_by_key " + at);
      expect_plan(repartition_plan<double>(partition, me), [&] { (void)repartition(a, ragged); }, "repartition " + at);
      if (n > 0) expect_plan(at_plan<double>(), [&] { (void)a.at(n - 1); }, "at " + at);
      // The sorts: the exchange sends a few percent more than every element (see SortMakesOneExchange).
      auto slack = [&](std::size_t element_bytes, int arrays) {
        return 0.1 * static_cast<double>(partition.local_size(me)) * static_cast<double>(element_bytes) +
               15.0 * arrays * (world.size() - 1);
      };
      expect_plan(comparator_sort_plan<double, FirstOfPair>(partition, me), [&] { (void)sort(a, FirstOfPair{}); },
                  "sort(a, comp) " + at, Collective::alltoallv, slack(sizeof(double), 1));
      expect_plan(comparator_sort_plan<double, less, Bucket>(partition, me), [&] { (void)sort(a, less{}, Bucket{}); },
                  "sort(a, less, proj) " + at, Collective::alltoallv, slack(sizeof(double) + sizeof(std::int32_t), 2));
      expect_plan(comparator_sort_plan<double, FirstOfPair, identity_fn, std::int32_t>(partition, me),
                  [&] { (void)sort_by_key(a, k, FirstOfPair{}); }, "sort_by_key(comp) " + at, Collective::alltoallv,
                  slack(sizeof(double) + sizeof(std::int32_t), 2));
      expect_plan(comparator_sort_plan<double, less, Bucket, std::int32_t>(partition, me),
                  [&] { (void)sort_by_key(a, k, less{}, Bucket{}); }, "sort_by_key(less, proj) " + at,
                  Collective::alltoallv, slack(sizeof(std::int32_t) + sizeof(KeyValue<double, std::int32_t>), 2));
      // gather: the requests this rank receives are the indices, on every rank, that it owns.
      std::vector<index_t> indices(static_cast<std::size_t>(n));
      for (index_t i = 0; i < n; ++i) indices[static_cast<std::size_t>(i)] = (i * 7919) % n;
      const auto idx = DistArray<index_t>::from_replicated(world, indices, ragged);
      index_t requests = 0;
      for (index_t i : indices) requests += partition.owner(i) == me ? 1 : 0;
      expect_plan(gather_plan<double>(ragged, me, requests), [&] { (void)gather(a, idx); }, "gather " + at);
      DistArray<double> scattered(world, partition);
      const auto from = DistArray<double>::from_replicated(world, global, ragged);
      expect_plan(scatter_plan<double>(ragged, me), [&] { scatter(from, idx, scattered); }, "scatter " + at);
      DistArray<Pair16> pairs(world, partition);
      transform(a, a, pairs, ZipPair{});
      expect_plan(comparator_sort_plan<Pair16, PairLess>(partition, me), [&] { (void)sort(pairs, PairLess{}); },
                  "sort(struct, comp) " + at, Collective::alltoallv, slack(sizeof(Pair16), 1));
    }
  }
}

TEST(CollectivePlans, StencilsExchangeTheirHalos) {
  const Context& world = test::world();
  const int me = world.rank();
  for (index_t n : {index_t(0), index_t(1), index_t(world.size()) - 1, index_t(4099)})
    for (index_t radius : {index_t(0), index_t(1), index_t(5)})
      for (Boundary boundary : {Boundary::zero, Boundary::periodic}) {
        if (boundary == Boundary::periodic && radius > n && n > 0) continue;  // refused: wraps more than once
        const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
        const Partition partition = test::random_partition(n, world.size(), s);
        const auto a = DistArray<double>::from_replicated(world, test::random_vector<double>(n, s), partition);
        const std::vector<double> weights(static_cast<std::size_t>(2 * radius + 1), 0.25);
        expect_plan(convolve_plan(partition, me, radius, boundary, sizeof(double)),
                    [&] { (void)convolve(a, std::span<const double>(weights), boundary); },
                    "convolve n=" + std::to_string(n) + " r=" + std::to_string(radius) + " " + to_string(boundary));
      }
  const ProcessGrid grid = ProcessGrid::create(world);
  for (bool overlap : {true, false})
    for (index_t rows : {index_t(grid.rows()), index_t(13)}) {
      Field2D<double> u(grid, rows, 29, 1);
      JacobiOptions options;
      options.check_every = 3;
      options.overlap = overlap;
      Jacobi<double> solver(u, StencilWeights<double>::jacobi5(), options);
      expect_plan(solver.plan(7), [&] { solver.run_until(7); },
                  "jacobi rows=" + std::to_string(rows) + (overlap ? " overlapped" : ""));
    }
}

TEST(CollectivePlans, RedistributeAndTransposeMakeOneExchange) {
  const Context& world = test::world();
  const ProcessGrid grid = ProcessGrid::create(world);
  const ProcessGrid rows = row_block_grid(world), cols = column_block_grid(world);
  for (index_t m : {index_t(1), index_t(13)}) {
    DistMatrix<double> a(grid, m, 29);
    a.generate(test::seed());
    for (const ProcessGrid* to : {&grid, &rows, &cols}) {
      expect_plan(redistribute_plan(a, *to, false), [&] { (void)redistribute(a, *to); }, "redistribute m=" + std::to_string(m));
      expect_plan(redistribute_plan(a, *to, true), [&] { (void)transpose(a, *to); }, "transpose m=" + std::to_string(m));
    }
  }
}

TEST(CollectivePlans, MatmulBroadcastsItsPanels) {
  const Context& world = test::world();
  const ProcessGrid grid = ProcessGrid::create(world);
  for (index_t k : {index_t(1), index_t(37), index_t(130)}) {
    DistMatrix<double> a(grid, 29, k), b(grid, k, 23);
    a.generate(test::seed());
    b.generate(test::seed() + 1);
    for (index_t panel : {index_t(1), index_t(16), index_t(512)}) {
      MatmulOptions options;
      options.panel_width = panel;
      expect_plan(matmul_plan(a, b, options), [&] { (void)matmul(a, b, options); },
                  "matmul k=" + std::to_string(k) + " panel=" + std::to_string(panel));
    }
  }
}

}  // namespace
}  // namespace tessera
