// The open algorithms with user functors and user element types, across ranks, against serial
// references computed on the host in index order: element-wise passes, order queries and failures. Compiled by nvcc where the build has
// CUDA, so that TESSERA_TEST_BACKEND=cuda runs the same tests on the device backend.
#include "generic_test_util.hpp"

namespace tessera {
namespace {

using test::Affine;
using test::ComposeAffine;
using test::Mat2;
using test::MatMul;
using test::Tagged;
using test::ComposeTagged;
using test::layouts;
using test::random_values_for_io;
using test::sizes;

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
