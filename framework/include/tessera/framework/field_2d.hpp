// Field2D<T>: a global rows x cols field in 2-D blocks over a process grid, each block surrounded by
// `ghost_width` layers of ghost cells: copies of the neighbours' cells (filled by a halo exchange)
// and, outside the global domain, the values a boundary condition gives. HaloExchange moves the
// cells that other ranks' ghosts hold, for any ghost width: where a neighbour's block is thinner
// than the ghost width, the ghost cells come from the ranks beyond it too.
//
// Layout of a block in backend memory: row-major with leading dimension ld() >= local_cols() +
// 2 ghost_width, rounded up so that every row starts on a 16-byte boundary at the same column
// (for elements whose size divides 16); origin() points at the block's first owned cell, which is
// on a 16-byte boundary (again where the size divides 16), and the ghost cells lie at negative
// offsets from it.
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/kernels/element_traits.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera {

// Which ghost cells an exchange fills: those beside the block's four edges (what a 5-point stencil
// reads), or the whole frame, corners included (a 9-point stencil).
enum class HaloShape { faces, box };

// Everything about a field's distribution that does not depend on its element type.
struct FieldLayout {
  index_t rows = 0, cols = 0;     // the global field
  int grid_rows = 1, grid_cols = 1;
  int process_row = 0, process_col = 0;
  int ghost_width = 0;
  Partition row_partition, col_partition;
  index_t ld = 0;                 // elements between the starts of consecutive rows of a block

  index_t local_rows() const { return row_partition.local_size(process_row); }
  index_t local_cols() const { return col_partition.local_size(process_col); }
  index_t row_offset() const { return row_partition.offset(process_row); }
  index_t col_offset() const { return col_partition.offset(process_col); }
  // Rank of the grid's process (row, col): row-major, as ProcessGrid numbers them.
  int rank_of(int row, int col) const { return row * grid_cols + col; }
};

// A rectangle of the global field: {row, col, rows, cols}.
struct GlobalRectangle {
  index_t row = 0, col = 0, rows = 0, cols = 0;
  bool empty() const { return rows <= 0 || cols <= 0; }
};

namespace detail {

// The storage of a Field2D with its element type erased: its layout and this rank's block, ghosts
// included, of elements of element_bytes bytes. Everything that only moves cells (allocation,
// host copies, gather and scatter, the halo, HDF5) works on it: nothing is instantiated per type.
class FieldStorage {
 public:
  FieldStorage() = default;
  FieldStorage(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width, std::size_t element_bytes);
  ~FieldStorage();
  FieldStorage(FieldStorage&& other) noexcept;
  FieldStorage& operator=(FieldStorage&& other) noexcept;
  FieldStorage(const FieldStorage&) = delete;
  FieldStorage& operator=(const FieldStorage&) = delete;

  const ProcessGrid& grid() const { return grid_; }
  const FieldLayout& layout() const { return layout_; }
  std::size_t element_bytes() const { return element_bytes_; }
  void* origin() const { return origin_; }
  // The block's storage, ghosts included: storage_elements() cells from begin().
  void* begin() const { return storage_; }
  index_t storage_elements() const;

  void fill(const void* value);
  void copy_from(const FieldStorage& other);
  // The local rectangles {first row, first column, rows, columns} of the ghost cells outside the
  // domain, and the copy of their values (host memory, rectangle after rectangle, row-major) there.
  std::vector<kernels::Rectangle> outer_ghost_rectangles(std::vector<GlobalRectangle>* global) const;
  void set_cells(const std::vector<kernels::Rectangle>& rectangles, const void* values);
  // The owned cells, row-major, to and from host memory.
  void local_to_host(void* host) const;
  void local_from_host(const void* host);
  // The owned cells of the whole field into `all` on root (host memory, rows x cols). Collective.
  void gather(void* all, int root) const;
  // Each rank's owned cells from root's `all`. Collective.
  void scatter(const void* all, int root);
  // Each rank's owned cells from `global`, the same on every rank.
  void from_replicated(const void* global);

 private:
  void release();
  ProcessGrid grid_;
  FieldLayout layout_;
  std::size_t element_bytes_ = 0;
  void* storage_ = nullptr;  // from kernels::allocate
  void* origin_ = nullptr;
};

}  // namespace detail

// T: any trivially copyable type (moved as bytes underneath: detail::FieldStorage). The stencils
// (algorithms/stencil.hpp) need float or double.
template <class T>
class Field2D {
  static_assert(std::is_trivially_copyable_v<T>, "Field2D: the element type must be trivially copyable");

 public:
  using value_type = T;

  Field2D() = default;
  // UsageError when rows < grid.rows() or cols < grid.cols() (a rank would own no cell), or the
  // ghost width is negative. Contents undefined.
  Field2D(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width)
      : storage_(grid, rows, cols, ghost_width, sizeof(T)) {}

  const ProcessGrid& grid() const { return storage_.grid(); }
  const Context& context() const { return storage_.grid().context(); }
  const FieldLayout& layout() const { return storage_.layout(); }
  const detail::FieldStorage& storage() const { return storage_; }
  detail::FieldStorage& storage() { return storage_; }
  index_t rows() const { return layout().rows; }
  index_t cols() const { return layout().cols; }
  int ghost_width() const { return layout().ghost_width; }
  index_t local_rows() const { return layout().local_rows(); }
  index_t local_cols() const { return layout().local_cols(); }
  index_t row_offset() const { return layout().row_offset(); }
  index_t col_offset() const { return layout().col_offset(); }
  index_t ld() const { return layout().ld; }

  // Backend memory: cell (i, j) of the block, -ghost_width <= i < local_rows() + ghost_width and the
  // same for j, is origin()[i * ld() + j].
  T* origin() { return static_cast<T*>(storage_.origin()); }
  const T* origin() const { return static_cast<const T*>(storage_.origin()); }

  // Every cell of the block, ghosts included.
  void fill(const T& value) {
    if constexpr (is_numeric_element_v<T>) {
      kernels::fill(context().queue(), static_cast<T*>(storage_.begin()), storage_.storage_elements(), value);
    } else {
      storage_.fill(&value);
    }
  }
  // Every cell of other's block, ghosts included; other has this field's layout. Stream-ordered:
  // work queued after it sees the copy; the host does not wait.
  void copy_from(const Field2D& other) { storage_.copy_from(other.storage_); }
  // The ghost cells outside the global domain (global row < 0 or >= rows(), or column < 0 or >=
  // cols()) become value(i, j) of their global index: the boundary condition. value runs on the
  // host, once per such cell; ghost cells inside the domain are left as they are.
  void set_outer_ghosts(const std::function<T(index_t i, index_t j)>& value) {
    std::vector<GlobalRectangle> global;
    const std::vector<kernels::Rectangle> rectangles = storage_.outer_ghost_rectangles(&global);
    std::vector<T> values;
    for (const GlobalRectangle& g : global)
      for (index_t i = 0; i < g.rows; ++i)
        for (index_t j = 0; j < g.cols; ++j) values.push_back(value(g.row + i, g.col + j));
    if (!values.empty()) storage_.set_cells(rectangles, values.data());
  }
  // The owned cells, row-major local_rows() x local_cols(), to and from host memory.
  std::vector<T> local_to_host() const {
    std::vector<T> host(static_cast<std::size_t>(local_rows() * local_cols()));
    storage_.local_to_host(host.data());
    return host;
  }
  void local_from_host(std::span<const T> block) {
    TESSERA_ASSERT(static_cast<index_t>(block.size()) == local_rows() * local_cols(),
                   "Field2D::local_from_host: size differs from the block");
    storage_.local_from_host(block.data());
  }
  // The owned cells of the whole field, row-major, on `root` (empty elsewhere). Collective.
  std::vector<T> gather(int root = 0) const {
    std::vector<T> all(context().rank() == root ? static_cast<std::size_t>(rows() * cols()) : 0);
    storage_.gather(all.data(), root);
    return all;
  }
  // The field whose owned cells are `global` (row-major rows x cols) on `root` (ignored elsewhere):
  // each rank receives its block (ghosts undefined). Collective.
  static Field2D scatter(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width,
                         std::span<const T> global, int root = 0) {
    Field2D f(grid, rows, cols, ghost_width);
    if (grid.context().rank() == root)
      TESSERA_ASSERT(static_cast<index_t>(global.size()) == rows * cols, "Field2D::scatter: size differs from rows x cols");
    f.storage_.scatter(global.data(), root);
    return f;
  }
  // Every rank passes the same row-major rows x cols data; each keeps its block (ghosts undefined).
  static Field2D from_replicated(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width,
                                 std::span<const T> global) {
    TESSERA_ASSERT(static_cast<index_t>(global.size()) == rows * cols,
                   "Field2D::from_replicated: size differs from rows x cols");
    Field2D f(grid, rows, cols, ghost_width);
    f.storage_.from_replicated(global.data());
    return f;
  }

 private:
  detail::FieldStorage storage_;
};

namespace detail {
class PeerCopy;
}

// How a HaloExchange moves its messages, HaloExchange::path(), chosen when it is made, the same on
// every rank; TESSERA_HALO=auto|peer-copy|device-comm (auto when unset) asks for one (peer-store,
// the Jacobi step's own path, algorithms/stencil.hpp, takes auto's here):
//   peer-copy    under cuda, with every neighbour on the node and its GPU reachable (CUDA IPC, peer
//                access or the same GPU): each message copied by the copy engines straight into
//                the receiver's buffer, mapped once; no SM and no host memory carry it. Asked for
//                where some rank cannot take it: a UsageError on every rank.
//   device-comm  DeviceComm::ineighbor_exchange on the context's path (nccl, staged,
//                cuda-aware-mpi, mpi-host); one-row rectangles go straight from the block and into
//                the ghost cells, the others packed.
//   auto         peer-copy where the DeviceComm path is staged (ranks sharing a GPU, no NCCL, or
//                TESSERA_DEVICE_COMM=staged) and every rank can take it; device-comm otherwise.

// One halo exchange of a field layout, planned once and run as often as needed: which rectangle of
// the block goes to which rank and which ghost rectangle comes from which, the packed buffers, and
// the path (above). The exchange is ordered on the queue of the context it is made with (the
// grid's ranks, any queue on the same device), so that it can run beside work on another queue.
// Made and destroyed collectively (the peer-copy path maps the neighbours' buffers, and unmaps them
// with them).
class HaloExchange {
 public:
  // ctx: the grid's ranks in grid order (ProcessGrid::context(), or the same communicator with
  // another queue). element_bytes: the size of the field's cells.
  HaloExchange(const FieldLayout& layout, HaloShape shape, std::size_t element_bytes, const Context& ctx);
  ~HaloExchange();
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  // Packs the cells of the block at `origin` that other ranks' ghosts hold and starts moving them.
  // The cells must be written by work queued on this exchange's queue before the call (or ordered
  // before it with kernels::queue_wait). From this call on, the ghost cells of `origin` may be
  // written (a ghost rectangle of one row is received straight into them); work beside the
  // exchange must not read them before finish.
  void start(void* origin);
  // Completes the exchange started last: the ghost cells of `origin` (the same block) receive the
  // neighbours' cells, in the queue's order. Ghost cells outside the domain are never written.
  void finish(void* origin);
  void run(void* origin) {
    start(origin);
    finish(origin);
  }
  // The rectangles of the block (offsets from its origin) that start() packs, one after the other
  // in the packed send buffer, and that buffer (backend memory; null where nothing is packed); and
  // start() for a caller whose work, ordered before the call, has written them there itself (as
  // stencil_2d_frame's pack_to does while it computes them).
  std::span<const kernels::Rectangle> packed_sends() const { return send_rectangles_; }
  void* send_buffer() const { return send_buffer_; }
  void start_packed(void* origin);

  HaloShape shape() const { return shape_; }
  // "peer-copy", or the DeviceComm path's name.
  const char* path() const;
  // Ranks this one receives from, and the bytes it sends and receives per exchange.
  int peers() const { return static_cast<int>(recvs_.size()); }
  std::size_t bytes_sent() const { return send_bytes_; }
  std::size_t bytes_received() const { return recv_bytes_; }
  // The collectives of one run (collective_plan.hpp): one neighbour exchange of bytes_sent().
  CollectivePlan plan() const { return {{Collective::neighbor_exchange, static_cast<double>(send_bytes_)}}; }

 private:
  Context ctx_;
  HaloShape shape_;
  std::size_t element_bytes_;
  DeviceComm comm_;
  // A message that goes straight from the block or into its ghost cells: its index among sends_
  // or recvs_, and where its rectangle starts, in elements from the block's origin.
  struct Straight {
    std::size_t message;
    index_t offset;
  };
  std::vector<kernels::Rectangle> send_rectangles_, recv_rectangles_;  // the packed ones
  std::vector<Straight> straight_sends_, straight_recvs_;
  std::vector<DeviceComm::Message> sends_, recvs_;  // every message; straight ones point into the block
  std::size_t send_bytes_ = 0, recv_bytes_ = 0;  // of every message
  void* send_buffer_ = nullptr;  // backend memory, the packed rectangles
  void* recv_buffer_ = nullptr;
  DeviceComm::Staging staging_;  // pinned host memory, on the staged path
  std::optional<DeviceComm::Request> pending_;
  std::unique_ptr<detail::PeerCopy> peer_;  // the peer-copy path: recv_buffer_ holds two slots
  std::size_t recv_slot_bytes_ = 0;         // this far apart

  void free_buffers();
};

// The global rectangle of the cells that rank `owner` (grid coordinates) sends to the ghosts of
// rank `receiver`: the receiver's halo (of `shape`, clipped to the domain) cut with the owner's
// block. Empty (rows or cols 0) where they share nothing. Rows first: {row, col, rows, cols}.
GlobalRectangle halo_piece(const FieldLayout& layout, HaloShape shape, int receiver_row, int receiver_col,
                           int owner_row, int owner_col);

}  // namespace tessera
