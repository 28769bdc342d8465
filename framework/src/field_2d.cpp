// Field2D (2-D blocks with ghost layers over a process grid) and HaloExchange (the plan and the run
// of one halo exchange).
#include "tessera/framework/field_2d.hpp"
#include "tessera/framework/trace.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "block_transfer.hpp"
#include "halo_peer_copy.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/transform.hpp"

namespace tessera {
namespace {

// Elements of a 16-byte vector (1 for elements whose size does not divide 16 bytes).
index_t vector_items(std::size_t element_bytes) {
  return element_bytes <= 16 && 16 % element_bytes == 0 ? static_cast<index_t>(16 / element_bytes) : 1;
}

index_t round_up(index_t value, index_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Elements before the owned block's first cell in the storage: the ghost rows and columns, and a
// lead that puts that cell on a 16-byte boundary.
index_t origin_offset(const FieldLayout& l, std::size_t element_bytes) {
  const index_t v = vector_items(element_bytes);
  const index_t lead = (v - l.ghost_width % v) % v;
  return lead + static_cast<index_t>(l.ghost_width) * l.ld + l.ghost_width;
}

index_t storage_elements_of(const FieldLayout& l, std::size_t element_bytes) {
  const index_t v = vector_items(element_bytes);
  const index_t lead = (v - l.ghost_width % v) % v;
  return lead + (l.local_rows() + 2 * static_cast<index_t>(l.ghost_width)) * l.ld;
}

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

}  // namespace detail

// ---- Field2D's storage ---------------------------------------------------------------------------------

namespace detail {

FieldStorage::FieldStorage(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width,
                           std::size_t element_bytes)
    : grid_(grid), element_bytes_(element_bytes) {
  TESSERA_ASSERT(!grid_.context().is_null(), "Field2D on a grid without a context");
  TESSERA_ASSERT(element_bytes >= 1, "Field2D: cells of zero bytes");
  const std::string grid_text = std::to_string(grid.rows()) + "x" + std::to_string(grid.cols());
  if (rows < grid.rows() || cols < grid.cols())
    throw UsageError("a field of " + shape_text(rows, cols) + " cells cannot be cut over the process grid " + grid_text +
                     ": every rank needs at least one row and one column (at least " + std::to_string(grid.rows()) +
                     " rows and " + std::to_string(grid.cols()) + " columns)");
  if (ghost_width < 0) throw UsageError("ghost width " + std::to_string(ghost_width) + " is negative");
  // The field with a ring of ghost cells (and a vector's padding) must be numberable: every size
  // below is then one too.
  constexpr index_t kMaxExtent = std::numeric_limits<index_t>::max() / 2;
  if (rows > kMaxExtent || cols > kMaxExtent)
    throw UsageError("a field of " + shape_text(rows, cols) + " cells: an extent passes 2^62");
  checked_elements(rows + 2 * static_cast<index_t>(ghost_width) + vector_items(element_bytes),
                   cols + 2 * static_cast<index_t>(ghost_width) + vector_items(element_bytes), "a field with its ghost cells");
  layout_.rows = rows;
  layout_.cols = cols;
  layout_.grid_rows = grid.rows();
  layout_.grid_cols = grid.cols();
  layout_.process_row = grid.process_row();
  layout_.process_col = grid.process_col();
  layout_.ghost_width = ghost_width;
  layout_.row_partition = Partition::block(rows, grid.rows());
  layout_.col_partition = Partition::block(cols, grid.cols());
  layout_.ld = round_up(layout_.local_cols() + 2 * static_cast<index_t>(ghost_width), vector_items(element_bytes));
  const std::size_t bytes = kernels::array_bytes(storage_elements(), element_bytes, "a field block");
  storage_ = kernels::allocate(grid_.context().queue(), bytes);
  origin_ = static_cast<char*>(storage_) + static_cast<std::size_t>(origin_offset(layout_, element_bytes)) * element_bytes;
}

FieldStorage::~FieldStorage() { release(); }

void FieldStorage::release() {
  if (storage_) kernels::deallocate(grid_.context().queue(), storage_);
  storage_ = origin_ = nullptr;
}

FieldStorage::FieldStorage(FieldStorage&& o) noexcept
    : grid_(std::move(o.grid_)),
      layout_(std::move(o.layout_)),
      element_bytes_(std::exchange(o.element_bytes_, 0)),
      storage_(std::exchange(o.storage_, nullptr)),
      origin_(std::exchange(o.origin_, nullptr)) {}

FieldStorage& FieldStorage::operator=(FieldStorage&& o) noexcept {
  if (this != &o) {
    release();
    grid_ = std::move(o.grid_);
    layout_ = std::move(o.layout_);
    element_bytes_ = std::exchange(o.element_bytes_, 0);
    storage_ = std::exchange(o.storage_, nullptr);
    origin_ = std::exchange(o.origin_, nullptr);
  }
  return *this;
}

index_t FieldStorage::storage_elements() const { return storage_elements_of(layout_, element_bytes_); }

void FieldStorage::fill(const void* value) {
  kernels::detail::fill_bytes(grid_.context().queue(), storage_, storage_elements(), element_bytes_, value);
}

void FieldStorage::copy_from(const FieldStorage& other) {
  TESSERA_ASSERT(other.layout_.rows == layout_.rows && other.layout_.cols == layout_.cols &&
                     other.layout_.ghost_width == layout_.ghost_width && other.layout_.ld == layout_.ld &&
                     other.element_bytes_ == element_bytes_,
                 "Field2D::copy_from: another layout");
  if (other.storage_ == storage_) return;
  kernels::copy_within_async(grid_.context().queue(), storage_, other.storage_,
                             static_cast<std::size_t>(storage_elements()) * element_bytes_);
}

std::vector<kernels::Rectangle> FieldStorage::outer_ghost_rectangles(std::vector<GlobalRectangle>* global) const {
  const FieldLayout& l = layout_;
  const index_t w = l.ghost_width, lr = l.local_rows(), lc = l.local_cols();
  const index_t r0 = l.row_offset(), c0 = l.col_offset();
  std::vector<kernels::Rectangle> rectangles;
  global->clear();
  if (w == 0) return rectangles;
  // Whole frame rows above and below the domain, then frame columns beside it on the rows
  // between. Where a neighbour's block is thinner than the ghost width, they reach past that
  // neighbour.
  const index_t above = std::max<index_t>(0, w - r0), below = std::max<index_t>(0, lr + w - (l.rows - r0));
  const index_t before = std::max<index_t>(0, w - c0), after = std::max<index_t>(0, lc + w - (l.cols - c0));
  std::vector<GlobalRectangle> local;  // {row, col, rows, cols} in local coordinates
  if (above) local.push_back({-w, -w, above, lc + 2 * w});
  if (below) local.push_back({lr + w - below, -w, below, lc + 2 * w});
  const index_t first = -w + above, middle = lr + 2 * w - above - below;
  if (before && middle > 0) local.push_back({first, -w, middle, before});
  if (after && middle > 0) local.push_back({first, lc + w - after, middle, after});
  for (const GlobalRectangle& r : local) {
    rectangles.push_back({r.row * l.ld + r.col, l.ld, r.rows, r.cols});
    global->push_back({r0 + r.row, c0 + r.col, r.rows, r.cols});
  }
  return rectangles;
}

void FieldStorage::set_cells(const std::vector<kernels::Rectangle>& rectangles, const void* values) {
  index_t cells = 0;
  for (const kernels::Rectangle& r : rectangles) cells += r.rows * r.cols;
  if (cells == 0) return;
  const kernels::Queue& q = grid_.context().queue();
  const std::size_t bytes = static_cast<std::size_t>(cells) * element_bytes_;
  kernels::ScratchBuffer staging(q, bytes);
  kernels::copy_from_host(q, staging.data(), values, bytes);
  kernels::unpack_rectangles(q, staging.data(), rectangles, origin_, element_bytes_);
  q.synchronize();
}

void FieldStorage::local_to_host(void* host) const {
  const index_t lr = layout_.local_rows(), lc = layout_.local_cols();
  if (lr * lc == 0) return;
  const kernels::Queue& q = grid_.context().queue();
  const std::size_t bytes = static_cast<std::size_t>(lr * lc) * element_bytes_;
  kernels::ScratchBuffer packed(q, bytes);
  const kernels::Rectangle block{0, layout_.ld, lr, lc};
  kernels::pack_rectangles(q, origin_, std::span(&block, 1), packed.data(), element_bytes_);
  kernels::copy_to_host(q, host, packed.data(), bytes);
}

void FieldStorage::local_from_host(const void* host) {
  const index_t lr = layout_.local_rows(), lc = layout_.local_cols();
  if (lr * lc == 0) return;
  const kernels::Queue& q = grid_.context().queue();
  const std::size_t bytes = static_cast<std::size_t>(lr * lc) * element_bytes_;
  kernels::ScratchBuffer packed(q, bytes);
  kernels::copy_from_host(q, packed.data(), host, bytes);
  const kernels::Rectangle whole{0, layout_.ld, lr, lc};
  kernels::unpack_rectangles(q, packed.data(), std::span(&whole, 1), origin_, element_bytes_);
  q.synchronize();
}

namespace {

constexpr int kGatherTag = 7501;
constexpr int kScatterTag = 7502;

// Rank p's owned cells in the whole field (host memory, row-major rows x cols), to and from a
// contiguous block.
void copy_block(const FieldLayout& l, int p, unsigned char* whole, unsigned char* block, std::size_t bytes,
                bool into_whole) {
  const int pr = p / l.grid_cols, pc = p % l.grid_cols;
  const index_t lr = l.row_partition.local_size(pr), lc = l.col_partition.local_size(pc);
  const index_t r0 = l.row_partition.offset(pr), c0 = l.col_partition.offset(pc);
  const std::size_t row_bytes = static_cast<std::size_t>(lc) * bytes;
  for (index_t r = 0; r < lr; ++r) {
    unsigned char* at = whole + (static_cast<std::size_t>(r0 + r) * static_cast<std::size_t>(l.cols) + static_cast<std::size_t>(c0)) * bytes;
    if (into_whole) std::memcpy(at, block + static_cast<std::size_t>(r) * row_bytes, row_bytes);
    else std::memcpy(block + static_cast<std::size_t>(r) * row_bytes, at, row_bytes);
  }
}

std::size_t block_bytes(const FieldLayout& l, int p, std::size_t bytes) {
  return static_cast<std::size_t>(l.row_partition.local_size(p / l.grid_cols) * l.col_partition.local_size(p % l.grid_cols)) * bytes;
}

BlockGeometry geometry(const FieldLayout& l, std::size_t element_bytes) {
  return {[&l, element_bytes](int p) { return block_bytes(l, p, element_bytes); },
          [&l, element_bytes](int p, unsigned char* whole, unsigned char* block, bool into_whole) {
            copy_block(l, p, whole, block, element_bytes, into_whole);
          }};
}

}  // namespace

void FieldStorage::gather(void* all, int root) const {
  gather_blocks(grid_.context().comm(), geometry(layout_, element_bytes_), [this](void* h) { local_to_host(h); }, all, root,
                kGatherTag);
}

void FieldStorage::scatter(const void* all, int root) {
  scatter_blocks(grid_.context().comm(), geometry(layout_, element_bytes_), [this](const void* h) { local_from_host(h); },
                 all, root, kScatterTag);
}

void FieldStorage::from_replicated(const void* global) {
  fill_from_replicated(grid_.context().rank(), geometry(layout_, element_bytes_),
                       [this](const void* h) { local_from_host(h); }, global);
}

}  // namespace detail

// ---- the halo ------------------------------------------------------------------------------------------

GlobalRectangle halo_piece(const FieldLayout& l, HaloShape shape, int receiver_row, int receiver_col, int owner_row,
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
  if (shape == HaloShape::box) return cut(r0 - w, r1 + w, c0 - w, c1 + w);
  // Faces: the ghost rows above and below the block's columns, and the ghost columns beside its
  // rows. An owner's block meets at most one of the two (meeting both, it would overlap the
  // receiver's block).
  const GlobalRectangle vertical = cut(r0 - w, r1 + w, c0, c1);
  return vertical.empty() ? cut(r0, r1, c0 - w, c1 + w) : vertical;
}

HaloExchange::HaloExchange(const FieldLayout& layout, HaloShape shape, std::size_t element_bytes, const Context& ctx)
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
  // auto: peer-copy in place of staging through the host (PERFORMANCE.md has both measured).
  const bool try_peer_copy =
      ctx_.size() > 1 && (requested == HaloPath::peer_copy ||
                          ((requested == HaloPath::automatic || requested == HaloPath::peer_store) &&
                           ctx_.backend() == Backend::cuda &&
                           comm_.path() == DeviceCommPath::staged));
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
