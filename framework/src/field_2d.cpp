// Field2D (2-D blocks with ghost layers over a process grid) and HaloExchange (the plan and the run
// of one halo exchange).
#include "tessera/framework/field_2d.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "halo_peer_copy.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

// Elements of a 16-byte vector (1 for elements that do not divide 16 bytes).
template <class T>
constexpr index_t vector_items() {
  return sizeof(T) <= 16 && 16 % sizeof(T) == 0 ? static_cast<index_t>(16 / sizeof(T)) : 1;
}

index_t round_up(index_t value, index_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Elements before the owned block's first cell in the storage: the ghost rows and columns, and a
// lead that puts that cell on a 16-byte boundary.
template <class T>
index_t origin_offset(const FieldLayout& l) {
  const index_t v = vector_items<T>();
  const index_t lead = (v - l.ghost_width % v) % v;
  return lead + static_cast<index_t>(l.ghost_width) * l.ld + l.ghost_width;
}

template <class T>
index_t storage_elements(const FieldLayout& l) {
  const index_t v = vector_items<T>();
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

// ---- Field2D -------------------------------------------------------------------------------------------

template <class T>
Field2D<T>::Field2D(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width) : grid_(grid) {
  TESSERA_ASSERT(!grid_.context().is_null(), "Field2D on a grid without a context");
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
  checked_elements(rows + 2 * static_cast<index_t>(ghost_width) + vector_items<T>(),
                   cols + 2 * static_cast<index_t>(ghost_width) + vector_items<T>(), "a field with its ghost cells");
  layout_.rows = rows;
  layout_.cols = cols;
  layout_.grid_rows = grid.rows();
  layout_.grid_cols = grid.cols();
  layout_.process_row = grid.process_row();
  layout_.process_col = grid.process_col();
  layout_.ghost_width = ghost_width;
  layout_.row_partition = Partition::block(rows, grid.rows());
  layout_.col_partition = Partition::block(cols, grid.cols());
  layout_.ld = round_up(layout_.local_cols() + 2 * static_cast<index_t>(ghost_width), vector_items<T>());
  const std::size_t bytes = kernels::array_bytes(storage_elements<T>(layout_), sizeof(T), "a field block");
  storage_ = static_cast<T*>(kernels::allocate(context().queue(), bytes));
  origin_ = storage_ + origin_offset<T>(layout_);
}

template <class T>
Field2D<T>::~Field2D() {
  release();
}

template <class T>
void Field2D<T>::release() {
  if (storage_) kernels::deallocate(context().queue(), storage_);
  storage_ = origin_ = nullptr;
}

template <class T>
Field2D<T>::Field2D(Field2D&& o) noexcept
    : grid_(std::move(o.grid_)),
      layout_(std::move(o.layout_)),
      storage_(std::exchange(o.storage_, nullptr)),
      origin_(std::exchange(o.origin_, nullptr)) {}

template <class T>
Field2D<T>& Field2D<T>::operator=(Field2D&& o) noexcept {
  if (this != &o) {
    release();
    grid_ = std::move(o.grid_);
    layout_ = std::move(o.layout_);
    storage_ = std::exchange(o.storage_, nullptr);
    origin_ = std::exchange(o.origin_, nullptr);
  }
  return *this;
}

template <class T>
void Field2D<T>::fill(const T& value) {
  kernels::fill(context().queue(), storage_, storage_elements<T>(layout_), value);
}

template <class T>
void Field2D<T>::copy_from(const Field2D& other) {
  TESSERA_ASSERT(other.layout_.rows == layout_.rows && other.layout_.cols == layout_.cols &&
                     other.layout_.ghost_width == layout_.ghost_width && other.layout_.ld == layout_.ld,
                 "Field2D::copy_from: another layout");
  if (other.storage_ == storage_) return;
  kernels::copy_within_async(context().queue(), storage_, other.storage_,
                             static_cast<std::size_t>(storage_elements<T>(layout_)) * sizeof(T));
}

template <class T>
void Field2D<T>::set_outer_ghosts(const std::function<T(index_t, index_t)>& value) {
  const index_t w = layout_.ghost_width, lr = local_rows(), lc = local_cols();
  const index_t r0 = row_offset(), c0 = col_offset();
  if (w == 0) return;
  // Local rectangles {first row, first column, rows, columns} of the ghost cells outside the domain:
  // whole frame rows above and below it, then frame columns beside it on the rows between. Where a
  // neighbour's block is thinner than the ghost width, they reach past that neighbour.
  const index_t above = std::max<index_t>(0, w - r0), below = std::max<index_t>(0, lr + w - (rows() - r0));
  const index_t before = std::max<index_t>(0, w - c0), after = std::max<index_t>(0, lc + w - (cols() - c0));
  struct Local {
    index_t row, col, rows, cols;
  };
  std::vector<Local> outside;
  if (above) outside.push_back({-w, -w, above, lc + 2 * w});
  if (below) outside.push_back({lr + w - below, -w, below, lc + 2 * w});
  const index_t first = -w + above, middle = lr + 2 * w - above - below;
  if (before && middle > 0) outside.push_back({first, -w, middle, before});
  if (after && middle > 0) outside.push_back({first, lc + w - after, middle, after});
  std::vector<kernels::Rectangle> rectangles;
  std::vector<T> values;
  for (const Local& l : outside) {
    rectangles.push_back({l.row * ld() + l.col, ld(), l.rows, l.cols});
    for (index_t i = 0; i < l.rows; ++i)
      for (index_t j = 0; j < l.cols; ++j) values.push_back(value(r0 + l.row + i, c0 + l.col + j));
  }
  if (values.empty()) return;
  const kernels::Queue& q = context().queue();
  kernels::ScratchBuffer staging(q, values.size() * sizeof(T));
  kernels::copy_from_host(q, staging.data(), values.data(), values.size() * sizeof(T));
  kernels::unpack_rectangles(q, staging.data(), rectangles, origin_, sizeof(T));
  q.synchronize();
}

template <class T>
std::vector<T> Field2D<T>::local_to_host() const {
  const index_t lr = local_rows(), lc = local_cols();
  std::vector<T> host(static_cast<std::size_t>(lr * lc));
  if (host.empty()) return host;
  const kernels::Queue& q = context().queue();
  kernels::ScratchBuffer packed(q, host.size() * sizeof(T));
  const kernels::Rectangle block{0, ld(), lr, lc};
  kernels::pack_rectangles(q, origin_, std::span(&block, 1), packed.data(), sizeof(T));
  kernels::copy_to_host(q, host.data(), packed.data(), host.size() * sizeof(T));
  return host;
}

template <class T>
void Field2D<T>::local_from_host(std::span<const T> block) {
  const index_t lr = local_rows(), lc = local_cols();
  TESSERA_ASSERT(static_cast<index_t>(block.size()) == lr * lc, "Field2D::local_from_host: size differs from the block");
  if (block.empty()) return;
  const kernels::Queue& q = context().queue();
  kernels::ScratchBuffer packed(q, block.size() * sizeof(T));
  kernels::copy_from_host(q, packed.data(), block.data(), block.size() * sizeof(T));
  const kernels::Rectangle whole{0, ld(), lr, lc};
  kernels::unpack_rectangles(q, packed.data(), std::span(&whole, 1), origin_, sizeof(T));
  q.synchronize();
}

template <class T>
std::vector<T> Field2D<T>::gather(int root) const {
  const Communicator& comm = context().comm();
  constexpr int kTag = 7501;
  std::vector<T> block = local_to_host();
  if (comm.rank() != root) {
    comm.send(block.data(), static_cast<index_t>(block.size()), root, kTag);
    return {};
  }
  std::vector<T> all(static_cast<std::size_t>(rows() * cols()));
  std::vector<T> incoming;
  for (int p = 0; p < comm.size(); ++p) {
    const int pr = p / layout_.grid_cols, pc = p % layout_.grid_cols;
    const index_t lr = layout_.row_partition.local_size(pr), lc = layout_.col_partition.local_size(pc);
    const index_t r0 = layout_.row_partition.offset(pr), c0 = layout_.col_partition.offset(pc);
    const T* src = block.data();
    if (p != root) {
      incoming.resize(static_cast<std::size_t>(lr * lc));
      comm.recv(incoming.data(), lr * lc, p, kTag);
      src = incoming.data();
    }
    for (index_t r = 0; r < lr; ++r)
      std::copy(src + r * lc, src + (r + 1) * lc, all.begin() + (r0 + r) * cols() + c0);
  }
  return all;
}

template <class T>
Field2D<T> Field2D<T>::from_replicated(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width,
                                      std::span<const T> global) {
  TESSERA_ASSERT(static_cast<index_t>(global.size()) == rows * cols, "Field2D::from_replicated: size differs from rows x cols");
  Field2D<T> f(grid, rows, cols, ghost_width);
  std::vector<T> block(static_cast<std::size_t>(f.local_rows() * f.local_cols()));
  for (index_t r = 0; r < f.local_rows(); ++r)
    std::copy(global.begin() + (f.row_offset() + r) * cols + f.col_offset(),
              global.begin() + (f.row_offset() + r) * cols + f.col_offset() + f.local_cols(),
              block.begin() + r * f.local_cols());
  f.local_from_host(block);
  return f;
}

template class Field2D<float>;
template class Field2D<double>;

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
  // Agreed before the collectives below, so that a rank out of memory leaves none waiting in them.
  std::size_t missing = 0;
  try {
    if (packed_send) send_buffer_ = kernels::allocate(q, packed_send);
    if (packed_recv) recv_buffer_ = kernels::allocate(q, try_peer_copy ? 2 * recv_slot_bytes_ : packed_recv);
  } catch (const OutOfMemory& e) {
    missing = std::clamp<std::size_t>(e.bytes(), 1, static_cast<std::size_t>(INT64_MAX));
  }
  if (const auto worst = ctx_.comm().allreduce(static_cast<std::int64_t>(missing), ReduceOp::max); worst > 0) {
    free_buffers();
    throw OutOfMemory(static_cast<std::size_t>(worst), "the halo exchange's buffers");
  }
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
  kernels::pack_rectangles(ctx_.queue(), origin, send_rectangles_, send_buffer_, element_bytes_);
  start_packed(origin);
}

void HaloExchange::start_packed(void* origin) {
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
