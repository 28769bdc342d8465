// Field2D (2-D blocks with ghost layers over a process grid) and HaloExchange (the plan and the run
// of one halo exchange).
#include "tessera/framework/field_2d.hpp"
#include "tessera/framework/trace.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "halo_peer_copy.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

std::string shape_text(index_t rows, index_t cols) { return std::to_string(rows) + " x " + std::to_string(cols); }

}  // namespace

namespace detail {

HaloPath requested_halo_path(const Context& ctx) {
  const char* env = std::getenv("TESSERA_HALO");
  const std::string text = env ? env : "";
  int path = -1;  // unknown
  if (text.empty() || text == "auto") path = static_cast<int>(HaloPath::automatic);
  else if (text == "peer-copy") path = static_cast<int>(HaloPath::peer_copy);
  else if (text == "device-comm") path = static_cast<int>(HaloPath::device_comm);
  else if (text == "peer-store") path = static_cast<int>(HaloPath::peer_store);
  const int lowest = ctx.comm().allreduce(path, ReduceOp::min), highest = ctx.comm().allreduce(path, ReduceOp::max);
  constexpr const char* kValues = "auto, peer-copy, device-comm or peer-store";
  if (path < 0) throw UsageError("TESSERA_HALO: '" + text + "' is not " + kValues);
  if (lowest < 0) throw UsageError(std::string("TESSERA_HALO: another rank has a value that is not ") + kValues);
  if (lowest != highest) throw UsageError("TESSERA_HALO differs between the ranks; set it alike on every rank");
  return static_cast<HaloPath>(path);
}

bool try_peer_path(const Context& ctx, HaloPath requested, HaloUse use, std::optional<DeviceCommPath> device_path) {
  if (ctx.size() < 2 || requested == HaloPath::device_comm) return false;
  const HaloPath named = use == HaloUse::frame ? HaloPath::peer_store : HaloPath::peer_copy;
  if (requested == named) return true;
  if (requested == HaloPath::peer_copy) return false;  // the frame: its halo (a HaloExchange) takes it
  // auto, or peer-store for a halo other than the frame
  if (ctx.backend() != Backend::cuda) return false;
  TESSERA_ASSERT(use != HaloUse::exchange || device_path.has_value(), "try_peer_path: an exchange's choice without its device path");
  return use != HaloUse::exchange || device_path == DeviceCommPath::staged;
}

}  // namespace detail

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

HaloExchange::HaloExchange(const FieldLayout& layout, StencilForm shape, std::size_t element_bytes, const Context& ctx)
    : ctx_(ctx), shape_(shape), element_bytes_(element_bytes), comm_(ctx) {
  TESSERA_ASSERT(ctx.size() == layout.grid_rows * layout.grid_cols && ctx.rank() == layout.rank_of(layout.process_row, layout.process_col),
                 "HaloExchange: the context is not the field's process grid");
  const int me_row = layout.process_row, me_col = layout.process_col;
  const index_t r0 = layout.row_offset(), c0 = layout.col_offset();
  auto local = [&](const GlobalRectangle& g) {
    return kernels::Rectangle{(g.row - r0) * layout.ld + (g.col - c0), layout.ld, g.rows, g.cols};
  };
  const kernels::Queue& q = ctx_.queue();
  const detail::HaloPath requested = detail::requested_halo_path(ctx_);
  using detail::HaloPath;
  const bool try_peer_copy = detail::try_peer_path(ctx_, requested, detail::HaloUse::exchange, comm_.path());
  // Off the peer-copy path, a rectangle of one row goes straight from the block and into the
  // ghost cells (no packing, no unpacking: the edge rows of a 5-point halo); the others through the
  // packed buffers, which the peer-copy path takes for every rectangle.
  std::vector<std::ptrdiff_t> send_at, recv_at;  // offset in the packed buffer, or -1: straight
  auto add = [&](const GlobalRectangle& g, int peer, std::vector<DeviceComm::Message>& messages,
                 std::vector<kernels::Rectangle>& packed, std::vector<Straight>& straight,
                 std::vector<std::ptrdiff_t>& at, std::size_t& packed_bytes, std::size_t& total) {
    const kernels::Rectangle r = local(g);
    const std::size_t bytes = static_cast<std::size_t>(g.rows * g.cols) * element_bytes;
    if (!try_peer_copy && g.rows == 1) {
      straight.push_back({messages.size(), r.offset});
      at.push_back(-1);
    } else {
      packed.push_back(r);
      at.push_back(static_cast<std::ptrdiff_t>(std::exchange(packed_bytes, packed_bytes + bytes)));
    }
    messages.push_back({peer, nullptr, bytes});
    total += bytes;
  };
  std::size_t packed_send = 0, packed_recv = 0;
  for (int pr = 0; pr < layout.grid_rows; ++pr)
    for (int pc = 0; pc < layout.grid_cols; ++pc) {
      const int peer = layout.rank_of(pr, pc);
      const GlobalRectangle in = halo_piece(layout, shape, me_row, me_col, pr, pc);
      if (!in.empty()) add(in, peer, recvs_, recv_rectangles_, straight_recvs_, recv_at, packed_recv, recv_bytes_);
      const GlobalRectangle out = halo_piece(layout, shape, pr, pc, me_row, me_col);
      if (!out.empty()) add(out, peer, sends_, send_rectangles_, straight_sends_, send_at, packed_send, send_bytes_);
    }
  // The peer-copy path receives into two slots in turn (halo_peer_copy.hpp says why).
  recv_slot_bytes_ = (packed_recv + 255) / 256 * 256;  // slot 1 on a 256-byte boundary, as slot 0 is
  detail::allocate_halo_buffers(
      ctx_,
      [&] {
        if (packed_send) send_buffer_ = kernels::allocate(q, packed_send);
        if (packed_recv) recv_buffer_ = kernels::allocate(q, try_peer_copy ? 2 * recv_slot_bytes_ : packed_recv);
      },
      [&] { free_buffers(); });
  for (std::size_t i = 0; i < sends_.size(); ++i)
    if (send_at[i] >= 0) sends_[i].data = static_cast<char*>(send_buffer_) + send_at[i];
  for (std::size_t i = 0; i < recvs_.size(); ++i)
    if (recv_at[i] >= 0) recvs_[i].data = static_cast<char*>(recv_buffer_) + recv_at[i];
  std::string why_not = "TESSERA_HALO=device-comm";
  if (try_peer_copy) peer_ = detail::PeerCopy::make(ctx_, sends_, recvs_, recv_buffer_, recv_slot_bytes_, &why_not);
  if (requested == HaloPath::peer_copy && ctx_.size() > 1 && !peer_) {
    free_buffers();
    throw UsageError("TESSERA_HALO=peer-copy: the halo exchange cannot copy between the ranks' GPUs: " + why_not);
  }
  if (peer_) return;
  if (comm_.path() == DeviceCommPath::staged) {
    staging_.send = kernels::allocate_pinned_host(send_bytes_);
    staging_.recv = kernels::allocate_pinned_host(recv_bytes_);
    staging_.send_bytes = send_bytes_;
    staging_.recv_bytes = recv_bytes_;
  }
}

HaloExchange::~HaloExchange() {
  pending_.reset();  // waits for a transfer still in flight before its buffers go
  peer_.reset();     // and, on the peer-copy path, for the neighbours to unmap the receive slots
  free_buffers();
  kernels::deallocate_pinned_host(staging_.send);
  kernels::deallocate_pinned_host(staging_.recv);
}

void HaloExchange::free_buffers() {
  const kernels::Queue& q = ctx_.queue();
  if (send_buffer_) kernels::deallocate(q, send_buffer_);
  if (recv_buffer_) kernels::deallocate(q, recv_buffer_);
  send_buffer_ = recv_buffer_ = nullptr;
}

const char* HaloExchange::path() const { return peer_ ? "peer-copy" : to_string(comm_.path()); }

void HaloExchange::start(void* origin) {
  {
    const trace::Range range("halo: pack");
    kernels::pack_rectangles(ctx_.queue(), origin, send_rectangles_, send_buffer_, element_bytes_);
  }
  start_packed(origin);
}

void HaloExchange::start_packed(void* origin) {
  const trace::Range range("halo: send");
  TESSERA_ASSERT(!pending_, "HaloExchange::start_packed: the previous exchange was not finished");  // PeerCopy checks its own
  if (peer_) {
    TESSERA_COLLECTIVE(Collective::neighbor_exchange, static_cast<double>(send_bytes_));
    peer_->start();
    return;
  }
  char* const at = static_cast<char*>(origin);
  for (const Straight& s : straight_sends_) sends_[s.message].data = at + s.offset * static_cast<index_t>(element_bytes_);
  for (const Straight& s : straight_recvs_) recvs_[s.message].data = at + s.offset * static_cast<index_t>(element_bytes_);
  pending_.emplace(comm_.ineighbor_exchange(sends_, recvs_, &staging_));
}

void HaloExchange::finish(void* origin) {
  const trace::Range range("halo: receive");
  if (peer_) {
    peer_->finish();  // asserts that an exchange was started
    kernels::unpack_rectangles(ctx_.queue(), static_cast<char*>(recv_buffer_) + peer_->slot() * recv_slot_bytes_,
                               recv_rectangles_, origin, element_bytes_);
    peer_->drained();
    return;
  }
  TESSERA_ASSERT(pending_.has_value(), "HaloExchange::finish without start");
  pending_->wait();
  pending_.reset();
  kernels::unpack_rectangles(ctx_.queue(), recv_buffer_, recv_rectangles_, origin, element_bytes_);
}

}  // namespace tessera
