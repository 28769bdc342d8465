// Field<T, D>: a global D-dimensional field (D = 1, 2 or 3) cut into blocks over a D-dimensional
// Cartesian process grid, each block surrounded by ghost cells: copies of the neighbours' cells
// (filled by the halo exchange, exchange_halo or apply_stencil) and, outside the global domain,
// either the field's own cells again (a periodic axis) or the values a Dirichlet condition gives
// (set_outer_ghosts).
//
// Axes and order. A cell's global index is (i0, ..., i(D-1)), 0 <= ia < extent(a); the last axis is
// the fastest: the global order (gather, scatter, from_replicated) and each block's storage are
// row-major, like C arrays and numpy's default. For a 3-D field of nx x ny x nz cells named by
// (x, y, z), pass the extents {nx, ny, nz}: z is then contiguous. The process grid numbers its
// ranks row-major too: the rank at grid coordinates (p0, ..., p(D-1)) is p0 * g1 * g2 + ... for
// grid extents (g0, ..., g(D-1)), as MPI_Cart_create without reordering numbers them.
//
// Distribution. Axis a of extent n over g processes is cut by Partition::block(n, g): blocks differ
// by at most one cell and none needs to divide; a process may own no cell (more processes than
// cells along an axis). A ghost width per axis: wa layers of ghost cells on both sides of the block
// along axis a (0 for none). Where a neighbour's block is thinner than the ghost width, the
// exchange takes the cells from the ranks beyond it too. A periodic axis needs wa <= n (the ghosts
// would otherwise wrap around the domain more than once): UsageError otherwise.
//
// Storage. The block with its ghost cells, row-major, in backend memory: cell (l0, ..., l(D-1)) of
// the block (local coordinates, -wa <= la < local_extent(a) + wa) is origin()[l0 * stride(0) + ... +
// l(D-1) * stride(D-1)], stride(D-1) = 1 and stride(a) = stride(a+1) * (local_extent(a+1) +
// 2 w(a+1)) for a < D - 2. The rows (the last axis) are padded: stride(D-2) is local_extent(D-1) +
// 2 w(D-1) rounded up to whole 32-byte boundaries, and the owned cells of every row start on such a
// boundary (BlockStorage::kRowAlignment; padding cells after each row's ghosts, before the first
// row's and after the last's, never read or written as cells). T is any trivially copyable type; everything that
// only moves cells (allocation, host copies, gather and scatter, the halo) works on bytes
// underneath, so the library instantiates nothing per T.
//
// Field2D (field_2d.hpp) is a Field<T, 2> with the names of a matrix, on which the Jacobi solver
// (algorithms/stencil.hpp) runs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/kernels/cells.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera {

// What lies beyond the domain along an axis: values a boundary condition gives (Dirichlet: the
// outer ghost cells keep what set_outer_ghosts put there; exchanges never write them), or the
// other end of the field (periodic: the exchange wraps around).
enum class AxisBoundary { dirichlet, periodic };

// Which neighbours a stencil reads: along one axis at a time (star: offsets with at most one
// non-zero component, |d| <= radius; the halo exchanges the faces of the block only), or the whole
// cube (box: every offset with |da| <= radius; faces, edges and corners).
enum class StencilForm { star, box };

inline const char* to_string(AxisBoundary b) { return b == AxisBoundary::dirichlet ? "dirichlet" : "periodic"; }
inline const char* to_string(StencilForm s) { return s == StencilForm::star ? "star" : "box"; }

inline constexpr int kMaxFieldDims = 3;

// Where the cells of one rectangle of a block go in a halo exchange: row r of the rectangle at
// to + r * ld elements, row-major (backend memory this rank's kernels may write: a send buffer of
// its own, or a neighbour's memory mapped into this process).
struct HaloPlace {
  void* to = nullptr;
  index_t ld = 0;
};

// A Cartesian grid of the context's ranks, row-major (above).
class CartesianGrid {
 public:
  // shape: one extent per axis (1 to 3 axes); zeros are chosen by MPI_Dims_create. UsageError where
  // an extent is negative, or the product of the extents given is not the rank count (all given) or
  // does not divide it (some zero): the message names the grid and the rank count.
  static CartesianGrid create(const Context& ctx, std::vector<int> shape);
  CartesianGrid() = default;

  int dims() const { return dims_; }
  const Context& context() const { return ctx_; }
  int extent(int axis) const { return extent_[static_cast<std::size_t>(axis)]; }
  int coordinate(int axis) const { return coord_[static_cast<std::size_t>(axis)]; }
  // "3x1x2".
  std::string text() const;

 private:
  Context ctx_;
  int dims_ = 0;
  std::array<int, kMaxFieldDims> extent_{1, 1, 1}, coord_{0, 0, 0};
};

namespace detail {

// A field's distribution, independent of the element type, always in three axes: a field of D < 3
// axes has 3 - D leading axes of one cell, one process, no ghost. Axis 2 is the fastest.
struct BlockLayout {
  int dims = 3;  // the field's own axes: the last `dims` of the three
  std::array<index_t, 3> extent{1, 1, 1};
  std::array<index_t, 3> ghost{0, 0, 0};
  std::array<int, 3> grid{1, 1, 1}, coord{0, 0, 0};
  std::array<AxisBoundary, 3> boundary{AxisBoundary::dirichlet, AxisBoundary::dirichlet, AxisBoundary::dirichlet};
  std::array<Partition, 3> partition;
  std::array<index_t, 3> stride{0, 0, 1};  // of the block's storage, in elements

  index_t local(int a) const { return partition[static_cast<std::size_t>(a)].local_size(coord[static_cast<std::size_t>(a)]); }
  index_t offset(int a) const { return partition[static_cast<std::size_t>(a)].offset(coord[static_cast<std::size_t>(a)]); }
  index_t local_cells() const { return local(0) * local(1) * local(2); }
  int rank_of(int p0, int p1, int p2) const { return (p0 * grid[1] + p1) * grid[2] + p2; }
  // Same extents, process grid, ghost widths and boundaries.
  bool same_as(const BlockLayout& o) const {
    return dims == o.dims && extent == o.extent && ghost == o.ghost && grid == o.grid && coord == o.coord &&
           boundary == o.boundary;
  }
  // "17x13x11 cells on the process grid 2x1x3, ghost widths 2,2,2, boundaries dirichlet,periodic,..."
  std::string text() const;
};

// One halo exchange's geometry for one layout and shape: per peer, the rectangles of the block
// (offsets from the origin, in elements) that go to it and those its cells land in, in the order
// both sides list them (rectangles one after another, each row-major, make one message).
struct HaloMessage {
  int peer = 0;
  index_t cells = 0;
  std::vector<kernels::Rectangle> rectangles;
};
struct HaloGeometry {
  std::vector<HaloMessage> sends, receives;
  index_t cells_sent_to_others = 0;
};

class HaloTransport;  // halo_transport.hpp: how a halo's cells travel

// The storage of a Field with its element type erased.
class BlockStorage {
 public:
  // The owned cells of each row of the block (axis 2) start on a boundary of this many bytes, and
  // the row's stride is a whole number of them; the padding cells between rows, before the first
  // and after the last hold every aligned 16-byte piece that reaches a row's ghosts (never read or
  // written as cells): device passes can then copy a row in aligned 16-byte pieces.
  static constexpr index_t kRowAlignment = 32;
  BlockStorage() = default;
  BlockStorage(const CartesianGrid& grid, int dims, const std::array<index_t, 3>& extent,
               const std::array<index_t, 3>& ghost, const std::array<AxisBoundary, 3>& boundary,
               std::size_t element_bytes);
  ~BlockStorage();
  BlockStorage(BlockStorage&& other) noexcept;
  BlockStorage& operator=(BlockStorage&& other) noexcept;
  BlockStorage(const BlockStorage&) = delete;
  BlockStorage& operator=(const BlockStorage&) = delete;

  const CartesianGrid& grid() const { return grid_; }
  const Context& context() const { return grid_.context(); }
  const BlockLayout& layout() const { return layout_; }
  std::size_t element_bytes() const { return element_bytes_; }
  void* origin() const { return origin_; }
  void* begin() const { return storage_; }
  index_t storage_elements() const { return storage_elements_; }

  void fill(const void* value);
  void copy_from(const BlockStorage& other);
  // The ghost cells outside the domain along a Dirichlet axis, as boxes: their rectangles (offsets
  // from the origin), and per box its global first index and extents (the index along a periodic
  // axis wrapped into the domain). Cells of all boxes, each row-major, in this order.
  std::vector<kernels::Rectangle> outer_ghosts(std::vector<std::array<index_t, 6>>* global_boxes) const;
  void set_cells(const std::vector<kernels::Rectangle>& rectangles, const void* values);
  // The owned cells, row-major, to and from host memory.
  void local_to_host(void* host) const;
  void local_from_host(const void* host);
  // Collective: the whole field in global order on root (gather), each rank's block from root's
  // (scatter), or from the same data on every rank (from_replicated).
  void gather(void* all, int root) const;
  void scatter(const void* all, int root);
  void from_replicated(const void* global);

  // The halo exchange's geometry for `shape` (made once per shape, then kept).
  const HaloGeometry& halo(StencilForm shape) const;
  // The transport of the halo exchange for `shape` of fields of these cell sizes (this field's
  // first), its work queued on ctx's queue (exchange_halos says which path it takes). Made at the
  // first call per shape and sizes, which is collective over the field's ranks, then kept.
  HaloTransport& halo_transport(StencilForm shape, const Context& ctx, const std::vector<std::size_t>& element_bytes) const;

 private:
  void release();
  CartesianGrid grid_;
  BlockLayout layout_;
  std::size_t element_bytes_ = 0;
  index_t storage_elements_ = 0;
  void* storage_ = nullptr;
  void* origin_ = nullptr;
  mutable std::array<std::shared_ptr<const HaloGeometry>, 2> halo_;
  mutable std::map<std::pair<int, std::vector<std::size_t>>, std::shared_ptr<HaloTransport>> transports_;
};

// The halo exchange of several fields of one layout (their storages; the first one's geometry),
// for `shape`: pack, start, overlap(), finish, unpack, after(queue). Stream-ordered on ctx's queue
// (the fields' ranks): it starts after the work queued before it, and the work queued after it sees
// the ghosts and after()'s work. Under cuda the pack, the messages, the unpack and after()'s work
// (queued on the queue it is given) run on a second queue of the highest priority, beside the work
// overlap() queues on ctx's queue; overlap()'s work must neither read the ghosts the exchange
// writes nor write the cells it sends, and after()'s must not touch what overlap()'s writes.
//
// The path, decided once per field, shape and cell sizes (TESSERA_HALO, the same on every rank;
// halo_transport.hpp holds the one policy of every halo):
//   auto         peer-copy where every rank's neighbours are on its node and their GPUs' memory
//                can be mapped (CUDA IPC); the context's device path otherwise
//   peer-copy    that path, or a UsageError where a rank cannot take it
//   device-comm  the context's device path (DeviceComm: NCCL, CUDA-aware MPI, staging through
//                host memory, host MPI under cpu): the messages packed into buffers of the
//                exchange's own (a message of one row sent from and received into the block)
// On the peer-copy path (halo_peer_copy.hpp) one kernel packs every message straight into its
// neighbour's receive slot (mapped once) and flags in GPU memory order the ranks, with no host in
// between: the exchange is a pack, an unpack and a few stream operations beside a sweep that fills
// every SM (NCCL's kernels wait for SMs there, and slow the sweep once they hold some).
void exchange_halos(const Context& ctx, std::span<BlockStorage* const> fields, StencilForm shape,
                    const std::function<void()>& overlap,
                    const std::function<void(const kernels::Queue&)>& after = nullptr);
// The collectives of one such exchange: one neighbour exchange of the bytes sent to other ranks.
CollectivePlan halo_plan(std::span<const BlockStorage* const> fields, StencilForm shape);

// UsageError where `what`'s layout differs from `reference`'s, naming both.
void check_same_layout(const BlockStorage& reference, const BlockStorage& other, const std::string& what);

}  // namespace detail

// A global index of a D-dimensional field, usable in device code.
template <int D>
struct FieldIndex {
  index_t i[D];
  TESSERA_HOST_DEVICE index_t operator[](int axis) const { return i[axis]; }
  TESSERA_HOST_DEVICE index_t& operator[](int axis) { return i[axis]; }
};

namespace detail {
// Field::generate's cell: origin[l0 stride0 + l1 stride1 + l2] = f(global index). A namespace-scope
// type: nvcc refuses a class's private type as a kernel's template argument.
template <class T, int D, class F>
struct GenerateCell {
  using wrapped_functor = F;
  T* origin;
  index_t stride[2];  // of axes 0 and 1; axis 2's is 1
  index_t first[3];   // the block's global offsets
  F f;
  TESSERA_HOST_DEVICE void operator()(index_t l0, index_t l1, index_t l2) const {
    const index_t g[3] = {first[0] + l0, first[1] + l1, first[2] + l2};
    FieldIndex<D> index;
    for (int a = 0; a < D; ++a) index.i[a] = g[3 - D + a];
    origin[l0 * stride[0] + l1 * stride[1] + l2] = f(index);
  }
};
}  // namespace detail

template <class T, int D>
class Field {
  static_assert(D >= 1 && D <= kMaxFieldDims, "Field: 1, 2 or 3 dimensions");
  static_assert(std::is_trivially_copyable_v<T>, "Field: the element type must be trivially copyable");

 public:
  using value_type = T;
  static constexpr int dims = D;
  using Extents = std::array<index_t, D>;

  Field() = default;
  // On `grid` (grid.dims() == D): extents >= 0, ghost widths >= 0, boundaries per axis (Dirichlet
  // by default). UsageError on bad input (every rank alike). Contents undefined.
  Field(const CartesianGrid& grid, const Extents& extents, const std::array<int, D>& ghost,
        const std::array<AxisBoundary, D>& boundary = all(AxisBoundary::dirichlet))
      : storage_(checked_grid(grid), D, pad(extents, index_t(1)), pad_ghost(ghost), pad_boundary(boundary), sizeof(T)) {}
  // On a grid MPI_Dims_create chooses for ctx's ranks, one ghost width for every axis.
  Field(const Context& ctx, const Extents& extents, int ghost,
        const std::array<AxisBoundary, D>& boundary = all(AxisBoundary::dirichlet))
      : Field(CartesianGrid::create(ctx, std::vector<int>(D, 0)), extents, all_int(ghost), boundary) {}

  const CartesianGrid& grid() const { return storage_.grid(); }
  const Context& context() const { return storage_.context(); }
  const detail::BlockStorage& storage() const { return storage_; }
  detail::BlockStorage& storage() { return storage_; }
  const detail::BlockLayout& layout() const { return storage_.layout(); }

  index_t extent(int axis) const { return layout().extent[at(axis)]; }
  index_t local_extent(int axis) const { return layout().local(static_cast<int>(at(axis))); }
  index_t offset(int axis) const { return layout().offset(static_cast<int>(at(axis))); }
  int ghost_width(int axis) const { return static_cast<int>(layout().ghost[at(axis)]); }
  AxisBoundary boundary(int axis) const { return layout().boundary[at(axis)]; }
  index_t stride(int axis) const { return layout().stride[at(axis)]; }
  index_t cells() const { return layout().extent[0] * layout().extent[1] * layout().extent[2]; }
  index_t local_cells() const { return layout().local_cells(); }

  T* origin() { return static_cast<T*>(storage_.origin()); }
  const T* origin() const { return static_cast<const T*>(storage_.origin()); }

  // Every cell of the block, ghosts included.
  void fill(const T& value) { storage_.fill(&value); }
  // Every cell of other's block (this field's layout), ghosts included. Stream-ordered.
  void copy_from(const Field& other) { storage_.copy_from(other.storage_); }

  // The owned cells become f(FieldIndex<D>{global index}). f runs where the backend runs it, as
  // kernels::transform's functors do (a TESSERA_HOST_DEVICE functor in a translation unit compiled
  // by nvcc under cuda). Stream-ordered.
  template <class F>
  void generate(F f) {
    const detail::BlockLayout& l = layout();
    kernels::CellBox box;
    for (int a = 0; a < 3; ++a) box.end[a] = l.local(a);
    kernels::for_each_cell(context().queue(), box,
                           detail::GenerateCell<T, D, F>{origin(), {l.stride[0], l.stride[1]}, {l.offset(0), l.offset(1), l.offset(2)}, f});
  }

  // Dirichlet values: the ghost cells outside the domain along a Dirichlet axis become
  // value(global index) (an index along a periodic axis wrapped into the domain, along a Dirichlet
  // axis outside it), or `value`. value runs on the host, once per such cell. Exchanges never write
  // these cells, so they keep their values until set again.
  void set_outer_ghosts(const std::function<T(const Extents& global)>& value) {
    std::vector<std::array<index_t, 6>> boxes;
    const std::vector<kernels::Rectangle> rectangles = storage_.outer_ghosts(&boxes);
    std::vector<T> values;
    for (const auto& b : boxes)
      for (index_t i0 = 0; i0 < b[3]; ++i0)
        for (index_t i1 = 0; i1 < b[4]; ++i1)
          for (index_t i2 = 0; i2 < b[5]; ++i2) {
            const std::array<index_t, 3> g{b[0] + i0, b[1] + i1, b[2] + i2};
            Extents e;
            for (int a = 0; a < D; ++a) e[static_cast<std::size_t>(a)] = g[at(a)];
            values.push_back(value(e));
          }
    if (!values.empty()) storage_.set_cells(rectangles, values.data());
  }
  void set_outer_ghosts(const T& value) {
    set_outer_ghosts([&](const Extents&) { return value; });
  }

  // The halo exchange: every ghost cell inside the domain (or, along a periodic axis, wrapped into
  // it) that a stencil of `shape` reads receives its owner's cell. Collective; stream-ordered.
  void exchange_halo(StencilForm shape = StencilForm::box) {
    detail::BlockStorage* fields[] = {&storage_};
    detail::exchange_halos(context(), fields, shape, [] {});
  }
  CollectivePlan halo_plan(StencilForm shape = StencilForm::box) const {
    const detail::BlockStorage* fields[] = {&storage_};
    return detail::halo_plan(fields, shape);
  }

  // The owned cells, row-major, to and from host memory.
  std::vector<T> local_to_host() const {
    std::vector<T> host(static_cast<std::size_t>(local_cells()));
    storage_.local_to_host(host.data());
    return host;
  }
  // f(global index, value) for each owned cell, row-major, from one copy of the block to the host
  // (checks and reports; local).
  template <class F>
  void for_each_owned_on_host(F f) const {
    const std::vector<T> host = local_to_host();
    const detail::BlockLayout& l = layout();
    std::size_t k = 0;
    for (index_t i0 = 0; i0 < l.local(0); ++i0)
      for (index_t i1 = 0; i1 < l.local(1); ++i1)
        for (index_t i2 = 0; i2 < l.local(2); ++i2, ++k) {
          const index_t g[3] = {l.offset(0) + i0, l.offset(1) + i1, l.offset(2) + i2};
          FieldIndex<D> at;
          for (int a = 0; a < D; ++a) at.i[a] = g[3 - D + a];
          f(at, host[k]);
        }
  }
  void local_from_host(std::span<const T> block) {
    if (static_cast<index_t>(block.size()) != local_cells())
      throw UsageError("Field::local_from_host: " + std::to_string(block.size()) + " values for a block of " +
                       std::to_string(local_cells()) + " cells");
    storage_.local_from_host(block.data());
  }
  // The whole field in global order on `root` (empty elsewhere). Collective.
  std::vector<T> gather(int root = 0) const {
    std::vector<T> all(context().rank() == root ? static_cast<std::size_t>(cells()) : 0);
    storage_.gather(all.data(), root);
    return all;
  }
  // Each rank's owned cells from root's `global` (global order; ignored elsewhere). Collective.
  void scatter(std::span<const T> global, int root = 0) {
    const index_t size = context().comm().bcast_value(static_cast<index_t>(global.size()), root);
    if (size != cells())
      throw UsageError("Field::scatter: " + std::to_string(size) + " values for a field of " + std::to_string(cells()) +
                       " cells");
    storage_.scatter(global.data(), root);
  }
  // Each rank's owned cells from `global`, the same on every rank.
  void from_replicated(std::span<const T> global) {
    if (static_cast<index_t>(global.size()) != cells())
      throw UsageError("Field::from_replicated: " + std::to_string(global.size()) + " values for a field of " +
                       std::to_string(cells()) + " cells");
    storage_.from_replicated(global.data());
  }

 private:
  static std::size_t at(int axis) {
    TESSERA_ASSERT(axis >= 0 && axis < D, "Field: axis out of range");
    return static_cast<std::size_t>(3 - D + axis);
  }
  template <class V>
  static std::array<V, D> all_of(V v) {
    std::array<V, D> a;
    a.fill(v);
    return a;
  }
  static std::array<AxisBoundary, D> all(AxisBoundary b) { return all_of(b); }
  static std::array<int, D> all_int(int w) { return all_of(w); }
  template <class V>
  static std::array<V, 3> pad(const std::array<V, D>& v, V lead) {
    std::array<V, 3> p;
    p.fill(lead);
    for (int a = 0; a < D; ++a) p[static_cast<std::size_t>(3 - D + a)] = v[static_cast<std::size_t>(a)];
    return p;
  }
  static std::array<index_t, 3> pad_ghost(const std::array<int, D>& g) {
    std::array<index_t, D> w;
    for (int a = 0; a < D; ++a) w[static_cast<std::size_t>(a)] = g[static_cast<std::size_t>(a)];
    return pad(w, index_t(0));
  }
  static std::array<AxisBoundary, 3> pad_boundary(const std::array<AxisBoundary, D>& b) {
    return pad(b, AxisBoundary::dirichlet);
  }
  static const CartesianGrid& checked_grid(const CartesianGrid& grid) {
    if (grid.dims() != D)
      throw UsageError("a " + std::to_string(D) + "-D field on the " + std::to_string(grid.dims()) +
                       "-D process grid " + grid.text());
    return grid;
  }

  detail::BlockStorage storage_;
};

}  // namespace tessera
