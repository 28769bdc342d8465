// transpose and redistribute of DistMatrix on bytes: plan -> pack -> one all-to-all -> unpack, on the
// exchange skeleton (redistribute.hpp, algorithms/exchange.hpp).
//
// Every rank knows both grids and both partitions, so the plan (which rectangle of which block
// goes to which rank) is arithmetic on the host, the same on every rank, with no counting pass and
// no exchange of sizes. Pieces travel in the orientation and order the receiver stores them: a
// transposed piece is transposed once, while it is packed.
#include "tessera/framework/redistribute.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "tessera/framework/algorithms/exchange.hpp"
#include "tessera/kernels/copy_2d.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/transpose.hpp"

namespace tessera {

ProcessGrid row_block_grid(const Context& ctx) { return ProcessGrid::create(ctx, ctx.size(), 1); }
ProcessGrid column_block_grid(const Context& ctx) { return ProcessGrid::create(ctx, 1, ctx.size()); }

namespace detail {
namespace {

struct Range {
  index_t begin = 0, end = 0;
};

Range part(const Partition& p, int i) { return {p.offset(i), p.offset(i) + p.local_size(i)}; }

// The rectangle rows x cols of the global matrix, intersected with the block at (block_rows,
// block_cols), in the block's local coordinates (all zero when they do not meet).
BlockRect local_overlap(Range rows, Range cols, Range block_rows, Range block_cols) {
  const index_t r0 = std::max(rows.begin, block_rows.begin), r1 = std::min(rows.end, block_rows.end);
  const index_t c0 = std::max(cols.begin, block_cols.begin), c1 = std::min(cols.end, block_cols.end);
  if (r1 <= r0 || c1 <= c0) return {};
  return {r0 - block_rows.begin, c0 - block_cols.begin, r1 - r0, c1 - c0};
}

}  // namespace

RedistributionPlan plan_redistribution(index_t rows, index_t cols, GridShape from, GridShape to, bool transposed,
                                       int rank) {
  const int ranks = from.rows * from.cols;
  TESSERA_ASSERT(ranks == to.rows * to.cols && rank >= 0 && rank < ranks, "redistribution between grids of other sizes");
  const index_t new_rows = transposed ? cols : rows, new_cols = transposed ? rows : cols;
  const Partition old_rows = Partition::block(rows, from.rows), old_cols = Partition::block(cols, from.cols);
  const Partition new_row_parts = Partition::block(new_rows, to.rows), new_col_parts = Partition::block(new_cols, to.cols);
  // A rank's old block (in A's coordinates) and new block (in the new matrix's coordinates).
  auto old_block = [&](int p) { return std::pair{part(old_rows, p / from.cols), part(old_cols, p % from.cols)}; };
  auto new_block = [&](int p) { return std::pair{part(new_row_parts, p / to.cols), part(new_col_parts, p % to.cols)}; };

  RedistributionPlan plan;
  plan.send.resize(static_cast<std::size_t>(ranks));
  plan.recv.resize(static_cast<std::size_t>(ranks));
  const auto [my_old_rows, my_old_cols] = old_block(rank);
  const auto [my_new_rows, my_new_cols] = new_block(rank);
  plan.old_local_rows = my_old_rows.end - my_old_rows.begin;
  plan.old_local_cols = my_old_cols.end - my_old_cols.begin;
  plan.new_local_rows = my_new_rows.end - my_new_rows.begin;
  plan.new_local_cols = my_new_cols.end - my_new_cols.begin;
  for (int p = 0; p < ranks; ++p) {
    // What p will hold, seen in A: its new rows are A's columns where transposed.
    const auto [their_new_rows, their_new_cols] = new_block(p);
    plan.send[static_cast<std::size_t>(p)] =
        transposed ? local_overlap(their_new_cols, their_new_rows, my_old_rows, my_old_cols)
                   : local_overlap(their_new_rows, their_new_cols, my_old_rows, my_old_cols);
    // What p holds now, seen in the new matrix.
    const auto [their_old_rows, their_old_cols] = old_block(p);
    plan.recv[static_cast<std::size_t>(p)] =
        transposed ? local_overlap(their_old_cols, their_old_rows, my_new_rows, my_new_cols)
                   : local_overlap(their_old_rows, their_old_cols, my_new_rows, my_new_cols);
  }
  return plan;
}

}  // namespace detail

namespace {

// Packed pieces start on 256-byte boundaries of the exchange's buffers, where the vector tiles of
// the transpose kernel can reach them.
constexpr std::size_t kPieceAlignment = 256;

std::string grid_text(const ProcessGrid& g) { return std::to_string(g.rows()) + "x" + std::to_string(g.cols()); }

void check_same_ranks(const ProcessGrid& from, const ProcessGrid& to, const char* operation) {
  if (to.context().is_null())
    throw UsageError(std::string(operation) + ": the target process grid was never created (ProcessGrid::create)");
  if (!from.context().comm().congruent(to.context().comm()))
    throw UsageError(std::string(operation) + ": the target grid " + grid_text(to) +
                     " does not span the same ranks, in the same order, as the matrix's grid " + grid_text(from));
}

// Whether the piece `s` of an old block (A's orientation, leading dimension old_ld) travels
// straight from the block: it is one run there, in the order the receiver stores it.
bool sent_in_place(const detail::BlockRect& s, index_t old_ld, bool transposed) {
  return transposed ? s.rows == 1 || (s.cols == 1 && old_ld == 1) : s.rows == 1 || s.cols == old_ld;
}

// Whether the piece `r` of a new block (leading dimension new_ld) is received straight into it.
bool received_in_place(const detail::BlockRect& r, index_t new_ld) { return r.rows == 1 || r.cols == new_ld; }

}  // namespace

namespace detail {

MatrixStorage move_matrix(const MatrixStorage& a, const ProcessGrid& to, bool transposed, PhaseTimes* times,
                          const char* operation) {
  check_same_ranks(a.grid(), to, operation);
  const Context& ctx = a.grid().context();
  const kernels::Queue& queue = ctx.queue();
  const std::size_t bytes = a.element_bytes();
  const int me = ctx.rank(), ranks = ctx.size();
  const GridShape from_shape{a.grid().rows(), a.grid().cols()}, to_shape{to.rows(), to.cols()};
  MatrixStorage out;
  RedistributionPlan plan;
  std::vector<std::size_t> packed_send(static_cast<std::size_t>(ranks), SIZE_MAX), packed_recv = packed_send;
  const auto self = static_cast<std::size_t>(me);
  auto old_at = [&](const BlockRect& r) {
    return static_cast<const char*>(a.data()) + static_cast<std::size_t>(r.row0 * plan.old_local_cols + r.col0) * bytes;
  };
  auto new_at = [&](const BlockRect& r) {
    return static_cast<char*>(out.data()) + static_cast<std::size_t>(r.row0 * plan.new_local_cols + r.col0) * bytes;
  };
  // Moves the piece `from` of the old block to dst (leading dimension dst_ld, the new orientation).
  auto move_piece = [&](const BlockRect& from, void* dst, index_t dst_ld) {
    if (transposed) {
      kernels::transpose_bytes(queue, old_at(from), from.rows, from.cols, plan.old_local_cols, dst, dst_ld, bytes);
    } else {
      kernels::copy_2d(queue, dst, dst_ld, old_at(from), plan.old_local_cols, from.rows, from.cols, bytes);
    }
  };
  return exchange_phases(
      ctx, times,
      // Plan: which rectangle of the old block goes to which rank, and which of the new block comes
      // from which; each piece straight where it is one run of its block, packed otherwise.
      [&] {
        plan = plan_redistribution(a.rows(), a.cols(), from_shape, to_shape, transposed, me);
        out = MatrixStorage(to, transposed ? a.cols() : a.rows(), transposed ? a.rows() : a.cols(), bytes);
        TESSERA_ASSERT(plan.old_local_cols == a.local_cols() && plan.new_local_cols == out.local_cols() &&
                           plan.old_local_rows == a.local_rows() && plan.new_local_rows == out.local_rows(),
                       "redistribution plan disagrees with the matrices' partitions");
        Exchange exchange(ctx, ExchangePattern::all_to_all, kPieceAlignment);
        // Where rank p's old block starts in A, and its leading dimension.
        const Partition old_rows = Partition::block(a.rows(), from_shape.rows);
        const Partition old_cols = Partition::block(a.cols(), from_shape.cols);
        const index_t new_row0 = out.row_offset(), new_col0 = out.col_offset();
        for (int p = 0; p < ranks; ++p) {
          const auto q = static_cast<std::size_t>(p);
          if (p == me) continue;  // moved in the pack phase, never through the exchange
          const BlockRect& s = plan.send[q];
          if (!s.empty()) {
            const std::size_t piece = static_cast<std::size_t>(s.size()) * bytes;
            if (sent_in_place(s, plan.old_local_cols, transposed))
              exchange.send(p, old_at(s), piece,
                            lead_of(static_cast<std::size_t>(s.row0 * plan.old_local_cols + s.col0) * bytes));
            else packed_send[q] = exchange.send_packed(p, piece);
          }
          const BlockRect& r = plan.recv[q];
          if (!r.empty()) {
            // The sender's rectangle, in its old block (A's orientation): where it sends from.
            const index_t a_row = transposed ? new_col0 + r.col0 : new_row0 + r.row0;
            const index_t a_col = transposed ? new_row0 + r.row0 : new_col0 + r.col0;
            const int sender_row = p / from_shape.cols, sender_col = p % from_shape.cols;
            const BlockRect theirs{a_row - old_rows.offset(sender_row), a_col - old_cols.offset(sender_col),
                                   transposed ? r.cols : r.rows, transposed ? r.rows : r.cols};
            const index_t their_ld = old_cols.local_size(sender_col);
            const std::size_t sender_lead =
                sent_in_place(theirs, their_ld, transposed)
                    ? lead_of(static_cast<std::size_t>(theirs.row0 * their_ld + theirs.col0) * bytes)
                    : 0;
            const std::size_t piece = static_cast<std::size_t>(r.size()) * bytes;
            if (received_in_place(r, plan.new_local_cols)) exchange.receive(p, new_at(r), piece, sender_lead);
            else packed_recv[q] = exchange.receive_packed(p, piece, sender_lead);
          }
        }
        return exchange;
      },
      // Pack: what this rank keeps goes straight into its new block; each packed piece into its slot,
      // in the order the receiver stores it (transposed here where it travels transposed).
      [&](Exchange& exchange) {
        if (!plan.send[self].empty()) move_piece(plan.send[self], new_at(plan.recv[self]), plan.new_local_cols);
        for (std::size_t q = 0; q < packed_send.size(); ++q)
          if (packed_send[q] != SIZE_MAX) {
            const BlockRect& s = plan.send[q];
            move_piece(s, exchange.send_slot(packed_send[q]), transposed ? s.rows : s.cols);
          }
      },
      no_overlap,
      // Unpack: each packed piece into its rectangle of the new block.
      [&](Exchange& exchange) {
        for (std::size_t q = 0; q < packed_recv.size(); ++q)
          if (packed_recv[q] != SIZE_MAX) {
            const BlockRect& r = plan.recv[q];
            kernels::copy_2d(queue, new_at(r), plan.new_local_cols, exchange.received_slot(packed_recv[q]), r.cols,
                             r.rows, r.cols, bytes);
          }
        return std::move(out);
      });
}

CollectivePlan redistribute_plan(const MatrixStorage& a, const ProcessGrid& to, bool transposed) {
  const int me = a.grid().context().rank();
  const RedistributionPlan plan = plan_redistribution(a.rows(), a.cols(), {a.grid().rows(), a.grid().cols()},
                                                     {to.rows(), to.cols()}, transposed, me);
  double sent = 0;
  for (std::size_t p = 0; p < plan.send.size(); ++p)
    if (static_cast<int>(p) != me) sent += static_cast<double>(plan.send[p].size()) * static_cast<double>(a.element_bytes());
  return {{Collective::alltoallv, sent}};
}

}  // namespace detail

}  // namespace tessera
