// Device-wide reduction in one pass that keeps index order, for associative operations that need not
// commute (2x2 matrix products, compositions of affine maps, a struct accumulator whose combination
// depends on which side comes first). device_reduce.cuh is faster for commutative operations: it
// folds each thread's loads element by element across tiles, which reorders the input.
//
// Arrangement. The input is a scalar head (elements before the first 16-byte boundary), a body of
// 16-byte vectors, and a scalar tail. A "row" is 32 consecutive vectors, one per lane of a warp, so a
// row is loaded with one fully coalesced 16-byte load per lane. The rows are shared out evenly over
// all warps of the grid in warp order (warp g of the grid takes a run of consecutive rows), so the
// warps' runs follow each other in index order. A warp folds each of its rows in order: every lane
// folds its own vector left to right, the lanes' results meet in lane order (warp_reduce_suffix: 5
// shuffles), and lane 0 appends that to the warp's running value. The first warp takes the head
// before its rows, the last warp the rows left over and the tail after its rows. Warps combine in
// warp order, thread blocks in block order (the last thread block to finish folds the block
// partials, as in device_reduce.cuh). Memory traffic is one read of the input; the shuffles cost
// about 5 per 32 vectors per lane, far below what the memory system leaves time for.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/block.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/stream_workspace.hpp"
#include "tessera/kernels/cuda/tuning/reduce.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda::detail {

// Elements of an array, mapped by f: element i is f(in[i]); loaded 16 bytes at a time, VectorsPerLane
// consecutive vectors per lane (a lane's "vector" here is that run: one warp shuffle reduction per
// 32 x VectorsPerLane vectors).
template <class In, class F, class Acc, int VectorsPerLane = 1>
struct PointerSource {
  static constexpr int kVectorItems = Vector<In>::kItems;
  static constexpr int kItems = kVectorItems * VectorsPerLane;
  const In* in;
  index_t n;
  F f;
  index_t head;     // elements before the 16-byte-aligned body
  bool vector_ok;   // vector_aligned(in)

  __device__ __forceinline__ Acc element(index_t i) const { return f(in[i]); }
  // The fold (left to right, without identity) of body vector v.
  template <class Op>
  __device__ __forceinline__ Acc vector_fold(index_t v, Op& op) const {
    Vector<In> loaded[VectorsPerLane];
#pragma unroll
    for (int u = 0; u < VectorsPerLane; ++u)
      loaded[u] = load_items_readonly(in + head + v * kItems + u * kVectorItems, vector_ok);
    Acc acc = f(loaded[0].item[0]);
#pragma unroll
    for (int k = 1; k < kVectorItems; ++k) acc = op(acc, f(loaded[0].item[k]));
#pragma unroll
    for (int u = 1; u < VectorsPerLane; ++u)
#pragma unroll
      for (int k = 0; k < kVectorItems; ++k) acc = op(acc, f(loaded[u].item[k]));
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

template <int BlockThreads, int RowsInFlight, class Source, class Acc, class Op>
__global__ void __launch_bounds__(BlockThreads)
    reduce_ordered_kernel(Source source, Op op, Acc identity, Acc* __restrict__ block_partials,
                          unsigned int* __restrict__ blocks_done, Acc* __restrict__ out) {
  constexpr int kWarps = BlockThreads / kWarpThreads;
  constexpr int kItems = Source::kItems;
  __shared__ SharedArray<Acc, kWarps> warp_partials;
  __shared__ bool is_last_block;

  const int lane = lane_id();
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const index_t n = source.n;
  const index_t head = source.head;
  const index_t vectors = (n - head) / kItems;
  const index_t rows = vectors / kWarpThreads;
  const index_t warp_count = static_cast<index_t>(gridDim.x) * kWarps;
  const index_t g = static_cast<index_t>(blockIdx.x) * kWarps + warp;
  const index_t per_warp = rows / warp_count;
  const index_t extra = rows % warp_count;
  const index_t first_row = g * per_warp + (g < extra ? g : extra);
  const index_t my_rows = per_warp + (g < extra ? 1 : 0);

  Acc acc = identity;  // the warp's running value, kept in lane 0
  // Appends the lanes' values (lane order) to the running value. All lanes call it.
  auto append = [&](const Acc& lane_value) {
    const Acc total = warp_reduce_suffix(lane_value, op);
    if (lane == 0) acc = op(acc, total);
  };

  if (g == 0 && head > 0) append(lane < head ? source.element(lane) : identity);

  index_t r = 0;
  for (; r + RowsInFlight <= my_rows; r += RowsInFlight) {
    Acc lane_value[RowsInFlight];
#pragma unroll
    for (int u = 0; u < RowsInFlight; ++u)
      lane_value[u] = source.vector_fold((first_row + r + u) * kWarpThreads + lane, op);
#pragma unroll
    for (int u = 0; u < RowsInFlight; ++u) append(lane_value[u]);
  }
  for (; r < my_rows; ++r) append(source.vector_fold((first_row + r) * kWarpThreads + lane, op));

  if (g == warp_count - 1) {
    // The vectors after the last whole row, then the scalar tail.
    const index_t v = rows * kWarpThreads + lane;
    if (rows * kWarpThreads < vectors) append(v < vectors ? source.vector_fold(v, op) : identity);
    const index_t tail_start = head + vectors * kItems;
    if (tail_start < n) append(tail_start + lane < n ? source.element(tail_start + lane) : identity);
  }

  if (lane == 0) warp_partials[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    Acc block_total = warp_reduce_suffix(lane < kWarps ? warp_partials[lane] : identity, op);
    if (lane == 0) {
      block_partials[blockIdx.x] = block_total;
      // Release: the partial must be visible device-wide before the counter says it is there.
      __threadfence();
      is_last_block = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
    }
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
  __syncthreads();  // warp_partials is reused
  total = block_reduce_ordered<BlockThreads>(total, op, identity, warp_partials.data());
  if (threadIdx.x == 0) {
    *out = total;
    *blocks_done = 0;  // every other block has counted: ready for the next kernel on the stream
  }
}

// Dispatch: enough thread blocks for a few rows per warp, at most kWaves full waves of the device.
template <class Tuning = OrderedReduceTuning, class Source, class Acc, class Op>
void device_reduce_ordered(const Queue& queue, const Source& source, Op op, Acc identity, Acc* out) {
  const StreamHandle stream = queue.stream;
  constexpr auto kernel = reduce_ordered_kernel<Tuning::kBlockThreads, Tuning::kRowsInFlight, Source, Acc, Op>;
  const DeviceInfo& device = current_device_info();
  constexpr index_t kWarps = Tuning::kBlockThreads / kWarpThreads;
  const index_t rows = (source.n - source.head) / Source::kItems / kWarpThreads;
  const index_t wave = static_cast<index_t>(device.sm_count) * blocks_per_sm<kernel>(Tuning::kBlockThreads);
  const index_t wanted = ceil_div<index_t>(rows, kWarps * Tuning::kRowsInFlight);
  const int grid = static_cast<int>(std::clamp<index_t>(wanted, 1, wave * Tuning::kWaves));
  const StreamScratch scratch(queue.device, to_cuda(stream), sizeof(Acc) * static_cast<std::size_t>(grid));
  kernel<<<grid, Tuning::kBlockThreads, 0, to_cuda(stream)>>>(source, op, identity, static_cast<Acc*>(scratch.scratch()),
                                                              scratch.counter(), out);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda::detail
