// The generic local operations on the CPU backend, with 1 to 4 OpenMP threads (so that every chunked
// path runs), against serial references in index order: non-commutative operations, user structs,
// element-wise passes, and a functor that throws inside a parallel region.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "generic/generic_test_types.hpp"
#include "support/omp_threads_test.hpp"
#include "support/test_support.hpp"
#include "tessera/kernels/kernels.hpp"

namespace tessera {
namespace {

const kernels::Queue kCpu{};

class GenericKernelsCpu : public test::OmpThreadsTest {};
INSTANTIATE_TEST_SUITE_P(Threads, GenericKernelsCpu, ::testing::Values(1, 2, 3, 4));

std::vector<index_t> sizes() {
  std::vector<index_t> s = test::odd_sizes(1 << 17);
  s.push_back(262147);
  return s;
}

TEST_P(GenericKernelsCpu, OrderedReduceAndScanOfAffineMaps) {
  for (index_t n : sizes()) {
    const auto maps = test::random_affines(n, test::seed() + static_cast<std::uint64_t>(n));
    test::Affine expected{};
    for (const auto& f : maps) expected = test::ComposeAffine{}(expected, f);
    EXPECT_EQ(kernels::reduce(kCpu, maps.data(), n, test::ComposeAffine{}, test::Affine{}), expected) << test::where(n);

    std::vector<test::Affine> out(static_cast<std::size_t>(n));
    const test::Affine init{5, 7};
    for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
      kernels::scan(kCpu, maps.data(), out.data(), n, kind, test::ComposeAffine{}, init);
      test::Affine running = init;
      for (index_t i = 0; i < n; ++i) {
        if (kind == ScanKind::inclusive) running = test::ComposeAffine{}(running, maps[static_cast<std::size_t>(i)]);
        ASSERT_EQ(out[static_cast<std::size_t>(i)], running) << test::where(n) << " i=" << i;
        if (kind == ScanKind::exclusive) running = test::ComposeAffine{}(running, maps[static_cast<std::size_t>(i)]);
      }
    }
  }
}

struct IsOdd {
  bool operator()(std::int32_t x) const { return (x & 1) != 0; }
};
struct IndexSquare {
  std::uint64_t operator()(index_t i) const { return static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(i); }
};
struct Halve {
  double operator()(std::int32_t x) const { return x / 2.0; }
};

TEST_P(GenericKernelsCpu, SelectCountTransformAndIndexRanges) {
  for (index_t n : sizes()) {
    const auto x = test::random_vector<std::int32_t>(n, test::seed() * 3 + static_cast<std::uint64_t>(n));
    std::vector<std::int32_t> kept(static_cast<std::size_t>(n));
    index_t count = -1, kept_count = -1;
    kernels::count_if(kCpu, x.data(), n, IsOdd{}, &count);
    kernels::select(kCpu, x.data(), n, IsOdd{}, kept.data(), &kept_count);
    std::vector<std::int32_t> expected;
    for (auto v : x)
      if (IsOdd{}(v)) expected.push_back(v);
    ASSERT_EQ(count, static_cast<index_t>(expected.size())) << test::where(n);
    ASSERT_EQ(kept_count, count);
    kept.resize(static_cast<std::size_t>(kept_count));
    EXPECT_EQ(kept, expected) << test::where(n);

    std::vector<double> halves(static_cast<std::size_t>(n));
    kernels::transform(kCpu, x.data(), n, halves.data(), Halve{});
    std::vector<std::uint64_t> squares(static_cast<std::size_t>(n));
    const index_t first = 1000003;
    kernels::transform_index(kCpu, first, n, squares.data(), IndexSquare{});
    std::uint64_t sum = 0;
    for (index_t i = 0; i < n; ++i) {
      ASSERT_EQ(halves[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(i)] / 2.0);
      ASSERT_EQ(squares[static_cast<std::size_t>(i)], IndexSquare{}(first + i));
      sum += IndexSquare{}(first + i);
    }
    EXPECT_EQ(kernels::transform_reduce_index(kCpu, first, n, IndexSquare{}, plus{}, std::uint64_t(0)), sum);

    std::vector<test::Mat2> filled(static_cast<std::size_t>(n));
    const test::Mat2 value{3, 1, 4, 1};
    kernels::fill_any(kCpu, filled.data(), n, value);
    for (const auto& m : filled) ASSERT_EQ(m, value);
  }
}

struct ThrowsAt {
  index_t at;
  std::int64_t operator()(index_t i) const {
    if (i == at) throw std::runtime_error("functor failed");
    return i;
  }
};

TEST_P(GenericKernelsCpu, AThrowingFunctorInAParallelRegionReachesTheCaller) {
  const index_t n = 1 << 18;
  EXPECT_THROW(kernels::transform_reduce_index(kCpu, 0, n, ThrowsAt{n - 5}, plus{}, std::int64_t(0)),
               std::runtime_error);
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  EXPECT_THROW(kernels::transform_index(kCpu, 0, n, out.data(), ThrowsAt{7}), std::runtime_error);
}

}  // namespace
}  // namespace tessera
