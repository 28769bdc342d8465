// SUMMA matmul on process grids (MPI_Dims_create's choice, 1 x P, P x 1, 2 x 2) with shapes the
// grid does not divide, and panel widths 1, 7, 64 and wider than K, against a serial long double
// product on the host; integers (whose products and sums wrap) against a serial product in the
// unsigned type, complex numbers against a long double one, on both engines; the grid and shape
// errors a user can make.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>

#include "algo_test_util.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/counter_rng.hpp"

namespace tessera {
namespace {

template <class T>
class Matmul : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Matmul, FloatTypes);

std::vector<std::pair<int, int>> grids(int ranks) {
  std::vector<std::pair<int, int>> g = {{0, 0}, {1, ranks}, {ranks, 1}};
  if (ranks == 4) g.push_back({2, 2});
  return g;
}

struct Shape {
  index_t m, k, n;
};

template <class T>
void check_product(const ProcessGrid& grid, Shape s, index_t panel_width, std::uint64_t seed, const std::string& where) {
  const auto a_global = test::random_vector<T>(s.m * s.k, seed);
  const auto b_global = test::random_vector<T>(s.k * s.n, seed + 1);
  const auto a = DistMatrix<T>::from_replicated(grid, s.m, s.k, a_global);
  const auto b = DistMatrix<T>::from_replicated(grid, s.k, s.n, b_global);
  MatmulOptions options;
  options.panel_width = panel_width;
  PhaseTimes times;
  const DistMatrix<T> c = matmul(a, b, options, &times);
  ASSERT_EQ(c.rows(), s.m);
  ASSERT_EQ(c.cols(), s.n);
  const std::vector<T> got = c.gather(0);
  if (grid.context().rank() != 0) return;
  ASSERT_EQ(got.size(), static_cast<std::size_t>(s.m * s.n)) << where;
  for (index_t i = 0; i < s.m; ++i)
    for (index_t j = 0; j < s.n; ++j) {
      long double exact = 0, magnitude = 0;
      for (index_t l = 0; l < s.k; ++l) {
        const long double term = static_cast<long double>(a_global[static_cast<std::size_t>(i * s.k + l)]) *
                                 b_global[static_cast<std::size_t>(l * s.n + j)];
        exact += term;
        magnitude += std::fabs(term);
      }
      const long double tolerance = (s.k + 1) * std::numeric_limits<T>::epsilon() * magnitude;
      ASSERT_LE(std::fabs(got[static_cast<std::size_t>(i * s.n + j)] - exact), tolerance)
          << where << " C(" << i << "," << j << ")";
    }
}

TYPED_TEST(Matmul, MatchesSerialProductOnEveryGridShapeAndPanelWidth) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::vector<Shape> shapes = {{1, 1, 1}, {5, 7, 3}, {17, 13, 19}, {33, 1, 2}, {3, 70, 5}, {0, 3, 4}, {4, 0, 5}, {2, 5, 0}};
  for (auto [rows, cols] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, rows, cols);
    EXPECT_EQ(grid.rows() * grid.cols(), world.size());
    for (const Shape& s : shapes)
      for (index_t w : {index_t(1), index_t(7), index_t(64), index_t(1000)}) {
        const std::uint64_t seed = test::seed() + static_cast<std::uint64_t>(s.m * 10000 + s.k * 100 + s.n);
        check_product<T>(grid, s, w, seed,
                         "grid " + std::to_string(grid.rows()) + "x" + std::to_string(grid.cols()) + " shape " +
                             std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) +
                             " panel " + std::to_string(w) + " seed=" + std::to_string(seed));
      }
  }
}

TYPED_TEST(Matmul, ChunkedPanelBroadcasts) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::size_t saved = detail::mpi_message_limit();
  detail::set_mpi_message_limit(24);  // panels of several chunks, split inside elements
  const ProcessGrid grid = ProcessGrid::create(world);
  check_product<T>(grid, {23, 29, 31}, 8, test::seed() + 3, "chunked, seed=" + std::to_string(test::seed() + 3));
  detail::set_mpi_message_limit(saved);
}

// Integers over their whole range (products overflow and wrap), complex numbers in the unit square.
template <class T>
std::vector<T> wide_random(index_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<T> v(static_cast<std::size_t>(n));
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<T> dist(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
    for (auto& x : v) x = dist(gen);
  } else {
    using F = typename T::value_type;
    std::uniform_real_distribution<F> dist(-1, 1);
    for (auto& x : v) x = T(dist(gen), dist(gen));
  }
  return v;
}

template <class T>
class MatmulOtherTypes : public ::testing::Test {};
using OtherTypes = ::testing::Types<std::int32_t, std::int64_t, std::complex<float>, std::complex<double>>;
TYPED_TEST_SUITE(MatmulOtherTypes, OtherTypes);

TYPED_TEST(MatmulOtherTypes, MatchesSerialProductOnEveryGridAndEngine) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::vector<Shape> shapes = {{1, 1, 1}, {5, 7, 3}, {17, 13, 19}, {65, 33, 66}, {3, 70, 5}, {0, 3, 4}, {4, 0, 5}};
  for (auto [rows, cols] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, rows, cols);
    for (const Shape& s : shapes)
      for (GemmEngine engine : {GemmEngine::tiled, GemmEngine::vendor}) {
        const std::uint64_t seed = test::seed() + static_cast<std::uint64_t>(s.m * 10000 + s.k * 100 + s.n);
        const std::string where = "grid " + std::to_string(grid.rows()) + "x" + std::to_string(grid.cols()) +
                                  " shape " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
                                  std::to_string(s.n) + " engine " + to_string(engine) + " seed=" + std::to_string(seed);
        const auto a_global = wide_random<T>(s.m * s.k, seed);
        const auto b_global = wide_random<T>(s.k * s.n, seed + 1);
        const auto a = DistMatrix<T>::from_replicated(grid, s.m, s.k, a_global);
        const auto b = DistMatrix<T>::from_replicated(grid, s.k, s.n, b_global);
        MatmulOptions options;
        options.panel_width = 16;
        options.engine = engine;
        const std::vector<T> got = matmul(a, b, options).gather(0);
        if (world.rank() != 0) continue;
        ASSERT_EQ(got.size(), static_cast<std::size_t>(s.m * s.n)) << where;
        for (index_t i = 0; i < s.m; ++i)
          for (index_t j = 0; j < s.n; ++j) {
            const T value = got[static_cast<std::size_t>(i * s.n + j)];
            if constexpr (std::is_integral_v<T>) {
              using U = std::make_unsigned_t<T>;
              U exact = 0;
              for (index_t l = 0; l < s.k; ++l)
                exact += static_cast<U>(a_global[static_cast<std::size_t>(i * s.k + l)]) *
                         static_cast<U>(b_global[static_cast<std::size_t>(l * s.n + j)]);
              ASSERT_EQ(value, static_cast<T>(exact)) << where << " C(" << i << "," << j << ")";
            } else {
              using F = typename T::value_type;
              std::complex<long double> exact = 0;
              long double magnitude = 0;
              for (index_t l = 0; l < s.k; ++l) {
                const T x = a_global[static_cast<std::size_t>(i * s.k + l)];
                const T y = b_global[static_cast<std::size_t>(l * s.n + j)];
                exact += std::complex<long double>(x.real(), x.imag()) * std::complex<long double>(y.real(), y.imag());
                magnitude += std::abs(std::complex<long double>(x)) * std::abs(std::complex<long double>(y));
              }
              const long double tolerance = 4 * (s.k + 1) * std::numeric_limits<F>::epsilon() * magnitude;
              ASSERT_LE(std::abs(std::complex<long double>(value.real(), value.imag()) - exact), tolerance)
                  << where << " C(" << i << "," << j << ")";
            }
          }
      }
  }
}

TEST(DistMatrix, GenerateIsTheCounterSequenceWhateverTheGrid) {
  const Context& world = test::world();
  const index_t rows = 11, cols = 7;
  const std::uint64_t seed = test::seed();
  for (auto [r, c] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, r, c);
    DistMatrix<double> m(grid, rows, cols);
    m.generate(seed);
    const auto all = m.gather(0);
    if (world.rank() != 0) continue;
    for (index_t i = 0; i < rows * cols; ++i)
      ASSERT_EQ(all[static_cast<std::size_t>(i)], counter_value<double>(seed, static_cast<std::uint64_t>(i))) << "i=" << i;
  }
}

TEST(Matmul, MismatchedShapesNameBothShapes) {
  const Context& world = test::world();
  const ProcessGrid grid = ProcessGrid::create(world);
  DistMatrix<double> a(grid, 3, 4), b(grid, 5, 6);
  try {
    (void)matmul(a, b);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("3x4"), std::string::npos) << what;
    EXPECT_NE(what.find("5x6"), std::string::npos) << what;
  }
  DistMatrix<double> ok(grid, 4, 2);
  MatmulOptions zero_width;
  zero_width.panel_width = 0;
  EXPECT_THROW((void)matmul(a, ok, zero_width), UsageError);
}

TEST(ProcessGrid, RejectsGridsThatDoNotMatchTheRanks) {
  const Context& world = test::world();
  const int p = world.size();
  EXPECT_THROW((void)ProcessGrid::create(world, p + 1, 1), UsageError);
  EXPECT_THROW((void)ProcessGrid::create(world, 2, p), UsageError);
  EXPECT_THROW((void)ProcessGrid::create(world, -1, -p), UsageError);
  try {
    (void)ProcessGrid::create(world, p, 2);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(p) + "x2"), std::string::npos) << e.what();
  }
}

TEST(ProcessGrid, CoordinatesAndSubContexts) {
  const Context& world = test::world();
  for (auto [r, c] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, r, c);
    EXPECT_EQ(world.rank(), grid.process_row() * grid.cols() + grid.process_col());
    EXPECT_EQ(grid.row().size(), grid.cols());
    EXPECT_EQ(grid.column().size(), grid.rows());
    EXPECT_EQ(grid.row().rank(), grid.process_col());
    EXPECT_EQ(grid.column().rank(), grid.process_row());
  }
}

}  // namespace
}  // namespace tessera
