// Device-wide reduction in one pass that keeps index order, for associative operations that need not
// commute (2x2 matrix products, compositions of affine maps, a struct accumulator whose combination
// depends on which side comes first). device_reduce.cuh is faster for commutative operations: it
// folds each thread's loads element by element across tiles, which reorders the input.
//
// Arrangement. The input is a scalar head (elements before the first 16-byte boundary), a body of
// 16-byte vectors, and a scalar tail. A "row" is 32 consecutive vectors, one per lane of a warp, so a
// row is loaded with one fully coalesced 16-byte load per lane; a "tile" is one row per warp of the
// thread block, consecutive. The whole tiles are shared out evenly over the thread blocks (block b
// takes a run of consecutive tiles, as device_reduce.cuh's even share), so each block streams
// through one contiguous range. Each warp folds its row of a tile (every lane folds its vector left
// to right, the lanes meet in lane order: warp_reduce_suffix), writes the row total to shared
// memory, and after a group of tiles warp 0 appends the group's row totals to the block's running
// value in index order (one barrier per group; two buffers, so that the next group's writes do not
// wait for warp 0's reads). The first block takes the head first, the last block the rows after the
// last whole tile and the tail last; blocks combine in block order (the last thread block to finish
// folds the partials, as in device_reduce.cuh). One read of the input. An earlier arrangement that
// gave each warp its own run of rows (so no barrier at all) read scattered 2 KiB pieces and ran at
// 0.98-0.99x CUB's commutative sum on an H100.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/block.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/stream_workspace.hpp"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda::detail {

// The one place the ordered reduction is tuned: 256 threads (8 warps: a tile is 8 rows), groups of 4
// tiles (4 16-byte loads in flight per lane, 32 row totals folded by one warp per group), 4 waves.
struct OrderedReduceTuning {
  static constexpr int kBlockThreads = 256;
  static constexpr int kTilesPerGroup = 4;
  static constexpr int kWaves = 4;
};

// Elements of an array, mapped by f: element i is f(in[i]); loaded 16 bytes at a time.
template <class In, class F, class Acc>
struct PointerSource {
  static constexpr int kItems = Vector<In>::kItems;
  const In* in;
  index_t n;
  F f;
  index_t head;     // elements before the 16-byte-aligned body
  bool vector_ok;   // vector_aligned(in)

  __device__ __forceinline__ Acc element(index_t i) const { return f(in[i]); }
  // The fold (left to right, without identity) of body vector v.
  template <class Op>
  __device__ __forceinline__ Acc vector_fold(index_t v, Op& op) const {
    const Vector<In> loaded = load_items_readonly(in + head + v * kItems, vector_ok);
    Acc acc = f(loaded.item[0]);
#pragma unroll
    for (int k = 1; k < kItems; ++k) acc = op(acc, f(loaded.item[k]));
    return acc;
  }
};

// Values of an index range: element i is f(first + i). Four indices per "vector", no loads.
template <class F, class Acc>
struct IndexSource {
  static constexpr int kItems = 4;
  index_t first;
  index_t n;
  F f;
  index_t head = 0;

  __device__ __forceinline__ Acc element(index_t i) const { return f(first + i); }
  template <class Op>
  __device__ __forceinline__ Acc vector_fold(index_t v, Op& op) const {
    const index_t base = first + v * kItems;
    Acc acc = f(base);
#pragma unroll
    for (int k = 1; k < kItems; ++k) acc = op(acc, f(base + k));
    return acc;
  }
};

template <int BlockThreads, int TilesPerGroup, class Source, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    reduce_ordered_kernel(Source source, Op op, Acc identity, Acc* __restrict__ block_partials,
                          unsigned int* __restrict__ blocks_done, Acc* __restrict__ out) {
  constexpr int kWarps = BlockThreads / kWarpThreads;
  constexpr int kEntries = kWarps * TilesPerGroup;  // row totals of one group
  constexpr int kItems = Source::kItems;
  __shared__ SharedArray<Acc, 2 * kEntries> row_totals;  // two groups: written by all, folded by warp 0
  __shared__ SharedArray<Acc, kWarps> warp_partials;
  __shared__ bool is_last_block;

  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const index_t n = source.n;
  const index_t head = source.head;
  const index_t vectors = (n - head) / kItems;
  const index_t rows = vectors / kWarpThreads;
  const index_t tiles = rows / kWarps;  // a tile: one row per warp, consecutive rows
  const index_t block = blockIdx.x;
  const index_t per_block = tiles / gridDim.x;
  const index_t extra = tiles % gridDim.x;
  const index_t first_tile = block * per_block + (block < extra ? block : extra);
  const index_t block_tiles = per_block + (block < extra ? 1 : 0);

  Acc acc = identity;  // the block's running value, kept in lane 0 of warp 0
  // Appends the lanes' values (lane order) to the running value. All lanes of warp 0 call it.
  auto append = [&](const Acc& lane_value) {
    const Acc total = warp_reduce_suffix(lane_value, op);
    if (lane == 0) acc = op(acc, total);
  };

  if (block == 0 && warp == 0 && head > 0) append(lane < head ? source.element(lane) : identity);

  int buffer = 0;
  for (index_t t = 0; t < block_tiles; t += TilesPerGroup) {
    const index_t group = block_tiles - t < TilesPerGroup ? block_tiles - t : TilesPerGroup;  // the same in the block
    Acc lane_value[TilesPerGroup];
#pragma unroll
    for (int d = 0; d < TilesPerGroup; ++d)
      if (d < group) lane_value[d] = source.vector_fold(((first_tile + t + d) * kWarps + warp) * kWarpThreads + lane, op);
#pragma unroll
    for (int d = 0; d < TilesPerGroup; ++d) {
      if (d < group) {
        const Acc row_total = warp_reduce_suffix(lane_value[d], op);
        if (lane == 0) row_totals[buffer * kEntries + d * kWarps + warp] = row_total;
      }
    }
    __syncthreads();
    if (warp == 0) {
      // Tile-major, then warp: the rows in index order.
      const int count = static_cast<int>(group) * kWarps;
      for (int base = 0; base < count; base += kWarpThreads)
        append(base + lane < count ? row_totals[buffer * kEntries + base + lane] : identity);
    }
    buffer ^= 1;  // the next group writes the other half while warp 0 may still read this one
  }

  if (block == gridDim.x - 1 && warp == 0) {
    // After the last whole tile: the rows left over, the vectors after the last whole row, the tail.
    for (index_t r = tiles * kWarps; r < rows; ++r) append(source.vector_fold(r * kWarpThreads + lane, op));
    const index_t v = rows * kWarpThreads + lane;
    if (rows * kWarpThreads < vectors) append(v < vectors ? source.vector_fold(v, op) : identity);
    const index_t tail_start = head + vectors * kItems;
    if (tail_start < n) append(tail_start + lane < n ? source.element(tail_start + lane) : identity);
  }

  if (threadIdx.x == 0) {
    block_partials[blockIdx.x] = acc;
    // Release: the partial must be visible device-wide before the counter says it is there.
    __threadfence();
    is_last_block = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last_block) return;
  // Acquire side: every other block fenced before its increment.
  __threadfence();
  // Thread t folds a contiguous run of partials, in order; the threads' results meet in thread order.
  const unsigned blocks = gridDim.x;
  const unsigned per_thread = (blocks + BlockThreads - 1) / BlockThreads;
  const unsigned begin = threadIdx.x * per_thread;
  const unsigned end = begin + per_thread < blocks ? begin + per_thread : blocks;
  Acc total = identity;
  for (unsigned b = begin; b < end; ++b) total = op(total, load_cg(block_partials + b));
  total = block_reduce_ordered<BlockThreads>(total, op, identity, warp_partials.data());
  if (threadIdx.x == 0) {
    *out = total;
    *blocks_done = 0;  // every other block has counted: ready for the next kernel on the stream
  }
}

// Dispatch: enough thread blocks for a few groups each, at most kWaves full waves of the device.
template <class Tuning = OrderedReduceTuning, class Source, class Acc, class Op>
void device_reduce_ordered(const Source& source, Op op, Acc identity, Acc* out, StreamHandle stream) {
  constexpr auto kernel = reduce_ordered_kernel<Tuning::kBlockThreads, Tuning::kTilesPerGroup, Source, Acc, Op>;
  const DeviceInfo& device = current_device_info();
  constexpr index_t kWarps = Tuning::kBlockThreads / kWarpThreads;
  const index_t tiles = (source.n - source.head) / Source::kItems / kWarpThreads / kWarps;
  const index_t wave = static_cast<index_t>(device.sm_count) * blocks_per_sm<kernel>(Tuning::kBlockThreads);
  const index_t wanted = ceil_div<index_t>(tiles, 4 * Tuning::kTilesPerGroup);
  const int grid = static_cast<int>(std::clamp<index_t>(wanted, 1, wave * Tuning::kWaves));
  const StreamScratch scratch(device.ordinal, to_cuda(stream), sizeof(Acc) * static_cast<std::size_t>(grid));
  kernel<<<grid, Tuning::kBlockThreads, 0, to_cuda(stream)>>>(source, op, identity, static_cast<Acc*>(scratch.scratch()),
                                                              scratch.counter(), out);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda::detail
