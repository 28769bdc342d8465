// The device pass of kernels::for_each_cell (cells.hpp) over a 3-D box of cells, in five orders:
//
//   planes  one thread per cell, thread blocks of 32 x 4 cells of an (i2, i1) tile, a plane i0 per
//           grid layer; a box thinner than a warp along axis 2 puts the warp along axis 1 instead.
//           Any body: body(i0, i1, i2).
//   march   thread blocks of 64 x 8 threads that march along axis 0 through up to 32 planes each.
//   tiled   for a body that reads a neighbourhood of one array (a TiledCellBody: the user stencil's
//           cell, apply_stencil.hpp; stencil_2d's cell of doubles, device_stencil.cuh, which also
//           folds the residual over its cells: a FoldingCellBody): thread blocks stage a tile of
//           that array, reach included, in a ring of shared-memory planes and march along axis 0
//           (axis 1 for a 2-D body), a few planes a step: while the threads compute a step's
//           planes from the ring (each thread the cells of up to four rows, all their reads before
//           their stores and without a condition away from the box's edges, so that a ring cell
//           several of them read is read once: the 27-point box 6.75 reads a cell, not 27), the
//           planes of the next steps travel into the ring by asynchronous copies (cp.async, sm_80
//           and later), in aligned 16-byte pieces where the array's rows keep 16-byte boundaries
//           (the pieces at a row's ends cell by cell unless the rows are a Field's, padded to
//           32-byte boundaries). Each input cell comes from global memory once, plus the tile's
//           halo.
//   column  for a 3-D body that reads along axis 0 only its cell's own column (a ColumnCellBody:
//           the user stencil's cell of a star): as tiled, but the ring holds the planes' reach
//           along axes 1 and 2 only for the planes still to be a centre (R + 3 planes for a reach
//           R; the tiled ring holds 28 at radius 4), and each thread keeps the 2 R + 1 cells of its
//           column along axis 0 in registers, named by constants in steps unrolled 2 R + 1 at a
//           time (no register moves).
//   rows    for a 2-D TiledCellBody of reach 1 over cells of 4 or 8 bytes (a RowsCellBody) on a
//           box of one plane that starts on a 16-byte boundary, sm_90: the ring of rows filled by bulk copies
//           (agent_stencil.cuh, cell_rows_kernel). Thread blocks of 8 warps march down strips of
//           2048 4-byte cells, one thread filling a ring of six row slots by cp.async.bulk, each
//           thread computing two 16-byte vectors of a row from three rows held in registers; whole
//           16-byte stores where the body says where its rows lie (StoresRows). stencil_2d's cell
//           of floats runs here (the Jacobi sweep): its separately rounded products and sums leave
//           the tiled pass issue-bound, and this order spends fewer instructions a cell.
//
// for_each_cell(queue, begin, end, body) picks the order by what bench_stencil_3d measured (an
// H200, float, % of the copy rate; docs/PERFORMANCE.md): for a TiledCellBody on a box at least a
// warp wide along axis 2 and 8 rows along axis 1, tiled for a 2-D body (a 16384^2 5-point sweep at
// 90.9%, 9-point 90.6%: 1.07-1.08x the Jacobi sweep's rate; the rows order 84.0-85.8% for the same
// functors, 2026-12-02) and for a 3-D body that reads at most one
// cell away (512^3: the 7-point star at 91.0% against 86.0% in the column order and 68.6%
// marching, the 27-point box 83.2% against 40.7%); column for a wider 3-D star (512^3 /
// 1024x1024x512: radius 2 at 81.7 / 85.9% against 66.0 / 66.4% tiled, radius 4 at 74.8 / 81.4%
// against 44.7 / 45.3% marching); march for a wider 3-D box and where a ring does not fit in shared
// memory; planes for a box under 16 planes deep (a stencil's shell) and for every other box and
// body.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/agent_stencil.cuh"
#include "tessera/kernels/cuda/async_copy.cuh"
#include "tessera/kernels/cuda/cell_body.cuh"
#include "tessera/kernels/cuda/device_guard.hpp"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels::cuda {

namespace detail {

inline constexpr int kCellTileX = 32;  // cells along axis 2 (the fastest) per thread block
inline constexpr int kCellTileY = 8;   // rows along axis 1 that a box needs for the marching orders
// Thread rows along axis 1 of the planes order's blocks: 32 x 4 = 128 threads, which at up to 64
// registers fit beside a block of the 3-D interior sweep (512 threads at 112 registers), so that
// the shell of an overlapped step (apply_stencil) runs beside the interior (tuning/stencil.cuh,
// PackTuning, says what it measured).
inline constexpr int kPlanesTileY = 4;
inline constexpr int kDeepPlanes = 16;  // planes along the marching axis below which no marching order is chosen
// The marching order's thread blocks: 64 cells along axis 2 by 8 rows. Against 32 x 8 (H200,
// bench_stencil_3d, 512^3 / 1024x1024x512): the 7-point star 62.9 / 59.2% of the copy rate against
// 61.2 / 52.7%, the radius-4 star 45.2 / 45.5% against 44.4 / 43.7%, the 27-point box within 1%;
// 128 x 2 to 512 x 1 gained no more for the 7-point star and lost up to 20% for the radius-4 one.
inline constexpr int kMarchTileX = 64;
inline constexpr int kMarchTileY = 8;
struct CellRange {
  index_t begin0, begin1, begin2;
  index_t n0, n1, n2;
};
struct CellIndex01 {  // a cell's indices along axes 0 and 1
  index_t i0, i1;
};

// Thread (x, y) of block (bx, by, bz) takes cell (bz, by * 4 + y, bx * 32 + x) of the box, and the
// cells a grid's extent further along each axis where the box passes the grid. Across: x walks
// axis 1 and y axis 2 (a box thinner than a warp along axis 2, as the shell of a block is).
template <bool Across, class Body>
__global__ void __launch_bounds__(kCellTileX* kPlanesTileY) for_each_cell_kernel(CellRange r, Body body) {
  const index_t nx = Across ? r.n1 : r.n2, ny = Across ? r.n2 : r.n1;
  const index_t step_y = static_cast<index_t>(gridDim.y) * kPlanesTileY;
  const index_t step_x = static_cast<index_t>(gridDim.x) * kCellTileX;
  for (index_t i0 = blockIdx.z; i0 < r.n0; i0 += gridDim.z)
    for (index_t y = static_cast<index_t>(blockIdx.y) * kPlanesTileY + threadIdx.y; y < ny; y += step_y)
      for (index_t x = static_cast<index_t>(blockIdx.x) * kCellTileX + threadIdx.x; x < nx; x += step_x)
        body(r.begin0 + i0, r.begin1 + (Across ? x : y), r.begin2 + (Across ? y : x));
}

// The marching order: thread (x, y) of block (bx, by, bz) takes cell (i0, by * 8 + y, bx * 64 + x)
// for `planes` consecutive planes i0 from bz * planes, one after the other, so that the planes a
// stencil reads around i0 were just read by the same thread block (L1 reuse). The grid covers axes 1
// and 2 whole (the caller checks they fit).
template <class Body>
__global__ void __launch_bounds__(kMarchTileX* kMarchTileY) for_each_cell_march_kernel(CellRange r, index_t planes, Body body) {
  const index_t i1 = static_cast<index_t>(blockIdx.y) * kMarchTileY + threadIdx.y;
  const index_t i2 = static_cast<index_t>(blockIdx.x) * kMarchTileX + threadIdx.x;
  if (i1 >= r.n1 || i2 >= r.n2) return;
  const index_t first = static_cast<index_t>(blockIdx.z) * planes;
  const index_t last = first + planes < r.n0 ? first + planes : r.n0;
  for (index_t i0 = first; i0 < last; ++i0) body(r.begin0 + i0, r.begin1 + i1, r.begin2 + i2);
}

// The tiled order's shape for a body of reach (R0, R1, R2). A thread block marches along axis A
// (axis 0; axis 1 for a body without reach along axis 0, the 2-D field's) over a tile of TY rows
// along axis B (the other of axes 0 and 1) and TX cells along axis 2, each thread the cells of CY
// consecutive rows in one column along axis 2, G planes a step. The planes of the tile (H rows of W cells, the reach included) live in a
// ring of NS slots, NS a multiple of G, followed by 2 RA mirror slots: a plane whose slot s is
// below 2 RA is also copied into slot NS + s, so that the G + 2 RA planes a step reads, which start
// at a multiple of G, are consecutive slots (the body's view steps from plane to plane by one
// stride). A step reads E groups of G planes; F more groups travel while it computes.
//
// The shapes (one H200, float, 512^3, the shapes compiled into a benchmark of the pass for that run;
// the tiles are 512 bytes wide in 3-D, so the other element sizes keep the bytes of a float's tile,
// unmeasured): a 2-D body 512 x 1 cells a block, G = 4; a 3-D body 128 x 16 cells, each thread four
// rows (CY), G = 4: the 7-point star at 87.8% of the copy rate and the 27-point box at 84.3%, against
// 85.8 / 83.5% for 128 x 8 four rows a thread, 84.8 / 78.3% two rows, 84.2 / 81.0% for 64 x 16 four
// rows, 84.5 / 74.5% for 128 x 8 two rows with G = 8.
template <class T, bool Rows>
struct CellRingShape {
  static constexpr int TX = Rows ? 512 : std::clamp(static_cast<int>(512 / sizeof(T)), 32, 128);
  static constexpr int TY = Rows ? 1 : 16, CY = Rows ? 1 : 4, G = 4;
  static constexpr int kBudget = 96 * 1024;  // bytes of shared memory the ring may take
};

// A tile plane of TY rows (axis B) of TX cells (axis 2) with the body's reach around it (RB rows,
// RC cells) as it lies in shared memory: H rows of W cells, copied in pieces of CE cells. A piece is
// 16 aligned bytes where 16 bytes hold whole elements (a row of the tile then starts at the piece
// that holds its first cell, up to CE - 1 cells before it), else one element. kClip: the pieces at a
// row's ends copy only the cells within reach (the body's rows are not declared padded).
template <class Body, int TX, int TY, int RB, int RC>
struct CellTilePlane {
  using T = typename Body::tile_type;
  static constexpr bool kInPieces = sizeof(T) < 16 && 16 % sizeof(T) == 0 && TX % (16 / sizeof(T)) == 0;
  static constexpr bool kClip = [] {
    if constexpr (requires { Body::kTileRowsPadded; })
      return kInPieces && !Body::kTileRowsPadded;
    else
      return kInPieces;
  }();
  static constexpr int CE = kInPieces ? static_cast<int>(16 / sizeof(T)) : 1;
  static constexpr int W = (RC + CE - 1 + TX + RC + CE - 1) / CE * CE, H = TY + 2 * RB;
  static constexpr int kRowPieces = W / CE;
  static constexpr int kPlane = W * H;
  static constexpr std::size_t kPlaneBytes = sizeof(T) * static_cast<std::size_t>(kPlane);
  static constexpr int kTileX = TX, kTileY = TY, kReachB = RB, kReachC = RC;
};

// Thread blocks an SM holds at once for a kernel of `threads` threads and `bytes` of shared memory
// (sm_90's 227 KiB a block, 1024 threads at 64 registers), which the compiler's register budget
// follows; or the shape's kMinBlocks, where it declares one (fewer blocks, more registers a thread).
template <class Shape>
constexpr int cell_min_blocks(int threads, std::size_t bytes) {
  if constexpr (requires { Shape::kMinBlocks; })
    return Shape::kMinBlocks;
  else
    return std::clamp<int>(std::min<std::size_t>(threads >= 1024 ? 1 : 1024 / threads, 227 * 1024 / std::max<std::size_t>(bytes, 1)),
                           1, 8);
}

template <class Body, bool Rows, class Shape = CellRingShape<typename Body::tile_type, Rows>>
struct CellRing : CellTilePlane<Body, Shape::TX, Shape::TY, Rows ? Body::kReach0 : Body::kReach1, Body::kReach2> {
  using T = typename Body::tile_type;
  using Plane = CellTilePlane<Body, Shape::TX, Shape::TY, Rows ? Body::kReach0 : Body::kReach1, Body::kReach2>;
  static constexpr int RA = Rows ? Body::kReach1 : Body::kReach0;
  static constexpr int RB = Rows ? Body::kReach0 : Body::kReach1;
  static constexpr int RC = Body::kReach2;
  static constexpr int TX = Shape::TX, TY = Shape::TY, CY = Shape::CY;  // CY rows a thread
  static constexpr int kThreads = TX * TY / CY;
  static constexpr int G = Shape::G;
  using Plane::kPlaneBytes;
  static constexpr int E = (2 * G + 2 * RA - 1) / G;
  // Groups in flight: as many as fit (up to 4) in the budget, at least one.
  static constexpr int F =
      std::clamp<int>((static_cast<int>(Shape::kBudget / kPlaneBytes) - 2 * RA) / G - E - 1, 1, 4);
  static constexpr int NS = (E + F + 1) * G;
  static constexpr std::size_t kBytes = kPlaneBytes * static_cast<std::size_t>(NS + 2 * RA);
  static constexpr int kMinBlocks = cell_min_blocks<Shape>(kThreads, kBytes);
};

// The bytes of one asynchronous copy (cp.async: 4, 8 or 16) that a T is made of, or 0: a T of
// another size or alignment is copied through registers.
template <class T>
inline constexpr int kAsyncChunk = sizeof(T) % 16 == 0 && alignof(T) >= 16 ? 16
                                   : sizeof(T) % 8 == 0 && alignof(T) >= 8 ? 8
                                   : sizeof(T) % 4 == 0 && alignof(T) >= 4 ? 4
                                                                           : 0;

// *dst = *src, dst in shared memory: on sm_80 and later asynchronous copies (async_copy.cuh; complete
// once the issuing thread waits for its groups), otherwise a load and a store.
template <class T>
__device__ __forceinline__ void copy_cell_async(T* dst, const T* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int C = kAsyncChunk<T>;
  if constexpr (C > 0) {
#pragma unroll
    for (int c = 0; c < static_cast<int>(sizeof(T)) / C; ++c)
      copy_async<C>(reinterpret_cast<char*>(dst) + C * c, reinterpret_cast<const char*>(src) + C * c);
    return;
  }
#endif
  *dst = *src;
}
__device__ __forceinline__ void async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  copy_async_commit();
#endif
}
// Waits until at most `Pending` of this thread's committed groups are still travelling.
template <int Pending>
__device__ __forceinline__ void async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  copy_async_wait<Pending>();
#endif
}

// One thread's share of copying a tile plane (CellTilePlane L) into shared memory, by
// asynchronous copies: the pieces e = tid + j kThreads of the plane's H rows of kRowPieces, those of
// the rows and columns that exist (`rows` rows of the tile with its reach, the columns up to
// `cells` of the tile and its reach along axis 2).
template <class L, int kThreads>
struct TilePlaneCopy {
  using T = typename L::T;
  static constexpr int CE = L::CE, kPieces = L::H * L::kRowPieces;
  static constexpr int J = (kPieces + kThreads - 1) / kThreads;  // copies a thread issues per plane
  index_t off[J];
  bool ok[J];
  // kClip: the cells [cut_lo, cut_hi) of a piece that lie within reach (all CE but at a row's ends).
  [[maybe_unused]] int cut_lo[J], cut_hi[J];
  index_t x_first;  // the column of the rows' first piece (x0 - RC, rounded down to a piece)
  int lead;         // column x0's element in a row
  bool any;         // whether this thread copies anything (a 2-D tile's row has fewer pieces than threads)

  // x0: the tile's first column; cells: the box's columns from x0 on; rows: the box's rows from the
  // tile's first on (each may pass the tile's); stride: between rows.
  __device__ __forceinline__ TilePlaneCopy(int tid, index_t x0, index_t cells, index_t rows, index_t stride) {
    constexpr int RB = L::kReachB, RC = L::kReachC;
    const int live_rows = static_cast<int>((rows < L::kTileY ? rows : L::kTileY) + 2 * RB);
    const index_t x_end = x0 + (cells < L::kTileX ? cells : L::kTileX) + RC;
    x_first = x0 - RC >= 0 ? (x0 - RC) / CE * CE : -((RC - x0 + CE - 1) / CE) * CE;
    const int pieces = static_cast<int>((x_end - x_first + CE - 1) / CE);
    lead = static_cast<int>(x0 - x_first);
    any = false;
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int e = tid + j * kThreads, y = e / L::kRowPieces, c = e - y * L::kRowPieces;
      ok[j] = e < kPieces && y < live_rows && c < pieces;
      any = any || ok[j];
      off[j] = y * stride + c * CE;
      if constexpr (L::kClip) {
        const index_t at = x_first + c * CE;
        cut_lo[j] = static_cast<int>(std::clamp<index_t>(x0 - RC - at, 0, CE));
        cut_hi[j] = static_cast<int>(std::clamp<index_t>(x_end - at, 0, CE));
      }
    }
  }
  // The plane whose row 0's first piece is at `src` into the slot at `dst` (the slot's start plus
  // tid CE).
  __device__ __forceinline__ void plane(T* dst, const T* src) const {
#pragma unroll
    for (int j = 0; j < J; ++j)
      if (ok[j]) piece(dst + j * kThreads * CE, src + off[j], j);
  }
  __device__ __forceinline__ void piece(T* dst, const T* src, [[maybe_unused]] int j) const {  // CE elements
    if constexpr (L::kClip) {
      if (cut_lo[j] != 0 || cut_hi[j] != CE) {
#pragma unroll
        for (int e = 0; e < CE; ++e)
          if (e >= cut_lo[j] && e < cut_hi[j]) copy_cell_async(dst + e, src + e);
        return;
      }
    }
    if constexpr (CE > 1)
      copy_cell_async(reinterpret_cast<uint4*>(dst), reinterpret_cast<const uint4*>(src));
    else
      copy_cell_async(dst, src);
  }
};

// Block (bx, by, bz) computes the cells at (a, by * TY + y, bx * TX + x) along axes (A, B, 2) of
// the box for `planes` planes a from bz * planes, G a step (CellRing). Plane k of the block's loads
// is box plane first - RA + k; it lies in slot k % NS (and NS + k % NS below 2 RA). Step t waits for
// its E groups, then starts group t + E + F into the slots step t - 1 read, then computes its G
// planes: their values first, then their stores (no store between the reads, so that a tile cell
// two of them read is read once).
template <class Body, bool Rows, class Shape>
__global__ void __launch_bounds__(CellRing<Body, Rows, Shape>::kThreads, CellRing<Body, Rows, Shape>::kMinBlocks)
    for_each_cell_tiled_kernel(CellRange r, index_t planes, Body body) {
  using Ring = CellRing<Body, Rows, Shape>;
  using T = typename Body::tile_type;
  using V = typename Body::value_type;
  constexpr int RA = Ring::RA, RB = Ring::RB, G = Ring::G, NS = Ring::NS;
  constexpr int kPlane = Ring::kPlane, kThreads = Ring::kThreads, CE = Ring::CE;
  extern __shared__ __align__(16) unsigned char cell_ring_bytes[];
  T* const ring = reinterpret_cast<T*>(cell_ring_bytes);
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int tid = ty * Ring::TX + tx;
  const index_t nA = Rows ? r.n1 : r.n0, nB = Rows ? r.n0 : r.n1;
  const index_t beginA = Rows ? r.begin1 : r.begin0, beginB = Rows ? r.begin0 : r.begin1;
  const index_t sA = Rows ? body.tile_stride1() : body.tile_stride0();
  const index_t sB = Rows ? body.tile_stride0() : body.tile_stride1();
  const index_t tB = static_cast<index_t>(blockIdx.y) * Ring::TY;
  const index_t t2 = static_cast<index_t>(blockIdx.x) * Ring::TX;
  const index_t first = static_cast<index_t>(blockIdx.z) * planes;
  const index_t last = first + planes < nA ? first + planes : nA;
  const index_t count = last - first + 2 * RA;  // the planes loaded: first - RA .. last + RA - 1
  const TilePlaneCopy<Ring, kThreads> copy(tid, r.begin2 + t2, r.n2 - t2, nB - tB, sB);
  const int lead = copy.lead;
  // The tile's corner (row 0, the first piece) in plane k = 0.
  const T* corner = body.tile_origin() + (beginA + first - RA) * sA + (beginB + tB - RB) * sB + copy.x_first;
  // The groups are loaded in order, each into the next G slots: the next group's first plane, its
  // index among the planes loaded and its slot group (group % (NS / G)), kept as running values.
  const T* next_plane = corner;
  index_t next_k = 0;
  int next_slots = 0;
  const auto load_group = [&] {  // the next G planes, one commit group
    if (copy.any) {
      const int slot0 = next_slots * G;
      const T* plane = next_plane;
#pragma unroll
      for (int p = 0; p < G; ++p, plane += sA) {
        if (next_k + p < count) {
#pragma unroll
          for (int m = 0; m < 2; ++m) {  // the slot, and below 2 RA its mirror NS slots on
            if (m == 1 && slot0 + p >= 2 * RA) break;
            copy.plane(ring + (slot0 + p + m * NS) * kPlane + tid * CE, plane);
          }
        }
      }
    }
    next_plane += G * sA;
    next_k += G;
    next_slots = next_slots + 1 == NS / G ? 0 : next_slots + 1;
    async_commit();
  };
#pragma unroll
  for (int g = 0; g < Ring::E + Ring::F; ++g) load_group();
  // The view's strides along axes 0 and 1 in the ring (a 2-D body's view reads axis 1's only).
  constexpr index_t kViewStride0 = Rows ? 0 : kPlane, kViewStride1 = Rows ? kPlane : Ring::W;
  const index_t i2 = t2 + tx;
  const bool column = i2 < r.n2;
  const bool whole_tile = t2 + Ring::TX <= r.n2 && tB + Ring::TY <= nB;  // the same for the whole block
  const index_t b0 = tB + ty * Ring::CY;  // this thread's first row
  const int at = (ty * Ring::CY + RB) * Ring::W + lead + tx;  // its first cell in a slot
  const index_t steps = ceil_div<index_t>(last - first, G);
  int window_slots = 0;  // step t's slot group: t % (NS / G)
  constexpr bool kFold = FoldingCellBody<Body>;
  using Fold = typename FoldOf<Body>::type;
  [[maybe_unused]] Fold folded{};
  for (index_t t = 0; t < steps; ++t) {
    async_wait<Ring::F>();  // this thread's copies of groups t .. t + E - 1 are in
    __syncthreads();        // and every thread's; every thread is done with step t - 1's slots
    load_group();  // group t + E + F
    const T* window = ring + window_slots * G * kPlane + at;
    window_slots = window_slots + 1 == NS / G ? 0 : window_slots + 1;
    // A step whose cells are all in the box computes them without a condition, so that the
    // compiler reads a ring cell that several of them read once (a condition per cell keeps each
    // cell's reads apart); the other steps (at the box's edges) check each cell.
    const auto compute = [&](auto whole) {
      constexpr bool kWhole = decltype(whole)::value;
      // Cell (c, k) of the step: row b0 + c, plane first + t G + k; its box indices along axes 0, 1.
      const auto live = [&](int c, int k) { return kWhole || (column && b0 + c < nB && first + t * G + k < last); };
      const auto index01 = [&](int c, int k) {
        const index_t a = beginA + first + t * G + k, b = beginB + b0 + c;
        return Rows ? CellIndex01{b, a} : CellIndex01{a, b};
      };
      V v[Ring::CY][G];
#pragma unroll
      for (int c = 0; c < Ring::CY; ++c)
#pragma unroll
        for (int k = 0; k < G; ++k)
          if (live(c, k)) {
            const CellIndex01 i = index01(c, k);
            const T* center = window + (k + RA) * kPlane + c * Ring::W;
            v[c][k] = body.value(center, kViewStride0, kViewStride1, i.i0, i.i1, r.begin2 + i2);
            if constexpr (kFold) folded = Body::combine(folded, body.fold(center, v[c][k]));
          }
#pragma unroll
      for (int c = 0; c < Ring::CY; ++c)
#pragma unroll
        for (int k = 0; k < G; ++k)
          if (live(c, k)) {
            const CellIndex01 i = index01(c, k);
            body.store(i.i0, i.i1, r.begin2 + i2, v[c][k]);
          }
    };
    if (whole_tile && first + t * G + G <= last)
      compute(std::true_type{});
    else
      compute(std::false_type{});
  }
  if constexpr (kFold) {  // every thread of the block is here (no thread leaves the loop early)
    folded = warp_reduce(folded, [](Fold a, Fold b) { return Body::combine(a, b); });
    if (lane_id() == 0) body.fold_result(folded);
  }
}

// Whether a pass staging a tile plane (CellTilePlane L) in `bytes` of shared memory a block can take
// the body on this device: the bytes within the opt-in limit, and, where the tile is copied in
// 16-byte pieces, the tile array's origin and strides on 16-byte boundaries (a Field's are).
template <class L, class Body>
bool tile_pass_takes(const Body& body, std::size_t bytes, const DeviceInfo& info) {
  if (bytes > static_cast<std::size_t>(info.max_smem_optin)) return false;
  if constexpr (L::kInPieces) {
    constexpr index_t kSize = sizeof(typename L::T);
    if (reinterpret_cast<std::uintptr_t>(body.tile_origin()) % 16 != 0 || body.tile_stride0() * kSize % 16 != 0 ||
        body.tile_stride1() * kSize % 16 != 0)
      return false;
  }
  return true;
}

// Lifts a kernel's dynamic shared memory limit to `bytes`, at every call, before the occupancy query
// and the launch: the same kernel instance may live in more than one loaded module (the library's
// stencil_2d and a program's own), and the attribute belongs to the module the call reaches.
template <class Kernel>
void allow_dynamic_smem(Kernel kernel, std::size_t bytes) {
  if (bytes > 48 * 1024)
    TESSERA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

// Planes per thread block of a pass marching through n planes over `tiles` columns of tiles: the
// columns cut into layers until the grid makes about four waves of the `resident` blocks, at most
// n / deepest layers, rounded up (so that the planes a layer loads beyond its own stay a small
// share); whole steps of `step` planes; at most 65535 layers (the grid's z).
inline index_t marching_planes(index_t n, index_t tiles, index_t resident, index_t deepest, index_t step) {
  const index_t layers = std::clamp<index_t>(ceil_div<index_t>(4 * resident, tiles), 1, ceil_div<index_t>(n, deepest));
  index_t planes = ceil_div<index_t>(ceil_div<index_t>(n, layers), step) * step;
  if (ceil_div<index_t>(n, planes) > 65535) planes = ceil_div<index_t>(ceil_div<index_t>(n, 65535), step) * step;
  return planes;
}

// The tiled order for a TiledCellBody, marching along axis 0, or along axis 1 for a body without
// reach along axis 0. False (nothing launched) where the ring does not fit in a thread block's
// shared memory or the grid would pass its limits.
template <class Body, class Shape = CellRingShape<typename Body::tile_type, Body::kReach0 == 0>>
bool for_each_cell_tiled(const Queue& queue, const CellRange& r, const Body& body) {
  constexpr bool Rows = Body::kReach0 == 0;
  using Ring = CellRing<Body, Rows, Shape>;
  constexpr auto kernel = &for_each_cell_tiled_kernel<Body, Rows, Shape>;
  const DeviceInfo& info = current_device_info();
  if (!tile_pass_takes<Ring>(body, Ring::kBytes, info)) return false;
  const index_t nA = Rows ? r.n1 : r.n0, nB = Rows ? r.n0 : r.n1;
  const index_t tiles_x = ceil_div<index_t>(r.n2, Ring::TX), tiles_y = ceil_div<index_t>(nB, Ring::TY);
  if (tiles_x > 0x7fffffff || tiles_y > 65535) return false;
  allow_dynamic_smem(kernel, Ring::kBytes);
  // At most nA / max(8 G, 16 RA) layers, rounded up; whole steps.
  const index_t resident =
      static_cast<index_t>(blocks_per_sm<kernel>(Ring::kThreads, Ring::kBytes)) * info.sm_count;
  const index_t planes =
      marching_planes(nA, tiles_x * tiles_y, resident, std::max<index_t>(8 * Ring::G, 16 * Ring::RA), Ring::G);
  const dim3 grid(static_cast<unsigned>(tiles_x), static_cast<unsigned>(tiles_y),
                  static_cast<unsigned>(ceil_div<index_t>(nA, planes)));
  kernel<<<grid, dim3(Ring::TX, Ring::TY / Ring::CY, 1), Ring::kBytes, to_cuda(queue.stream)>>>(r, planes, body);
  TESSERA_CUDA_CHECK_LAUNCH();
  return true;
}

// The column order's shape for a body: a thread block marches along axis 0 over a tile of TY rows
// (axis 1) by TX cells (axis 2), each thread the cells of CY rows of one column, one plane a step,
// with F planes travelling while a step computes; one block an SM (kMinBlocks), so that a thread
// may hold 128 registers. TX: 512 bytes of cells (32 to 128). CY: 8, fewer where the column
// registers (CY (2 R + 1) cells) would pass 72 4-byte words. TY: 32, 16 or 8 rows (at most 512
// threads), the most whose ring fits in sm_90's 227 KiB of shared memory a block. Measured on an
// H200 (bench_stencil_3d --variants, the radius-4 float star, 512^3 / 1024x1024x512, % of the copy
// rate; bench/results/stencil.json): 128 x 32 cells, 8 rows a thread, F = 2: 74.8 / 81.4% (F = 3:
// 75.2 / 81.0%); 128 x 16, 8 rows: 69.7 / 68.7%; 128 x 16, 4 rows, F = 3: 69.2 / 71.2%, and 55.1 /
// 56.6% with 2 blocks an SM (64 registers); 64 x 32, 8 rows, 2 blocks: 73.6 / 77.3%; 256 x 8,
// 4 rows: 64.5 / 66.2%. On an H100 (512^3, 2026-12-02): F = 2 87.1%, F = 3 89.9%, the other shapes
// 68.4-85.7%. F = 3 against 2 on the H200 (2026-12-03, two runs, us, 512^3 / 1024x1024x512): radius
// 4 337.3-338.7 against 337.8-339.0 / 1255-1256 against 1250-1251 (within 0.4%); radius 2
// 312.5-312.8 against 311.5 / 1194-1196 against 1182-1183 (0.3-1.0% slower, the H100 not measured):
// F = 3 from radius 4, within 0.4% of F = 2 on the H200.
template <class Body, int Forced = 0>
struct CellColumnShape {
  using T = typename Body::tile_type;
  static constexpr int R = Body::kReach0, RB = Body::kReach1, RC = Body::kReach2;
  static constexpr int TX = std::clamp(static_cast<int>(512 / sizeof(T)), 32, 128);
  static constexpr int kMinBlocks = 1;
  static constexpr int CY = [] {
    const int words = static_cast<int>((sizeof(T) + 3) / 4);
    int cy = 8;
    while (cy > 1 && cy * (2 * R + 1) * words > 72) cy /= 2;
    return cy;
  }();
  template <int Rows, int Flight>
  static constexpr bool kFits = CellTilePlane<Body, TX, Rows, RB, RC>::kPlaneBytes * (R + Flight + 1) <= 227 * 1024 &&
                                TX * Rows / CY <= 512;
  // Three planes in flight for reaches of 4 and more where the ring of 32 rows still fits with them
  // in sm_90's shared memory, else two (Forced, where given, decides).
  static constexpr int F = Forced > 0 ? Forced : R >= 4 && kFits<32, 3> ? 3 : 2;
  static constexpr int TY = kFits<32, F> ? 32 : kFits<16, F> ? 16 : std::max(8, CY);
};

// The column order, for a ColumnCellBody: the planes with the tile's reach along axes 1 and 2
// (CellTilePlane) in a ring of P = R + F + 1 shared-memory slots, R the reach along axis 0; the reach
// along axis 0 of a thread's cells, the 2 R + 1 planes' cells of its own column, in registers (a
// star reads only those along axis 0).
template <class Body, class Shape = CellColumnShape<Body>>
struct CellColumn : CellTilePlane<Body, Shape::TX, Shape::TY, Body::kReach1, Body::kReach2> {
  using T = typename Body::tile_type;
  using Plane = CellTilePlane<Body, Shape::TX, Shape::TY, Body::kReach1, Body::kReach2>;
  static constexpr int R = Body::kReach0, RB = Body::kReach1, RC = Body::kReach2;
  static constexpr int TX = Shape::TX, TY = Shape::TY, CY = Shape::CY, F = Shape::F;
  static constexpr int kThreads = TX * TY / CY;
  static constexpr int P = R + F + 1;
  static constexpr std::size_t kBytes = Plane::kPlaneBytes * static_cast<std::size_t>(P);
  static constexpr int kMinBlocks = cell_min_blocks<Shape>(kThreads, kBytes);
};

// Block (bx, by, bz) computes the cells (i0, by * TY + y, bx * TX + x) for `planes` planes i0 from
// bz * planes. Step s loads plane first - R + s + F of the box into slot (s + F) % P (the slot that
// plane's predecessor P planes back left: it was last read as a centre R steps after it arrived),
// takes its own cells of plane first - R + s into the column registers, and from s = 2 R on
// computes plane first + s - 2 R: the centre plane's slot for the reach along axes 1 and 2, the
// registers along axis 0.
template <class Body, class Shape>
__global__ void __launch_bounds__(CellColumn<Body, Shape>::kThreads, CellColumn<Body, Shape>::kMinBlocks)
    for_each_cell_column_kernel(CellRange r, index_t planes, Body body) {
  using Col = CellColumn<Body, Shape>;
  using T = typename Body::tile_type;
  using V = typename Body::value_type;
  constexpr int R = Col::R, RB = Col::RB, P = Col::P, F = Col::F, CY = Col::CY, W = Col::W;
  constexpr int kPlane = Col::kPlane, Q = 2 * R + 1;
  extern __shared__ __align__(16) unsigned char cell_column_bytes[];
  T* const ring = reinterpret_cast<T*>(cell_column_bytes);
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int tid = ty * Col::TX + tx;
  const index_t s0 = body.tile_stride0(), s1 = body.tile_stride1();
  const index_t t1 = static_cast<index_t>(blockIdx.y) * Col::TY;
  const index_t t2 = static_cast<index_t>(blockIdx.x) * Col::TX;
  const index_t first = static_cast<index_t>(blockIdx.z) * planes;
  const index_t last = first + planes < r.n0 ? first + planes : r.n0;
  const index_t count = last - first + 2 * R;  // the planes loaded: first - R .. last + R - 1
  const TilePlaneCopy<Col, Col::kThreads> copy(tid, r.begin2 + t2, r.n2 - t2, r.n1 - t1, s1);
  const T* next_plane = body.tile_origin() + (r.begin0 + first - R) * s0 + (r.begin1 + t1 - RB) * s1 + copy.x_first;
  index_t next_k = 0;
  int next_slot = 0;
  const auto load_plane = [&] {  // the next plane, one commit group
    if (copy.any && next_k < count) copy.plane(ring + next_slot * kPlane + tid * Col::CE, next_plane);
    next_plane += s0;
    ++next_k;
    next_slot = next_slot + 1 == P ? 0 : next_slot + 1;
    async_commit();
  };
#pragma unroll
  for (int f = 0; f < F; ++f) load_plane();
  const index_t i2 = r.begin2 + t2 + tx;
  const bool column = t2 + tx < r.n2;
  const bool whole_tile = t2 + Col::TX <= r.n2 && t1 + Col::TY <= r.n1;  // the same for the whole block
  const index_t b1 = t1 + ty * CY;                                    // this thread's first row
  const int at = (ty * CY + RB) * W + copy.lead + tx;                  // its first cell in a slot
  // q[c][k % Q]: row c's cell in plane k, for the last Q planes k that arrived. The steps are
  // unrolled Q at a time, so that each names its registers by constants: the plane arriving at step
  // s replaces plane s - Q in q[c][s % Q], and the centre plane s - R's column reads planes
  // s - 2 R .. s from q[c][(s + 1 + j) % Q], j = 0 .. 2 R, without a register moved.
  T q[CY][Q];
  int slot = 0;        // the slot of plane s
  int centre = P - R;  // the slot of plane s - R (valid from s = R)
  const auto steps = [&](auto whole) {
    constexpr bool kWhole = decltype(whole)::value;
    // A tile wholly in the box computes its cells without a condition, so that the compiler reads
    // a ring cell that several of them read once; the tiles at the box's edges check each cell.
    const auto live = [&](int c) { return kWhole || (column && b1 + c < r.n1); };
    const auto step = [&]<int K>(std::integral_constant<int, K>, index_t s) {
      async_wait<F - 1>();  // this thread's copies of plane s are in
      __syncthreads();      // and every thread's; every thread is done with step s - 1
      load_plane();         // plane s + F
      const T* arrived = ring + slot * kPlane + at;
#pragma unroll
      for (int c = 0; c < CY; ++c) q[c][K] = arrived[c * W];
      if (s >= 2 * R) {
        const T* window = ring + centre * kPlane + at;
        const index_t i0 = r.begin0 + first + (s - 2 * R);
        V v[CY];
#pragma unroll
        for (int c = 0; c < CY; ++c)
          if (live(c)) {
            T col[Q];
#pragma unroll
            for (int j = 0; j < Q; ++j) col[j] = q[c][(K + 1 + j) % Q];
            v[c] = body.value_column(window + c * W, W, col + R, i0, r.begin1 + b1 + c, i2);
          }
#pragma unroll
        for (int c = 0; c < CY; ++c)
          if (live(c)) body.store(i0, r.begin1 + b1 + c, i2, v[c]);
      }
      slot = slot + 1 == P ? 0 : slot + 1;
      centre = centre + 1 == P ? 0 : centre + 1;
    };
    for (index_t base = 0; base < count; base += Q)
      [&]<int... K>(std::integer_sequence<int, K...>) {
        ((base + K < count ? step(std::integral_constant<int, K>{}, base + K) : void()), ...);
      }(std::make_integer_sequence<int, Q>{});
  };
  if (whole_tile)
    steps(std::true_type{});
  else
    steps(std::false_type{});
}

// The column order for a ColumnCellBody. False (nothing launched) where the ring does not fit in a
// thread block's shared memory or the grid would pass its limits.
template <class Body, class Shape = CellColumnShape<Body>>
bool for_each_cell_column(const Queue& queue, const CellRange& r, const Body& body) {
  using Col = CellColumn<Body, Shape>;
  constexpr auto kernel = &for_each_cell_column_kernel<Body, Shape>;
  const DeviceInfo& info = current_device_info();
  if (!tile_pass_takes<Col>(body, Col::kBytes, info)) {
    // Less shared memory a block than sm_90's (sm_80: 163 KiB): the same tile, two planes in flight.
    if constexpr (std::is_same_v<Shape, CellColumnShape<Body>> && Shape::F == 3)
      return for_each_cell_column<Body, CellColumnShape<Body, 2>>(queue, r, body);
    return false;
  }
  const index_t tiles_x = ceil_div<index_t>(r.n2, Col::TX), tiles_y = ceil_div<index_t>(r.n1, Col::TY);
  if (tiles_x > 0x7fffffff || tiles_y > 65535) return false;
  allow_dynamic_smem(kernel, Col::kBytes);
  // At most n0 / max(32, 16 R) layers, rounded up (the 2 R planes a layer loads beyond its own about
  // a quarter of its own at most).
  const index_t resident =
      static_cast<index_t>(blocks_per_sm<kernel>(Col::kThreads, Col::kBytes)) * info.sm_count;
  const index_t planes = marching_planes(r.n0, tiles_x * tiles_y, resident, std::max<index_t>(32, 16 * Col::R), 1);
  const dim3 grid(static_cast<unsigned>(tiles_x), static_cast<unsigned>(tiles_y),
                  static_cast<unsigned>(ceil_div<index_t>(r.n0, planes)));
  kernel<<<grid, dim3(Col::TX, Col::TY / Col::CY, 1), Col::kBytes, to_cuda(queue.stream)>>>(r, planes, body);
  TESSERA_CUDA_CHECK_LAUNCH();
  return true;
}

// ---- the rows order: the ring of rows filled by bulk copies (cell_rows_kernel, sm_90) ----------------

// Whether the rows kernel may store whole vectors of a body's results: it says where its rows lie,
// and its results are its cells' size.
template <class Body>
inline constexpr bool kRowsVectorStores = StoresRows<Body> && sizeof(typename Body::value_type) == sizeof(typename Body::tile_type);

template <class Body, class Tuning, class Last, bool kVectorStore>
inline constexpr auto kCellRowsKernel = &cell_rows_kernel<Body, Tuning, Last, kVectorStore>;

// Whether the rows kernel runs on the current device: its code there was compiled for sm_90 or later
// (not an sm_80 image, nor PTX of an earlier architecture compiled at load time) and its ring fits
// in a block's shared memory. Once per device.
template <class Body, class Tuning = Stencil2dBulkTuning, class Last = NoFrameLast,
          bool kVectorStore = kRowsVectorStores<Body>>
bool cell_rows_available() {
  using T = typename Body::tile_type;
  constexpr int kMaxDevices = 64;
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<bool, kMaxDevices> available{};
  const DeviceInfo& info = current_device_info();
  std::call_once(once[info.ordinal], [&] {
    cudaFuncAttributes attributes{};
    TESSERA_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kCellRowsKernel<Body, Tuning, Last, kVectorStore>));
    const bool fits = kBulkSharedBytes<T, Tuning> <= static_cast<std::size_t>(info.max_smem_optin);
    available[info.ordinal] = fits && attributes.ptxVersion >= 90 && attributes.binaryVersion >= 90;
  });
  return available[info.ordinal];
}

// The tiles and grid of the rows kernel: one wave, every thread block resident at once (the
// frame-last sweep's blocks wait for flags only other devices set, never for each other). Lifts the
// kernel's dynamic shared memory limit first (allow_dynamic_smem says why at every call).
template <class Body, class Tuning, class Last, bool kVectorStore>
Stencil2dShape cell_rows_shape(index_t rows, index_t cols, unsigned* grid) {
  using T = typename Body::tile_type;
  constexpr auto kernel = kCellRowsKernel<Body, Tuning, Last, kVectorStore>;
  constexpr int kThreads = Tuning::kWarps * kWarpThreads;
  allow_dynamic_smem(kernel, kBulkSharedBytes<T, Tuning>);
  const index_t resident =
      static_cast<index_t>(current_device_info().sm_count) * blocks_per_sm<kernel>(kThreads, kBulkSharedBytes<T, Tuning>);
  const Stencil2dShape shape = stencil_2d_shape<T, true, Tuning>(rows, cols, 0, resident);
  *grid = static_cast<unsigned>(std::min<index_t>(shape.tiles, resident));
  return shape;
}

// The rows order for a RowsCellBody, with `last` run after the tiles (NoFrameLast, or
// FrameLastSweep). False (nothing launched) where the box has more than one plane, the kernel does
// not run on this device, the box's tile cells do not start on a 16-byte boundary with rows
// keeping it (a Field's owned cells do), or `last` does not take the launch's grid (last.takes).
template <class Body, class Tuning = Stencil2dBulkTuning, class Last = NoFrameLast>
bool for_each_cell_rows(const Queue& queue, const CellRange& r, const Body& body, const Last& last = {}) {
  static_assert(RowsCellBody<Body>, "for_each_cell_rows: a 2-D body of reach 1 over cells of 4 or 8 bytes");
  using T = typename Body::tile_type;
  using V = typename Body::value_type;
  if (r.n0 != 1) return false;
  const auto on_boundary = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  const T* first = body.tile_origin() + r.begin0 * body.tile_stride0() + r.begin1 * body.tile_stride1() + r.begin2;
  if (!on_boundary(first) || body.tile_stride1() * index_t(sizeof(T)) % 16 != 0) return false;
  const auto launch = [&]<bool kVectorStore>() {
    if (!cell_rows_available<Body, Tuning, Last, kVectorStore>()) return false;
    constexpr auto kernel = kCellRowsKernel<Body, Tuning, Last, kVectorStore>;
    unsigned grid = 0;
    const Stencil2dShape shape = cell_rows_shape<Body, Tuning, Last, kVectorStore>(r.n1, r.n2, &grid);
    if (!last.takes(grid)) return false;
    kernel<<<grid, Tuning::kWarps * kWarpThreads, kBulkSharedBytes<T, Tuning>, to_cuda(queue.stream)>>>(
        first, r.begin0, r.begin1, r.begin2, shape, body, last);
    TESSERA_CUDA_CHECK_LAUNCH();
    return true;
  };
  if constexpr (kRowsVectorStores<Body>) {
    const V* row = body.store_row(r.begin0, r.begin1);
    if (on_boundary(row + r.begin2) && (body.store_row(r.begin0, r.begin1 + 1) - row) * index_t(sizeof(V)) % 16 == 0)
      return launch.template operator()<true>();
  }
  return launch.template operator()<false>();
}

}  // namespace detail

// How the device pass walks a box (the header's comment): `automatic` picks.
enum class CellOrder { automatic, planes, march, tiled, column, rows };

template <class Body>
void for_each_cell(const Queue& queue, const index_t (&begin)[3], const index_t (&end)[3], Body body,
                   CellOrder order = CellOrder::automatic) {
  const detail::CellRange r{begin[0], begin[1], begin[2], end[0] - begin[0], end[1] - begin[1], end[2] - begin[2]};
  if (r.n0 <= 0 || r.n1 <= 0 || r.n2 <= 0) return;
  const kernels::cuda::detail::ScopedDevice on_queue_device(queue.device);
  static_assert(!FoldingCellBody<Body>, "for_each_cell: a folding body runs through detail::for_each_cell_tiled");
  const bool wide = r.n2 >= detail::kCellTileX && r.n1 >= detail::kCellTileY;
  if constexpr (TiledCellBody<Body>) {
    constexpr bool kNear = Body::kReach0 <= 1 && Body::kReach1 <= 1 && Body::kReach2 <= 1;
    // A box thinner than kDeepPlanes along the marching axis (a stencil's shell) takes the planes
    // order: a ring would load its reach again for every plane or two it computes, in a grid of a
    // few blocks; the planes order's thread blocks are small (128 threads, no shared memory), for
    // a shell swept beside the interior's sweep (apply_stencil).
    const bool deep = (Body::kReach0 == 0 ? r.n1 : r.n0) >= detail::kDeepPlanes;
    if (order == CellOrder::automatic && wide && deep)
      order = Body::kReach0 == 0 || kNear ? CellOrder::tiled : ColumnCellBody<Body> ? CellOrder::column : CellOrder::march;
    if constexpr (detail::RowsCellBody<Body>) {
      if (order == CellOrder::rows) {
        if (detail::for_each_cell_rows(queue, r, body)) return;
        order = CellOrder::tiled;
      }
    }
    if (order == CellOrder::rows) order = CellOrder::tiled;
    if constexpr (ColumnCellBody<Body>) {
      if (order == CellOrder::column) {
        if (detail::for_each_cell_column(queue, r, body)) return;
        order = CellOrder::march;
      }
    }
    if (order == CellOrder::tiled) {
      if (detail::for_each_cell_tiled(queue, r, body)) return;
      order = CellOrder::march;
    }
  }
  if (order == CellOrder::column || order == CellOrder::rows) order = CellOrder::march;
  const index_t tiles_x = detail::ceil_div<index_t>(r.n2, detail::kMarchTileX);
  const index_t tiles_y = detail::ceil_div<index_t>(r.n1, detail::kMarchTileY);
  if (order == CellOrder::march && tiles_x <= 0x7fffffff && tiles_y <= 65535) {
    // Up to 32 planes per thread block, fewer where the grid would then be under 4 waves of the
    // blocks resident per SM (2048 threads).
    constexpr index_t kResident = 2048 / (detail::kMarchTileX * detail::kMarchTileY);
    const index_t waves = 4 * kResident * static_cast<index_t>(detail::current_device_info().sm_count);
    index_t planes = std::clamp<index_t>(r.n0 * tiles_x * tiles_y / waves, 1, 32);
    if (detail::ceil_div<index_t>(r.n0, planes) > 65535) planes = detail::ceil_div<index_t>(r.n0, 65535);
    const dim3 grid(static_cast<unsigned>(tiles_x), static_cast<unsigned>(tiles_y),
                    static_cast<unsigned>(detail::ceil_div<index_t>(r.n0, planes)));
    detail::for_each_cell_march_kernel<<<grid, dim3(detail::kMarchTileX, detail::kMarchTileY, 1), 0,
                                         detail::to_cuda(queue.stream)>>>(r, planes, body);
    TESSERA_CUDA_CHECK_LAUNCH();
    return;
  }
  const bool across = r.n2 < detail::kCellTileX && r.n1 > r.n2;
  const index_t nx = across ? r.n1 : r.n2, ny = across ? r.n2 : r.n1;
  const dim3 block(detail::kCellTileX, detail::kPlanesTileY, 1);
  const dim3 grid(static_cast<unsigned>(std::min<index_t>(detail::ceil_div<index_t>(nx, detail::kCellTileX), 0x7fffffff)),
                  static_cast<unsigned>(std::min<index_t>(detail::ceil_div<index_t>(ny, detail::kPlanesTileY), 65535)),
                  static_cast<unsigned>(std::min<index_t>(r.n0, 65535)));
  if (across)
    detail::for_each_cell_kernel<true><<<grid, block, 0, detail::to_cuda(queue.stream)>>>(r, body);
  else
    detail::for_each_cell_kernel<false><<<grid, block, 0, detail::to_cuda(queue.stream)>>>(r, body);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda
