// CUDA stencils (the contract is in tessera/kernels/stencil.hpp): agents and dispatch of
//
//   stencil_2d   the 5- and 9-point sweep, by register-blocked column marching: each lane owns one
//                16-byte vector of a row (4 floats, 2 doubles) and walks down a segment of rows,
//                keeping the north, centre and south vectors in registers, so that every row is read
//                from memory once per segment; the neighbours in x come from the next lanes by
//                shuffles (the two lanes at a warp's edges load one element each). Rows are loaded
//                kPrefetchRows ahead of the one computed. Aligned regions on sm_90 take the same
//                march with the rows in a ring of shared-memory slots instead: one thread of a block
//                fills each slot with a bulk copy of the block's strip of the row and its halo, so
//                kDepth rows per block are in flight at no register cost. The strips of columns are
//                cut into segments of near-equal length that make one wave of the resident thread
//                blocks, walked in row-major order, so that the blocks resident at one time share
//                the rows at their segments' edges through L2.
//   convolve_1d  radius <= 8, by lanes: each lane owns two 16-byte vectors of consecutive outputs,
//                loads its inputs as whole aligned vectors (realigned to the outputs by one shuffle
//                where the input and output are off by part of a vector) and takes the radius's
//                inputs on either side from the neighbouring lanes by shuffles; one kernel per
//                radius, the weights in its parameters, so that only that radius's taps are issued.
//                Wider kernels: tiles of kTile outputs through shared memory, each thread computing
//                kItems consecutive outputs (an odd kItems puts a warp's reads on 32 banks), the
//                weights from global memory in chunks.
//   pack / unpack of rectangles: one launch for up to kMaxRectangles rectangles (grid y = rectangle),
//                each a stack of planes or one plane.
//
// Every product and sum is rounded on its own (__fmul_rn / __fadd_rn, which nvcc never contracts into
// a fused multiply-add), in the order of the contract, so results match the cpu backend bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/async_copy.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/tuning/stencil.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera::kernels::cuda::detail {

// ---- rounding without contraction ----------------------------------------------------------------

template <class T>
__device__ __forceinline__ T mul_rn(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return __fmul_rn(a, b);
  else if constexpr (std::is_same_v<T, double>) return __dmul_rn(a, b);
  else return a * b;
}

template <class T>
__device__ __forceinline__ T add_rn(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return __fadd_rn(a, b);
  else if constexpr (std::is_same_v<T, double>) return __dadd_rn(a, b);
  else return a + b;
}

// |a - b| as the integer of its bits (see cpu/stencil.hpp): ordered as the values, a NaN above all.
template <class T>
using ChangeBits = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;

template <class T>
__device__ __forceinline__ ChangeBits<T> change_bits(T a, T b) {
  const T d = a - b;
  ChangeBits<T> bits;
  __builtin_memcpy(&bits, &d, sizeof bits);
  return bits & ~(ChangeBits<T>(1) << (8 * sizeof(T) - 1));
}

// ---- stencil_2d --------------------------------------------------------------------------------------

// One lane's kItems consecutive elements of a row, and on the lanes at the warp's edges the element
// beside them (lane 0: west of item[0]; lane 31: east of item[kItems - 1]).
template <class T, int kItems>
struct RowSlice {
  T item[kItems];
  T edge;
};

// The same with the neighbours in x resolved: west of item[0] and east of item[kItems - 1].
template <class T, int kItems>
struct RowNeighbourhood {
  T item[kItems];
  T west;
  T east;
};

// Where a lane's slice lies in a row, worked out once per tile (the same for every row): which of
// its elements may be read (columns -1 .. cols) and written (0 .. cols - 1), and where the element
// beside it lies that the warp's edge lanes read. Loads and stores then take a pointer to the
// slice's first element in the row (x0, relative to the region, is negative in the first slice when
// the region does not start on a 16-byte boundary).
template <int kItems>
struct LaneColumns {
  bool whole_load = false;   // every element readable: whole vectors
  bool whole_store = false;  // every element written: whole vectors
  bool edge_readable = false;
  int edge = 0;              // the element beside the slice, relative to its first: -1 or kItems
  unsigned readable = 0;     // bit k: element k readable
  unsigned written = 0;      // bit k: element k inside the region

  __device__ __forceinline__ LaneColumns(index_t x0, index_t cols, int lane) {
    whole_load = x0 >= -1 && x0 + kItems <= cols + 1;
    whole_store = x0 >= 0 && x0 + kItems <= cols;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      if (x0 + k >= -1 && x0 + k <= cols) readable |= 1u << k;
      if (x0 + k >= 0 && x0 + k < cols) written |= 1u << k;
    }
    edge = lane == 0 ? -1 : kItems;
    edge_readable = (lane == 0 || lane == kWarpThreads - 1) && x0 + edge >= -1 && x0 + edge <= cols;
  }
};

// The lane's slice of a row, from a pointer to its first element.
template <class T, int kItems, bool kVector>
__device__ __forceinline__ RowSlice<T, kItems> load_slice(const T* slice, const LaneColumns<kItems>& lane) {
  RowSlice<T, kItems> s;
  if (kVector && lane.whole_load) {
    if constexpr (kVector) {
      constexpr int kV = Vector<T>::kItems;
#pragma unroll
      for (int v = 0; v < kItems / kV; ++v) {
        const Vector<T> loaded = load_vector_readonly(slice + v * kV);
#pragma unroll
        for (int k = 0; k < kV; ++k) s.item[v * kV + k] = loaded.item[k];
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) s.item[k] = lane.readable >> k & 1u ? __ldg(slice + k) : T(0);
  }
  s.edge = lane.edge_readable ? __ldg(slice + lane.edge) : T(0);
  return s;
}

// Every lane of the warp calls this (shuffles).
template <class T, int kItems>
__device__ __forceinline__ RowNeighbourhood<T, kItems> resolve(const RowSlice<T, kItems>& s, int lane) {
  RowNeighbourhood<T, kItems> n;
#pragma unroll
  for (int k = 0; k < kItems; ++k) n.item[k] = s.item[k];
  const T from_west = shfl_up(s.item[kItems - 1], 1);
  const T from_east = shfl_down(s.item[0], 1);
  n.west = lane == 0 ? s.edge : from_west;
  n.east = lane == kWarpThreads - 1 ? s.edge : from_east;
  return n;
}

template <class T, int kItems>
__device__ __forceinline__ T west_of(const RowNeighbourhood<T, kItems>& r, int k) {
  return k == 0 ? r.west : r.item[k - 1];
}
template <class T, int kItems>
__device__ __forceinline__ T east_of(const RowNeighbourhood<T, kItems>& r, int k) {
  return k == kItems - 1 ? r.east : r.item[k + 1];
}

// One cell: each product and sum rounded on its own, in the order of the weights (the cpu
// backend's order); the corners for nine_point only. Every sweep computes its cells here.
template <class T, bool kNine>
__device__ __forceinline__ T stencil_point(const StencilWeights<T>& w, T centre, T north, T south, T west, T east,
                                           T north_west, T north_east, T south_west, T south_east) {
  T acc = mul_rn(w.centre, centre);
  acc = add_rn(acc, mul_rn(w.north, north));
  acc = add_rn(acc, mul_rn(w.south, south));
  acc = add_rn(acc, mul_rn(w.west, west));
  acc = add_rn(acc, mul_rn(w.east, east));
  if constexpr (kNine) {
    acc = add_rn(acc, mul_rn(w.north_west, north_west));
    acc = add_rn(acc, mul_rn(w.north_east, north_east));
    acc = add_rn(acc, mul_rn(w.south_west, south_west));
    acc = add_rn(acc, mul_rn(w.south_east, south_east));
  }
  return acc;
}

template <class T, int kItems, bool kNine>
__device__ __forceinline__ void apply_stencil(const RowNeighbourhood<T, kItems>& n, const RowNeighbourhood<T, kItems>& c,
                                              const RowNeighbourhood<T, kItems>& s, const StencilWeights<T>& w,
                                              T (&result)[kItems]) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if constexpr (kNine)
      result[k] = stencil_point<T, true>(w, c.item[k], n.item[k], s.item[k], west_of(c, k), east_of(c, k), west_of(n, k),
                                         east_of(n, k), west_of(s, k), east_of(s, k));
    else
      result[k] = stencil_point<T, false>(w, c.item[k], n.item[k], s.item[k], west_of(c, k), east_of(c, k), T{}, T{}, T{}, T{});
  }
}

template <class T, int kItems, bool kVector>
__device__ __forceinline__ void store_slice(T* slice, const LaneColumns<kItems>& lane, const T (&result)[kItems]) {
  if (kVector && lane.whole_store) {
    if constexpr (kVector) {
      constexpr int kV = Vector<T>::kItems;
#pragma unroll
      for (int v = 0; v < kItems / kV; ++v) {
        Vector<T> out;
#pragma unroll
        for (int k = 0; k < kV; ++k) out.item[k] = result[v * kV + k];
        store_vector(slice + v * kV, out);
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (lane.written >> k & 1u) slice[k] = result[k];
  }
}

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
struct NoFrameLast {};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ std::uint64_t load_acquire_system(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void add_release_system(std::uint64_t* p, std::uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}
#endif

__device__ __forceinline__ std::uint64_t global_time_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// A wait under a limit (queue.hpp, DeviceWaitLimit) that has expired or been aborted: names the
// peer in host memory and traps (the launch fails; the host's next CUDA call reports it).
__device__ __forceinline__ void check_wait_limit(const DeviceWaitLimit& limit, int peer, std::uint64_t started) {
  if (!limit.armed()) return;
  const bool aborted = limit.abort != nullptr && *limit.abort != 0;
  if (aborted || (limit.timeout_ns > 0 && global_time_ns() - started > limit.timeout_ns)) {
    if (limit.lost_rank) {
      *reinterpret_cast<volatile std::int32_t*>(limit.lost_rank) = peer;
      __threadfence_system();
    }
    __trap();
  }
}

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

template <class T, class Tuning = Stencil2dTuning>
void launch_stencil_2d_cells(const T* in, index_t in_ld, T* out, index_t out_ld, const CellRegions& regions,
                             const StencilWeights<T>& w, T* max_change, StreamHandle stream,
                             const CellPacks& packs = {}) {
  if (regions.cells() == 0) return;
  constexpr int kThreads = Tuning::kNarrowThreads;
  auto launch = [&]<auto kKernel>() {
    const index_t resident = static_cast<index_t>(current_device_info().sm_count) * blocks_per_sm<kKernel>(kThreads);
    const auto grid = static_cast<unsigned>(std::clamp<index_t>(ceil_div<index_t>(regions.cells(), kThreads), 1, resident));
    kKernel<<<grid, kThreads, 0, to_cuda(stream)>>>(in, in_ld, out, out_ld, regions, w, max_change, packs);
    TESSERA_CUDA_CHECK_LAUNCH();
  };
  if (w.shape == StencilShape::nine_point) launch.template operator()<stencil_2d_cells_kernel<T, true, Tuning>>();
  else launch.template operator()<stencil_2d_cells_kernel<T, false, Tuning>>();
}

// The frame's parts as cell regions, and its copies (at most CellPacks::kMax) as packs.
inline CellRegions frame_regions(const StencilFrame& frame, index_t rows, index_t cols) {
  CellRegions regions;
  for (const StencilFrame::Part& p : frame.parts(rows, cols)) regions.add(p.row, p.col, p.rows, p.cols);
  return regions;
}
template <class T>
CellPacks frame_packs(std::span<const FrameCopy<T>> copies, index_t out_ld) {
  CellPacks packs;
  for (const FrameCopy<T>& copy : copies) {
    const Rectangle& r = copy.from;
    if (r.size() == 0) continue;
    packs.row[packs.count] = r.offset / out_ld;
    packs.col[packs.count] = r.offset % out_ld;
    packs.rows[packs.count] = r.rows;
    packs.cols[packs.count] = r.cols;
    packs.to[packs.count] = copy.to;
    packs.to_ld[packs.count] = copy.to_ld;
    ++packs.count;
  }
  return packs;
}

// The frame of a region (StencilFrame::parts), all its parts in one launch, writing the cells of
// each copy (at most CellPacks::kMax, offsets >= 0 with ld out_ld) to its destination too.
template <class T, class Tuning = Stencil2dTuning>
void stencil_2d_frame(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                      const StencilFrame& frame, const StencilWeights<T>& w, T* max_change,
                      std::span<const FrameCopy<T>> copies, StreamHandle stream) {
  launch_stencil_2d_cells<T, Tuning>(in, in_ld, out, out_ld, frame_regions(frame, rows, cols), w, max_change, stream,
                                     frame_packs(copies, out_ld));
}

// ---- the sweep through a ring of rows filled by bulk copies (sm_90) ------------------------------------

// The mbarrier / bulk-copy instructions the ring uses (shared_address, copy_async: async_copy.cuh).

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Waits until the phase of the given parity has completed.
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// bytes (a multiple of 16) from global src to shared dst (both 16-byte aligned), counted on bar.
__device__ __forceinline__ void bulk_copy_to_shared(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// Makes bar's phase wait for this thread's cp.async copies (copy_async) issued so far.
__device__ __forceinline__ void mbarrier_track_copies(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Orders this thread's (and, after a barrier, the block's) generic-proxy accesses to shared memory
// before the bulk copies it issues next.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Loads from a ring slot that the compiler may neither repeat nor move: a slot's contents change
// under the bulk copies, which it does not see.
__device__ __forceinline__ void load_shared(float& v, unsigned a) {
  asm volatile("ld.volatile.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(a) : "memory");
}
__device__ __forceinline__ void load_shared(double& v, unsigned a) {
  asm volatile("ld.volatile.shared.f64 %0, [%1];\n" : "=d"(v) : "r"(a) : "memory");
}
__device__ __forceinline__ void load_shared_vector(float (&v)[4], unsigned a) {
  asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
               : "r"(a)
               : "memory");
}
__device__ __forceinline__ void load_shared_vector(double (&v)[2], unsigned a) {
  asm volatile("ld.volatile.shared.v2.f64 {%0, %1}, [%2];\n" : "=d"(v[0]), "=d"(v[1]) : "r"(a) : "memory");
}
#endif

// Elements of a ring slot: the strip's row, with one 16-byte vector of halo on either side.
template <class T, class Tuning>
inline constexpr int kBulkStrip = Tuning::kWarps * kWarpThreads * Tuning::kVectorsPerLane * Vector<T>::kItems;
template <class T, class Tuning>
inline constexpr int kBulkSlot = kBulkStrip<T, Tuning> + 2 * Vector<T>::kItems;
template <class T, class Tuning>
inline constexpr std::size_t kBulkSharedBytes = std::size_t(Tuning::kDepth) * kBulkSlot<T, Tuning> * sizeof(T) +
                                                std::size_t(Tuning::kDepth) * sizeof(unsigned long long);

// The column march with the rows in shared memory. Each thread block walks down a strip of
// kBulkStrip columns (x0 = tile_x * kBulkStrip, on a 16-byte boundary: in and out are aligned at
// column 0 and their rows keep the boundary); thread 0 fills a ring of kDepth row slots, each
// with one bulk copy of the row's 16-byte vectors that lie in the readable columns -1 .. cols, and
// with cp.async of single elements for the rest of the columns the strip needs (x0 - 1 where
// x0 = 0, up to kV - 1 elements at the region's east edge); each slot's mbarrier completes when
// its row has landed. Thread t computes vectors t, t + kThreads, ... of the strip (a warp's reads
// of a slot are consecutive 16-byte vectors), reading each row once from the ring into registers,
// its west and east neighbours beside it in the slot. A barrier per row frees the slot just read,
// which thread 0 refills kDepth rows ahead (after a proxy fence: the reads were the generic
// proxy's, the copy is the async proxy's). The slot reads are volatile, so that the compiler never
// reads a slot again after the barrier in place of keeping the values. sm_90 only: the dispatch checks the kernel was
// compiled for it (the body is empty below).
template <class T, bool kNine, class Tuning = Stencil2dBulkTuning, bool kFrameLast = false>
__global__ void __launch_bounds__(Tuning::kWarps* kWarpThreads,
                                  sizeof(T) == 8 && kNine ? Tuning::kMinBlocksPerSmNineDouble : Tuning::kMinBlocksPerSm)
    stencil_2d_bulk_kernel(const T* __restrict__ in, index_t in_ld, T* __restrict__ out, index_t out_ld,
                           Stencil2dShape shape, StencilWeights<T> w, T* max_change,
                           std::conditional_t<kFrameLast, FrameLast<T>, NoFrameLast> last) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "single elements are copied by cp.async of 4 or 8 bytes");
  constexpr int kV = Vector<T>::kItems;
  constexpr int kThreads = Tuning::kWarps * kWarpThreads;
  constexpr int kLaneVectors = Tuning::kVectorsPerLane;
  constexpr int kStrip = kBulkStrip<T, Tuning>;
  constexpr int kSlot = kBulkSlot<T, Tuning>;
  constexpr int kDepth = Tuning::kDepth;
  extern __shared__ __align__(16) unsigned char bulk_shared[];
  T* ring = reinterpret_cast<T*>(bulk_shared);
  auto* full = reinterpret_cast<unsigned long long*>(bulk_shared + std::size_t(kDepth) * kSlot * sizeof(T));
  const int tid = static_cast<int>(threadIdx.x);
  if (tid == 0) {
    for (int s = 0; s < kDepth; ++s) mbarrier_init(shared_address(full + s), 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  unsigned fills = 0;  // rows copied into the ring before this tile: fill g uses slot g % kDepth, phase g / kDepth
  ChangeBits<T> largest = 0;
  for (index_t tile = blockIdx.x; tile < shape.tiles; tile += gridDim.x) {
    const index_t tile_y = tile / shape.tiles_x;
    const index_t tile_x = tile - tile_y * shape.tiles_x;
    const index_t row_begin = segment_begin(shape, tile_y);
    const int rows_here = static_cast<int>(segment_begin(shape, tile_y + 1) - row_begin);
    if (rows_here <= 0) continue;  // the same for the whole block
    const int loads = rows_here + 2;  // rows row_begin - 1 .. row_begin + rows_here
    const index_t x0 = tile_x * kStrip;
    // Slot element k holds column x0 - kV + k. The columns the strip needs: x0 - 1 .. last.
    const index_t last = std::min<index_t>(x0 + kStrip, shape.cols);
    // The bulk copy: the 16-byte vectors [lo, hi) inside the readable columns (-1 .. cols).
    const index_t lo = x0 >= kV ? x0 - kV : x0;
    const index_t hi = std::max(lo, std::min<index_t>(x0 + kStrip + kV, (shape.cols + 1) / kV * kV));
    const auto bulk_bytes = static_cast<unsigned>((hi - lo) * index_t(sizeof(T)));
    const bool west_single = x0 == 0;  // column -1
    const index_t east_single = std::max(hi, x0);  // columns east_single .. last, by single copies

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
      for (index_t c = east_single; c <= last; ++c) {
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
    T* out_row = out + row_begin * out_ld + x0;
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
#pragma unroll
        for (int j = 0; j < kLaneVectors; ++j) {
          if (!active[j]) continue;
          const index_t c = x0 + index_t(tid + j * kThreads) * kV;
          T result[kV];
          apply_stencil<T, kV, kNine>(north[j], centre[j], south[j], w, result);
          T* dst = out_row + (tid + j * kThreads) * kV;
          if (c + kV <= shape.cols) {
            Vector<T> v;
#pragma unroll
            for (int e = 0; e < kV; ++e) v.item[e] = result[e];
            store_vector(dst, v);
          } else {
#pragma unroll
            for (int e = 0; e < kV; ++e)
              if (c + e < shape.cols) dst[e] = result[e];
          }
          if (max_change) {
#pragma unroll
            for (int e = 0; e < kV; ++e)
              if (c + e < shape.cols) largest = std::max(largest, change_bits(result[e], centre[j].item[e]));
          }
        }
        out_row += out_ld;
      }
    }
    fills += static_cast<unsigned>(loads);
  }
  if constexpr (kFrameLast) sweep_frame_last<T, kNine, kThreads>(last, w, max_change != nullptr, largest);
  if (max_change) {
    largest = warp_reduce(largest, [](ChangeBits<T> a, ChangeBits<T> b) { return a > b ? a : b; });
    if (lane_id() == 0 && largest != 0) atomicMax(reinterpret_cast<ChangeBits<T>*>(max_change), largest);
  }
#endif
}

// Whether the bulk kernel runs on the current device: its code there was compiled for sm_90 or
// later (not an sm_80 image, nor PTX of an earlier architecture compiled at load time). Once per
// device; also lifts the kernel's dynamic shared memory limit there.
template <class T, bool kNine, class Tuning, bool kFrameLast = false>
bool bulk_sweep_available() {
  constexpr auto kernel = stencil_2d_bulk_kernel<T, kNine, Tuning, kFrameLast>;
  constexpr int kMaxDevices = 64;
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<bool, kMaxDevices> available{};
  const DeviceInfo& info = current_device_info();
  std::call_once(once[info.ordinal], [&] {
    cudaFuncAttributes attributes{};
    TESSERA_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    const bool fits = kBulkSharedBytes<T, Tuning> <= static_cast<std::size_t>(info.max_smem_optin);
    available[info.ordinal] = fits && attributes.ptxVersion >= 90 && attributes.binaryVersion >= 90;
    if (available[info.ordinal])
      TESSERA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(kBulkSharedBytes<T, Tuning>)));
  });
  return available[info.ordinal];
}

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

// The bulk kernel's tiles and grid: one wave, every thread block resident at once (the frame-last
// sweep's blocks wait for flags only other devices set, never for each other).
template <class T, bool kNine, class Tuning, bool kFrameLast = false>
Stencil2dShape bulk_shape(index_t rows, index_t cols, unsigned* grid) {
  constexpr auto kernel = stencil_2d_bulk_kernel<T, kNine, Tuning, kFrameLast>;
  constexpr int kThreads = Tuning::kWarps * kWarpThreads;
  const index_t resident =
      static_cast<index_t>(current_device_info().sm_count) * blocks_per_sm<kernel>(kThreads, kBulkSharedBytes<T, Tuning>);
  const Stencil2dShape shape = stencil_2d_shape<T, true, Tuning>(rows, cols, 0, resident);
  *grid = static_cast<unsigned>(std::min<index_t>(shape.tiles, resident));
  return shape;
}

// The bulk kernel on an aligned region (in and out on 16-byte boundaries at column 0, rows keeping
// them); the caller has checked bulk_sweep_available.
template <class T, bool kNine, class Tuning, bool kFrameLast = false>
void launch_stencil_2d_bulk(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                            const StencilWeights<T>& w, T* max_change, StreamHandle stream,
                            const std::conditional_t<kFrameLast, FrameLast<T>, NoFrameLast>& last = {}) {
  constexpr auto kernel = stencil_2d_bulk_kernel<T, kNine, Tuning, kFrameLast>;
  constexpr int kThreads = Tuning::kWarps * kWarpThreads;
  constexpr std::size_t kShared = kBulkSharedBytes<T, Tuning>;
  unsigned grid = 0;
  const Stencil2dShape shape = bulk_shape<T, kNine, Tuning, kFrameLast>(rows, cols, &grid);
  kernel<<<grid, kThreads, kShared, to_cuda(stream)>>>(in, in_ld, out, out_ld, shape, w, max_change, last);
  TESSERA_CUDA_CHECK_LAUNCH();
}

template <class T, class Tuning = Stencil2dTuning>
void stencil_2d(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                const StencilWeights<T>& w, T* max_change, StreamHandle stream) {
  if (rows <= 0 || cols <= 0) return;
  static_assert(kVectorizable<T>, "stencil_2d: element types of 1, 2, 4, 8 or 16 bytes");
  constexpr int kVectorItems = Vector<T>::kItems;
  constexpr index_t kVectorBytesT = kVectorBytes;
  const index_t in_shift = static_cast<index_t>(reinterpret_cast<std::uintptr_t>(in) % kVectorBytesT) / sizeof(T);
  const index_t out_shift = static_cast<index_t>(reinterpret_cast<std::uintptr_t>(out) % kVectorBytesT) / sizeof(T);
  // 16-byte slices where the input and output rows reach a 16-byte boundary at the same column.
  const bool vector = in_shift == out_shift && in_ld % kVectorItems == 0 && out_ld % kVectorItems == 0;
  constexpr int kThreads = Tuning::kWarps * kWarpThreads;
  auto launch = [&]<auto kKernel, bool kVector>() {
    const index_t resident = static_cast<index_t>(current_device_info().sm_count) * blocks_per_sm<kKernel>(kThreads);
    const Stencil2dShape shape = stencil_2d_shape<T, kVector, Tuning>(rows, cols, kVector ? in_shift : 0, resident);
    const auto grid = static_cast<unsigned>(std::min<index_t>(shape.tiles, resident));
    kKernel<<<grid, kThreads, 0, to_cuda(stream)>>>(in, in_ld, out, out_ld, shape, w, max_change);
    TESSERA_CUDA_CHECK_LAUNCH();
  };
  const bool nine = w.shape == StencilShape::nine_point;
  if (cols <= Tuning::kNarrowCols) {
    CellRegions whole;
    whole.add(0, 0, rows, cols);
    return launch_stencil_2d_cells<T, Tuning>(in, in_ld, out, out_ld, whole, w, max_change, stream);
  }
  if constexpr ((sizeof(T) == 4 || sizeof(T) == 8) && Tuning::kBulk) {
    // The ring of rows filled by bulk copies: aligned regions on sm_90, 5- and 9-point sweeps (the
    // 9-point sweep of doubles with a looser register bound: kMinBlocksPerSmNineDouble).
    using Bulk = Stencil2dBulkTuning;
    if (vector && in_shift == 0) {
      if (!nine && bulk_sweep_available<T, false, Bulk>())
        return launch_stencil_2d_bulk<T, false, Bulk>(in, in_ld, out, out_ld, rows, cols, w, max_change, stream);
      if (nine && bulk_sweep_available<T, true, Bulk>())
        return launch_stencil_2d_bulk<T, true, Bulk>(in, in_ld, out, out_ld, rows, cols, w, max_change, stream);
    }
  }
  if (nine && vector) launch.template operator()<stencil_2d_kernel<T, true, true, Tuning>, true>();
  else if (nine) launch.template operator()<stencil_2d_kernel<T, true, false, Tuning>, false>();
  else if (vector) launch.template operator()<stencil_2d_kernel<T, false, true, Tuning>, true>();
  else launch.template operator()<stencil_2d_kernel<T, false, false, Tuning>, false>();
}

// Whether a thread block of the frame launched on its own (the cells kernel) fits on an SM beside as
// many blocks of the interior's bulk sweep as the SM holds: registers (allocated 8 to a thread)
// and threads (it takes no shared memory). Once per device; true where the bulk sweep is not
// available (the interior's other sweeps leave room).
template <class T, bool kNine, class Tuning = Stencil2dTuning>
bool frame_fits_beside_interior() {
  if (!bulk_sweep_available<T, kNine, Stencil2dBulkTuning>()) return true;
  using Bulk = Stencil2dBulkTuning;
  constexpr auto bulk = stencil_2d_bulk_kernel<T, kNine, Bulk>;
  constexpr auto cells = stencil_2d_cells_kernel<T, kNine, Tuning>;
  constexpr int kBulkThreads = Bulk::kWarps * kWarpThreads;
  constexpr int kMaxDevices = 64;
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<bool, kMaxDevices> fits{};
  const DeviceInfo& info = current_device_info();
  std::call_once(once[info.ordinal], [&] {
    cudaFuncAttributes bulk_attributes{}, cells_attributes{};
    TESSERA_CUDA_CHECK(cudaFuncGetAttributes(&bulk_attributes, bulk));
    TESSERA_CUDA_CHECK(cudaFuncGetAttributes(&cells_attributes, cells));
    int registers = 0, threads = 0;
    TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&registers, cudaDevAttrMaxRegistersPerMultiprocessor, info.ordinal));
    TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, info.ordinal));
    const int blocks = blocks_per_sm<bulk>(kBulkThreads, kBulkSharedBytes<T, Bulk>);
    auto block_registers = [](int per_thread, int block_threads) { return (per_thread + 7) / 8 * 8 * block_threads; };
    fits[info.ordinal] =
        registers - blocks * block_registers(bulk_attributes.numRegs, kBulkThreads) >=
            block_registers(cells_attributes.numRegs, Tuning::kNarrowThreads) &&
        threads - blocks * kBulkThreads >= Tuning::kNarrowThreads;
  });
  return fits[info.ordinal];
}

// The interior by the bulk kernel with the frame after it in the same launch
// (kernels::stencil_2d_frame_last); false, and nothing queued, where the interior does not take
// the bulk sweep (not sm_90, not aligned, no wider than kNarrowCols), the frame has no cells, more
// than a quarter of the launch's blocks would take them, or it has more copies or flags than one
// launch holds.
template <class T, class Tuning = Stencil2dTuning>
bool stencil_2d_frame_last(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                           const StencilFrame& frame, const StencilWeights<T>& w, T* max_change,
                           std::span<const FrameCopy<T>> copies, const FrameFlags& flags, StreamHandle stream) {
  using Bulk = Stencil2dBulkTuning;
  if constexpr (sizeof(T) != 4 && sizeof(T) != 8) {
    return false;
  } else {
    const index_t interior_rows = rows - frame.top - frame.bottom, interior_cols = cols - frame.left - frame.right;
    if (interior_rows <= 0 || interior_cols <= Tuning::kNarrowCols) return false;
    const CellRegions regions = frame_regions(frame, rows, cols);
    // No frame: nothing would set the flags. Past 2^32 cells: stencil_cell<T, kNine, true> divides in 32 bits.
    if (regions.cells() == 0 || regions.cells() >= (index_t(1) << 32)) return false;
    if (copies.size() > static_cast<std::size_t>(CellPacks::kMax) || flags.waits > FrameFlags::kMax ||
        flags.sets > FrameFlags::kMax)
      return false;
    const T* interior_in = in + frame.top * in_ld + frame.left;
    T* interior_out = out + frame.top * out_ld + frame.left;
    constexpr auto kBytes = static_cast<std::uintptr_t>(kVectorBytes);
    const bool aligned = reinterpret_cast<std::uintptr_t>(interior_in) % kBytes == 0 &&
                         reinterpret_cast<std::uintptr_t>(interior_out) % kBytes == 0 &&
                         in_ld % Vector<T>::kItems == 0 && out_ld % Vector<T>::kItems == 0;
    if (!aligned) return false;
    FrameLast<T> last;
    last.in = in;
    last.in_ld = in_ld;
    last.out = out;
    last.out_ld = out_ld;
    last.regions = regions;
    last.cells = regions.cells();
    last.packs = frame_packs(copies, out_ld);
    last.flags = flags;
    constexpr int kThreads = Bulk::kWarps * kWarpThreads;
    last.chunks = ceil_div<index_t>(last.cells, kThreads);
    last.share = kFrameFlagStep / static_cast<std::uint64_t>(last.chunks);
    last.first_share = kFrameFlagStep - last.share * static_cast<std::uint64_t>(last.chunks - 1);
    auto launch = [&]<bool kNine>() {
      if (!bulk_sweep_available<T, kNine, Bulk, true>()) return false;
      // The frame's cells lengthen the launch by the blocks that take them; a quarter of the
      // blocks at most, else a frame launched on its own fills the interior's spread better.
      unsigned grid = 0;
      bulk_shape<T, kNine, Bulk, true>(interior_rows, interior_cols, &grid);
      if (last.chunks > static_cast<index_t>(grid) / 4) return false;
      launch_stencil_2d_bulk<T, kNine, Bulk, true>(interior_in, in_ld, interior_out, out_ld, interior_rows,
                                                   interior_cols, w, max_change, stream, last);
      return true;
    };
    return w.shape == StencilShape::nine_point ? launch.template operator()<true>() : launch.template operator()<false>();
  }
}

// ---- convolve_1d -------------------------------------------------------------------------------------

// The weights of the kernel by lanes, centred: taps[kMaxRadius - radius + k] = weights[k], the rest
// unused (never multiplied: a zero times an infinity would make a NaN).
template <class T, int kMaxRadius>
struct CentredTaps {
  T tap[2 * kMaxRadius + 1];
};

// Copies inputs [lo, hi) (relative to `in`) to window[lead ...], where window[0] lies on the 16-byte
// boundary at or below in + lo - lead_extra ... : the caller passes base = the input index of
// window[0] (base <= lo, in + base 16-byte aligned when `in` is). Positions of [base, end) outside
// [lo, hi) are set to 0.
template <class T, int kThreads>
__device__ __forceinline__ void load_window(const T* in, index_t base, index_t end, index_t lo, index_t hi, T* window) {
  constexpr int kV = Vector<T>::kItems;
  const bool aligned = is_aligned(in + base, kVectorBytes);
  for (index_t j = static_cast<index_t>(threadIdx.x) * kV; j < end - base; j += index_t(kThreads) * kV) {
    const index_t g = base + j;
    if (aligned && g >= lo && g + kV <= hi) {
      const Vector<T> v = load_vector_readonly(in + g);
      *reinterpret_cast<Vector<T>*>(window + j) = v;
    } else {
#pragma unroll
      for (int k = 0; k < kV; ++k) window[j + k] = g + k >= lo && g + k < hi ? in[g + k] : T(0);
    }
  }
}

// Writes result[0, count) to out[0, count): 16-byte stores from the first 16-byte boundary of out.
template <class T, int kThreads>
__device__ __forceinline__ void store_tile(T* out, index_t count, const T* result) {
  constexpr int kV = Vector<T>::kItems;
  const index_t head = unaligned_head(out, count);
  for (index_t j = threadIdx.x; j < head; j += kThreads) out[j] = result[j];
  const index_t body = (count - head) / kV;
  for (index_t v = threadIdx.x; v < body; v += kThreads) {
    Vector<T> vec;
#pragma unroll
    for (int k = 0; k < kV; ++k) vec.item[k] = result[head + v * kV + k];
    store_vector(out + head + v * kV, vec);
  }
  for (index_t j = head + body * kV + threadIdx.x; j < count; j += kThreads) out[j] = result[j];
}

// Outputs per thread of the chunked convolution: odd, so that a warp's reads of its windows in
// shared memory (at a stride of kItems elements) fall on 32 different banks; fewer for 8-byte
// elements.
template <class T, class Tuning>
inline constexpr int kConvolveItems = sizeof(T) > 4 ? Tuning::kItems8 : Tuning::kItems;

// Any radius: the weights in global memory, kTapChunk of them per pass over the tile.
template <class T, class Tuning = Convolve1dTuning>
__global__ void __launch_bounds__(Tuning::kThreads, Tuning::kMinBlocksPerSm)
    convolve_1d_chunked_kernel(const T* __restrict__ in, index_t n, T* __restrict__ out, const T* __restrict__ weights,
                               index_t radius, index_t tiles) {
  constexpr int kItems = kConvolveItems<T, Tuning>;
  constexpr int kTile = Tuning::kThreads * kItems;
  constexpr int kChunk = Tuning::kTapChunk;
  constexpr int kV = Vector<T>::kItems;
  __shared__ alignas(16) T window[kTile + kChunk + 2 * kV];
  __shared__ alignas(16) T result[kTile];
  const index_t taps = 2 * radius + 1;
  const int first = static_cast<int>(threadIdx.x) * kItems;
  for (index_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const index_t start = tile * kTile;
    const index_t count = std::min(index_t(kTile), n - start);
    T acc[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) acc[i] = T(-0.0);
    for (index_t k0 = 0; k0 < taps; k0 += kChunk) {
      const index_t k1 = std::min(k0 + kChunk, taps);
      // Output o and weight k read input o + radius - k: this pass reads [start + radius - k1 + 1,
      // start + count + radius - k0), all inside the readable [-radius, n + radius).
      const index_t lo = start + radius - k1 + 1;
      const index_t hi = start + count + radius - k0;
      const index_t lead = static_cast<index_t>(reinterpret_cast<std::uintptr_t>(in + lo) % kVectorBytes) / sizeof(T);
      __syncthreads();  // the previous pass has finished reading the window
      load_window<T, Tuning::kThreads>(in, lo - lead, hi, lo, hi, window);
      __syncthreads();
      if (first < count) {
        for (index_t k = k0; k < k1; ++k) {
          const T wk = __ldg(weights + k);
          const T* x = window + lead + first + (k1 - 1 - k);  // input start + first + radius - k
#pragma unroll
          for (int i = 0; i < kItems; ++i) acc[i] = add_rn(acc[i], mul_rn(wk, x[i]));
        }
      }
    }
    if (first < count) {
#pragma unroll
      for (int i = 0; i < kItems; ++i) result[first + i] = acc[i];
    }
    __syncthreads();
    store_tile<T, Tuning::kThreads>(out + start, count, result);
  }
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
      for (int k = 0; k <= 2 * R; ++k) acc = add_rn(acc, mul_rn(taps.tap[kTap0 + k], x[i + 2 * R - k]));
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

template <class T, class Tuning, int R>
void launch_convolve_1d_lanes(const T* in, index_t n, const CentredTaps<T, Tuning::kMaxRadius>& taps, T* out,
                              StreamHandle stream) {
  constexpr int kI = Tuning::kVectorsPerLane * Vector<T>::kItems;
  constexpr index_t kWarpTile = index_t(kWarpThreads) * kI;
  const auto out_lead = static_cast<int>(reinterpret_cast<std::uintptr_t>(out) % kVectorBytes / sizeof(T));
  const auto shift = static_cast<int>(reinterpret_cast<std::uintptr_t>(in - out_lead) % kVectorBytes / sizeof(T));
  const index_t warp_tiles = ceil_div<index_t>(n + out_lead, kWarpTile);
  constexpr auto kernel = convolve_1d_lanes_kernel<T, Tuning, R>;
  constexpr int kWarpsPerBlock = Tuning::kThreads / kWarpThreads;
  const index_t sms = current_device_info().sm_count;
  const auto grid = static_cast<unsigned>(
      std::min<index_t>(ceil_div<index_t>(warp_tiles, kWarpsPerBlock), sms * blocks_per_sm<kernel>(Tuning::kThreads)));
  kernel<<<grid, Tuning::kThreads, 0, to_cuda(stream)>>>(in, n, out, taps, out_lead, shift, warp_tiles);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// The kernel by lanes for radius 0 .. kMaxRadius (taps centred as CentredTaps says).
template <class T, class Tuning = Convolve1dLanesTuning>
void convolve_1d_lanes(const T* in, index_t n, const CentredTaps<T, Tuning::kMaxRadius>& taps, int radius, T* out,
                       StreamHandle stream) {
  static_assert(Tuning::kMaxRadius == 8, "one case per radius below");
  switch (radius) {
    case 0: return launch_convolve_1d_lanes<T, Tuning, 0>(in, n, taps, out, stream);
    case 1: return launch_convolve_1d_lanes<T, Tuning, 1>(in, n, taps, out, stream);
    case 2: return launch_convolve_1d_lanes<T, Tuning, 2>(in, n, taps, out, stream);
    case 3: return launch_convolve_1d_lanes<T, Tuning, 3>(in, n, taps, out, stream);
    case 4: return launch_convolve_1d_lanes<T, Tuning, 4>(in, n, taps, out, stream);
    case 5: return launch_convolve_1d_lanes<T, Tuning, 5>(in, n, taps, out, stream);
    case 6: return launch_convolve_1d_lanes<T, Tuning, 6>(in, n, taps, out, stream);
    case 7: return launch_convolve_1d_lanes<T, Tuning, 7>(in, n, taps, out, stream);
    case 8: return launch_convolve_1d_lanes<T, Tuning, 8>(in, n, taps, out, stream);
    default: throw UsageError("convolve_1d: radius " + std::to_string(radius) + " is beyond the kernel by lanes");
  }
}

template <class T, class Tuning = Convolve1dTuning>
void convolve_1d(const Queue& queue, const T* in, index_t n, std::span<const T> weights, T* out) {
  const StreamHandle stream = queue.stream;
  if (n <= 0) return;
  const auto taps = static_cast<index_t>(weights.size());
  const index_t radius = (taps - 1) / 2;
  if (radius <= Convolve1dLanesTuning::kMaxRadius) {
    CentredTaps<T, Convolve1dLanesTuning::kMaxRadius> centred{};
    for (index_t k = 0; k < taps; ++k)
      centred.tap[Convolve1dLanesTuning::kMaxRadius - radius + k] = weights[static_cast<std::size_t>(k)];
    convolve_1d_lanes<T>(in, n, centred, static_cast<int>(radius), out, stream);
    return;
  }
  constexpr int kTile = Tuning::kThreads * kConvolveItems<T, Tuning>;
  const index_t tiles = ceil_div<index_t>(n, kTile);
  const index_t sms = current_device_info().sm_count;
  ScratchBuffer device_weights(queue, static_cast<std::size_t>(taps) * sizeof(T));
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(device_weights.data(), weights.data(), static_cast<std::size_t>(taps) * sizeof(T),
                                     cudaMemcpyHostToDevice, to_cuda(stream)));
  constexpr auto kernel = convolve_1d_chunked_kernel<T, Tuning>;
  const auto grid = static_cast<unsigned>(std::min<index_t>(tiles, sms * blocks_per_sm<kernel>(Tuning::kThreads)));
  kernel<<<grid, Tuning::kThreads, 0, to_cuda(stream)>>>(in, n, out, device_weights.as<T>(), radius, tiles);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// ---- pack / unpack of rectangles ---------------------------------------------------------------------

// Rectangles of words (the elements, or pieces of them of the widest size that divides the element
// and both addresses), with the offset of each in the packed buffer.
struct RectangleBatch {
  Rectangle rectangle[PackTuning::kMaxRectangles];
  index_t packed_offset[PackTuning::kMaxRectangles];
};

template <class Word, bool kUnpack>
__global__ void __launch_bounds__(PackTuning::kThreads) pack_rectangles_kernel(Word* base, Word* packed, RectangleBatch batch) {
  const Rectangle rect = batch.rectangle[blockIdx.y];
  Word* slot = packed + batch.packed_offset[blockIdx.y];
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

template <class Word, bool kUnpack>
void launch_pack(void* base, void* packed, std::span<const Rectangle> rectangles, index_t scale, StreamHandle stream) {
  const index_t sms = current_device_info().sm_count;
  index_t packed_words = 0;
  for (std::size_t first = 0; first < rectangles.size(); first += PackTuning::kMaxRectangles) {
    const std::size_t count = std::min<std::size_t>(PackTuning::kMaxRectangles, rectangles.size() - first);
    RectangleBatch batch{};
    index_t largest = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const Rectangle& r = rectangles[first + i];
      batch.rectangle[i] = Rectangle{r.offset * scale, r.ld * scale, r.rows, r.cols * scale, r.planes, r.plane_stride * scale};
      batch.packed_offset[i] = packed_words;
      packed_words += r.size() * scale;
      largest = std::max(largest, r.size() * scale);
    }
    if (largest == 0) continue;
    const auto blocks_x = static_cast<unsigned>(std::min<index_t>(ceil_div<index_t>(largest, PackTuning::kThreads), 4 * sms));
    pack_rectangles_kernel<Word, kUnpack><<<dim3(blocks_x, static_cast<unsigned>(count)), PackTuning::kThreads, 0, to_cuda(stream)>>>(
        static_cast<Word*>(base), static_cast<Word*>(packed), batch);
    TESSERA_CUDA_CHECK_LAUNCH();
  }
}

// The widest word (8, 4, 2 or 1 bytes) that divides the element size and both addresses.
inline std::size_t pack_word_bytes(const void* a, const void* b, std::size_t element_bytes) {
  for (std::size_t word : {std::size_t(8), std::size_t(4), std::size_t(2)})
    if (element_bytes % word == 0 && is_aligned(a, word) && is_aligned(b, word)) return word;
  return 1;
}

template <bool kUnpack>
void pack_rectangles(void* base, void* packed, std::span<const Rectangle> rectangles, std::size_t element_bytes,
                     StreamHandle stream) {
  if (rectangles.empty()) return;
  const std::size_t word = pack_word_bytes(base, packed, element_bytes);
  const auto scale = static_cast<index_t>(element_bytes / word);
  switch (word) {
    case 8: launch_pack<unsigned long long, kUnpack>(base, packed, rectangles, scale, stream); break;
    case 4: launch_pack<unsigned int, kUnpack>(base, packed, rectangles, scale, stream); break;
    case 2: launch_pack<unsigned short, kUnpack>(base, packed, rectangles, scale, stream); break;
    default: launch_pack<unsigned char, kUnpack>(base, packed, rectangles, scale, stream); break;
  }
}

}  // namespace tessera::kernels::cuda::detail
