// The open algorithms with user functors and user element types, across ranks, against serial
// references computed on the host in index order. Compiled by nvcc where the build has CUDA, so that
// TESSERA_TEST_BACKEND=cuda runs the same tests on the device backend; the cpu backend in CI.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "generic_test_types.hpp"
#include "mpi/algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera {
namespace {

using test::Affine;
using test::ComposeAffine;
using test::Mat2;
using test::MatMul;
using test::Tagged;
using test::ComposeTagged;

template <class T>
std::vector<T> random_values_for_io(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(gen());
  return v;
}

// Sizes: the algorithm sizes plus a few that cross the device kernels' tile and row edges.
std::vector<index_t> sizes(int ranks) {
  std::vector<index_t> n = test::algorithm_sizes(ranks);
  for (index_t extra : {index_t(4095), index_t(65537), index_t(262147)}) n.push_back(extra);
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  return n;
}

// The same data in the block partition and in a random ragged one (empty ranks likely).
template <class T>
std::vector<DistArray<T>> layouts(const std::vector<T>& global, std::uint64_t s) {
  const Context& world = test::world();
  std::vector<DistArray<T>> arrays;
  arrays.push_back(DistArray<T>::from_replicated(world, global));
  arrays.push_back(DistArray<T>::from_replicated(
      world, global, test::random_partition(static_cast<index_t>(global.size()), world.size(), s)));
  return arrays;
}

// ---- arrays of other element types -----------------------------------------------------------------

template <class T>
void hdf5_round_trip(const std::string& file, index_t n, std::uint64_t s) {
  const Context& world = test::world();
  const auto global = random_values_for_io<T>(n, s);
  const auto array = DistArray<T>::from_replicated(world, global, test::random_partition(n, world.size(), s));
  const io::DatasetPath path{file, "/group/values"};
  io::write_array(array, path, io::OutputAttributes{"generic_tests", to_string(world.backend()), world.size(), {}});
  const DistArray<T> back = io::read_array<T>(world, path, "--input");
  EXPECT_EQ(back.global_size(), n);
  const auto got = back.gather(0);
  if (world.rank() == 0) {
    EXPECT_EQ(got, global) << test::where(n, s);
  }
}

TEST(GenericArray, Hdf5RoundTripOfEveryArithmeticType) {
  const Context& world = test::world();
  std::uint64_t id = world.is_root() ? static_cast<std::uint64_t>(::getpid()) : 0;
  id = world.comm().bcast_value(id, 0);
  const std::string file = "/tmp/tessera_generic_io_" + std::to_string(id) + ".h5";
  for (index_t n : {index_t(0), index_t(1), index_t(1001)}) {
    hdf5_round_trip<std::int8_t>(file, n, test::seed() + 1);
    hdf5_round_trip<std::uint8_t>(file, n, test::seed() + 2);
    hdf5_round_trip<std::int16_t>(file, n, test::seed() + 3);
    hdf5_round_trip<std::uint16_t>(file, n, test::seed() + 4);
    hdf5_round_trip<std::uint32_t>(file, n, test::seed() + 5);
    hdf5_round_trip<std::uint64_t>(file, n, test::seed() + 6);
  }
  world.comm().barrier();
  if (world.is_root()) std::remove(file.c_str());
}

TEST(GenericArray, StructBlocksGatherAndMoveBetweenRanks) {
  const Context& world = test::world();
  for (index_t n : {index_t(0), index_t(3), index_t(1003)}) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_tagged(n, s);
    const auto ragged = DistArray<Tagged>::from_replicated(world, global, test::random_partition(n, world.size(), s));
    const auto balanced = rebalance(ragged);
    EXPECT_TRUE(balanced.partition() == Partition::block(n, world.size()));
    const auto got = balanced.gather(0);
    if (world.rank() == 0) {
      EXPECT_EQ(got, global) << test::where(n, s);
    }
  }
}

// ---- reductions ------------------------------------------------------------------------------------

TEST(GenericReduce, NonCommutativeAffineCompositionKeepsIndexOrder) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_affines(n, s);
    Affine expected{};
    for (const Affine& f : global) expected = ComposeAffine{}(expected, f);
    for (const auto& array : layouts(global, s)) {
      const Affine got = reduce(array, ComposeAffine{}, Affine{});
      EXPECT_EQ(got, expected) << test::where(n, s);
    }
  }
}

TEST(GenericReduce, NonCommutativeMatrixProductOf16ByteStructs) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 3 + static_cast<std::uint64_t>(n);
    const auto global = test::random_matrices(n, s);
    Mat2 expected{};
    for (const Mat2& m : global) expected = MatMul{}(expected, m);
    for (const auto& array : layouts(global, s)) EXPECT_EQ(reduce(array, MatMul{}, Mat2{}), expected) << test::where(n, s);
  }
}

TEST(GenericReduce, TwelveByteElementsTakeTheElementPath) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 5 + static_cast<std::uint64_t>(n);
    const auto global = test::random_tagged(n, s);
    Tagged expected{};
    for (const Tagged& t : global) expected = ComposeTagged{}(expected, t);
    for (const auto& array : layouts(global, s)) {
      const Tagged got = reduce(array, ComposeTagged{}, Tagged{});
      EXPECT_EQ(got, expected) << test::where(n, s);
      EXPECT_EQ(got.count, static_cast<std::uint32_t>(n));
    }
  }
}

TEST(GenericReduce, MeanAndVarianceWithAStructAccumulator) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 7 + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<float>(n, s);
    long double sum = 0;
    for (float x : global) sum += x;
    const long double mean = n ? sum / n : 0;
    long double m2 = 0;
    for (float x : global) m2 += (x - mean) * (x - mean);
    for (const auto& array : layouts(global, s)) {
      const test::Moments got = transform_reduce(array, test::ToMoments{}, test::CombineMoments{}, test::Moments{});
      EXPECT_EQ(got.count, static_cast<double>(n)) << test::where(n, s);
      EXPECT_NEAR(got.mean, static_cast<double>(mean), 1e-12 + 1e-12 * std::fabs(static_cast<double>(mean)))
          << test::where(n, s);
      EXPECT_NEAR(got.m2, static_cast<double>(m2), 1e-9 * (1 + static_cast<double>(m2))) << test::where(n, s);
    }
  }
}

template <class T>
class GenericArithmetic : public ::testing::Test {};
using AllArithmetic = ::testing::Types<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t,
                                       std::uint16_t, std::uint32_t, std::uint64_t, float, double>;
TYPED_TEST_SUITE(GenericArithmetic, AllArithmetic);

template <class T>
std::vector<T> random_values(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(gen));
    } else {
      x = static_cast<T>(gen());  // the whole range: sums wrap, and must wrap alike
    }
  }
  return v;
}

TYPED_TEST(GenericArithmetic, SumMinMaxAndScanOfEveryArithmeticType) {
  using T = TypeParam;
  for (index_t n : {index_t(0), index_t(1), index_t(33), index_t(4097), index_t(100003)}) {
    const std::uint64_t s = test::seed() * 11 + static_cast<std::uint64_t>(n);
    const auto global = random_values<T>(n, s);
    for (const auto& array : layouts(global, s)) {
      if constexpr (std::is_integral_v<T>) {
        T sum = 0, lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
        for (T x : global) {
          sum = static_cast<T>(static_cast<std::uint64_t>(sum) + static_cast<std::uint64_t>(x));
          lo = std::min(lo, x);
          hi = std::max(hi, x);
        }
        EXPECT_EQ(reduce(array, plus{}), sum) << test::where(n, s);
        EXPECT_EQ(reduce(array, minimum{}), lo) << test::where(n, s);
        EXPECT_EQ(reduce(array, maximum{}), hi) << test::where(n, s);
        // The inclusive sum scan wraps like the serial one.
        const std::vector<T> got = inclusive_scan(array, plus{}, T(0)).gather(0);
        if (test::world().rank() == 0) {
          T running = 0;
          for (std::size_t i = 0; i < global.size(); ++i) {
            running = static_cast<T>(static_cast<std::uint64_t>(running) + static_cast<std::uint64_t>(global[i]));
            ASSERT_EQ(got[i], running) << test::where(n, s) << " i=" << i;
          }
        }
      } else {
        long double sum = 0, sum_abs = 0;
        for (T x : global) {
          sum += x;
          sum_abs += std::fabs(x);
        }
        const long double tol = (n + 8.0L) * std::numeric_limits<T>::epsilon() * sum_abs;
        EXPECT_LE(std::fabs(reduce(array, plus{}) - sum), tol) << test::where(n, s);
        if (n > 0) {
          EXPECT_EQ(reduce(array, minimum{}), *std::min_element(global.begin(), global.end()));
          EXPECT_EQ(reduce(array, maximum{}), *std::max_element(global.begin(), global.end()));
        }
      }
    }
  }
}

TEST(GenericReduce, MinAndMaxPropagateNaN) {
  const Context& world = test::world();
  std::vector<double> global(1000, 1.0);
  global[777] = std::numeric_limits<double>::quiet_NaN();
  const auto array = DistArray<double>::from_replicated(world, global);
  EXPECT_TRUE(std::isnan(reduce(array, minimum{})));
  EXPECT_TRUE(std::isnan(reduce(array, maximum{})));
}

// ---- scans ----------------------------------------------------------------------------------------

template <class T, class Op>
void expect_scan(const DistArray<T>& array, const std::vector<T>& global, Op op, T init, const std::string& where) {
  for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
    const DistArray<T> out = scan(array, kind, op, init);
    EXPECT_TRUE(out.partition() == array.partition()) << where;
    const std::vector<T> got = out.gather(0);
    if (test::world().rank() != 0) continue;
    ASSERT_EQ(got.size(), global.size()) << where;
    T running = init;
    for (std::size_t i = 0; i < global.size(); ++i) {
      if (kind == ScanKind::inclusive) running = op(running, global[i]);
      ASSERT_TRUE(got[i] == running) << where << " i=" << i << " " << to_string(kind);
      if (kind == ScanKind::exclusive) running = op(running, global[i]);
    }
  }
}

TEST(GenericScan, AffineCompositionWithInit) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 13 + static_cast<std::uint64_t>(n);
    const auto global = test::random_affines(n, s);
    const Affine init{3, 5};
    for (const auto& array : layouts(global, s)) expect_scan(array, global, ComposeAffine{}, init, test::where(n, s));
  }
}

TEST(GenericScan, MatrixProductsAndTwelveByteStructs) {
  for (index_t n : {index_t(0), index_t(1), index_t(31), index_t(33), index_t(4097), index_t(65537)}) {
    const std::uint64_t s = test::seed() * 17 + static_cast<std::uint64_t>(n);
    const auto matrices = test::random_matrices(n, s);
    for (const auto& array : layouts(matrices, s)) expect_scan(array, matrices, MatMul{}, Mat2{}, test::where(n, s));
    const auto tagged = test::random_tagged(n, s);
    for (const auto& array : layouts(tagged, s))
      expect_scan(array, tagged, ComposeTagged{}, Tagged{7, 1, 0}, test::where(n, s) + " tagged");
  }
}

TEST(GenericScan, RunningMaximum) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 19 + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<float>(n, s);
    const float init = -std::numeric_limits<float>::infinity();
    for (const auto& array : layouts(global, s)) expect_scan(array, global, maximum{}, init, test::where(n, s));
  }
}

// Extended lambdas may not live in a private member function, which a TEST body is (nvcc's rule):
// the cases that use lambdas are free functions the tests call.
void in_place_scan_with_a_lambda() {
  const Context& world = test::world();
  const index_t n = 10007;
  const auto global = test::random_vector<std::int32_t>(n, test::seed() + 23);
  DistArray<std::int32_t> array = DistArray<std::int32_t>::from_replicated(world, global);
  // the running maximum of absolute values, as a lambda
  auto op = [] TESSERA_HOST_DEVICE(std::int32_t a, std::int32_t b) {
    const std::int32_t ab = b < 0 ? -b : b;
    return a > ab ? a : ab;
  };
  scan(array, array, ScanKind::inclusive, op, std::int32_t(0));
  const auto got = array.gather(0);
  if (world.rank() != 0) return;
  std::int32_t running = 0;
  for (index_t i = 0; i < n; ++i) {
    running = std::max(running, std::abs(global[static_cast<std::size_t>(i)]));
    ASSERT_EQ(got[static_cast<std::size_t>(i)], running) << "i=" << i;
  }
}

TEST(GenericScan, InPlaceWithALambda) { in_place_scan_with_a_lambda(); }

// ---- filters and counts ---------------------------------------------------------------------------

struct SquareAbove {
  float threshold;
  TESSERA_HOST_DEVICE bool operator()(float x) const { return x * x > threshold; }
};

TEST(GenericFilter, PredicateFunctorAndLambdaAgainstSerialSelection) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 29 + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<float>(n, s);
    std::vector<float> kept, removed;
    for (float x : global) (x * x > 0.25f ? kept : removed).push_back(x);
    for (const auto& array : layouts(global, s)) {
      const auto filtered = filter(array, SquareAbove{0.25f});
      const auto rest = remove_if(array, SquareAbove{0.25f});
      EXPECT_EQ(filtered.global_size(), static_cast<index_t>(kept.size())) << test::where(n, s);
      EXPECT_EQ(count_if(array, SquareAbove{0.25f}), static_cast<index_t>(kept.size())) << test::where(n, s);
      const auto got_kept = filtered.gather(0);
      const auto got_rest = rest.gather(0);
      if (test::world().rank() == 0) {
        EXPECT_EQ(got_kept, kept) << test::where(n, s);
        EXPECT_EQ(got_rest, removed) << test::where(n, s);
      }
      EXPECT_EQ(any_of(array, SquareAbove{0.25f}), !kept.empty());
      EXPECT_EQ(none_of(array, SquareAbove{0.25f}), kept.empty());
      EXPECT_EQ(all_of(array, SquareAbove{0.25f}), removed.empty());
    }
  }
}

void filter_structs_with_a_lambda() {
  for (index_t n : {index_t(0), index_t(5), index_t(4099), index_t(65537)}) {
    const std::uint64_t s = test::seed() * 31 + static_cast<std::uint64_t>(n);
    const auto global = test::random_matrices(n, s);
    auto pred = [] TESSERA_HOST_DEVICE(const Mat2& m) { return (m.m01 & 3u) == 1u; };
    std::vector<Mat2> expected;
    for (const Mat2& m : global)
      if (pred(m)) expected.push_back(m);
    for (const auto& array : layouts(global, s)) {
      const auto got = copy_if(array, pred).gather(0);
      if (test::world().rank() == 0) {
        EXPECT_EQ(got, expected) << test::where(n, s);
      }
    }
  }
}

TEST(GenericFilter, StructElementsWithALambda) { filter_structs_with_a_lambda(); }

// ---- element-wise ----------------------------------------------------------------------------------

void unary_binary_for_each_fill_generate() {
  const Context& world = test::world();
  for (index_t n : sizes(world.size())) {
    const std::uint64_t s = test::seed() * 37 + static_cast<std::uint64_t>(n);
    const auto x = test::random_vector<float>(n, s);
    const auto y = test::random_vector<float>(n, s + 1);
    const auto a = DistArray<float>::from_replicated(world, x);
    const auto b = DistArray<float>::from_replicated(world, y);
    // float -> double
    const DistArray<double> squared = transform(a, [] TESSERA_HOST_DEVICE(float v) { return double(v) * v; });
    DistArray<float> fma_out(world, n);
    transform(a, b, fma_out, [] TESSERA_HOST_DEVICE(float u, float v) { return u * 2.0f + v; });
    DistArray<float> doubled = DistArray<float>::from_replicated(world, x);
    for_each(doubled, [] TESSERA_HOST_DEVICE(float& v) { v *= 2.0f; });
    DistArray<Affine> filled(world, n);
    fill(filled, Affine{9, 4});
    DistArray<std::uint64_t> generated(world, n);
    generate(generated, [] TESSERA_HOST_DEVICE(index_t i) { return static_cast<std::uint64_t>(i) * 2654435761u; });

    const auto got_sq = squared.gather(0);
    const auto got_fma = fma_out.gather(0);
    const auto got_doubled = doubled.gather(0);
    const auto got_filled = filled.gather(0);
    const auto got_generated = generated.gather(0);
    if (world.rank() != 0) continue;
    for (index_t i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(i);
      ASSERT_EQ(got_sq[k], double(x[k]) * x[k]) << test::where(n, s) << " i=" << i;
      ASSERT_EQ(got_fma[k], x[k] * 2.0f + y[k]) << test::where(n, s) << " i=" << i;
      ASSERT_EQ(got_doubled[k], x[k] * 2.0f) << test::where(n, s) << " i=" << i;
      ASSERT_EQ(got_filled[k], (Affine{9, 4})) << test::where(n, s) << " i=" << i;
      ASSERT_EQ(got_generated[k], static_cast<std::uint64_t>(i) * 2654435761u) << test::where(n, s) << " i=" << i;
    }
  }
}

TEST(GenericTransform, UnaryBinaryForEachFillGenerate) { unary_binary_for_each_fill_generate(); }

struct AddFloats {
  TESSERA_HOST_DEVICE float operator()(float u, float v) const { return u + v; }
};
struct SameFloat {
  TESSERA_HOST_DEVICE float operator()(float u) const { return u; }
};

TEST(GenericTransform, DifferentPartitionsAreRefusedOnEveryRank) {
  const Context& world = test::world();
  const index_t n = 101;
  const auto x = test::random_vector<float>(n, test::seed());
  const auto a = DistArray<float>::from_replicated(world, x);
  std::vector<index_t> counts(static_cast<std::size_t>(world.size()), 0);
  counts[0] = n;  // everything on rank 0: differs from the block partition unless one rank
  const auto b = DistArray<float>::from_replicated(world, x, Partition::from_counts(counts));
  DistArray<float> out(world, n);
  if (world.size() == 1) GTEST_SKIP() << "one rank: every partition of n is the block partition";
  EXPECT_THROW(transform(a, b, out, AddFloats{}), UsageError);
  DistArray<float> wrong_size(world, n + 1);
  EXPECT_THROW(transform(a, wrong_size, SameFloat{}), UsageError);
  EXPECT_THROW(scan(a, wrong_size, ScanKind::inclusive, plus{}, 0.0f), UsageError);
}

// ---- order ------------------------------------------------------------------------------------------

TEST(GenericOrder, IsSortedUntilAndAdjacentFindAcrossRankBorders) {
  for (index_t n : {index_t(0), index_t(1), index_t(2), index_t(5), index_t(97), index_t(4099)}) {
    std::vector<std::int64_t> sorted(static_cast<std::size_t>(n));
    std::iota(sorted.begin(), sorted.end(), std::int64_t(0));
    // Every position of the first break (and of the first equal pair): borders included.
    for (index_t brk = 1; brk < n; brk += (n > 200 ? 97 : 1)) {
      std::vector<std::int64_t> v = sorted;
      v[static_cast<std::size_t>(brk)] = v[static_cast<std::size_t>(brk) - 1] - 1;   // a descent at brk
      std::vector<std::int64_t> w = sorted;
      w[static_cast<std::size_t>(brk)] = w[static_cast<std::size_t>(brk) - 1];       // an equal pair at brk-1
      const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(brk);
      for (const auto& array : layouts(v, s)) {
        EXPECT_FALSE(is_sorted(array)) << "n=" << n << " break=" << brk;
        EXPECT_EQ(is_sorted_until(array), brk) << "n=" << n << " break=" << brk;
      }
      for (const auto& array : layouts(w, s)) {
        EXPECT_TRUE(is_sorted(array));
        EXPECT_EQ(adjacent_find(array), brk - 1) << "n=" << n << " pair at " << brk - 1;
      }
    }
    for (const auto& array : layouts(sorted, test::seed() + static_cast<std::uint64_t>(n))) {
      EXPECT_TRUE(is_sorted(array));
      EXPECT_EQ(is_sorted_until(array), n);
      EXPECT_EQ(adjacent_find(array), n);
      EXPECT_TRUE(is_sorted(array, greater{}) == (n <= 1));
    }
  }
}

TEST(GenericOrder, MinAndMaxElementWithTiesTakeTheLowestIndex) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 41 + static_cast<std::uint64_t>(n);
    std::vector<std::int32_t> global = test::random_vector<std::int32_t>(n, s);
    for (auto& x : global) x /= 100;  // many ties
    for (const auto& array : layouts(global, s)) {
      const ValueIndex<std::int32_t> lo = min_element(array);
      const ValueIndex<std::int32_t> hi = max_element(array);
      if (n == 0) {
        EXPECT_EQ(lo.index, -1);
        EXPECT_EQ(hi.index, -1);
        continue;
      }
      const auto lo_it = std::min_element(global.begin(), global.end());
      const auto hi_it = std::max_element(global.begin(), global.end());
      EXPECT_EQ(lo.index, lo_it - global.begin()) << test::where(n, s);
      EXPECT_EQ(lo.value, *lo_it) << test::where(n, s);
      EXPECT_EQ(hi.index, hi_it - global.begin()) << test::where(n, s);
      EXPECT_EQ(hi.value, *hi_it) << test::where(n, s);
    }
  }
}

// A global index past 2^31: the position of the minimum of 2^31 + 1000 one-byte elements (2 GiB in
// all). Large for CI's CPUs; runs on the cuda backend, or where TESSERA_TEST_LARGE=1.
struct ByteAt {
  index_t planted;
  TESSERA_HOST_DEVICE std::int8_t operator()(index_t i) const {
    if (i == planted) return -128;
    return static_cast<std::int8_t>(static_cast<int>((static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull) >> 58) - 20);
  }
};

TEST(GenericOrder, MinElementIndexPastTwoToThe31) {
  const Context& world = test::world();
  const char* large = std::getenv("TESSERA_TEST_LARGE");
  if (world.backend() != Backend::cuda && !(large && std::string(large) == "1"))
    GTEST_SKIP() << "2 GiB of data: cuda backend, or TESSERA_TEST_LARGE=1";
  const index_t n = (index_t(1) << 31) + 1000;
  const index_t planted = (index_t(1) << 31) + 500;
  DistArray<std::int8_t> bytes(world, n);
  generate(bytes, ByteAt{planted});
  const ValueIndex<std::int8_t> lo = min_element(bytes);
  EXPECT_EQ(lo.value, -128);
  EXPECT_EQ(lo.index, planted);
  const ValueIndex<std::int8_t> hi = max_element(bytes);
  EXPECT_GE(hi.index, 0);
  EXPECT_EQ(hi.value, ByteAt{planted}(hi.index));
}

#if defined(__CUDACC__)
// A __device__-only lambda: runs on the cuda backend; on the cpu backend a UsageError before any work.
void a_device_only_lambda() {
  const Context& world = test::world();
  const auto x = test::random_vector<float>(1001, test::seed() + 3);
  const auto a = DistArray<float>::from_replicated(world, x);
  auto positive = [] __device__(float v) { return v > 0; };
  index_t expected = 0;
  for (float v : x) expected += v > 0 ? 1 : 0;
  if (world.backend() == Backend::cuda) {
    EXPECT_EQ(count_if(a, positive), expected);
  } else {
    EXPECT_THROW(count_if(a, positive), UsageError);
    EXPECT_THROW(filter(a, positive), UsageError);
  }
}

TEST(GenericFailure, ADeviceOnlyLambdaOnTheCpuBackendIsAUsageError) { a_device_only_lambda(); }
#endif

// ---- a functor that throws (host only: the cpu backend) ---------------------------------------------

struct ThrowsOnRank {
  int rank_to_throw;
  int my_rank;
  TESSERA_HOST_DEVICE bool operator()(float x) const {
#if !defined(__CUDA_ARCH__)
    if (my_rank == rank_to_throw) throw std::runtime_error("predicate failed here");
#endif
    return x > 0;
  }
};

TEST(GenericFailure, AThrowingPredicateStopsEveryRank) {
  const Context& world = test::world();
  if (world.backend() != Backend::cpu) GTEST_SKIP() << "device code cannot throw";
  const auto x = test::random_vector<float>(1000, test::seed());
  const auto a = DistArray<float>::from_replicated(world, x);
  const int thrower = world.size() - 1;
  const ThrowsOnRank pred{thrower, world.rank()};
  if (world.rank() == thrower) {
    EXPECT_THROW(count_if(a, pred), std::runtime_error);
    EXPECT_THROW(filter(a, pred), std::runtime_error);
  } else {
    EXPECT_THROW(count_if(a, pred), UsageError);
    EXPECT_THROW(filter(a, pred), UsageError);
  }
  // Still in step: a collective afterwards completes on every rank.
  EXPECT_EQ(reduce(a, ReduceOp::max), *std::max_element(x.begin(), x.end()));
}

void a_throwing_op_in_a_reduction() {
  const Context& world = test::world();
  const auto x = test::random_vector<float>(5000, test::seed() + 1);
  const auto a = DistArray<float>::from_replicated(world, x);
  const int me = world.rank();
  auto op = [me] TESSERA_HOST_DEVICE(float u, float v) {
#if !defined(__CUDA_ARCH__)
    if (me == 0) throw std::runtime_error("op failed on rank 0");
#endif
    return u + v;
  };
  if (me == 0) {
    EXPECT_THROW(reduce(a, op, 0.0f), std::runtime_error);
  } else {
    EXPECT_THROW(reduce(a, op, 0.0f), UsageError);
  }
}

TEST(GenericFailure, AThrowingOpInAReductionStopsEveryRank) {
  if (test::world().backend() != Backend::cpu) GTEST_SKIP() << "device code cannot throw";
  a_throwing_op_in_a_reduction();
}

}  // namespace
}  // namespace tessera
