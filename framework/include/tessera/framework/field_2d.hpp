// Field2D<T>: a Field<T, 2> (field.hpp) under the names of a matrix: a global rows x cols field
// in 2-D blocks over a ProcessGrid, with one ghost width for both axes and Dirichlet boundaries.
// It is a Field<T, 2>: its storage, host copies, gather and scatter, HDF5 I/O, checkpoints and
// apply_stencil and the Jacobi solver (algorithms/stencil.hpp) are Field's, and a Field2D goes
// wherever a Field<T, 2>& does. What it adds is the 2-D view HaloExchange takes: FieldLayout (rows,
// columns, the process grid's row and column, the leading dimension ld()), which
// detail::plane_layout gives of any Field<T, 2> with one ghost width.
//
// Layout of a block in backend memory: Field's, row-major, cell (i, j) of the block (-ghost_width
// <= i < local_rows() + ghost_width, the same for j) at origin()[i * ld() + j], every row's owned
// cells on a 32-byte boundary (BlockStorage::kRowAlignment), the ghost cells at negative offsets.
#pragma once

#include <array>
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
#include "tessera/framework/field.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/kernels/element_traits.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera {

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
// The 2-D view of a Field<T, 2>'s layout (its axes 1 and 2 of three).
FieldLayout plane_layout(const BlockLayout& layout);
// The Cartesian grid of a ProcessGrid's ranks (the same numbering), after Field2D's own checks of
// its shape: UsageError where a rank would own no cell or the ghost width is negative.
CartesianGrid plane_grid(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width);
}  // namespace detail

// T: any trivially copyable type. The Jacobi solver needs float or double.
template <class T>
class Field2D : public Field<T, 2> {
  using Base = Field<T, 2>;

 public:
  using value_type = T;

  Field2D() = default;
  // UsageError when rows < grid.rows() or cols < grid.cols() (a rank would own no cell), or the
  // ghost width is negative. Contents undefined.
  Field2D(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width)
      : Base(detail::plane_grid(grid, rows, cols, ghost_width), {rows, cols}, {ghost_width, ghost_width}) {}

  // The 2-D view of the layout (HaloExchange takes it).
  FieldLayout plane_layout() const { return detail::plane_layout(Base::layout()); }
  index_t rows() const { return Base::extent(0); }
  index_t cols() const { return Base::extent(1); }
  using Base::ghost_width;
  int ghost_width() const { return Base::ghost_width(0); }
  index_t local_rows() const { return Base::local_extent(0); }
  index_t local_cols() const { return Base::local_extent(1); }
  index_t row_offset() const { return Base::offset(0); }
  index_t col_offset() const { return Base::offset(1); }
  index_t ld() const { return Base::stride(0); }

  // The ghost cells outside the global domain (global row < 0 or >= rows(), or column < 0 or >=
  // cols()) become value(i, j) of their global index: the boundary condition. value runs on the
  // host, once per such cell; ghost cells inside the domain are left as they are.
  using Base::set_outer_ghosts;
  void set_outer_ghosts(const std::function<T(index_t i, index_t j)>& value) {
    Base::set_outer_ghosts([&](const typename Base::Extents& at) { return value(at[0], at[1]); });
  }
  // The field whose owned cells are `global` (row-major rows x cols) on `root` (ignored elsewhere):
  // each rank receives its block (ghosts undefined). Collective.
  using Base::scatter;
  static Field2D scatter(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width,
                         std::span<const T> global, int root = 0) {
    Field2D f(grid, rows, cols, ghost_width);
    f.scatter(global, root);
    return f;
  }
  // Every rank passes the same row-major rows x cols data; each keeps its block (ghosts undefined).
  using Base::from_replicated;
  static Field2D from_replicated(const ProcessGrid& grid, index_t rows, index_t cols, int ghost_width,
                                 std::span<const T> global) {
    Field2D f(grid, rows, cols, ghost_width);
    f.from_replicated(global);
    return f;
  }
};

namespace detail {
class HaloTransport;
}

// How a HaloExchange moves its messages, HaloExchange::path(), chosen when it is made, the same on
// every rank; TESSERA_HALO=auto|peer-copy|device-comm|peer-store (auto when unset) asks for one:
//   peer-copy    under cuda, with every neighbour on the node and its GPU reachable (CUDA IPC, peer
//                access or the same GPU): each message packed straight into the receiver's
//                buffer, mapped once, and unpacked there; flags in GPU memory order the ranks, and
//                no host memory carries it. Asked for where some rank cannot take it: a UsageError
//                on every rank.
//   peer-store   (an exchange given the two fields it alternates between, below) under cuda, with
//                every neighbour on the node: each rectangle stored straight into the neighbour's
//                ghost cells, no message, no unpack.
//   device-comm  DeviceComm::ineighbor_exchange on the context's path (nccl, staged,
//                cuda-aware-mpi, mpi-host); one-row rectangles go straight from the block and into
//                the ghost cells, the others packed.
//   auto         peer-store where it is given the alternating fields and every rank can take it;
//                else peer-copy where the DeviceComm path is staged (ranks sharing a GPU, no NCCL, or
//                TESSERA_DEVICE_COMM=staged) and every rank can take it; device-comm otherwise
//                (the halos' one policy, with what each choice measured:
//                framework/src/halo_transport.hpp).

// One halo exchange of a field layout, planned once and run as often as needed: which rectangle of
// the block goes to which rank and which ghost rectangle comes from which, the buffers, and the
// path (above). The exchange is ordered on the queue of the context it is made with (the grid's
// ranks, any queue on the same device), so that it can run beside work on another queue. Made and
// destroyed collectively (the peer paths map the neighbours' memory, and unmap it with them).
class HaloExchange {
 public:
  // shape: the ghost cells filled, those beside the block's four edges (star: what a 5-point
  // stencil reads) or the whole frame, corners included (box: a 9-point stencil). ctx: the grid's
  // ranks in grid order (ProcessGrid::context(), or the same communicator with another queue).
  // element_bytes: the size of the field's cells.
  //
  // alternating: for a solver whose sweep reads one field and writes the other, the two block
  // origins (Field::origin()), each in its own allocation; every exchange then moves one of them.
  // Given, the exchange may store straight into the neighbours' ghost cells (peer-store), on two
  // conditions, as a solver that sweeps u into v, exchanges v, sweeps v into u, exchanges u, ...
  // meets them: the exchanges alternate between the two fields (or repeat one whose sent cells have
  // not changed), and the ghost cells an exchange fills are read only by work queued on the
  // exchange's queue (or ordered before it) before this rank starts (or claims) the next exchange.
  // Making it then waits until this rank's GPU is idle.
  HaloExchange(const FieldLayout& layout, StencilForm shape, std::size_t element_bytes, const Context& ctx,
               std::array<const void*, 2> alternating = {});
  ~HaloExchange();
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  // Sends the cells of the block at `origin` that other ranks' ghosts hold (packed, or from where
  // they lie). The cells must be written by work queued on this exchange's queue before the call
  // (or ordered before it with kernels::queue_wait). From this call on, the ghost cells of `origin`
  // may be written (a ghost rectangle of one row is received straight into them; on peer-store
  // from the start of the exchange before, which the conditions above allow for); work beside the
  // exchange must not read them before finish.
  void start(void* origin);
  // Completes the exchange started last: the ghost cells of `origin` (the same block) receive the
  // neighbours' cells, in the queue's order. Ghost cells outside the domain are never written.
  void finish(void* origin);
  void run(void* origin) {
    start(origin);
    finish(origin);
  }
  // start() for a caller whose own kernel writes the cells as it computes them (stencil_2d_frame's
  // copies): claim(origin) queues the wait until they may be written and returns, for each of
  // sends() (rectangles of the block, offsets from its origin), where its cells go (a send buffer,
  // or a neighbour's memory mapped here; a place that is the rectangle itself needs no writing);
  // publish(origin), once the kernel is queued, sends them. finish() as after start().
  std::span<const kernels::Rectangle> sends() const;
  std::span<const HaloPlace> claim(void* origin);
  void publish(void* origin);

  StencilForm shape() const { return shape_; }
  // "peer-copy", "peer-store", or the DeviceComm path's name.
  const char* path() const;
  // Ranks this one receives from, and the bytes it sends and receives per exchange.
  int peers() const { return peers_; }
  std::size_t bytes_sent() const { return send_bytes_; }
  std::size_t bytes_received() const { return recv_bytes_; }
  // The collectives of one run (collective_plan.hpp): one neighbour exchange of bytes_sent().
  CollectivePlan plan() const { return {{Collective::neighbor_exchange, static_cast<double>(send_bytes_)}}; }
  // The transport underneath (framework/src/halo_transport.hpp).
  detail::HaloTransport& transport() const { return *transport_; }

 private:
  Context ctx_;
  StencilForm shape_;
  int peers_ = 0;
  std::size_t send_bytes_ = 0, recv_bytes_ = 0;  // of every message
  std::unique_ptr<detail::HaloTransport> transport_;
};

// The global rectangle of the cells that rank `owner` (grid coordinates) sends to the ghosts of
// rank `receiver`: the receiver's halo (of `shape`, clipped to the domain) cut with the owner's
// block. Empty (rows or cols 0) where they share nothing. Rows first: {row, col, rows, cols}.
GlobalRectangle halo_piece(const FieldLayout& layout, StencilForm shape, int receiver_row, int receiver_col,
                           int owner_row, int owner_col);

}  // namespace tessera
