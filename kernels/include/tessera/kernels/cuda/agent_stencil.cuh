// The stencils' agents and kernels (device_stencil.cuh describes the family and dispatches them):
// what one thread block does with its tile of rows, cells or inputs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/async_copy.cuh"
#include "tessera/kernels/cuda/block_stencil.cuh"
#include "tessera/kernels/cuda/cell_body.cuh"
#include "tessera/kernels/cuda/tuning/stencil.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/cuda/warp_stencil.cuh"
#include "tessera/kernels/stencil.hpp"

namespace tessera::kernels::cuda::detail {

// ---- stencil_2d --------------------------------------------------------------------------------------

// The geometry of one sweep: which tile a thread block takes, where a lane's slice starts.
struct Stencil2dShape {
  index_t rows = 0, cols = 0;
  index_t shift = 0;           // elements between the 16-byte boundary before the region and its column 0
  index_t chunks_per_row = 0;  // slices per row (the first may start left of column 0)
  index_t tiles_x = 0;         // tiles across a row
  index_t segments = 1;        // segments of rows per strip of columns, of near-equal length
  index_t tiles = 0;
};

// The rows [segment_begin(s), segment_begin(s + 1)) of segment s (empty where rows < segments).
__host__ __device__ __forceinline__ index_t segment_begin(const Stencil2dShape& shape, index_t s) {
  return s * shape.rows / shape.segments;
}

// Elements of a lane's slice: kVectorsPerLane 16-byte vectors, or one element on the element path.
template <class T, bool kVector, class Tuning>
inline constexpr int kSliceItems = kVector ? Tuning::kVectorsPerLane * Vector<T>::kItems : 1;

// Tiles of a strip of columns (kWarps warp-wide strips per thread block) by a segment of rows. Each
// strip is cut into floor(resident / tiles_x) segments of near-equal length (at least one), so that
// the tiles make one wave of the resident thread blocks: each block walks its strip down once, the
// rows at a segment's start are loaded (and waited for) once per block, and no block runs a second,
// short tile after the others have finished. Narrow regions (a block's edge strips) get short
// segments, down to kMinSegmentRows, and so still fill the device: a segment is a chain of
// dependent row loads.
template <class T, bool kVector, class Tuning>
Stencil2dShape stencil_2d_shape(index_t rows, index_t cols, index_t shift, index_t resident) {
  Stencil2dShape shape;
  shape.rows = rows;
  shape.cols = cols;
  shape.shift = shift;
  shape.chunks_per_row = ceil_div<index_t>(cols + shift, kSliceItems<T, kVector, Tuning>);
  shape.tiles_x = ceil_div<index_t>(shape.chunks_per_row, index_t(Tuning::kWarps) * kWarpThreads);
  const index_t one_wave = std::max<index_t>(1, resident / shape.tiles_x);
  const index_t shortest = std::max<index_t>(1, rows / Tuning::kMinSegmentRows);
  shape.segments = std::max(std::min(one_wave, shortest),
                            ceil_div<index_t>(rows, index_t(1) << 30));  // a thread counts its rows in 32 bits
  shape.tiles = shape.tiles_x * shape.segments;
  return shape;
}

template <class T, bool kNine, bool kVector, class Tuning = Stencil2dTuning>
__global__ void __launch_bounds__(Tuning::kWarps* kWarpThreads, Tuning::kMinBlocksPerSm)
    stencil_2d_kernel(const T* __restrict__ in, index_t in_ld, T* __restrict__ out, index_t out_ld,
                      Stencil2dShape shape, StencilWeights<T> w, T* max_change) {
  constexpr int kItems = kSliceItems<T, kVector, Tuning>;
  constexpr int kAhead = Tuning::kPrefetchRows;
  using Slice = RowSlice<T, kItems>;
  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  ChangeBits<T> largest = 0;
  for (index_t tile = blockIdx.x; tile < shape.tiles; tile += gridDim.x) {
    const index_t tile_y = tile / shape.tiles_x;
    const index_t tile_x = tile - tile_y * shape.tiles_x;
    const index_t first_chunk = (tile_x * Tuning::kWarps + warp) * kWarpThreads;
    if (first_chunk >= shape.chunks_per_row) continue;  // the same for the whole warp
    const index_t x0 = (first_chunk + lane) * kItems - shape.shift;
    const LaneColumns<kItems> columns(x0, shape.cols, lane);
    const index_t row_begin = segment_begin(shape, tile_y);
    const int rows_here = static_cast<int>(segment_begin(shape, tile_y + 1) - row_begin);
    if (rows_here <= 0) continue;  // the same for the whole block

    // Every load of the segment's first rows goes out before the first wait for its data. Row
    // row_begin + rows_here is the last (south) row the segment reads.
    const T* next_row = in + (row_begin - 1) * in_ld + x0;
    const Slice north_slice = load_slice<T, kItems, kVector>(next_row, columns);
    next_row += in_ld;
    const Slice centre_slice = load_slice<T, kItems, kVector>(next_row, columns);
    Slice ahead[kAhead];
#pragma unroll
    for (int d = 0; d < kAhead; ++d) {
      next_row += in_ld;
      if (1 + d <= rows_here) ahead[d] = load_slice<T, kItems, kVector>(next_row, columns);
    }
    next_row += in_ld;  // row row_begin + 1 + kAhead, the next to load
    RowNeighbourhood<T, kItems> north = resolve(north_slice, lane);
    RowNeighbourhood<T, kItems> centre = resolve(centre_slice, lane);
    T* out_row = out + row_begin * out_ld + x0;
    for (int i = 0; i < rows_here; i += kAhead) {
#pragma unroll
      for (int d = 0; d < kAhead; ++d) {
        if (i + d < rows_here) {  // the same for the whole warp: the shuffles below see every lane
          const RowNeighbourhood<T, kItems> south = resolve(ahead[d], lane);
          if (i + d + 1 + kAhead <= rows_here) ahead[d] = load_slice<T, kItems, kVector>(next_row, columns);
          next_row += in_ld;
          T result[kItems];
          apply_stencil<T, kItems, kNine>(north, centre, south, w, result);
          store_slice<T, kItems, kVector>(out_row, columns, result);
          out_row += out_ld;
          if (max_change) {
#pragma unroll
            for (int k = 0; k < kItems; ++k)
              if (columns.written >> k & 1u) largest = std::max(largest, change_bits(result[k], centre.item[k]));
          }
          north = centre;
          centre = south;
        }
      }
    }
  }
  if (max_change) {
    largest = warp_reduce(largest, [](ChangeBits<T> a, ChangeBits<T> b) { return a > b ? a : b; });
    if (lane == 0 && largest != 0) atomicMax(reinterpret_cast<ChangeBits<T>*>(max_change), largest);
  }
}

// Up to four rectangles of one region, swept by one launch of the cells kernel: rectangle k holds
// cells [first_cell[k], first_cell[k + 1]) of the launch, row-major.
struct CellRegions {
  static constexpr int kMax = 4;
  int count = 0;
  index_t row[kMax]{}, col[kMax]{}, cols[kMax]{};
  index_t first_cell[kMax + 1]{};

  void add(index_t r, index_t c, index_t rows, index_t columns) {
    if (rows <= 0 || columns <= 0) return;
    row[count] = r;
    col[count] = c;
    cols[count] = columns;
    first_cell[count + 1] = first_cell[count] + rows * columns;
    ++count;
  }
  __host__ __device__ index_t cells() const { return first_cell[count]; }
};

// Rectangles of the output whose cells the cells kernel also writes elsewhere as it computes them
// (stencil_2d_frame's copies): rectangle k's cell (r, c) of the region goes to
// to[k][(r - row[k]) * to_ld[k] + (c - col[k])].
struct CellPacks {
  static constexpr int kMax = static_cast<int>(kMaxFramePacks);
  int count = 0;
  index_t row[kMax]{}, col[kMax]{}, rows[kMax]{}, cols[kMax]{}, to_ld[kMax]{};
  void* to[kMax]{};
};

// Cell i of the regions (in the cells kernel's order) swept: to out, and to each pack that holds
// it. kFrameLast (a cell of the frame-last sweep): its reads go to L2 (ld.cg), past a first-level
// cache that may hold lines another GPU has written since (the ghosts), and the regions hold fewer
// than 2^32 cells, so that the cell's row and column come from a 32-bit division (a 64-bit one is
// a call, whose saved registers the bulk kernel around the frame-last sweep has no room for).
template <class T, bool kNine, bool kFrameLast = false>
__device__ __forceinline__ void stencil_cell(const T* __restrict__ in, index_t in_ld, T* __restrict__ out,
                                             index_t out_ld, const CellRegions& regions, const StencilWeights<T>& w,
                                             const CellPacks& packs, index_t i, bool change, ChangeBits<T>& largest) {
  // Every array indexed by constants, so that the arguments are read where they lie (an argument
  // indexed at run time is copied to local memory first).
  index_t first = 0, row = regions.row[0], col = regions.col[0], cols = regions.cols[0];
#pragma unroll
  for (int j = 1; j < CellRegions::kMax; ++j)
    if (j < regions.count && i >= regions.first_cell[j]) {
      first = regions.first_cell[j];
      row = regions.row[j];
      col = regions.col[j];
      cols = regions.cols[j];
    }
  const index_t at = i - first;
  index_t r, c;
  if constexpr (kFrameLast) {
    r = row + static_cast<std::uint32_t>(at) / static_cast<std::uint32_t>(cols);
    c = col + static_cast<std::uint32_t>(at) % static_cast<std::uint32_t>(cols);
  } else {
    r = row + at / cols;
    c = col + at % cols;
  }
  const T* p = in + r * in_ld + c;
  auto read = [p](index_t o) {
    if constexpr (kFrameLast) return __ldcg(p + o);
    else return p[o];
  };
  const T centre = read(0);
  T acc;
  if constexpr (kNine)
    acc = stencil_point<T, true>(w, centre, read(-in_ld), read(in_ld), read(-1), read(1), read(-in_ld - 1),
                                 read(-in_ld + 1), read(in_ld - 1), read(in_ld + 1));
  else
    acc = stencil_point<T, false>(w, centre, read(-in_ld), read(in_ld), read(-1), read(1), T{}, T{}, T{}, T{});
  out[r * out_ld + c] = acc;
#pragma unroll
  for (int q = 0; q < CellPacks::kMax; ++q) {
    if (q >= packs.count) break;
    const index_t dr = r - packs.row[q], dc = c - packs.col[q];
    if (dr >= 0 && dr < packs.rows[q] && dc >= 0 && dc < packs.cols[q])
      static_cast<T*>(packs.to[q])[dr * packs.to_ld[q] + dc] = acc;
  }
  if (change) largest = std::max(largest, change_bits(acc, centre));
}

// Thin regions (a block's edge rows and columns, a few cells wide): one thread per cell, consecutive
// threads along a row and on to the next, so that every cell is in flight at once rather than
// marched down by a few lanes.
template <class T, bool kNine, class Tuning = Stencil2dTuning>
__global__ void __launch_bounds__(Tuning::kNarrowThreads)
    stencil_2d_cells_kernel(const T* __restrict__ in, index_t in_ld, T* __restrict__ out, index_t out_ld,
                            CellRegions regions, StencilWeights<T> w, T* max_change, CellPacks packs) {
  ChangeBits<T> largest = 0;
  const index_t cells = regions.cells();
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < cells; i += stride)
    stencil_cell<T, kNine>(in, in_ld, out, out_ld, regions, w, packs, i, max_change != nullptr, largest);
  if (max_change) {
    largest = warp_reduce(largest, [](ChangeBits<T> a, ChangeBits<T> b) { return a > b ? a : b; });
    if (lane_id() == 0 && largest != 0) atomicMax(reinterpret_cast<ChangeBits<T>*>(max_change), largest);
  }
}

// The frame of the frame-last sweep (stencil_2d_frame_last): the region's origin, its frame's cells,
// their copies, and the flags around them.
template <class T>
struct FrameLast {
  const T* in = nullptr;
  index_t in_ld = 0;
  T* out = nullptr;
  index_t out_ld = 0;
  index_t cells = 0;   // regions.cells(), which indexes its array at run time
  index_t chunks = 0;  // blocks of the launch that sweep kThreads cells of the frame each
  // Each such block's share of kFrameFlagStep, block 0's (with the remainder): a 64-bit division
  // in the kernel is a call.
  std::uint64_t share = 0, first_share = 0;
  CellRegions regions;
  CellPacks packs;
  FrameFlags flags;
};
// What the rows order (cell_rows_kernel) runs after its tiles: nothing, or the frame-last sweep
// (FrameLastSweep). takes(grid): whether a launch of that many thread blocks may run it.
struct NoFrameLast {
  bool takes(unsigned) const { return true; }
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

// The frame, after a thread block's share of the interior: the first `chunks` blocks take kThreads
// cells each (the frame-last launch has at least four times as many blocks), wait, thread 0
// polling, until every flag to wait for is at its value, sweep their cells, and add their share of
// kFrameFlagStep to each flag to set (block 0 the remainder), with release at system scope after
// the block's barrier: every store of the block is visible before its share.
template <class T, bool kNine, int kThreads>
__device__ __forceinline__ void sweep_frame_last(const FrameLast<T>& f, const StencilWeights<T>& w, bool change,
                                                 ChangeBits<T>& largest) {
  if (static_cast<index_t>(blockIdx.x) >= f.chunks) return;
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) {
#pragma unroll
    for (int k = 0; k < FrameFlags::kMax; ++k)
      if (k < f.flags.waits) {
        const std::uint64_t started = f.flags.limit.armed() ? global_time_ns() : 0;
        while (load_acquire_system(f.flags.wait[k]) < f.flags.wait_value) {
          check_wait_limit(f.flags.limit, f.flags.wait_peer[k], started);
          __nanosleep(100);
        }
      }
  }
  __syncthreads();
  const index_t i = static_cast<index_t>(blockIdx.x) * kThreads + tid;
  if (i < f.cells) stencil_cell<T, kNine, true>(f.in, f.in_ld, f.out, f.out_ld, f.regions, w, f.packs, i, change, largest);
  __syncthreads();
  if (tid == 0) {
    const std::uint64_t share = blockIdx.x == 0 ? f.first_share : f.share;
#pragma unroll
    for (int k = 0; k < FrameFlags::kMax; ++k)
      if (k < f.flags.sets) add_release_system(f.flags.set[k], share);
  }
}
#endif

// The frame-last sweep as what the rows pass (cell_rows_kernel) runs after its tiles: the frame
// with stencil_2d's weights, its residual folded into the body's where the body folds the change
// bits (StencilSweepChangeCell).
template <class T, bool kNine>
struct FrameLastSweep {
  FrameLast<T> frame;
  StencilWeights<T> w;
  // Whether a launch of `grid` thread blocks takes the frame: its cells lengthen the launch by the
  // blocks that sweep them, a quarter of the blocks at most (else a frame launched on its own fills
  // the interior's spread better).
  bool takes(unsigned grid) const { return frame.chunks <= static_cast<index_t>(grid) / 4; }
  template <int kThreads, class Fold>
  __device__ __forceinline__ void sweep([[maybe_unused]] Fold& folded) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (std::is_same_v<Fold, ChangeBits<T>>) {
      sweep_frame_last<T, kNine, kThreads>(frame, w, true, folded);
    } else {
      ChangeBits<T> none = 0;
      sweep_frame_last<T, kNine, kThreads>(frame, w, false, none);
    }
#endif
  }
};

// ---- the ring of rows filled by bulk copies (sm_90): a pass of 2-D cell bodies --------------------------

// Elements of a ring slot: the strip's row, with one 16-byte vector of halo on either side.
template <class T, class Tuning>
inline constexpr int kBulkStrip = Tuning::kWarps * kWarpThreads * Tuning::kVectorsPerLane * Vector<T>::kItems;
template <class T, class Tuning>
inline constexpr int kBulkSlot = kBulkStrip<T, Tuning> + 2 * Vector<T>::kItems;
template <class T, class Tuning>
inline constexpr std::size_t kBulkSharedBytes = std::size_t(Tuning::kDepth) * kBulkSlot<T, Tuning> * sizeof(T) +
                                                std::size_t(Tuning::kDepth) * sizeof(unsigned long long);

// Whether a 2-D cell body reads its cells' corners (a box; bodies that do not say are taken to):
// the ring's 8-byte cells then get the looser register bound (Stencil2dBulkTuning).
template <class Body>
constexpr bool rows_body_reads_corners() {
  if constexpr (requires { Body::kReadsCorners; }) return Body::kReadsCorners;
  else return true;
}
// Whether a 2-D cell body's value() may run for the cells just past the box's east edge, on
// whatever the ring holds there, its result unused (a body that reads only the tile and whose
// arithmetic cannot fault, as stencil_2d's cell): the rows order then computes every cell of a
// vector without a test. Bodies that do not say are not.
template <class Body>
constexpr bool rows_body_values_anywhere() {
  if constexpr (requires { Body::kValueAnywhere; }) return Body::kValueAnywhere;
  else return false;
}
template <class Body, class Tuning>
inline constexpr int kRowsMinBlocks = sizeof(typename Body::tile_type) == 8 && rows_body_reads_corners<Body>()
                                          ? Tuning::kMinBlocksPerSmNineDouble
                                          : Tuning::kMinBlocksPerSm;


// The rows order of the cell passes (device_cells.cuh, for_each_cell): a 2-D cell body of reach 1
// along both axes (TiledCellBody: value() reads the tile array through a pointer to the cell and a
// row stride) over the region of shape.rows x shape.cols cells from (i0, begin1, begin2), whose
// first cell in the tile array is `in` (on a 16-byte boundary, the rows keeping it), its cells 4 or
// 8 bytes. Each thread block walks down a strip of kBulkStrip columns (x0 = tile_x *
// kBulkStrip); thread 0 fills a ring of kDepth row slots, each with one bulk copy of the row's
// 16-byte vectors that lie in the readable columns -1 .. cols, and with cp.async of single elements
// for the rest of the columns the strip needs (x0 - 1 where x0 = 0, up to kV - 1 elements at the
// region's east edge); each slot's mbarrier completes when its row has landed. Thread t computes
// vectors t, t + kThreads, ... of the strip (a warp's reads of a slot are consecutive 16-byte
// vectors), reading each row once from the ring into registers, its west and east neighbours beside
// it in the slot; the body sees a cell's three rows as a 3 x (kV + 2) array in registers (row stride
// kV + 2), which the compiler keeps in registers once value() is inlined with the offsets constant.
// A barrier per row frees the slot just read, which thread 0 refills kDepth rows ahead (after a
// proxy fence: the reads were the generic proxy's, the copy is the async proxy's). The slot reads
// are volatile, so that the compiler never reads a slot again after the barrier in place of keeping
// the values. value() runs for the cells of the box only (unless the body's kValueAnywhere says it
// may run past the east edge). kVectorStore: the body's store_row(i0,
// i1) (where store(i0, i1, i2, v) writes [i2], rows evenly spaced) takes whole 16-byte vectors of
// value_type, of the size of tile_type, on the tile's boundaries; else each cell goes through
// store(). A FoldingCellBody folds its cells as in the tiled order.
// sm_90 only: the dispatch checks the kernel was compiled for it (the body is empty below).
template <class Body, class Tuning, class Last, bool kVectorStore>
__global__ void __launch_bounds__(Tuning::kWarps* kWarpThreads, kRowsMinBlocks<Body, Tuning>)
    cell_rows_kernel(const typename Body::tile_type* in, index_t i0, index_t begin1, index_t begin2, Stencil2dShape shape,
                     Body body, Last last) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using T = typename Body::tile_type;
  using V = typename Body::value_type;
  static_assert(!kVectorStore || sizeof(V) == sizeof(T), "whole vectors of results where they are the cells' size");
  static_assert(RowsCellBody<Body>, "the rows order: a 2-D cell body of reach 1 over cells of 4 or 8 bytes");
  constexpr bool kFold = FoldingCellBody<Body>;
  using Fold = typename FoldOf<Body>::type;
  constexpr int kV = Vector<T>::kItems;
  constexpr int kThreads = Tuning::kWarps * kWarpThreads;
  constexpr int kLaneVectors = Tuning::kVectorsPerLane;
  constexpr int kStrip = kBulkStrip<T, Tuning>;
  constexpr int kSlot = kBulkSlot<T, Tuning>;
  constexpr int kDepth = Tuning::kDepth;
  extern __shared__ __align__(16) unsigned char bulk_shared[];
  T* ring = reinterpret_cast<T*>(bulk_shared);
  auto* full = reinterpret_cast<unsigned long long*>(bulk_shared + std::size_t(kDepth) * kSlot * sizeof(T));
  const index_t in_ld = body.tile_stride1();
  // kVectorStore: the rows of results one stride apart (store_row's rows are evenly spaced).
  [[maybe_unused]] index_t out_ld = 0;
  if constexpr (kVectorStore) out_ld = body.store_row(i0, 1) - body.store_row(i0, 0);
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) {
    for (int s = 0; s < kDepth; ++s) mbarrier_init(shared_address(full + s), 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  unsigned fills = 0;  // rows copied into the ring before this tile: fill g uses slot g % kDepth, phase g / kDepth
  [[maybe_unused]] Fold folded{};
  for (index_t tile = blockIdx.x; tile < shape.tiles; tile += gridDim.x) {
    const index_t tile_y = tile / shape.tiles_x;
    const index_t tile_x = tile - tile_y * shape.tiles_x;
    const index_t row_begin = segment_begin(shape, tile_y);
    const int rows_here = static_cast<int>(segment_begin(shape, tile_y + 1) - row_begin);
    if (rows_here <= 0) continue;  // the same for the whole block
    const int loads = rows_here + 2;  // rows row_begin - 1 .. row_begin + rows_here
    const index_t x0 = tile_x * kStrip;
    // Slot element k holds column x0 - kV + k. The columns the strip needs: x0 - 1 .. last.
    const index_t last_column = std::min<index_t>(x0 + kStrip, shape.cols);
    // The bulk copy: the 16-byte vectors [lo, hi) inside the readable columns (-1 .. cols).
    const index_t lo = x0 >= kV ? x0 - kV : x0;
    const index_t hi = std::max(lo, std::min<index_t>(x0 + kStrip + kV, (shape.cols + 1) / kV * kV));
    const auto bulk_bytes = static_cast<unsigned>((hi - lo) * index_t(sizeof(T)));
    const bool west_single = x0 == 0;  // column -1
    const index_t east_single = std::max(hi, x0);  // columns east_single .. last_column, by single copies

    auto fill = [&](int k) {  // row row_begin - 1 + k into its slot (thread 0)
      const unsigned g = fills + static_cast<unsigned>(k);
      T* slot = ring + (g % kDepth) * kSlot;
      const unsigned bar = shared_address(full + g % kDepth);
      const T* row = in + (row_begin - 1 + k) * in_ld;
      bool singles = false;
      if (west_single) {
        copy_async<sizeof(T)>(slot + kV - 1, row - 1);
        singles = true;
      }
      for (index_t c = east_single; c <= last_column; ++c) {
        copy_async<sizeof(T)>(slot + (c - x0 + kV), row + c);
        singles = true;
      }
      if (singles) mbarrier_track_copies(bar);
      mbarrier_arrive_expect_tx(bar, bulk_bytes);
      if (bulk_bytes > 0) bulk_copy_to_shared(shared_address(slot + (lo - x0 + kV)), row + lo, bulk_bytes, bar);
    };
    if (tid == 0)
      for (int k = 0; k < kDepth && k < loads; ++k) fill(k);

    bool active[kLaneVectors];
#pragma unroll
    for (int j = 0; j < kLaneVectors; ++j) active[j] = x0 + index_t(tid + j * kThreads) * kV < shape.cols;
    RowNeighbourhood<T, kV> north[kLaneVectors], centre[kLaneVectors], south[kLaneVectors];
    [[maybe_unused]] V* out_row = nullptr;  // kVectorStore: the tile's first cell of the row computed next
    if constexpr (kVectorStore) out_row = body.store_row(i0, begin1 + row_begin) + begin2 + x0;
    for (int k = 0; k < loads; ++k) {
      const unsigned g = fills + static_cast<unsigned>(k);
      mbarrier_wait(shared_address(full + g % kDepth), (g / kDepth) & 1u);
      const T* slot = ring + (g % kDepth) * kSlot;
#pragma unroll
      for (int j = 0; j < kLaneVectors; ++j) {
        north[j] = centre[j];
        centre[j] = south[j];
        if (active[j]) {
          const unsigned at = shared_address(slot + kV + (tid + j * kThreads) * kV);
          load_shared_vector(south[j].item, at);
          load_shared(south[j].west, at - unsigned(sizeof(T)));
          load_shared(south[j].east, at + unsigned(kV * sizeof(T)));
        }
      }
      __syncthreads();  // every thread has read row k: its slot may be refilled
      if (tid == 0 && k + kDepth < loads) {
        fence_proxy_async_shared();
        fill(k + kDepth);
      }
      if (k >= 2) {
        const index_t i1 = begin1 + row_begin + (k - 2);
#pragma unroll
        for (int j = 0; j < kLaneVectors; ++j) {
          if (!active[j]) continue;
          const index_t c = x0 + index_t(tid + j * kThreads) * kV;
          // The three rows around the vector: cells[r][0] west, cells[r][1 + e] item e, cells[r][kV + 1] east.
          T cells[3][kV + 2];
          const auto put = [](T(&row)[kV + 2], const RowNeighbourhood<T, kV>& n) {
            row[0] = n.west;
#pragma unroll
            for (int e = 0; e < kV; ++e) row[1 + e] = n.item[e];
            row[kV + 1] = n.east;
          };
          put(cells[0], north[j]);
          put(cells[1], centre[j]);
          put(cells[2], south[j]);
          // value() only for cells of the box (past the east edge the body would read, or index
          // other arrays at, cells outside it, and the slot holds nothing defined there), unless
          // the body says its value() may run anywhere: fewer registers, no branch.
          const bool whole = c + kV <= shape.cols;
          V result[kV];
#pragma unroll
          for (int e = 0; e < kV; ++e) {
            if constexpr (rows_body_values_anywhere<Body>())
              result[e] = body.value(&cells[1][1 + e], 0, kV + 2, i0, i1, begin2 + c + e);
            else
              result[e] = whole || c + e < shape.cols ? body.value(&cells[1][1 + e], 0, kV + 2, i0, i1, begin2 + c + e) : V{};
          }
          if constexpr (kVectorStore) {
            V* dst = out_row + (tid + j * kThreads) * kV;
            if (whole) {
              store_global_vector(dst, result);
            } else {
#pragma unroll
              for (int e = 0; e < kV; ++e)
                if (c + e < shape.cols) dst[e] = result[e];
            }
          } else {
#pragma unroll
            for (int e = 0; e < kV; ++e)
              if (whole || c + e < shape.cols) body.store(i0, i1, begin2 + c + e, result[e]);
          }
          if constexpr (kFold) {
#pragma unroll
            for (int e = 0; e < kV; ++e)
              if (whole || c + e < shape.cols) folded = Body::combine(folded, body.fold(&cells[1][1 + e], result[e]));
          }
        }
        if constexpr (kVectorStore) out_row += out_ld;
      }
    }
    fills += static_cast<unsigned>(loads);
  }
  if constexpr (!std::is_same_v<Last, NoFrameLast>) last.template sweep<kThreads>(folded);
  if constexpr (kFold) {  // every thread of the block is here
    folded = warp_reduce(folded, [](Fold a, Fold b) { return Body::combine(a, b); });
    if (lane_id() == 0) body.fold_result(folded);
  }
#endif
}

// ---- convolve_1d -------------------------------------------------------------------------------------

// The weights of the kernel by lanes, centred: taps[kMaxRadius - radius + k] = weights[k], the rest
// unused (never multiplied: a zero times an infinity would make a NaN).
template <class T, int kMaxRadius>
struct CentredTaps {
  T tap[2 * kMaxRadius + 1];
};

// Outputs per thread of the convolution of wider kernels: odd, so that a warp's reads of its windows
// in shared memory (at a stride of kItems elements) fall on 32 different banks; and the taps a thread
// holds in registers at once.
template <class T, class Tuning>
inline constexpr int kConvolveItems = sizeof(T) > 4 ? Tuning::kItems8 : Tuning::kItems;
template <class T, class Tuning>
inline constexpr int kConvolveTaps = sizeof(T) > 4 ? Tuning::kTaps8 : Tuning::kTaps;

// Any radius, by register blocks: thread t of a block owns the kItems consecutive outputs from
// t kItems of the block's tile. The tile's inputs and up to kPassTaps weights at a time sit in shared
// memory (a kernel of more taps takes several passes over the tile, each a stage); the copies of the
// block's next stage (cp.async, two buffers) travel while it computes the current one. For each
// kTaps taps of a stage a thread loads the kItems + kTaps - 1 inputs they meet into registers and the
// taps as vectors, then issues kItems x kTaps fused multiply-adds from registers alone: one shared
// load for six or seven of them (13 x 16), where a tap at a time takes one for each. Each output takes
// its taps in order, k = 0 .. 2r, from -0 (so the first tap enters exactly), as the cpu backend does.
template <class T, class Tuning = Convolve1dTuning>
__global__ void __launch_bounds__(Tuning::kThreads, sizeof(T) > 4 ? Tuning::kMinBlocksPerSm8 : Tuning::kMinBlocksPerSm)
    convolve_1d_blocks_kernel(const T* __restrict__ in, index_t n, T* __restrict__ out, const T* __restrict__ weights,
                              index_t radius, index_t tiles) {
  constexpr int kItems = kConvolveItems<T, Tuning>;
  constexpr int kC = kConvolveTaps<T, Tuning>;
  constexpr int kTile = Tuning::kThreads * kItems;
  constexpr int kPass = Tuning::kPassTaps;
  constexpr int kV = Vector<T>::kItems;
  static_assert(kItems % 2 == 1, "an odd stride between the threads' windows: no bank conflicts");
  static_assert(kC % kV == 0 && kPass % kC == 0 && 4 % kV == 0, "the taps of a register block load as whole vectors");
  __shared__ alignas(16) T window[2][kTile + kPass + 2 * kV];
  __shared__ alignas(16) T taps_of_pass[2][kPass];
  const index_t taps = 2 * radius + 1;
  const int first = static_cast<int>(threadIdx.x) * kItems;

  // A stage: the block's tile from `start` (count outputs), its taps [k0, k0 + pass_taps). Output o
  // and weight k read input o + radius - k: the stage reads inputs [lo, hi) = [start + radius - k0 -
  // pass_taps + 1, start + count + radius - k0), all inside the readable [-radius, n + radius);
  // window[j] = in[lo - lead + j], lo - lead on a 16-byte boundary.
  struct Stage {
    index_t start = 0;
    index_t k0 = 0;
    int count = 0;
    int pass_taps = 0;
    int lead = 0;
    bool valid = false;
  };
  auto make_stage = [&](index_t tile, index_t k0) {
    Stage st;
    st.valid = tile < tiles;
    if (!st.valid) return st;
    st.start = tile * kTile;
    st.k0 = k0;
    st.count = static_cast<int>(std::min(index_t(kTile), n - st.start));
    st.pass_taps = static_cast<int>(std::min(index_t(kPass), taps - k0));
    const index_t lo = st.start + radius - k0 - st.pass_taps + 1;
    st.lead = static_cast<int>(reinterpret_cast<std::uintptr_t>(in + lo) % kVectorBytes / sizeof(T));
    return st;
  };
  // The stage after st: the tile's next pass, else the block's next tile from its first pass.
  auto next_stage = [&](const Stage& st) {
    return st.k0 + st.pass_taps < taps ? make_stage(st.start / kTile, st.k0 + st.pass_taps)
                                       : make_stage(st.start / kTile + gridDim.x, 0);
  };
  // Copies a stage's inputs and taps into buffer b and commits them as one group (an empty one for
  // no stage, so that every thread waits on the same count).
  auto issue = [&](const Stage& st, int b) {
    if (st.valid) {
      const T* src = in + (st.start + radius - st.k0 - st.pass_taps + 1 - st.lead);  // 16-byte aligned
      T* dst = window[b];
      // Inputs [lo, hi) of the window: whole vectors from the first boundary at or above lo to the
      // last at or below hi, single elements before and after them.
      const int lo = st.lead;
      const int hi = st.lead + st.count + st.pass_taps - 1;
      const int vector_lo = (lo + kV - 1) / kV;
      const int vector_hi = hi / kV;
      for (int v = vector_lo + static_cast<int>(threadIdx.x); v < vector_hi; v += Tuning::kThreads)
        copy_async<kVectorBytes>(dst + v * kV, src + v * kV);
      const int head = std::min(vector_lo * kV, hi) - lo;  // elements before the first whole vector
      const int tail_from = std::max(vector_hi * kV, vector_lo * kV);
      const int t = static_cast<int>(threadIdx.x);
      if (t < head) {
        copy_async<sizeof(T)>(dst + lo + t, src + lo + t);
      } else if (t - head < hi - tail_from) {
        const int j = tail_from + t - head;
        copy_async<sizeof(T)>(dst + j, src + j);
      }
      const T* w = weights + st.k0;
      for (int j = t; j < st.pass_taps; j += Tuning::kThreads) copy_async<sizeof(T)>(taps_of_pass[b] + j, w + j);
    }
    copy_async_commit();
  };

  T acc[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) acc[i] = T(-0.0);
  Stage st = make_stage(blockIdx.x, 0);
  issue(st, 0);
  for (int b = 0; st.valid; b ^= 1) {
    copy_async_wait<0>();
    // The stage's copies are visible to the block, and every thread has finished with buffer b ^ 1
    // (the last stage's arithmetic and results): the next stage's copies may overwrite it.
    __syncthreads();
    const Stage following = next_stage(st);
    issue(following, b ^ 1);
    const T* w_all = taps_of_pass[b];
    T* win = window[b];
    if (first < st.count) {
      // x0[-c + i]: the input output first + i meets at tap k0 + c.
      const T* x0 = win + st.lead + first + (st.pass_taps - 1);
      int c0 = 0;
      // kK taps from c0: x[m] = x0[m - (kK - 1) - c0], so tap k0 + c0 + c meets x[i - c + kK - 1].
      auto taps_block = [&](auto size) {
        constexpr int kK = decltype(size)::value;
        T x[kItems + kK - 1];
#pragma unroll
        for (int m = 0; m < kItems + kK - 1; ++m) x[m] = x0[m - (kK - 1) - c0];
        T w[kK];
        if constexpr (kK % kV == 0) {
#pragma unroll
          for (int v = 0; v < kK / kV; ++v) {
            const Vector<T> vec = *reinterpret_cast<const Vector<T>*>(w_all + c0 + v * kV);
#pragma unroll
            for (int k = 0; k < kV; ++k) w[v * kV + k] = vec.item[k];
          }
        } else {
#pragma unroll
          for (int c = 0; c < kK; ++c) w[c] = w_all[c0 + c];
        }
#pragma unroll
        for (int c = 0; c < kK; ++c)
#pragma unroll
          for (int i = 0; i < kItems; ++i) acc[i] = fma_rn(w[c], x[i - c + kK - 1], acc[i]);
        c0 += kK;
      };
      while (c0 + kC <= st.pass_taps) taps_block(std::integral_constant<int, kC>{});
      if constexpr (kC > 8) {
        if (c0 + 8 <= st.pass_taps) taps_block(std::integral_constant<int, 8>{});
      }
      if constexpr (kC > 4) {
        if (c0 + 4 <= st.pass_taps) taps_block(std::integral_constant<int, 4>{});
      }
      while (c0 < st.pass_taps) taps_block(std::integral_constant<int, 1>{});
    }
    if (st.k0 + st.pass_taps == taps) {  // the tile's last pass: its results leave through the window
      // win[shift + j] takes output start + j, so that the outputs from out's first 16-byte boundary
      // leave shared memory as whole vectors too.
      T* const tile_out = out + st.start;
      const int head = static_cast<int>(unaligned_head(tile_out, st.count));
      const int shift = (kV - head % kV) % kV;
      __syncthreads();  // every thread has finished reading the window
      if (first < st.count) {
#pragma unroll
        for (int i = 0; i < kItems; ++i) win[shift + first + i] = acc[i];
      }
      __syncthreads();
      const T* result = win + shift;
      const int t = static_cast<int>(threadIdx.x);
      const int vectors = (st.count - head) / kV;
      for (int v = t; v < vectors; v += Tuning::kThreads)
        store_vector(tile_out + head + v * kV, *reinterpret_cast<const Vector<T>*>(result + head + v * kV));
      const int tail_from = head + vectors * kV;
      if (t < head) tile_out[t] = result[t];
      else if (t - head < st.count - tail_from) tile_out[tail_from + t - head] = result[tail_from + t - head];
#pragma unroll
      for (int i = 0; i < kItems; ++i) acc[i] = T(-0.0);
    }
    st = following;
  }
  copy_async_wait<0>();
}

// Radius R <= kMaxRadius (a template parameter: only the taps of R are issued), by lanes: lane l of
// warp tile w owns outputs [first, first + kI), first = w kWarpTile + l kI - out_lead, so that out +
// first lies on a 16-byte boundary (out_lead: the elements before out's first boundary). It loads
// the kI inputs at in + first - shift, the 16-byte boundary at or below in + first, as whole
// vectors; takes the shift's remainder from the next lane; and the R inputs on either side from the
// lanes beside it by shuffles (the lanes at a warp's edges read theirs from memory, where the
// neighbouring warp's loads left them in L1/L2). Inputs outside the readable [-R, n + R) are never
// read (zeros stand in; no tap of an output in [0, n) meets them); outputs outside [0, n) are never
// written.
template <class T, class Tuning, int R>
__global__ void __launch_bounds__(Tuning::kThreads, sizeof(T) > 4 ? Tuning::kMinBlocksPerSm8 : Tuning::kMinBlocksPerSm)
    convolve_1d_lanes_kernel(const T* __restrict__ in, index_t n, T* __restrict__ out,
                             CentredTaps<T, Tuning::kMaxRadius> taps, int out_lead, int shift, index_t warp_tiles) {
  constexpr int kV = Vector<T>::kItems;
  constexpr int kLaneVectors = Tuning::kVectorsPerLane;
  constexpr int kI = kLaneVectors * kV;
  constexpr index_t kWarpTile = index_t(kWarpThreads) * kI;
  constexpr int kTap0 = Tuning::kMaxRadius - R;  // taps.tap[kTap0 + k] = weights[k]
  const int lane = lane_id();
  const index_t lo = -R;
  const index_t hi = n + R;
  const index_t warps = static_cast<index_t>(gridDim.x) * (Tuning::kThreads / kWarpThreads);

  // One warp tile; kGuarded: some of its inputs or outputs lie outside [lo, hi) or [0, n), so every
  // access is tested (the first and last tiles only).
  auto tile = [&](index_t first, auto guarded) {
    constexpr bool kGuarded = decltype(guarded)::value;
    auto read = [&](index_t p) { return !kGuarded || (p >= lo && p < hi) ? __ldg(in + p) : T(0); };
    const index_t base = first - shift;
    T raw[kI];
#pragma unroll
    for (int v = 0; v < kLaneVectors; ++v) {
      const index_t p = base + v * kV;
      if (!kGuarded || (p >= lo && p + kV <= hi)) {
        const Vector<T> vec = load_vector_readonly(in + p);
#pragma unroll
        for (int k = 0; k < kV; ++k) raw[v * kV + k] = vec.item[k];
      } else {
#pragma unroll
        for (int k = 0; k < kV; ++k) raw[v * kV + k] = read(p + k);
      }
    }
    // The lanes within kQ of a warp's edge read the inputs the shuffles cannot bring: edge[j] = input
    // first - R + j on the first kQ lanes, input first + kI + j on the last kQ (kQ = 1 unless the
    // radius reaches past the next lane, as for 8-byte elements beyond radius 4).
    constexpr int kQ = (R + kI - 1) / kI;
    T edge[R > 0 ? R : 1];
    if (lane < kQ || lane >= kWarpThreads - kQ) {
      const index_t from = lane < kQ ? first - R : first + kI;
#pragma unroll
      for (int j = 0; j < R; ++j) edge[j] = read(from + j);
    }
    // x[m] = input first - R + m; x[R + j] the lane's own inputs.
    T x[kI + 2 * R];
    if (shift == 0) {
#pragma unroll
      for (int j = 0; j < kI; ++j) x[R + j] = raw[j];
    } else {
      // next[k] = input base + kI + k, the first kV - 1 inputs of the next lane, which complete this
      // lane's kI from base + shift; lane 31 reads its own.
      T next[kV > 1 ? kV - 1 : 1];
#pragma unroll
      for (int k = 0; k < kV - 1; ++k) {
        const T from_next = shfl_down(raw[k], 1);
        next[k] = lane < kWarpThreads - 1 ? from_next : read(base + kI + k);
      }
      auto from = [&](int m) { return m < kI ? raw[m] : next[m - kI]; };  // input base + m
#pragma unroll
      for (int j = 0; j < kI; ++j) {
        T value = from(j + 1);
#pragma unroll
        for (int s = 2; s < kV; ++s) value = shift == s ? from(j + s) : value;
        x[R + j] = value;
      }
    }
#pragma unroll
    for (int d = 1; d <= R; ++d) {
      const int q = (d + kI - 1) / kI;  // input first - d is held by lane - q, input first + kI - 1 + d by lane + q
      const T west = shfl_up(x[R + q * kI - d], q);
      const T east = shfl_down(x[R + kI - 1 + d - q * kI], q);
      x[R - d] = lane >= q ? west : edge[R - d];
      x[R + kI - 1 + d] = lane + q < kWarpThreads ? east : edge[d - 1];
    }
    T result[kI];
#pragma unroll
    for (int i = 0; i < kI; ++i) {
      // Output first + i takes weights[k] * in[first + i + R - k] = weights[k] * x[i + 2R - k]. -0 + p
      // == p for every p: the first term enters exactly.
      T acc = T(-0.0);
#pragma unroll
      for (int k = 0; k <= 2 * R; ++k) acc = fma_rn(taps.tap[kTap0 + k], x[i + 2 * R - k], acc);
      result[i] = acc;
    }
    if (!kGuarded || (first >= 0 && first + kI <= n)) {
#pragma unroll
      for (int v = 0; v < kLaneVectors; ++v) {
        Vector<T> vec;
#pragma unroll
        for (int k = 0; k < kV; ++k) vec.item[k] = result[v * kV + k];
        store_vector(out + first + v * kV, vec);
      }
    } else {
#pragma unroll
      for (int j = 0; j < kI; ++j)
        if (first + j >= 0 && first + j < n) out[first + j] = result[j];
    }
  };

  for (index_t w = (static_cast<index_t>(blockIdx.x) * Tuning::kThreads + threadIdx.x) / kWarpThreads; w < warp_tiles;
       w += warps) {
    const index_t warp_first = w * kWarpTile - out_lead;
    const index_t first = warp_first + static_cast<index_t>(lane) * kI;
    // The tile reads inputs [warp_first - shift - R, warp_first + kWarpTile + kV + R) at most and
    // writes outputs [warp_first, warp_first + kWarpTile).
    const bool inside = warp_first - shift - R >= lo && warp_first + kWarpTile + kV + R <= hi && warp_first >= 0 &&
                        warp_first + kWarpTile <= n;
    if (inside) {
      tile(first, std::false_type{});
    } else {
      tile(first, std::true_type{});
    }
  }
}

// ---- pack / unpack of rectangles ---------------------------------------------------------------------

// Rectangles of words (the elements, or pieces of them of the widest size that divides the element
// and every address), with the place of each one's packed cells.
struct RectangleBatch {
  Rectangle rectangle[PackTuning::kMaxRectangles];
  void* packed[PackTuning::kMaxRectangles];  // each rectangle's packed cells
};

template <class Word, bool kUnpack>
__global__ void __launch_bounds__(PackTuning::kThreads) pack_rectangles_kernel(Word* base, RectangleBatch batch) {
  const Rectangle rect = batch.rectangle[blockIdx.y];
  Word* slot = static_cast<Word*>(batch.packed[blockIdx.y]);
  const index_t count = rect.planes * rect.rows * rect.cols;
  for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += static_cast<index_t>(gridDim.x) * blockDim.x) {
    const index_t row = e / rect.cols;  // of all the planes' rows
    const index_t p = rect.planes == 1 ? 0 : row / rect.rows;
    Word* element = base + rect.offset + p * rect.plane_stride + (row - p * rect.rows) * rect.ld + (e - row * rect.cols);
    if constexpr (kUnpack) *element = slot[e];
    else slot[e] = *element;
  }
}

}  // namespace tessera::kernels::cuda::detail
