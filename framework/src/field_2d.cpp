// Field2D (2-D blocks with ghost layers over a process grid) and HaloExchange (the plan and the run
// of one halo exchange).
#include "tessera/framework/field_2d.hpp"
#include "tessera/framework/trace.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "halo_transport.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

std::string shape_text(index_t rows, index_t cols) { return std::to_string(rows) + " x " + std::to_string(cols); }

}  // namespace

// ---- Field2D's 2-D view of a Field<T, 2> --------------------------------------------------------------

namespace detail {

FieldLayout plane_layout(const BlockLayout& b) {
  TESSERA_ASSERT(b.dims == 2 && b.ghost[1] == b.ghost[2], "Field2D: not the layout of a 2-D field with one ghost width");
  FieldLayout l;
  l.rows = b.extent[1];
  l.cols = b.extent[2];
  l.grid_rows = b.grid[1];
  l.grid_cols = b.grid[2];
  l.process_row = b.coord[1];
  l.process_col = b.coord[2];
  l.ghost_width = static_cast<int>(b.ghost[1]);
  l.row_partition = b.partition[1];
  l.col_partition = b.partition[2];
  l.ld = b.stride[1];
  return l;
}

CartesianGrid plane_grid(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width) {
  TESSERA_ASSERT(!grid.context().is_null(), "Field2D on a grid without a context");
  const std::string grid_text = std::to_string(grid.rows()) + "x" + std::to_string(grid.cols());
  if (rows < grid.rows() || cols < grid.cols())
    throw UsageError("a field of " + shape_text(rows, cols) + " cells cannot be cut over the process grid " + grid_text +
                     ": every rank needs at least one row and one column (at least " + std::to_string(grid.rows()) +
                     " rows and " + std::to_string(grid.cols()) + " columns)");
  if (ghost_width < 0) throw UsageError("ghost width " + std::to_string(ghost_width) + " is negative");
  return CartesianGrid::create(grid.context(), {grid.rows(), grid.cols()});
}

}  // namespace detail

// ---- the halo ------------------------------------------------------------------------------------------

GlobalRectangle halo_piece(const FieldLayout& l, StencilForm shape, int receiver_row, int receiver_col, int owner_row,
                           int owner_col) {
  if (receiver_row == owner_row && receiver_col == owner_col) return {};
  const index_t w = l.ghost_width;
  const index_t r0 = l.row_partition.offset(receiver_row), r1 = r0 + l.row_partition.local_size(receiver_row);
  const index_t c0 = l.col_partition.offset(receiver_col), c1 = c0 + l.col_partition.local_size(receiver_col);
  const index_t o_r0 = l.row_partition.offset(owner_row), o_r1 = o_r0 + l.row_partition.local_size(owner_row);
  const index_t o_c0 = l.col_partition.offset(owner_col), o_c1 = o_c0 + l.col_partition.local_size(owner_col);
  auto cut = [&](index_t a0, index_t a1, index_t b0, index_t b1) -> GlobalRectangle {
    // [a0, a1) x [b0, b1) within the domain and the owner's block.
    const index_t row = std::max({a0, index_t(0), o_r0}), row_end = std::min({a1, l.rows, o_r1});
    const index_t col = std::max({b0, index_t(0), o_c0}), col_end = std::min({b1, l.cols, o_c1});
    if (row_end <= row || col_end <= col) return {};
    return {row, col, row_end - row, col_end - col};
  };
  if (shape == StencilForm::box) return cut(r0 - w, r1 + w, c0 - w, c1 + w);
  // Faces: the ghost rows above and below the block's columns, and the ghost columns beside its
  // rows. An owner's block meets at most one of the two (meeting both, it would overlap the
  // receiver's block).
  const GlobalRectangle vertical = cut(r0 - w, r1 + w, c0, c1);
  return vertical.empty() ? cut(r0, r1, c0 - w, c1 + w) : vertical;
}

HaloExchange::HaloExchange(const FieldLayout& layout, StencilForm shape, std::size_t element_bytes, const Context& ctx,
                           std::array<const void*, 2> alternating)
    : ctx_(ctx), shape_(shape) {
  TESSERA_ASSERT(ctx.size() == layout.grid_rows * layout.grid_cols && ctx.rank() == layout.rank_of(layout.process_row, layout.process_col),
                 "HaloExchange: the context is not the field's process grid");
  TESSERA_ASSERT((alternating[0] == nullptr) == (alternating[1] == nullptr), "HaloExchange: one of two alternating fields");
  const int me_row = layout.process_row, me_col = layout.process_col;
  const index_t r0 = layout.row_offset(), c0 = layout.col_offset();
  auto local = [&](const GlobalRectangle& g) {
    return kernels::Rectangle{(g.row - r0) * layout.ld + (g.col - c0), layout.ld, g.rows, g.cols};
  };
  // One rectangle per neighbour each way, in grid order.
  detail::HaloGeometry geometry;
  for (int pr = 0; pr < layout.grid_rows; ++pr)
    for (int pc = 0; pc < layout.grid_cols; ++pc) {
      const int peer = layout.rank_of(pr, pc);
      const GlobalRectangle in = halo_piece(layout, shape, me_row, me_col, pr, pc);
      if (!in.empty()) {
        geometry.receives.push_back({peer, in.rows * in.cols, {local(in)}});
        recv_bytes_ += static_cast<std::size_t>(in.rows * in.cols) * element_bytes;
        ++peers_;
      }
      const GlobalRectangle out = halo_piece(layout, shape, pr, pc, me_row, me_col);
      if (!out.empty()) {
        geometry.sends.push_back({peer, out.rows * out.cols, {local(out)}});
        geometry.cells_sent_to_others += out.rows * out.cols;
        send_bytes_ += static_cast<std::size_t>(out.rows * out.cols) * element_bytes;
      }
    }
  detail::HaloTransportSpec spec{&geometry, {element_bytes}, detail::HaloUse::exchange};
  if (alternating[0]) {
    spec.use = detail::HaloUse::frame;
    spec.plane = &layout;
    spec.shape = shape;
    spec.alternating = alternating;
  }
  transport_ = detail::make_halo_transport(ctx_, spec);  // collective
}

HaloExchange::~HaloExchange() = default;  // the transport waits for what is in flight

const char* HaloExchange::path() const { return transport_->path(); }

std::span<const kernels::Rectangle> HaloExchange::sends() const { return transport_->sends(); }

std::span<const HaloPlace> HaloExchange::claim(void* origin) {
  const trace::Range range("halo: claim");
  void* const origins[] = {origin};
  return transport_->claim(origins);
}

void HaloExchange::publish(void* origin) {
  const trace::Range range("halo: send");
  void* const origins[] = {origin};
  transport_->publish(origins);
}

void HaloExchange::start(void* origin) {
  const trace::Range range("halo: start");
  void* const origins[] = {origin};
  transport_->start(origins);
}

void HaloExchange::finish(void* origin) {
  const trace::Range range("halo: receive");
  void* const origins[] = {origin};
  transport_->finish(origins);
  transport_->drained();
}

}  // namespace tessera
