// Transpose and redistribution of distributed matrices between layouts.
//
// A DistMatrix's layout is its process grid: row blocks are a P x 1 grid, column blocks a 1 x P
// grid, 2-D blocks an R x C grid (dist_matrix.hpp). redistribute() moves a matrix from its grid to
// any other grid of the same ranks; transpose() makes A^T on any grid. Both are one all-to-all
// exchange, in three phases:
//   pack      each rank copies what each other rank needs into one contiguous piece per peer, in
//             the order the peer stores it: through the local transpose kernel for transpose(),
//             as strided row copies for redistribute(). Skipped where every outgoing piece already
//             is one contiguous run of the block (whole rows), which the exchange then reads in place.
//   exchange  one DeviceComm::alltoallv (NCCL grouped send/recv, CUDA-aware MPI, or staging through
//             pinned host memory; byte counts are 64-bit and MPI messages go in chunks below 2^31).
//   unpack    each received piece is copied into its place in the new block; skipped where every
//             piece is whole rows of it, which the exchange then writes in place.
// What a rank keeps for itself never crosses the exchange: it goes from the old block to the new
// one in the pack phase, in one kernel.
//
// PhaseTimes: local = pack (with the part a rank keeps), communication = exchange, fixup = unpack,
// host = the plan (which rectangle goes where) and allocation.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/dist_matrix.hpp"

namespace tessera {

// The layouts by name: row blocks (P x 1) and column blocks (1 x P) over all ranks of ctx.
// Collective over ctx, like ProcessGrid::create.
ProcessGrid row_block_grid(const Context& ctx);
ProcessGrid column_block_grid(const Context& ctx);

namespace detail {

// A rectangle of a block, in the block's local coordinates.
struct BlockRect {
  index_t row0 = 0, col0 = 0, rows = 0, cols = 0;
  index_t size() const { return rows * cols; }
  bool empty() const { return rows == 0 || cols == 0; }
  bool operator==(const BlockRect&) const = default;
};

struct GridShape {
  int rows = 1, cols = 1;
};

// One rank's share of moving a global rows x cols matrix A from grid `from` to grid `to` (as A, or
// as A^T where transposed): for each peer, the rectangle of this rank's old block that the peer
// gets (old-block coordinates, A's orientation), and the rectangle of this rank's new block that
// the peer sends (new-block coordinates, the new matrix's orientation). Entry `rank` is what the
// rank keeps. Only partition arithmetic: the same on every rank, no communication.
struct RedistributionPlan {
  std::vector<BlockRect> send;
  std::vector<BlockRect> recv;
  index_t old_local_rows = 0, old_local_cols = 0;
  index_t new_local_rows = 0, new_local_cols = 0;
};
RedistributionPlan plan_redistribution(index_t rows, index_t cols, GridShape from, GridShape to, bool transposed,
                                       int rank);

}  // namespace detail

namespace detail {
// The byte-level exchange under redistribute() and transpose(): any element size.
MatrixStorage move_matrix(const MatrixStorage& a, const ProcessGrid& to, bool transposed, PhaseTimes* times,
                          const char* operation);
CollectivePlan redistribute_plan(const MatrixStorage& a, const ProcessGrid& to, bool transposed);
}  // namespace detail

// The same matrix on the grid `to`, which must span the same ranks as a's grid (UsageError
// otherwise). One all-to-all exchange; any shapes, any two grids, ranks with empty blocks. Any
// element type (moved as bytes).
template <class T>
DistMatrix<T> redistribute(const DistMatrix<T>& a, const ProcessGrid& to, PhaseTimes* times = nullptr) {
  return DistMatrix<T>(detail::move_matrix(a.storage(), to, false, times, "redistribute"));
}

// A^T (a.cols() x a.rows()) on the grid `to` (same ranks as a's grid), with one all-to-all exchange.
// The elements are moved, not conjugated (a complex matrix's plain transpose).
template <class T>
DistMatrix<T> transpose(const DistMatrix<T>& a, const ProcessGrid& to, PhaseTimes* times = nullptr) {
  return DistMatrix<T>(detail::move_matrix(a.storage(), to, true, times, "transpose"));
}

// A^T on a's own grid (row blocks stay row blocks: the transpose of an FFT's slab decomposition).
template <class T>
DistMatrix<T> transpose(const DistMatrix<T>& a, PhaseTimes* times = nullptr) {
  return transpose(a, a.grid(), times);
}

// The collectives of one redistribute / transpose of `a` to the grid `to` (collective_plan.hpp), on
// this rank: one all-to-all in which it sends what every other rank needs from its block (what it
// keeps for itself does not travel). Pure arithmetic: not collective.
template <class T>
CollectivePlan redistribute_plan(const DistMatrix<T>& a, const ProcessGrid& to, bool transposed) {
  return detail::redistribute_plan(a.storage(), to, transposed);
}

}  // namespace tessera
