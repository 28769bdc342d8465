// transpose and redistribute of DistMatrix between every pair of process grids of the rank count
// (row blocks P x 1, column blocks 1 x P, and 2 x 2 on four ranks), on shapes that no grid divides
// and with more ranks than rows or columns, against the global matrix on the host: every rank
// checks its own new block element by element. Transposing twice gives back the original bit for
// bit; pieces that cross the exchange in many messages (an artificially small message limit, the
// chunking that keeps messages above 2^31 bytes correct); target grids of other ranks are refused.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "algo_test_util.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/redistribute.hpp"

namespace tessera {
namespace {

template <class T>
class Redistribute : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(Redistribute, ElementTypes);

// Every R x C with R * C = ranks.
std::vector<ProcessGrid> every_grid(const Context& ctx) {
  std::vector<ProcessGrid> grids;
  for (int r = 1; r <= ctx.size(); ++r)
    if (ctx.size() % r == 0) grids.push_back(ProcessGrid::create(ctx, r, ctx.size() / r));
  return grids;
}

std::string grid_text(const ProcessGrid& g) { return std::to_string(g.rows()) + "x" + std::to_string(g.cols()); }

struct Shape {
  index_t rows, cols;
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {{0, 0}, {0, 3}, {3, 0},   {1, 1},   {1, 6},  {6, 1},
                                       {2, 3}, {5, 7}, {13, 17}, {33, 31}, {64, 1}, {1, 65}, {97, 50}, {257, 130}};
  return s;
}

// This rank's block of `m` against the global row-major matrix `global` (rows x cols), or its
// transpose where `transposed` (then m is cols x rows).
template <class T>
::testing::AssertionResult block_matches(const DistMatrix<T>& m, const std::vector<T>& global, index_t rows,
                                         index_t cols, bool transposed) {
  if (m.rows() != (transposed ? cols : rows) || m.cols() != (transposed ? rows : cols))
    return ::testing::AssertionFailure() << "result is " << m.rows() << "x" << m.cols();
  const std::vector<T> block = m.local_to_host();
  for (index_t r = 0; r < m.local_rows(); ++r)
    for (index_t c = 0; c < m.local_cols(); ++c) {
      const index_t i = m.row_offset() + r, j = m.col_offset() + c;
      const T want = transposed ? global[static_cast<std::size_t>(j * cols + i)] : global[static_cast<std::size_t>(i * cols + j)];
      const T got = block[static_cast<std::size_t>(r * m.local_cols() + c)];
      if (!(got == want))
        return ::testing::AssertionFailure() << "element (" << i << ", " << j << ") is " << got << ", expected " << want
                                             << " (rank " << m.grid().context().rank() << ")";
    }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(Redistribute, EveryPairOfGridsMatchesTheGlobalMatrix) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::vector<ProcessGrid> grids = every_grid(world);
  for (const Shape& s : shapes()) {
    const std::uint64_t seed = test::seed() + static_cast<std::uint64_t>(s.rows * 1000 + s.cols);
    const std::vector<T> global = test::random_vector<T>(s.rows * s.cols, seed);
    for (const ProcessGrid& from : grids) {
      const auto a = DistMatrix<T>::from_replicated(from, s.rows, s.cols, global);
      for (const ProcessGrid& to : grids) {
        const std::string where = std::to_string(s.rows) + "x" + std::to_string(s.cols) + " from grid " +
                                  grid_text(from) + " to " + grid_text(to) + " seed=" + std::to_string(seed);
        PhaseTimes times;
        const DistMatrix<T> moved = redistribute(a, to, &times);
        EXPECT_EQ(moved.grid().rows(), to.rows()) << where;
        EXPECT_TRUE(block_matches(moved, global, s.rows, s.cols, false)) << "redistribute " << where;
        const DistMatrix<T> t = transpose(a, to, &times);
        EXPECT_TRUE(block_matches(t, global, s.rows, s.cols, true)) << "transpose " << where;
        EXPECT_GE(times.local, 0.0);
      }
      // On its own grid.
      EXPECT_TRUE(block_matches(transpose(a), global, s.rows, s.cols, true))
          << "transpose on its own grid " << grid_text(from) << " " << s.rows << "x" << s.cols;
    }
  }
}

TYPED_TEST(Redistribute, TransposeTwiceIsTheOriginal) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::vector<ProcessGrid> grids = every_grid(world);
  const ProcessGrid rows = row_block_grid(world), columns = column_block_grid(world);
  EXPECT_EQ(rows.rows(), world.size());
  EXPECT_EQ(columns.cols(), world.size());
  for (const Shape& s : {Shape{37, 23}, Shape{4, 101}}) {
    const std::uint64_t seed = test::seed() * 3 + static_cast<std::uint64_t>(s.rows);
    const std::vector<T> global = test::random_vector<T>(s.rows * s.cols, seed);
    for (const ProcessGrid& from : grids) {
      const auto a = DistMatrix<T>::from_replicated(from, s.rows, s.cols, global);
      for (const ProcessGrid& via : {rows, columns, from}) {
        const DistMatrix<T> back = transpose(transpose(a, via), from);
        EXPECT_EQ(back.local_to_host(), a.local_to_host())
            << s.rows << "x" << s.cols << " on " << grid_text(from) << " via " << grid_text(via) << " seed=" << seed;
      }
    }
  }
}

// Restores the default limit even when an assertion leaves the test early.
struct MessageLimit {
  std::size_t saved = detail::mpi_message_limit();
  explicit MessageLimit(std::size_t bytes) { detail::set_mpi_message_limit(bytes); }
  ~MessageLimit() { detail::set_mpi_message_limit(saved); }
};

// With the limit at 7 bytes every piece crosses in many messages, the last one shorter and most
// of them splitting elements: the path a piece above 2^31 bytes takes with the real limit.
TYPED_TEST(Redistribute, PiecesOfManyMessages) {
  using T = TypeParam;
  const Context& world = test::world();
  const index_t rows = 61, cols = 67;
  const std::uint64_t seed = test::seed() + 61;
  const std::vector<T> global = test::random_vector<T>(rows * cols, seed);
  const ProcessGrid by_rows = row_block_grid(world), by_cols = column_block_grid(world), square = ProcessGrid::create(world);
  for (std::size_t limit : {std::size_t(7), std::size_t(1000)}) {
    const MessageLimit guard(limit);
    const auto a = DistMatrix<T>::from_replicated(by_rows, rows, cols, global);
    EXPECT_TRUE(block_matches(transpose(a), global, rows, cols, true)) << "limit " << limit;
    EXPECT_TRUE(block_matches(redistribute(a, square), global, rows, cols, false)) << "limit " << limit;
    EXPECT_TRUE(block_matches(transpose(a, by_cols), global, rows, cols, true)) << "limit " << limit;
  }
}

TEST(RedistributeErrors, TargetGridOfOtherRanksOrNone) {
  const Context& world = test::world();
  DistMatrix<double> a(ProcessGrid::create(world), 5, 4);
  a.fill(1.0);
  EXPECT_THROW((void)transpose(a, ProcessGrid{}), UsageError);
  EXPECT_THROW((void)redistribute(a, ProcessGrid{}), UsageError);
  if (world.size() == 1) return;
  // The same ranks in the reverse order: not the same grid.
  const Context reversed = world.split(0, world.size() - world.rank());
  const ProcessGrid other = ProcessGrid::create(reversed, world.size(), 1);
  try {
    (void)redistribute(a, other);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("same ranks"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
