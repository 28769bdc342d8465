// Stencils over distributed data against serial references on the host:
//   - the halo exchange of a Field2D on every process grid of the rank count (MPI_Dims_create's,
//     1 x P, P x 1, 2 x 2, 2 x 3, 3 x 2), ghost widths 1 to 3, sizes the grid does not divide and
//     blocks thinner than the ghost width: every ghost cell holds its owner's value, the boundary
//     value, or (outside the halo's shape) what it held before;
//   - Jacobi with 5- and 9-point weights (the Laplace ones and random ones), overlapped or not:
//     bitwise equal to a serial loop with the same arithmetic, so bitwise equal across grids, with
//     the same residual and the same iteration of convergence; stopped and resumed, the same again;
//     the parts of an iteration the benchmark times, queued several times back to back, the same;
//   - the 1-D convolution, zero and periodic, radii wider than the blocks, block and ragged
//     partitions: bitwise equal to a serial loop adding the same terms in the same order;
//   - the errors a user can make.
// This file is compiled with -ffp-contract=off (tests/mpi/CMakeLists.txt), as the cpu backend's
// stencils are: the serial references round each product and sum on its own.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "algo_test_util.hpp"
#include "tessera/framework/algorithms/stencil.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

// The grids of a rank count: MPI_Dims_create's (0 x 0), 1 x P, P x 1, and the square and oblong
// ones of 4 and 6 ranks.
std::vector<std::pair<int, int>> grids(int ranks) {
  std::vector<std::pair<int, int>> g = {{0, 0}, {1, ranks}};
  if (ranks > 1) g.push_back({ranks, 1});
  if (ranks == 4) g.push_back({2, 2});
  if (ranks == 6) {
    g.push_back({2, 3});
    g.push_back({3, 2});
  }
  return g;
}

std::string grid_text(const ProcessGrid& grid) { return std::to_string(grid.rows()) + "x" + std::to_string(grid.cols()); }

// A value in [-1, 1) for (seed, i, j), independent of the code under test (splitmix64).
template <class T>
T hashed(std::uint64_t seed, index_t i, index_t j) {
  std::uint64_t z = seed ^ (static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull) ^ (static_cast<std::uint64_t>(j) * 0xD1B54A32D192ED03ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<T>(static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0);
}

// The whole block with its ghost frame, row-major (local_rows + 2 w) x (local_cols + 2 w).
template <class T>
std::vector<T> frame_to_host(const Field2D<T>& f) {
  const index_t w = f.ghost_width();
  const index_t rows = f.local_rows() + 2 * w, cols = f.local_cols() + 2 * w;
  const kernels::Rectangle frame{-w * f.ld() - w, f.ld(), rows, cols};
  const kernels::Queue& q = f.context().queue();
  kernels::ScratchBuffer packed(q, static_cast<std::size_t>(rows * cols) * sizeof(T));
  kernels::pack_rectangles(q, f.origin(), std::span(&frame, 1), packed.data(), sizeof(T));
  std::vector<T> host(static_cast<std::size_t>(rows * cols));
  kernels::copy_to_host(q, host.data(), packed.data(), host.size() * sizeof(T));
  return host;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
template <class T>
bool same_bits_t(T a, T b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Rank 0's check of a gathered rows x cols field against the serial loop's: bitwise equal, or the
// first cell that differs named.
template <class T>
void expect_field_equal(const std::vector<T>& got, const std::vector<T>& want, index_t rows, index_t cols,
                        const std::string& where) {
  index_t c = 0;
  while (c < rows * cols && same_bits_t(got[static_cast<std::size_t>(c)], want[static_cast<std::size_t>(c)])) ++c;
  EXPECT_EQ(c, rows * cols) << where << " cell (" << c / cols << "," << c % cols << ") differs";
}

using test::ScopedEnv;

// ---- the halo exchange ----------------------------------------------------------------------------------

TEST(Field2D, HaloExchangeFillsEveryGhostCellOfItsShape) {
  const Context& world = test::world();
  constexpr float kBefore = -7.0f;
  auto cell = [](index_t i, index_t j) { return static_cast<float>(i * 1000 + j); };
  auto outer = [](index_t i, index_t j) { return static_cast<float>(-1000000 - (i + 10) * 1000 - (j + 10)); };
  const std::vector<std::pair<index_t, index_t>> shapes = {{1, 1}, {5, 7}, {13, 4}, {6, 31}};
  for (auto [gr, gc] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, gr, gc);
    for (auto [rows, cols] : shapes) {
      if (rows < grid.rows() || cols < grid.cols()) continue;
      for (int w : {1, 2, 3})
        for (StencilForm shape : {StencilForm::star, StencilForm::box}) {
          const std::string where = "grid " + grid_text(grid) + " field " + std::to_string(rows) + "x" + std::to_string(cols) +
                                    " ghost " + std::to_string(w) + (shape == StencilForm::box ? " box" : " star");
          Field2D<float> f(grid, rows, cols, w);
          f.fill(kBefore);
          // The owned cells from the global data.
          std::vector<float> block(static_cast<std::size_t>(f.local_rows() * f.local_cols()));
          for (index_t i = 0; i < f.local_rows(); ++i)
            for (index_t j = 0; j < f.local_cols(); ++j)
              block[static_cast<std::size_t>(i * f.local_cols() + j)] = cell(f.row_offset() + i, f.col_offset() + j);
          f.local_from_host(block);
          f.set_outer_ghosts(outer);
          HaloExchange halo(f.plane_layout(), shape, sizeof(float), grid.context());
          halo.run(f.origin());
          const std::vector<float> frame = frame_to_host(f);
          const index_t fr = f.local_rows() + 2 * w, fc = f.local_cols() + 2 * w;
          const index_t r0 = f.row_offset(), c0 = f.col_offset(), lr = f.local_rows(), lc = f.local_cols();
          std::string mismatch;  // the first wrong cell (no early return: the ranks stay in step)
          for (index_t a = 0; a < fr && mismatch.empty(); ++a)
            for (index_t b = 0; b < fc && mismatch.empty(); ++b) {
              const index_t i = r0 + a - w, j = c0 + b - w;  // global index of the frame cell
              const bool owned = a >= w && a < w + lr && b >= w && b < w + lc;
              const bool inside = i >= 0 && i < rows && j >= 0 && j < cols;
              const bool beside_rows = i >= r0 && i < r0 + lr, beside_cols = j >= c0 && j < c0 + lc;
              const bool in_shape = shape == StencilForm::box || beside_rows || beside_cols;
              const float want = owned || (inside && in_shape) ? cell(i, j) : !inside ? outer(i, j) : kBefore;
              const float got = frame[static_cast<std::size_t>(a * fc + b)];
              if (got != want)
                mismatch = where + " rank " + std::to_string(world.rank()) + " global (" + std::to_string(i) + "," +
                           std::to_string(j) + "): " + std::to_string(got) + ", want " + std::to_string(want);
            }
          EXPECT_EQ(mismatch, "");
        }
    }
  }
}

// TESSERA_HALO chooses how a HaloExchange moves its messages: peer-copy where the ranks' GPUs can
// copy to each other (every test job runs on one node), the DeviceComm path otherwise; auto takes
// peer-copy where the DeviceComm path stages through the host.
TEST(Field2D, HaloPathFollowsTesseraHalo) {
  const Context& world = test::world();
  const ProcessGrid grid = ProcessGrid::create(world);
  const Field2D<float> f(grid, 8, 8, 1);
  auto path_with = [&](const char* value) {
    const ScopedEnv halo_env("TESSERA_HALO", value);
    const HaloExchange halo(f.plane_layout(), StencilForm::star, sizeof(float), grid.context());
    return std::string(halo.path());
  };
  EXPECT_EQ(path_with("peer-store"), path_with("auto"));  // the Jacobi step's; a HaloExchange takes auto's
  const std::string device_comm = to_string(DeviceComm(grid.context()).path());
  EXPECT_EQ(path_with("device-comm"), device_comm);
  if (world.size() == 1) {
    EXPECT_EQ(path_with("peer-copy"), device_comm);  // nothing to exchange
  } else if (world.backend() == Backend::cuda) {
    EXPECT_EQ(path_with("peer-copy"), "peer-copy");
    EXPECT_EQ(path_with("auto"), device_comm == "staged" ? std::string("peer-copy") : device_comm);
  } else {
    EXPECT_EQ(path_with("auto"), device_comm);
    try {
      path_with("peer-copy");
      ADD_FAILURE() << "expected a UsageError";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("cuda backend"), std::string::npos) << e.what();
    }
  }
  try {
    path_with("nccl");
    ADD_FAILURE() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("TESSERA_HALO: 'nccl'"), std::string::npos) << e.what();
  }
}

TEST(Field2D, GatherAndReplicatedRoundTrip) {
  const Context& world = test::world();
  const ProcessGrid grid = ProcessGrid::create(world);
  const index_t rows = 9, cols = 11;
  const auto global = test::random_vector<double>(rows * cols, test::seed());
  const Field2D<double> f = Field2D<double>::from_replicated(grid, rows, cols, 2, global);
  const std::vector<double> back = f.gather(0);
  if (world.rank() == 0) {
    EXPECT_EQ(back, global);
  }
}

// A Field2D is a Field<T, 2>: its 2-D layout names the base's, and the halo of either (HaloExchange
// on the 2-D layout, Field::exchange_halo) fills the frame with the neighbours' cells and the
// boundary values, as the global data and the boundary function say.
TEST(Field2D, IsAField2WhoseHalosBothFillTheFrame) {
  const Context& world = test::world();
  const index_t rows = 13, cols = 31, w = 2;
  const auto global = test::random_vector<double>(rows * cols, test::seed() + 7);
  const auto outer = [](index_t i, index_t j) { return hashed<double>(99, i, j); };
  for (const auto& [gr, gc] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, gr, gc);
    const std::string where = "grid " + grid_text(grid);
    Field2D<double> a = Field2D<double>::from_replicated(grid, rows, cols, static_cast<int>(w), global);
    Field2D<double> b = Field2D<double>::from_replicated(grid, rows, cols, static_cast<int>(w), global);
    const Field<double, 2>& base = a;
    EXPECT_EQ(a.ld(), base.stride(0)) << where;
    EXPECT_EQ(a.local_rows(), base.local_extent(0)) << where;
    EXPECT_EQ(a.local_cols(), base.local_extent(1)) << where;
    EXPECT_EQ(a.row_offset(), base.offset(0)) << where;
    EXPECT_EQ(a.col_offset(), base.offset(1)) << where;
    EXPECT_EQ(base.ghost_width(0), w) << where;
    EXPECT_EQ(base.ghost_width(1), w) << where;
    a.set_outer_ghosts(outer);
    b.set_outer_ghosts(outer);
    HaloExchange halo(a.plane_layout(), StencilForm::box, sizeof(double), grid.context());
    halo.run(a.origin());
    b.exchange_halo(StencilForm::box);
    const index_t lr = a.local_rows(), lc = a.local_cols();
    std::vector<double> want;
    for (index_t i = -w; i < lr + w; ++i)
      for (index_t j = -w; j < lc + w; ++j) {
        const index_t gi = a.row_offset() + i, gj = a.col_offset() + j;
        const bool inside = gi >= 0 && gi < rows && gj >= 0 && gj < cols;
        want.push_back(inside ? global[static_cast<std::size_t>(gi * cols + gj)] : outer(gi, gj));
      }
    const std::vector<double> got_a = frame_to_host(a), got_b = frame_to_host(b);
    ASSERT_EQ(got_a.size(), want.size()) << where;
    for (std::size_t k = 0; k < want.size(); ++k) {
      ASSERT_TRUE(same_bits(got_a[k], want[k])) << where << " HaloExchange, frame cell " << k;
      ASSERT_TRUE(same_bits(got_b[k], want[k])) << where << " Field::exchange_halo, frame cell " << k;
    }
  }
}

TEST(Field2D, RefusesAGridWithMoreRowsOrColumnsThanTheField) {
  const Context& world = test::world();
  const int p = world.size();
  const ProcessGrid column = ProcessGrid::create(world, p, 1);
  EXPECT_THROW(Field2D<float>(column, p - 1, 10, 1), UsageError);
  const ProcessGrid row = ProcessGrid::create(world, 1, p);
  try {
    Field2D<float> f(row, 10, p - 1, 1);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("1x" + std::to_string(p)), std::string::npos) << e.what();
  }
  EXPECT_THROW(Field2D<float>(row, 10, 10, -1), UsageError);
}

// ---- Jacobi ---------------------------------------------------------------------------------------------

// The serial reference: the field with a ring of boundary cells, iterated `iterations` times with
// the contract's arithmetic. Returns the interior and sets *residual to max |u_k - u_(k-1)| of the
// last iteration (the bits of the largest |difference|, a NaN above all).
template <class T>
std::vector<T> serial_jacobi(index_t rows, index_t cols, const std::vector<T>& initial,
                             const std::function<T(index_t, index_t)>& boundary, const StencilWeights<T>& w,
                             index_t iterations, double* residual) {
  const index_t pc = cols + 2;
  std::vector<T> u(static_cast<std::size_t>((rows + 2) * pc)), v;
  auto at = [&](std::vector<T>& a, index_t i, index_t j) -> T& { return a[static_cast<std::size_t>((i + 1) * pc + j + 1)]; };
  for (index_t i = -1; i <= rows; ++i)
    for (index_t j = -1; j <= cols; ++j)
      at(u, i, j) = i < 0 || i >= rows || j < 0 || j >= cols ? boundary(i, j) : initial[static_cast<std::size_t>(i * cols + j)];
  v = u;
  double largest = 0;
  for (index_t k = 0; k < iterations; ++k) {
    largest = 0;
    bool nan = false;
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j) {
        T acc = w.centre * at(u, i, j);
        acc = acc + w.north * at(u, i - 1, j);
        acc = acc + w.south * at(u, i + 1, j);
        acc = acc + w.west * at(u, i, j - 1);
        acc = acc + w.east * at(u, i, j + 1);
        if (w.shape == StencilShape::nine_point) {
          acc = acc + w.north_west * at(u, i - 1, j - 1);
          acc = acc + w.north_east * at(u, i - 1, j + 1);
          acc = acc + w.south_west * at(u, i + 1, j - 1);
          acc = acc + w.south_east * at(u, i + 1, j + 1);
        }
        at(v, i, j) = acc;
        const T d = static_cast<T>(acc - at(u, i, j));
        if (std::isnan(d)) nan = true;
        largest = std::max(largest, static_cast<double>(std::fabs(d)));
      }
    if (nan) largest = std::numeric_limits<double>::quiet_NaN();
    std::swap(u, v);
  }
  *residual = largest;
  std::vector<T> interior(static_cast<std::size_t>(rows * cols));
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) interior[static_cast<std::size_t>(i * cols + j)] = at(u, i, j);
  return interior;
}

template <class T>
StencilWeights<T> random_weights(StencilShape shape, std::uint64_t seed) {
  StencilWeights<T> w;
  w.shape = shape;
  T* all[] = {&w.centre, &w.north, &w.south, &w.west, &w.east, &w.north_west, &w.north_east, &w.south_west, &w.south_east};
  int k = 0;
  for (T* p : all) *p = hashed<T>(seed, 77, k++) / T(3);  // |sum| < 3: iterates stay bounded over a few steps
  return w;
}

template <class T>
class JacobiTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(JacobiTest, FloatTypes);

TYPED_TEST(JacobiTest, BitwiseEqualToTheSerialLoopOnEveryGrid) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::uint64_t seed = test::seed();
  // {29, 70}: blocks wide enough that the overlapped step moves the interior to an aligned column.
  const std::vector<std::pair<index_t, index_t>> shapes = {{1, 1}, {7, 5}, {6, 33}, {17, 13}, {29, 70}};
  const index_t iterations = 7;
  for (auto [gr, gc] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, gr, gc);
    for (auto [rows, cols] : shapes) {
      if (rows < grid.rows() || cols < grid.cols()) continue;
      const auto initial = test::random_vector<T>(rows * cols, seed + static_cast<std::uint64_t>(rows * 100 + cols));
      const std::function<T(index_t, index_t)> boundary = [&](index_t i, index_t j) { return hashed<T>(seed, i, j); };
      for (StencilShape shape : {StencilShape::five_point, StencilShape::nine_point})
        for (bool laplace : {true, false}) {
          const StencilWeights<T> w = laplace ? (shape == StencilShape::five_point ? StencilWeights<T>::jacobi5()
                                                                                    : StencilWeights<T>::jacobi9())
                                              : random_weights<T>(shape, seed + 5);
          double want_residual = 0;
          const std::vector<T> want = serial_jacobi<T>(rows, cols, initial, boundary, w, iterations, &want_residual);
          for (int ghost : {1, 3})
            for (bool overlap : {true, false})
              for (bool plain : {false, true}) {
                // plain: a Field<T, 2> made on a CartesianGrid, not a Field2D.
                const std::string where = "grid " + grid_text(grid) + " field " + std::to_string(rows) + "x" +
                                          std::to_string(cols) + " " + to_string(shape) + (laplace ? " laplace" : " random") +
                                          " ghost " + std::to_string(ghost) + (overlap ? " overlapped" : " back to back") +
                                          (plain ? " Field<T, 2>" : " Field2D") + " seed=" + std::to_string(seed);
                Field2D<T> field2d;
                Field<T, 2> field;
                if (plain) {
                  field = Field<T, 2>(CartesianGrid::create(world, {grid.rows(), grid.cols()}), {rows, cols}, {ghost, ghost});
                  field.from_replicated(initial);
                  field.set_outer_ghosts([&](const std::array<index_t, 2>& at) { return boundary(at[0], at[1]); });
                } else {
                  field2d = Field2D<T>::from_replicated(grid, rows, cols, ghost, initial);
                  field2d.set_outer_ghosts(boundary);
                }
                Field<T, 2>& u = plain ? field : field2d;
                JacobiOptions options;
                options.check_every = 3;
                options.overlap = overlap;
                Jacobi<T> solver(u, w, options);
                solver.run_until(iterations);
                EXPECT_EQ(solver.iteration(), iterations) << where;
                EXPECT_EQ(solver.residual_iteration(), iterations) << where;
                EXPECT_TRUE(same_bits(solver.residual(), want_residual))
                    << where << ": residual " << solver.residual() << ", serial " << want_residual;
                const std::vector<T> got = u.gather(0);
                if (world.rank() != 0) continue;
                expect_field_equal(got, want, rows, cols, where);
              }
        }
    }
  }
}

// The measuring parts queued several times back to back: the sweeps and exchanges leave u as it
// was, and steps overlapped and not give the serial loop's iterates.
TYPED_TEST(JacobiTest, PartsQueuedBackToBackLeaveTheSerialLoopsIterates) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::uint64_t seed = test::seed();
  for (auto [gr, gc] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, gr, gc);
    for (auto [rows, cols] : std::vector<std::pair<index_t, index_t>>{{17, 13}, {29, 70}}) {
      const auto initial = test::random_vector<T>(rows * cols, seed + static_cast<std::uint64_t>(rows));
      const std::function<T(index_t, index_t)> boundary = [&](index_t i, index_t j) { return hashed<T>(seed, i, j); };
      const StencilWeights<T> w = StencilWeights<T>::jacobi9();
      double residual = 0;
      const std::vector<T> want = serial_jacobi<T>(rows, cols, initial, boundary, w, 7, &residual);
      const std::string where =
          "grid " + grid_text(grid) + " field " + std::to_string(rows) + "x" + std::to_string(cols) + " seed=" + std::to_string(seed);
      Field2D<T> u = Field2D<T>::from_replicated(grid, rows, cols, 2, initial);
      u.set_outer_ghosts(boundary);
      Jacobi<T> solver(u, w, JacobiOptions{});
      detail::JacobiParts<T> parts(solver);
      parts.sweep(3);
      parts.sweep_split(2);
      parts.exchange(3);
      parts.step(true, 4);
      parts.step(false, 3);
      EXPECT_EQ(solver.iteration(), 7) << where;
      const std::vector<T> got = u.gather(0);
      if (world.rank() != 0) continue;
      expect_field_equal(got, want, rows, cols, where);
    }
  }
}

// TESSERA_HALO=peer-store: under cuda the overlapped step's frame writes its cells straight into the
// neighbours' ghost cells (every test job runs on one node); mixed with the other ways of stepping
// and the measuring parts, the iterates are the serial loop's, blocks without an interior (the
// frame is the block) and wide ghosts included. Under cpu the solver refuses it, naming why.
TYPED_TEST(JacobiTest, PeerStoreStepsGiveTheSerialLoopsIterates) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::uint64_t seed = test::seed();
  const ScopedEnv halo("TESSERA_HALO", "peer-store");
  for (auto [gr, gc] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, gr, gc);
    // 520 x 1100: under cuda on two GPUs the 9-point float step (and the 5-point double) sweeps its
    // frame at the end of the interior's launch (Jacobi::frame_last). The CPU backend runs
    // peer-store at one rank only, where that size adds nothing but the serial loop's time.
    for (auto [rows, cols] : std::vector<std::pair<index_t, index_t>>{{7, 5}, {17, 13}, {29, 70}, {520, 1100}}) {
      if (rows < grid.rows() || cols < grid.cols()) continue;
      if (rows == 520 && world.backend() != Backend::cuda) continue;
      const auto initial = test::random_vector<T>(rows * cols, seed + static_cast<std::uint64_t>(rows));
      for (StencilShape shape : {StencilShape::five_point, StencilShape::nine_point})
        for (int ghost : {1, 2}) {
          const std::function<T(index_t, index_t)> boundary = [&](index_t i, index_t j) { return hashed<T>(seed, i, j); };
          const StencilWeights<T> w = random_weights<T>(shape, seed + 9);
          const std::string where = "grid " + grid_text(grid) + " field " + std::to_string(rows) + "x" +
                                    std::to_string(cols) + " " + to_string(shape) + " ghost " + std::to_string(ghost) +
                                    " seed=" + std::to_string(seed);
          Field2D<T> u = Field2D<T>::from_replicated(grid, rows, cols, ghost, initial);
          u.set_outer_ghosts(boundary);
          if (world.backend() != Backend::cuda && world.size() > 1) {
            try {
              Jacobi<T> solver(u, w, JacobiOptions{});
              ADD_FAILURE() << where << ": expected a UsageError";
            } catch (const UsageError& e) {
              EXPECT_NE(std::string(e.what()).find("TESSERA_HALO=peer-store"), std::string::npos) << e.what();
              EXPECT_NE(std::string(e.what()).find("cuda backend"), std::string::npos) << e.what();
            }
            continue;
          }
          // The serial loop only where the solver runs (and on rank 0, which compares): it is most
          // of this test's time at -O0.
          double residual = 0;
          const std::vector<T> want =
              world.rank() == 0 ? serial_jacobi<T>(rows, cols, initial, boundary, w, 8, &residual) : std::vector<T>{};
          JacobiOptions options;
          options.check_every = 3;
          Jacobi<T> solver(u, w, options);
          EXPECT_EQ(std::string(solver.exchange_path()),
                    world.size() > 1 ? std::string("peer-store") : std::string(solver.halo().path()))
              << where;
          detail::JacobiParts<T> parts(solver);
          parts.step(true, 2);
          parts.step(false, 1);
          parts.exchange(1);
          parts.step(true, 1);
          parts.sweep(1);
          parts.sweep_split(1);
          solver.run_until(7);
          parts.step(true, 1);
          EXPECT_EQ(solver.iteration(), 8) << where;
          const std::vector<T> got = u.gather(0);
          if (world.rank() != 0) continue;
          expect_field_equal(got, want, rows, cols, where + (solver.frame_last() ? ", frame last" : ""));
        }
    }
  }
}

// The overlapped step's path: peer-store under auto wherever it can be taken (under cuda: every test
// job runs on one node), the halo's path where TESSERA_HALO names one, and on one rank.
TEST(Jacobi, ExchangePathFollowsTesseraHalo) {
  const Context& world = test::world();
  const ProcessGrid grid = ProcessGrid::create(world);
  Field2D<float> u(grid, 16, 16, 1);
  u.fill(0.0f);
  auto path_with = [&](const char* value) {
    const ScopedEnv halo_env("TESSERA_HALO", value);
    const Jacobi<float> solver(u, StencilWeights<float>::jacobi5(), JacobiOptions{});
    return std::make_pair(std::string(solver.exchange_path()), std::string(solver.halo().path()));
  };
  const bool stores = world.backend() == Backend::cuda && world.size() > 1;
  for (const char* value : {"auto", "device-comm", "peer-copy"}) {
    if (std::string(value) == "peer-copy" && world.backend() != Backend::cuda && world.size() > 1) continue;
    const auto [path, halo] = path_with(value);
    EXPECT_EQ(path, stores && std::string(value) == "auto" ? std::string("peer-store") : halo) << value;
  }
}

TYPED_TEST(JacobiTest, StopsAtTheSameCheckOnEveryGridAndWhenResumed) {
  using T = TypeParam;
  const Context& world = test::world();
  const index_t rows = 11, cols = 9;
  const std::vector<T> initial(static_cast<std::size_t>(rows * cols), T(0));
  const std::function<T(index_t, index_t)> boundary = [](index_t i, index_t) { return i < 0 ? T(1) : T(0); };
  JacobiOptions options;
  options.check_every = 4;
  options.tolerance = 1e-3;
  // The serial run: the first multiple of 4 whose residual is below the tolerance.
  index_t want_iterations = 0;
  double residual = 0;
  std::vector<T> want;
  for (index_t k = 4; k <= 400; k += 4) {
    want = serial_jacobi<T>(rows, cols, initial, boundary, StencilWeights<T>::jacobi5(), k, &residual);
    if (residual < options.tolerance) {
      want_iterations = k;
      break;
    }
  }
  ASSERT_GT(want_iterations, 0);
  for (auto [gr, gc] : grids(world.size())) {
    const ProcessGrid grid = ProcessGrid::create(world, gr, gc);
    if (rows < grid.rows() || cols < grid.cols()) continue;
    const std::string where = "grid " + grid_text(grid);
    // In one call, and in three (stopped at 9 and 30, each time resumed by a new solver that is
    // given only the field and the iteration count, as a restart from a checkpoint is).
    Field2D<T> straight = Field2D<T>::from_replicated(grid, rows, cols, 1, initial);
    straight.set_outer_ghosts(boundary);
    Jacobi<T> one(straight, StencilWeights<T>::jacobi5(), options);
    one.run_until(400);
    EXPECT_TRUE(one.converged()) << where;
    EXPECT_EQ(one.iteration(), want_iterations) << where;
    EXPECT_TRUE(same_bits(one.residual(), residual)) << where;
    Field2D<T> resumed = Field2D<T>::from_replicated(grid, rows, cols, 1, initial);
    resumed.set_outer_ghosts(boundary);
    index_t done = 0;
    for (index_t stop : {index_t(9), index_t(30), index_t(400)}) {
      Jacobi<T> part(resumed, StencilWeights<T>::jacobi5(), options, done);
      part.run_until(stop);
      done = part.iteration();
      if (part.converged()) break;
    }
    EXPECT_EQ(done, want_iterations) << where;
    const std::vector<T> a = straight.gather(0), b = resumed.gather(0);
    if (world.rank() == 0) {
      EXPECT_EQ(a.size(), want.size());
      EXPECT_EQ(b.size(), want.size());
      std::size_t c = 0;
      while (c < want.size() && c < a.size() && c < b.size() && same_bits_t(a[c], want[c]) && same_bits_t(b[c], want[c])) ++c;
      EXPECT_EQ(c, want.size()) << where << " cell " << c << " differs (in one call, or resumed)";
    }
  }
}

TEST(Jacobi, RefusesFieldsItCannotSweep) {
  const Context& world = test::world();
  const ProcessGrid grid = ProcessGrid::create(world);
  const StencilWeights<float> w = StencilWeights<float>::jacobi5();
  Field2D<float> u(grid, 8, 8, 0);
  EXPECT_THROW(Jacobi<float>(u, w, JacobiOptions{}), UsageError);
  Field2D<float> v(grid, 8, 8, 1);
  JacobiOptions never;
  never.check_every = 0;
  EXPECT_THROW(Jacobi<float>(v, w, never), UsageError);
  // A Field<T, 2> of two ghost widths, a periodic axis, or a rank without cells.
  const CartesianGrid cartesian = CartesianGrid::create(world, {0, 0});
  Field<float, 2> widths(cartesian, {8, 8}, {1, 2});
  EXPECT_THROW(Jacobi<float>(widths, w, JacobiOptions{}), UsageError);
  Field<float, 2> periodic(cartesian, {8, 8}, {1, 1}, {AxisBoundary::dirichlet, AxisBoundary::periodic});
  EXPECT_THROW(Jacobi<float>(periodic, w, JacobiOptions{}), UsageError);
  if (world.size() > 1) {
    Field<float, 2> thin(CartesianGrid::create(world, {world.size(), 1}), {world.size() - 1, 8}, {1, 1});
    EXPECT_THROW(Jacobi<float>(thin, w, JacobiOptions{}), UsageError);
  }
}

// ---- convolve -------------------------------------------------------------------------------------------

template <class T>
std::vector<T> serial_convolve(const std::vector<T>& a, const std::vector<T>& w, Boundary boundary) {
  const auto n = static_cast<index_t>(a.size());
  const auto taps = static_cast<index_t>(w.size());
  const index_t r = (taps - 1) / 2;
  auto at = [&](index_t j) -> T {
    if (j >= 0 && j < n) return a[static_cast<std::size_t>(j)];
    if (boundary == Boundary::zero) return T(0);
    return a[static_cast<std::size_t>(((j % n) + n) % n)];
  };
  std::vector<T> out(a.size());
  for (index_t i = 0; i < n; ++i) {
    T acc = w[0] * at(i + r);  // fma(w0, x, -0) rounds as the product alone
    for (index_t k = 1; k < taps; ++k) acc = std::fma(w[static_cast<std::size_t>(k)], at(i + r - k), acc);
    out[static_cast<std::size_t>(i)] = acc;
  }
  return out;
}

template <class T>
class ConvolveTest : public ::testing::Test {};
TYPED_TEST_SUITE(ConvolveTest, FloatTypes);

TYPED_TEST(ConvolveTest, BitwiseEqualToTheSerialLoop) {
  using T = TypeParam;
  const Context& world = test::world();
  const int p = world.size();
  const std::vector<index_t> sizes = {0, 1, 2, index_t(p) - 1, index_t(p) + 1, 17, 100, 1031};
  for (index_t n : sizes) {
    if (n < 0) continue;
    for (index_t radius : {index_t(0), index_t(1), index_t(3), index_t(8), index_t(9), index_t(40), index_t(300)})
      for (Boundary boundary : {Boundary::zero, Boundary::periodic}) {
        if (boundary == Boundary::periodic && radius > n && n > 0) continue;  // refused (below)
        const std::uint64_t seed = test::seed() + static_cast<std::uint64_t>(n * 1000 + radius);
        const auto data = test::random_vector<T>(n, seed);
        const auto weights = test::random_vector<T>(2 * radius + 1, seed + 1);
        const std::vector<T> want = serial_convolve(data, weights, boundary);
        for (bool ragged : {false, true}) {
          const Partition part = ragged ? test::random_partition(n, p, seed + 2) : Partition::block(n, p);
          const auto a = DistArray<T>::from_replicated(world, data, part);
          const DistArray<T> out = convolve(a, std::span<const T>(weights), boundary);
          EXPECT_EQ(out.partition(), part);
          const std::vector<T> got = out.gather(0);
          if (world.rank() != 0) continue;
          const std::string where = "n=" + std::to_string(n) + " radius=" + std::to_string(radius) + " " +
                                    to_string(boundary) + (ragged ? " ragged" : " block") + " seed=" + std::to_string(seed);
          EXPECT_EQ(got.size(), want.size()) << where;
          std::size_t i = 0;
          while (i < want.size() && i < got.size() && same_bits_t(got[i], want[i])) ++i;
          EXPECT_EQ(i, want.size()) << where << " element " << i << " differs";
        }
      }
  }
}

TEST(Convolve, RefusesAnEvenKernelAndAPeriodicRadiusBeyondTheArray) {
  const Context& world = test::world();
  const DistArray<double> a(world, 10);
  const std::vector<double> even = {1, 2};
  EXPECT_THROW((void)convolve(a, std::span<const double>(even)), UsageError);
  const std::vector<double> wide(23, 1.0);  // radius 11 > 10 elements
  try {
    (void)convolve(a, std::span<const double>(wide), Boundary::periodic);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("radius 11"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW((void)convolve(a, std::span<const double>(wide), Boundary::zero));
}

}  // namespace
}  // namespace tessera
