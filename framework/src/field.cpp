// Field<T, D>'s type-erased parts: the Cartesian process grid, the block storage with its ghost
// cells, global-order gather and scatter, the Dirichlet outer ghosts, and the halo exchange's
// geometry and run (on the exchange skeleton).
#include "tessera/framework/field.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>

#include "block_transfer.hpp"
#include "halo_transport.hpp"
#include "tessera/framework/algorithms/exchange.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/transform.hpp"

namespace tessera {

// ---- the process grid ----------------------------------------------------------------------------------

namespace {

std::string join(const int* v, int n, const char* sep) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i) s += sep;
    s += std::to_string(v[i]);
  }
  return s;
}

}  // namespace

CartesianGrid CartesianGrid::create(const Context& ctx, std::vector<int> shape) {
  TESSERA_ASSERT(!ctx.is_null(), "CartesianGrid on a null context");
  const int dims = static_cast<int>(shape.size());
  if (dims < 1 || dims > kMaxFieldDims)
    throw UsageError("a process grid of " + std::to_string(dims) + " axes: 1, 2 or 3 are supported");
  const int ranks = ctx.size();
  const std::string asked = join(shape.data(), dims, "x");
  long long given = 1;
  bool some_zero = false;
  for (int e : shape) {
    if (e < 0) throw UsageError("process grid " + asked + ": an extent is negative");
    if (e == 0) some_zero = true;
    else given *= e;
  }
  if (!some_zero && given != ranks)
    throw UsageError("process grid " + asked + " needs " + std::to_string(given) + " ranks, but the context has " +
                     std::to_string(ranks));
  if (some_zero && ranks % given != 0)
    throw UsageError("process grid " + asked + ": the extents given (product " + std::to_string(given) +
                     ") do not divide the context's " + std::to_string(ranks) + " ranks");
  TESSERA_MPI_CHECK(MPI_Dims_create(ranks, dims, shape.data()));  // fills the zero entries only
  CartesianGrid g;
  g.ctx_ = ctx;
  g.dims_ = dims;
  int rest = ctx.rank();
  for (int a = dims - 1; a >= 0; --a) {
    g.extent_[static_cast<std::size_t>(a)] = shape[static_cast<std::size_t>(a)];
    g.coord_[static_cast<std::size_t>(a)] = rest % shape[static_cast<std::size_t>(a)];
    rest /= shape[static_cast<std::size_t>(a)];
  }
  return g;
}

std::string CartesianGrid::text() const { return join(extent_.data(), dims_, "x"); }

namespace detail {

std::string BlockLayout::text() const {
  std::string e, g, w, b;
  for (int a = 3 - dims; a < 3; ++a) {
    const std::size_t k = static_cast<std::size_t>(a);
    if (a > 3 - dims) {
      e += 'x';
      g += 'x';
      w += ',';
      b += ',';
    }
    e += std::to_string(extent[k]);
    g += std::to_string(grid[k]);
    w += std::to_string(ghost[k]);
    b += to_string(boundary[k]);
  }
  return e + " cells on the process grid " + g + ", ghost widths " + w + ", boundaries " + b;
}

namespace {

index_t checked_product(index_t a, index_t b, const std::string& what) {
  index_t p = 0;
  if (__builtin_mul_overflow(a, b, &p)) throw UsageError(what + ": the cell count passes 2^63 - 1");
  return p;
}

// The box of local cells [begin, begin + count) as one rectangle of its planes along axis 0 (offset
// from the origin, row-major): its cells one after another are the box in row-major order.
void box_rectangles(const BlockLayout& l, const index_t* begin, const index_t* count, std::vector<kernels::Rectangle>& out) {
  if (count[0] <= 0 || count[1] <= 0 || count[2] <= 0) return;
  out.push_back({begin[0] * l.stride[0] + begin[1] * l.stride[1] + begin[2], l.stride[1], count[1], count[2], count[0],
                 l.stride[0]});
}

// A piece of one segment of an axis of a receiver's halo: `count` cells from local coordinate
// `local`, owned by the process at grid coordinate `owner` from its local coordinate `owner_local`
// (global index `global`, wrapped into the domain along a periodic axis), or outside the domain
// along a Dirichlet axis (`outer`; global unwrapped).
struct AxisPiece {
  index_t local = 0, count = 0;
  int owner = -1;
  index_t owner_local = 0, global = 0;
  bool outer = false;
};

// Segment 0: the ghost layers before the block along axis a; 1: the block's own range; 2: after.
void axis_pieces(const BlockLayout& l, int a, int c, int segment, std::vector<AxisPiece>& out) {
  out.clear();
  const std::size_t k = static_cast<std::size_t>(a);
  const Partition& part = l.partition[k];
  const index_t n = l.extent[k], w = l.ghost[k], lo = part.offset(c), hi = lo + part.local_size(c);
  if (segment == 1) {
    out.push_back({0, hi - lo, c, 0, lo, false});
    return;
  }
  if (w == 0) return;
  const index_t first = segment == 0 ? lo - w : hi, last = segment == 0 ? lo : hi + w;
  // Before the domain, inside it, after it: in order of the unwrapped index.
  const index_t bounds[3][3] = {{first, std::min(last, index_t(0)), n},
                                {std::max(first, index_t(0)), std::min(last, n), 0},
                                {std::max(first, n), last, -n}};
  for (const auto& [b, e, shift] : bounds) {
    if (e <= b) continue;
    if (shift != 0 && l.boundary[k] != AxisBoundary::periodic) {
      out.push_back({b - lo, e - b, -1, 0, b, true});
      continue;
    }
    const index_t wb = b + shift, we = e + shift;  // within [0, n): the periodic width is at most n
    for (int q = 0; q < part.parts(); ++q) {
      const index_t qo = part.offset(q), qe = qo + part.local_size(q);
      const index_t x = std::max(wb, qo), y = std::min(we, qe);
      if (y > x) out.push_back({x - shift - lo, y - x, q, x - qo, x, false});
    }
  }
}

// Calls visit(p0, p1, p2) (AxisPiece each) for every box of the halo of the process at grid
// coordinates c, for `shape`, in one fixed order: the segments' combinations (axis 0 slowest), then
// the pieces' within them. A process that owns no cell has no halo.
template <class Visit>
void for_each_halo_box(const BlockLayout& l, const std::array<int, 3>& c, StencilForm shape, Visit&& visit) {
  for (int a = 0; a < 3; ++a)
    if (l.partition[static_cast<std::size_t>(a)].local_size(c[static_cast<std::size_t>(a)]) == 0) return;
  std::vector<AxisPiece> pieces[3][3];
  for (int a = 0; a < 3; ++a)
    for (int s = 0; s < 3; ++s) axis_pieces(l, a, c[static_cast<std::size_t>(a)], s, pieces[a][s]);
  for (int s0 = 0; s0 < 3; ++s0)
    for (int s1 = 0; s1 < 3; ++s1)
      for (int s2 = 0; s2 < 3; ++s2) {
        const int beside = (s0 != 1) + (s1 != 1) + (s2 != 1);
        if (beside == 0 || (shape == StencilForm::star && beside > 1)) continue;
        for (const AxisPiece& p0 : pieces[0][s0])
          for (const AxisPiece& p1 : pieces[1][s1])
            for (const AxisPiece& p2 : pieces[2][s2]) visit(p0, p1, p2);
      }
}

std::array<int, 3> coordinates_of(const BlockLayout& l, int rank) {
  std::array<int, 3> c{};
  for (int a = 2; a >= 0; --a) {
    c[static_cast<std::size_t>(a)] = rank % l.grid[static_cast<std::size_t>(a)];
    rank /= l.grid[static_cast<std::size_t>(a)];
  }
  return c;
}

HaloGeometry make_halo(const BlockLayout& l, int me, StencilForm shape) {
  HaloGeometry g;
  auto message = [](std::vector<HaloMessage>& list, int peer) -> HaloMessage& {
    for (HaloMessage& m : list)
      if (m.peer == peer) return m;
    list.push_back({peer, 0, {}});
    return list.back();
  };
  // What this rank receives: its own halo, cut by owner.
  for_each_halo_box(l, l.coord, shape, [&](const AxisPiece& p0, const AxisPiece& p1, const AxisPiece& p2) {
    if (p0.outer || p1.outer || p2.outer) return;
    HaloMessage& m = message(g.receives, l.rank_of(p0.owner, p1.owner, p2.owner));
    const index_t begin[3] = {p0.local, p1.local, p2.local}, count[3] = {p0.count, p1.count, p2.count};
    box_rectangles(l, begin, count, m.rectangles);
    m.cells += p0.count * p1.count * p2.count;
  });
  // What it sends: the pieces of every rank's halo that it owns, in that rank's order.
  const int ranks = l.grid[0] * l.grid[1] * l.grid[2];
  for (int r = 0; r < ranks; ++r)
    for_each_halo_box(l, coordinates_of(l, r), shape, [&](const AxisPiece& p0, const AxisPiece& p1, const AxisPiece& p2) {
      if (p0.outer || p1.outer || p2.outer) return;
      if (p0.owner != l.coord[0] || p1.owner != l.coord[1] || p2.owner != l.coord[2]) return;
      HaloMessage& m = message(g.sends, r);
      const index_t begin[3] = {p0.owner_local, p1.owner_local, p2.owner_local}, count[3] = {p0.count, p1.count, p2.count};
      box_rectangles(l, begin, count, m.rectangles);
      const index_t cells = p0.count * p1.count * p2.count;
      m.cells += cells;
      if (r != me) g.cells_sent_to_others += cells;
    });
  return g;
}

}  // namespace

// ---- the storage ---------------------------------------------------------------------------------------

BlockStorage::BlockStorage(const CartesianGrid& grid, int dims, const std::array<index_t, 3>& extent,
                           const std::array<index_t, 3>& ghost, const std::array<AxisBoundary, 3>& boundary,
                           std::size_t element_bytes)
    : grid_(grid), element_bytes_(element_bytes) {
  TESSERA_ASSERT(!grid.context().is_null(), "Field on a grid without a context");
  TESSERA_ASSERT(element_bytes >= 1, "Field: cells of zero bytes");
  BlockLayout& l = layout_;
  l.dims = dims;
  l.extent = extent;
  l.ghost = ghost;
  l.boundary = boundary;
  for (int a = 0; a < 3; ++a) {
    const std::size_t k = static_cast<std::size_t>(a);
    const int ga = a - (3 - dims);  // the grid's own axis
    l.grid[k] = ga >= 0 ? grid.extent(ga) : 1;
    l.coord[k] = ga >= 0 ? grid.coordinate(ga) : 0;
  }
  const std::string what = "a field of " + l.text();
  constexpr index_t kMaxExtent = std::numeric_limits<index_t>::max() / 4;
  for (int a = 3 - dims; a < 3; ++a) {
    const std::size_t k = static_cast<std::size_t>(a);
    const std::string axis = "axis " + std::to_string(a - (3 - dims));
    if (extent[k] < 0) throw UsageError(what + ": " + axis + " has a negative extent");
    if (ghost[k] < 0) throw UsageError(what + ": " + axis + " has a negative ghost width");
    if (extent[k] > kMaxExtent || ghost[k] > kMaxExtent) throw UsageError(what + ": " + axis + " passes 2^61 cells");
    if (boundary[k] == AxisBoundary::periodic && extent[k] > 0 && ghost[k] > extent[k])
      throw UsageError(what + ": the ghost width " + std::to_string(ghost[k]) + " of the periodic " + axis +
                       " passes its " + std::to_string(extent[k]) + " cells (the ghosts would wrap around more than once)");
  }
  checked_product(checked_product(extent[0], extent[1], what), extent[2], what);
  for (int a = 0; a < 3; ++a) {
    const std::size_t k = static_cast<std::size_t>(a);
    l.partition[k] = Partition::block(extent[k], l.grid[k]);
  }
  const index_t e0 = l.local(0) + 2 * ghost[0], e1 = l.local(1) + 2 * ghost[1], e2 = l.local(2) + 2 * ghost[2];
  // The owned cells of each row start on a kRowAlignment-byte boundary: the row's stride a whole
  // number of boundaries, `front` padding cells before the first row's ghosts, and a boundary's
  // cells after the last row (an aligned piece that holds a cell within a row's reach lies inside
  // the allocation).
  const index_t granule = kRowAlignment / std::gcd<index_t>(kRowAlignment, static_cast<index_t>(element_bytes));
  const index_t front = (granule - ghost[2] % granule) % granule;
  const index_t row = e2 == 0 ? 0 : (e2 + granule - 1) / granule * granule;
  l.stride = {checked_product(e1, row, what), row, 1};
  const index_t cells = checked_product(e0, l.stride[0], what);
  if (cells == 0) return;
  storage_elements_ = front + cells + granule;
  const std::size_t bytes = kernels::array_bytes(storage_elements_, element_bytes, "a field block");
  storage_ = kernels::allocate(context().queue(), bytes);
  const index_t lead = front + ghost[0] * l.stride[0] + ghost[1] * l.stride[1] + ghost[2];
  origin_ = static_cast<char*>(storage_) + static_cast<std::size_t>(lead) * element_bytes;
}

BlockStorage::~BlockStorage() { release(); }

void BlockStorage::release() {
  transports_.clear();  // a peer path's waits for the neighbours to unmap what they mapped of it
  if (storage_) kernels::deallocate(context().queue(), storage_);
  storage_ = origin_ = nullptr;
}

BlockStorage::BlockStorage(BlockStorage&& o) noexcept
    : grid_(std::move(o.grid_)),
      layout_(std::move(o.layout_)),
      element_bytes_(std::exchange(o.element_bytes_, 0)),
      storage_elements_(std::exchange(o.storage_elements_, 0)),
      storage_(std::exchange(o.storage_, nullptr)),
      origin_(std::exchange(o.origin_, nullptr)),
      halo_(std::move(o.halo_)),
      transports_(std::exchange(o.transports_, {})) {}

BlockStorage& BlockStorage::operator=(BlockStorage&& o) noexcept {
  if (this != &o) {
    release();
    grid_ = std::move(o.grid_);
    layout_ = std::move(o.layout_);
    element_bytes_ = std::exchange(o.element_bytes_, 0);
    storage_elements_ = std::exchange(o.storage_elements_, 0);
    storage_ = std::exchange(o.storage_, nullptr);
    origin_ = std::exchange(o.origin_, nullptr);
    halo_ = std::move(o.halo_);
    transports_ = std::exchange(o.transports_, {});
  }
  return *this;
}

void BlockStorage::fill(const void* value) {
  if (storage_elements_ == 0) return;
  kernels::detail::fill_bytes(context().queue(), storage_, storage_elements_, element_bytes_, value);
}

void BlockStorage::copy_from(const BlockStorage& other) {
  check_same_layout(*this, other, "Field::copy_from: the source");
  if (other.element_bytes_ != element_bytes_) throw UsageError("Field::copy_from: another element size");
  if (other.storage_ == storage_ || storage_elements_ == 0) return;
  kernels::copy_within_async(context().queue(), storage_, other.storage_,
                             static_cast<std::size_t>(storage_elements_) * element_bytes_);
}

std::vector<kernels::Rectangle> BlockStorage::outer_ghosts(std::vector<std::array<index_t, 6>>* global_boxes) const {
  std::vector<kernels::Rectangle> rectangles;
  global_boxes->clear();
  for_each_halo_box(layout_, layout_.coord, StencilForm::box, [&](const AxisPiece& p0, const AxisPiece& p1, const AxisPiece& p2) {
    if (!(p0.outer || p1.outer || p2.outer)) return;
    const index_t begin[3] = {p0.local, p1.local, p2.local}, count[3] = {p0.count, p1.count, p2.count};
    box_rectangles(layout_, begin, count, rectangles);
    global_boxes->push_back({p0.global, p1.global, p2.global, p0.count, p1.count, p2.count});
  });
  return rectangles;
}

void BlockStorage::set_cells(const std::vector<kernels::Rectangle>& rectangles, const void* values) {
  index_t cells = 0;
  for (const kernels::Rectangle& r : rectangles) cells += r.size();
  if (cells == 0) return;
  const kernels::Queue& q = context().queue();
  const std::size_t bytes = static_cast<std::size_t>(cells) * element_bytes_;
  kernels::ScratchBuffer staging(q, bytes);
  kernels::copy_from_host(q, staging.data(), values, bytes);
  kernels::unpack_rectangles(q, staging.data(), rectangles, origin_, element_bytes_);
  q.synchronize();
}

namespace {
std::vector<kernels::Rectangle> owned_rectangles(const BlockLayout& l) {
  std::vector<kernels::Rectangle> r;
  const index_t begin[3] = {0, 0, 0}, count[3] = {l.local(0), l.local(1), l.local(2)};
  box_rectangles(l, begin, count, r);
  return r;
}
}  // namespace

void BlockStorage::local_to_host(void* host) const {
  const index_t cells = layout_.local_cells();
  if (cells == 0) return;
  const kernels::Queue& q = context().queue();
  const std::size_t bytes = static_cast<std::size_t>(cells) * element_bytes_;
  kernels::ScratchBuffer packed(q, bytes);
  kernels::pack_rectangles(q, origin_, owned_rectangles(layout_), packed.data(), element_bytes_);
  kernels::copy_to_host(q, host, packed.data(), bytes);
}

void BlockStorage::local_from_host(const void* host) {
  const index_t cells = layout_.local_cells();
  if (cells == 0) return;
  const kernels::Queue& q = context().queue();
  const std::size_t bytes = static_cast<std::size_t>(cells) * element_bytes_;
  kernels::ScratchBuffer packed(q, bytes);
  kernels::copy_from_host(q, packed.data(), host, bytes);
  kernels::unpack_rectangles(q, packed.data(), owned_rectangles(layout_), origin_, element_bytes_);
  q.synchronize();
}

namespace {

constexpr int kGatherTag = 7511;
constexpr int kScatterTag = 7512;

// Rank p's owned cells in the whole field (host memory, global order), to and from a contiguous block.
std::size_t copy_block(const BlockLayout& l, int p, unsigned char* whole, unsigned char* block, std::size_t bytes,
                       bool into_whole) {
  const std::array<int, 3> c = coordinates_of(l, p);
  index_t n[3], o[3];
  for (int a = 0; a < 3; ++a) {
    n[a] = l.partition[static_cast<std::size_t>(a)].local_size(c[static_cast<std::size_t>(a)]);
    o[a] = l.partition[static_cast<std::size_t>(a)].offset(c[static_cast<std::size_t>(a)]);
  }
  const std::size_t row = static_cast<std::size_t>(n[2]) * bytes;
  std::size_t done = 0;
  if (whole == nullptr) return static_cast<std::size_t>(n[0] * n[1]) * row;
  for (index_t i0 = 0; i0 < n[0]; ++i0)
    for (index_t i1 = 0; i1 < n[1]; ++i1, done += row) {
      const std::size_t g = static_cast<std::size_t>(((o[0] + i0) * l.extent[1] + (o[1] + i1)) * l.extent[2] + o[2]);
      if (row == 0) continue;
      if (into_whole) std::memcpy(whole + g * bytes, block + done, row);
      else std::memcpy(block + done, whole + g * bytes, row);
    }
  return done;
}

std::size_t block_bytes(const BlockLayout& l, int p, std::size_t bytes) { return copy_block(l, p, nullptr, nullptr, bytes, false); }

BlockGeometry geometry(const BlockLayout& l, std::size_t element_bytes) {
  return {[&l, element_bytes](int p) { return block_bytes(l, p, element_bytes); },
          [&l, element_bytes](int p, unsigned char* whole, unsigned char* block, bool into_whole) {
            copy_block(l, p, whole, block, element_bytes, into_whole);
          }};
}

}  // namespace

void BlockStorage::gather(void* all, int root) const {
  gather_blocks(context().comm(), geometry(layout_, element_bytes_), [this](void* h) { local_to_host(h); }, all, root,
                kGatherTag);
}

void BlockStorage::scatter(const void* all, int root) {
  scatter_blocks(context().comm(), geometry(layout_, element_bytes_), [this](const void* h) { local_from_host(h); }, all,
                 root, kScatterTag);
}

void BlockStorage::from_replicated(const void* global) {
  fill_from_replicated(context().rank(), geometry(layout_, element_bytes_), [this](const void* h) { local_from_host(h); },
                       global);
}

const HaloGeometry& BlockStorage::halo(StencilForm shape) const {
  std::shared_ptr<const HaloGeometry>& g = halo_[shape == StencilForm::star ? 0 : 1];
  if (!g) g = std::make_shared<const HaloGeometry>(make_halo(layout_, context().rank(), shape));
  return *g;
}

// ---- the halo exchange ---------------------------------------------------------------------------------

HaloTransport& BlockStorage::halo_transport(StencilForm shape, const Context& ctx,
                                            const std::vector<std::size_t>& element_bytes) const {
  const std::pair<int, std::vector<std::size_t>> key{shape == StencilForm::star ? 0 : 1, element_bytes};
  std::shared_ptr<HaloTransport>& t = transports_[key];
  if (!t) t = make_halo_transport(ctx, {&halo(shape), element_bytes, HaloUse::field});  // collective
  return *t;
}

void check_same_layout(const BlockStorage& reference, const BlockStorage& other, const std::string& what) {
  if (!reference.layout().same_as(other.layout()) || reference.context().size() != other.context().size())
    throw UsageError(what + " has another layout (" + other.layout().text() + ") than the first field (" +
                     reference.layout().text() + ")");
  // A row's cells are padded to a multiple of the cells that make kRowAlignment bytes' whole
  // multiple; fields whose multiples differ have rows of different strides (on some ranks), which
  // no exchange or sweep of them together reads right. Decided from the cell sizes alone, the same
  // on every rank.
  const auto granule = [](const BlockStorage& f) {
    const auto bytes = static_cast<index_t>(f.element_bytes());
    return BlockStorage::kRowAlignment / std::gcd(BlockStorage::kRowAlignment, bytes);
  };
  if (granule(reference) != granule(other))
    throw UsageError(what + " has cells of " + std::to_string(other.element_bytes()) + " bytes and the first field cells of " +
                     std::to_string(reference.element_bytes()) + ": their rows are padded to multiples of " +
                     std::to_string(granule(other)) + " and " + std::to_string(granule(reference)) +
                     " cells, so one layout does not fit the other; use one cell size (or sizes with the same "
                     "largest power-of-two factor up to 32 bytes)");
}

namespace {

// The queue of a halo's pack, messages and unpack: one of the highest stream priority on the device
// of q, made at the first exchange there and kept for the process's life (never destroyed: at exit
// the driver may be gone already); q itself under cpu.
kernels::Queue halo_queue(const kernels::Queue& q) {
  if (q.backend != Backend::cuda) return q;
  static std::mutex lock;
  static auto* queues = new std::map<int, kernels::Queue>;
  const std::lock_guard<std::mutex> hold(lock);
  auto it = queues->find(q.device);
  if (it == queues->end()) it = queues->emplace(q.device, kernels::make_priority_queue(q)).first;
  return it->second;
}

}  // namespace

void exchange_halos(const Context& ctx, std::span<BlockStorage* const> fields, StencilForm shape,
                    const std::function<void()>& overlap, const std::function<void(const kernels::Queue&)>& after) {
  TESSERA_ASSERT(!fields.empty(), "exchange_halos without a field");
  for (std::size_t f = 1; f < fields.size(); ++f) check_same_layout(*fields[0], *fields[f], "a field of the exchange");
  TESSERA_ASSERT(ctx.size() == fields[0]->context().size() && ctx.rank() == fields[0]->context().rank(),
                 "exchange_halos: the context is not the fields' ranks");
  // The pack, the messages, the unpack and after() run on a queue of their own, of the highest
  // priority, beside overlap()'s work on ctx's queue (overlap() reads no ghost the exchange writes,
  // and the exchange reads only owned cells): the device starts their short kernels as soon as the
  // sweep's thread blocks leave room. Only the work queued after the call waits for them.
  const kernels::Queue q = halo_queue(ctx.queue());
  const Context on_q = ctx.with_queue(q);
  kernels::queue_wait(q, ctx.queue());  // the pack reads what was queued before the call
  std::vector<std::size_t> element_bytes;
  std::vector<void*> origins;
  for (const BlockStorage* f : fields) {
    element_bytes.push_back(f->element_bytes());
    origins.push_back(f->origin());
  }
  HaloTransport& transport = fields[0]->halo_transport(shape, on_q, element_bytes);
  const trace::Range whole(trace::Call{"halo"}, on_q);
  transport.start(origins);
  try {
    overlap();
  } catch (...) {
    // The exchange is collective and in flight: it completes (so that the transport, kept for the
    // next call, is not left mid-exchange), then the error goes on.
    transport.finish(origins);
    kernels::queue_wait(ctx.queue(), q);
    transport.drained();
    throw;
  }
  transport.finish(origins);
  if (after) after(q);
  kernels::queue_wait(ctx.queue(), q);  // the work queued after the call reads the ghosts
  // The receive places' release last: beside a sweep each operation on q passes some microseconds
  // after the one before it (PERFORMANCE.md), and nothing of this call waits for this one.
  transport.drained();
}

CollectivePlan halo_plan(std::span<const BlockStorage* const> fields, StencilForm shape) {
  double bytes = 0;
  for (const BlockStorage* f : fields)
    bytes += static_cast<double>(fields[0]->halo(shape).cells_sent_to_others) * static_cast<double>(f->element_bytes());
  return {{Collective::neighbor_exchange, bytes}};
}

}  // namespace detail
}  // namespace tessera
