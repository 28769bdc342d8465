// The plan of a redistribution (which rectangle of which block goes to which rank) on matrices far
// too large to allocate here: pieces of more than 2^31 elements and bytes, the sizes the exchange
// must carry in 64-bit counts. Every rank's plan is made and the plans are checked against each
// other: what p sends q is what q expects from p, in the right orientation, and the pieces tile
// every old and every new block exactly once.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/framework/redistribute.hpp"

namespace tessera {
namespace {

using detail::BlockRect;
using detail::GridShape;

void check_plans(index_t rows, index_t cols, GridShape from, GridShape to, bool transposed, const std::string& where) {
  const int ranks = from.rows * from.cols;
  std::vector<detail::RedistributionPlan> plans;
  for (int p = 0; p < ranks; ++p) plans.push_back(detail::plan_redistribution(rows, cols, from, to, transposed, p));
  index_t old_total = 0, new_total = 0;
  for (int p = 0; p < ranks; ++p) {
    const auto& mine = plans[static_cast<std::size_t>(p)];
    index_t sent = 0, received = 0;
    for (int q = 0; q < ranks; ++q) {
      const BlockRect& s = mine.send[static_cast<std::size_t>(q)];
      const BlockRect& r = plans[static_cast<std::size_t>(q)].recv[static_cast<std::size_t>(p)];
      // Same piece, seen from both ends: transposed pieces swap rows and columns.
      ASSERT_EQ(s.size(), r.size()) << where << " p=" << p << " q=" << q;
      if (!s.empty()) {
        EXPECT_EQ(transposed ? s.cols : s.rows, r.rows) << where << " p=" << p << " q=" << q;
        EXPECT_EQ(transposed ? s.rows : s.cols, r.cols) << where << " p=" << p << " q=" << q;
        EXPECT_LE(s.row0 + s.rows, mine.old_local_rows) << where;
        EXPECT_LE(s.col0 + s.cols, mine.old_local_cols) << where;
      }
      sent += s.size();
      received += mine.recv[static_cast<std::size_t>(q)].size();
    }
    // Block partitions cut a block into a grid of pieces: their areas add up to the block.
    EXPECT_EQ(sent, mine.old_local_rows * mine.old_local_cols) << where << " p=" << p;
    EXPECT_EQ(received, mine.new_local_rows * mine.new_local_cols) << where << " p=" << p;
    old_total += sent;
    new_total += received;
  }
  EXPECT_EQ(old_total, rows * cols) << where;
  EXPECT_EQ(new_total, rows * cols) << where;
}

TEST(RedistributionPlan, PiecesAbove2To31ElementsAreCountedIn64Bits) {
  const index_t rows = 200003, cols = 100001;  // 2.0e10 elements
  for (bool transposed : {false, true}) {
    check_plans(rows, cols, {2, 1}, {1, 2}, transposed, "2x1 -> 1x2");
    check_plans(rows, cols, {2, 2}, {4, 1}, transposed, "2x2 -> 4x1");
    check_plans(rows, cols, {1, 3}, {3, 1}, transposed, "1x3 -> 3x1");
  }
  // Row blocks to row blocks, transposed, on two ranks: each rank sends the other a quarter of the
  // matrix, about 5.0e9 elements (4.0e10 bytes of doubles), far beyond 2^31.
  const auto plan = detail::plan_redistribution(rows, cols, {2, 1}, {2, 1}, true, 0);
  const BlockRect& piece = plan.send[1];
  EXPECT_GT(piece.size(), index_t(1) << 32);
  EXPECT_EQ(piece.rows, (rows + 1) / 2);
  EXPECT_EQ(piece.cols, cols / 2);
  EXPECT_EQ(piece.col0, (cols + 1) / 2);
}

TEST(RedistributionPlan, SmallShapesOnEveryGridPair) {
  const std::vector<GridShape> grids = {{1, 6}, {6, 1}, {2, 3}, {3, 2}};
  for (auto [rows, cols] : {std::pair<index_t, index_t>{0, 0}, {1, 1}, {2, 9}, {7, 5}, {13, 17}})
    for (GridShape from : grids)
      for (GridShape to : grids)
        for (bool transposed : {false, true})
          check_plans(rows, cols, from, to, transposed,
                      std::to_string(rows) + "x" + std::to_string(cols) + " " + std::to_string(from.rows) + "x" +
                          std::to_string(from.cols) + " -> " + std::to_string(to.rows) + "x" + std::to_string(to.cols) +
                          (transposed ? " transposed" : ""));
}

}  // namespace
}  // namespace tessera
