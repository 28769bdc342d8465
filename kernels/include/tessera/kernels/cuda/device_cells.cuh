// The device pass of kernels::for_each_cell (cells.hpp) over a 3-D box of cells, in three orders:
//
//   planes  one thread per cell, thread blocks of 32 x 8 cells of an (i2, i1) tile, a plane i0 per
//           grid layer; a box thinner than a warp along axis 2 puts the warp along axis 1 instead.
//           Any body: body(i0, i1, i2).
//   march   thread blocks of 64 x 8 threads that march along axis 0 through up to 32 planes each.
//   tiled   for a body that reads a neighbourhood of one array (a TiledCellBody: the user stencil's
//           cell, apply_stencil.hpp): thread blocks stage a tile of that array, reach included, in
//           shared memory, and march along axis 0 (axis 1 for a 2-D body) in batches of 8 planes.
//           Two buffers take turns: while the threads compute a batch from one (each thread the
//           cells of its column, in groups of 4 whose reads come before their stores, so that a
//           tile cell two of them read is read once), the next batch's new planes travel into the
//           other by asynchronous copies (cp.async, sm_80 and later), and the planes both batches
//           read are moved across. Each input cell comes from global memory once, plus the tile's
//           halo; the loads of a whole batch are in flight at once.
//
// for_each_cell(queue, begin, end, body) picks the order by what bench_stencil_3d measured (an
// H200; docs/PERFORMANCE.md): for a TiledCellBody on a box at least a warp wide along axis 2 and 8
// rows along axis 1, tiled for a 2-D body (no reach along axis 0: a 16384^2 5-point sweep at 70% of
// the copy rate, against 62% streaming from global memory) and march for a 3-D one (512^3: 63% for
// the 7-point star, 41% for the 27-point box, 45% for the radius-4 star, against 44%, 38% and 30%
// tiled); march where a tile does not fit in shared memory; planes for every other box and body.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <concepts>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/async_copy.cuh"
#include "tessera/kernels/cuda/device_guard.hpp"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels::cuda {

// A body whose cell reads one array around the cell (the tile) and possibly others at the cell:
//   using tile_type = ...;  using value_type = ...;   (value_type default constructible)
//   static constexpr int kReach0, kReach1, kReach2;   how far it reads the tile along each axis
//   const tile_type* tile_origin() const;             the tile array's cell (0, 0, 0)
//   index_t tile_stride0() const, tile_stride1() const;   its strides along axes 0 and 1
//   value_type value(const tile_type* center, index_t stride0, index_t stride1, i0, i1, i2) const;
//       the new value of cell (i0, i1, i2), reading the tile array through `center` (the cell in a
//       copy with those strides, the reach around it filled in)
//   void store(i0, i1, i2, const value_type&) const;
template <class Body>
concept TiledCellBody = requires(const Body& b, const typename Body::tile_type* p, index_t i) {
  requires std::is_default_constructible_v<typename Body::value_type>;
  { Body::kReach0 } -> std::convertible_to<int>;
  { Body::kReach1 } -> std::convertible_to<int>;
  { Body::kReach2 } -> std::convertible_to<int>;
  { b.tile_origin() } -> std::convertible_to<const typename Body::tile_type*>;
  { b.tile_stride0() } -> std::convertible_to<index_t>;
  { b.tile_stride1() } -> std::convertible_to<index_t>;
  b.store(i, i, i, b.value(p, i, i, i, i, i));
};

namespace detail {

inline constexpr int kCellTileX = 32;  // cells along axis 2 (the fastest) per thread block
inline constexpr int kCellTileY = 8;   // thread rows along axis 1
// The marching order's thread blocks: 64 cells along axis 2 by 8 rows. Against 32 x 8 (H200,
// bench_stencil_3d, 512^3 / 1024x1024x512): the 7-point star 62.9 / 59.2% of the copy rate against
// 61.2 / 52.7%, the radius-4 star 45.2 / 45.5% against 44.4 / 43.7%, the 27-point box within 1%;
// 128 x 2 to 512 x 1 gained no more for the 7-point star and lost up to 20% for the radius-4 one.
inline constexpr int kMarchTileX = 64;
inline constexpr int kMarchTileY = 8;
// Resident thread blocks per SM the tiled order's registers are held to (64 a thread; unbounded,
// the compiler gave it 145-178, one thread block per SM).
inline constexpr int kCellTiledBlocksPerSm = 4;
inline constexpr int kCellValueGroup = 4;  // cells a thread computes before it stores them

struct CellRange {
  index_t begin0, begin1, begin2;
  index_t n0, n1, n2;
};

// Thread (x, y) of block (bx, by, bz) takes cell (bz, by * 8 + y, bx * 32 + x) of the box, and the
// cells a grid's extent further along each axis where the box passes the grid. Across: x walks
// axis 1 and y axis 2 (a box thinner than a warp along axis 2, as the shell of a block is).
template <bool Across, class Body>
__global__ void __launch_bounds__(kCellTileX* kCellTileY) for_each_cell_kernel(CellRange r, Body body) {
  const index_t nx = Across ? r.n1 : r.n2, ny = Across ? r.n2 : r.n1;
  const index_t step_y = static_cast<index_t>(gridDim.y) * kCellTileY;
  const index_t step_x = static_cast<index_t>(gridDim.x) * kCellTileX;
  for (index_t i0 = blockIdx.z; i0 < r.n0; i0 += gridDim.z)
    for (index_t y = static_cast<index_t>(blockIdx.y) * kCellTileY + threadIdx.y; y < ny; y += step_y)
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

// The tile of for_each_cell_tiled_kernel for a body of reach (R0, R1, R2). The block marches along
// axis A (axis 0; axis 1 for a body without reach along axis 0, the 2-D field's) in batches of K
// planes, over a tile of TY rows along axis B (the other of axes 0 and 1) and TX cells along axis 2,
// one thread per column of cells. A plane of the tile is H rows of W cells, the reach included;
// each of the two buffers holds P planes.
template <class Body, bool Rows>
struct CellTile {
  using T = typename Body::tile_type;
  static constexpr int RA = Rows ? Body::kReach1 : Body::kReach0;
  static constexpr int RB = Rows ? Body::kReach0 : Body::kReach1;
  static constexpr int RC = Body::kReach2;
  static constexpr int TX = Rows ? 256 : kCellTileX, TY = Rows ? 1 : kCellTileY;
  static constexpr int kThreads = TX * TY;
  static constexpr int K = 8;  // planes a batch
  static constexpr int W = TX + 2 * RC, H = TY + 2 * RB, P = K + 2 * RA;
  static constexpr int kPlane = W * H;
  static constexpr std::size_t kBytes = 2 * sizeof(T) * static_cast<std::size_t>(P) * kPlane;
};

// Where this thread's cells of a tile plane lie: cell tid + j * threads of the plane, at offset
// off[j] from the plane's corner in the array, within the block's reach where ok[j].
template <class Tile>
struct TilePlaneCells {
  static constexpr int J = (Tile::kPlane + Tile::kThreads - 1) / Tile::kThreads;
  index_t off[J];
  bool ok[J];
  __device__ __forceinline__ TilePlaneCells(int tid, index_t row_stride, int rows, int cols) {
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int e = tid + j * Tile::kThreads, y = e / Tile::W, x = e - y * Tile::W;
      ok[j] = e < Tile::kPlane && y < rows && x < cols;
      off[j] = y * row_stride + x;
    }
  }
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
__device__ __forceinline__ void async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  copy_async_wait<0>();
#endif
}

// Starts the copy of `Count` planes of the tile, box planes q0, q0 + 1, ... along axis A (those
// before plane_end), into slots s_first, s_first + 1, ... of `buffer`.
template <class Tile, int Count, class T>
__device__ __forceinline__ void load_tile_planes(T* buffer, const T* corner, index_t plane_stride,
                                                 const TilePlaneCells<Tile>& at, int tid, int s_first, index_t q0,
                                                 index_t plane_end) {
#pragma unroll
  for (int p = 0; p < Count; ++p) {
    if (q0 + p < plane_end) {
      const T* plane = corner + (q0 + p) * plane_stride;
#pragma unroll
      for (int j = 0; j < TilePlaneCells<Tile>::J; ++j)
        if (at.ok[j]) copy_cell_async(buffer + (s_first + p) * Tile::kPlane + tid + j * Tile::kThreads, plane + at.off[j]);
    }
  }
}

// Block (bx, by, bz) computes the cells at (a, by * TY + y, bx * TX + x) along axes (A, B, 2) of
// the box, for `planes` planes a from bz * planes, K a batch. Two buffers take turns: while the
// threads compute a batch from one, the next batch's K new planes travel into the other
// (asynchronous copies) and the 2 RA planes both batches read are moved across. Slot s of the
// buffer of the batch p0 .. p0 + K - 1 holds box plane p0 - RA + s.
template <class Body, bool Rows>
__global__ void __launch_bounds__(CellTile<Body, Rows>::kThreads, kCellTiledBlocksPerSm)
    for_each_cell_tiled_kernel(CellRange r, index_t planes, Body body) {
  using Tile = CellTile<Body, Rows>;
  using T = typename Body::tile_type;
  using V = typename Body::value_type;
  constexpr int RA = Tile::RA, RB = Tile::RB, RC = Tile::RC, K = Tile::K;
  extern __shared__ __align__(16) unsigned char cell_tile_bytes[];
  T* const buffer0 = reinterpret_cast<T*>(cell_tile_bytes);
  constexpr int kBuffer = Tile::P * Tile::kPlane;  // cells of one buffer; buffer 1 follows buffer 0
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int tid = ty * Tile::TX + tx;
  const index_t nA = Rows ? r.n1 : r.n0, nB = Rows ? r.n0 : r.n1;
  const index_t beginA = Rows ? r.begin1 : r.begin0, beginB = Rows ? r.begin0 : r.begin1;
  const index_t sA = Rows ? body.tile_stride1() : body.tile_stride0();
  const index_t sB = Rows ? body.tile_stride0() : body.tile_stride1();
  const index_t tB = static_cast<index_t>(blockIdx.y) * Tile::TY;
  const index_t t2 = static_cast<index_t>(blockIdx.x) * Tile::TX;
  const index_t first = static_cast<index_t>(blockIdx.z) * planes;
  const index_t last = first + planes < nA ? first + planes : nA;
  const int rows = static_cast<int>((nB - tB < Tile::TY ? nB - tB : Tile::TY) + 2 * RB);
  const int cols = static_cast<int>((r.n2 - t2 < Tile::TX ? r.n2 - t2 : Tile::TX) + 2 * RC);
  // The tile's corner (slot 0, row 0, column 0) for box plane 0 along axis A.
  const T* corner = body.tile_origin() + beginA * sA + (beginB + tB - RB) * sB + (r.begin2 + t2 - RC);
  const index_t plane_end = last + RA;  // the planes the batches read: first - RA .. last + RA - 1
  const TilePlaneCells<Tile> at(tid, sB, rows, cols);
  // The view's strides along axes 0 and 1 in the tile (a 2-D body's view reads axis 1's only).
  constexpr index_t kViewStride0 = Rows ? 0 : Tile::kPlane, kViewStride1 = Rows ? Tile::kPlane : Tile::W;
  const index_t b = tB + ty, i2 = t2 + tx;
  const bool column = b < nB && i2 < r.n2;
  load_tile_planes<Tile, 2 * RA + K>(buffer0, corner, sA, at, tid, 0, first - RA, plane_end);
  async_commit();
  int turn = 0;
  for (index_t p0 = first; p0 < last; p0 += K) {
    async_wait_all();
    __syncthreads();  // the batch's planes are in; every thread is done with the other buffer
    const T* now = buffer0 + turn * kBuffer;
    if (p0 + K < last) {
      T* next = buffer0 + (turn ^ 1) * kBuffer;
      load_tile_planes<Tile, K>(next, corner, sA, at, tid, 2 * RA, p0 + K + RA, plane_end);
      async_commit();
      for (int e = tid; e < 2 * RA * Tile::kPlane; e += Tile::kThreads) next[e] = now[K * Tile::kPlane + e];
    }
    // The batch's cells in groups of G planes: a group's values, then their stores (no store
    // between the reads of a group, so that a tile cell two of its cells read is read once).
    constexpr int G = K < kCellValueGroup ? K : kCellValueGroup;
#pragma unroll
    for (int g = 0; g < K; g += G) {
      V v[G];
#pragma unroll
      for (int k = 0; k < G; ++k) {
        const index_t a = p0 + g + k;
        if (column && a < last)
          v[k] = body.value(now + (g + k + RA) * Tile::kPlane + (ty + RB) * Tile::W + tx + RC, kViewStride0,
                            kViewStride1, Rows ? beginB + b : beginA + a, Rows ? beginA + a : beginB + b, r.begin2 + i2);
      }
#pragma unroll
      for (int k = 0; k < G; ++k) {
        const index_t a = p0 + g + k;
        if (column && a < last) body.store(Rows ? beginB + b : beginA + a, Rows ? beginA + a : beginB + b, r.begin2 + i2, v[k]);
      }
    }
    turn ^= 1;
  }
}

// The tiled order for a TiledCellBody, marching along axis 0, or along axis 1 for a body without
// reach along axis 0. False (nothing launched) where the tile does not fit in a thread block's
// shared memory or the grid would pass its limits.
template <class Body>
bool for_each_cell_tiled(const Queue& queue, const CellRange& r, const Body& body) {
  constexpr bool Rows = Body::kReach0 == 0;
  using Tile = CellTile<Body, Rows>;
  constexpr auto kernel = &for_each_cell_tiled_kernel<Body, Rows>;
  const DeviceInfo& info = current_device_info();
  if (Tile::kBytes > static_cast<std::size_t>(info.max_smem_optin)) return false;
  const index_t nA = Rows ? r.n1 : r.n0, nB = Rows ? r.n0 : r.n1;
  const index_t tiles_x = ceil_div<index_t>(r.n2, Tile::TX), tiles_y = ceil_div<index_t>(nB, Tile::TY);
  if (tiles_x > 0x7fffffff || tiles_y > 65535) return false;
  if (Tile::kBytes > 48 * 1024) {
    static thread_local int opted_device = -1;  // the attribute is per device
    if (opted_device != info.ordinal) {
      TESSERA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(Tile::kBytes)));
      opted_device = info.ordinal;
    }
  }
  // Planes per thread block: enough blocks for about six waves, whole batches, at least two of them
  // (the first batch's extra 2 RA planes spread over several).
  const index_t resident =
      static_cast<index_t>(blocks_per_sm<kernel>(Tile::kThreads, Tile::kBytes)) * info.sm_count;
  const index_t tiles = tiles_x * tiles_y;
  const index_t layers = std::clamp<index_t>(ceil_div<index_t>(6 * resident, tiles), 1, ceil_div<index_t>(nA, Tile::K));
  index_t planes = std::max<index_t>(2 * Tile::K, ceil_div<index_t>(ceil_div<index_t>(nA, layers), Tile::K) * Tile::K);
  if (ceil_div<index_t>(nA, planes) > 65535) planes = ceil_div<index_t>(ceil_div<index_t>(nA, 65535), Tile::K) * Tile::K;
  const dim3 grid(static_cast<unsigned>(tiles_x), static_cast<unsigned>(tiles_y),
                  static_cast<unsigned>(ceil_div<index_t>(nA, planes)));
  kernel<<<grid, dim3(Tile::TX, Tile::TY, 1), Tile::kBytes, to_cuda(queue.stream)>>>(r, planes, body);
  TESSERA_CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace detail

// How the device pass walks a box (the header's comment): `automatic` picks.
enum class CellOrder { automatic, planes, march, tiled };

template <class Body>
void for_each_cell(const Queue& queue, const index_t (&begin)[3], const index_t (&end)[3], Body body,
                   CellOrder order = CellOrder::automatic) {
  const detail::CellRange r{begin[0], begin[1], begin[2], end[0] - begin[0], end[1] - begin[1], end[2] - begin[2]};
  if (r.n0 <= 0 || r.n1 <= 0 || r.n2 <= 0) return;
  const kernels::cuda::detail::ScopedDevice on_queue_device(queue.device);
  const bool wide = r.n2 >= detail::kCellTileX && r.n1 >= detail::kCellTileY;
  if constexpr (TiledCellBody<Body>) {
    if (order == CellOrder::automatic && wide) order = Body::kReach0 == 0 ? CellOrder::tiled : CellOrder::march;
    if (order == CellOrder::tiled) {
      if (detail::for_each_cell_tiled(queue, r, body)) return;
      order = CellOrder::march;
    }
  }
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
  const dim3 block(detail::kCellTileX, detail::kCellTileY, 1);
  const dim3 grid(static_cast<unsigned>(std::min<index_t>(detail::ceil_div<index_t>(nx, detail::kCellTileX), 0x7fffffff)),
                  static_cast<unsigned>(std::min<index_t>(detail::ceil_div<index_t>(ny, detail::kCellTileY), 65535)),
                  static_cast<unsigned>(std::min<index_t>(r.n0, 65535)));
  if (across)
    detail::for_each_cell_kernel<true><<<grid, block, 0, detail::to_cuda(queue.stream)>>>(r, body);
  else
    detail::for_each_cell_kernel<false><<<grid, block, 0, detail::to_cuda(queue.stream)>>>(r, body);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda
