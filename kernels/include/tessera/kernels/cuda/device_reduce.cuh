// Device-wide reduction in one pass for commutative operations (agent + dispatch layers for reduce,
// transform_reduce and count_if with a commutative operation; device_reduce_ordered.cuh keeps index
// order for the others).
//
// The input's whole tiles (a tile: one 16-byte load per thread, LoadsInFlight times, side by side)
// are shared out evenly: thread block b folds one run of consecutive tiles, a tile more for the first
// blocks when the count does not divide (CUB's "even share"). A grid-stride layout (every load of
// the grid a few MiB apart) read 91% of the DRAM peak where CUB's even share read 93% (ncu, H100),
// and sums fell to 0.87x CUB on an H200. Each thread block folds its share to one partial; the last
// thread block to finish (a counter bumped after a fence, the "threadFenceReduction" pattern) folds
// the partials, writes the result to device memory and sets the counter back to zero. One kernel,
// no host loop, no device-wide synchronisation; the order in which partials are combined is fixed
// (block order), so a result is reproducible run to run on the same device. The partials and the
// counter live in the stream's workspace (stream_workspace.hpp): nothing is allocated or zeroed
// before the launch, which an idle GPU would wait for.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tessera/kernels/cuda/block.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/stream_workspace.hpp"
#include "tessera/kernels/cuda/tuning/reduce.cuh"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/cuda/vector_io.cuh"

namespace tessera::kernels::cuda::detail {

struct Identity {
  template <class T>
  __device__ __forceinline__ T operator()(T x) const { return x; }
};

// In: element type read; Acc: accumulator type; Transform maps In -> Acc; Op folds Acc.
template <int BlockThreads, int LoadsInFlight, class In, class Acc, class Transform, class Op>
__global__ void __launch_bounds__(BlockThreads)
    reduce_single_pass_kernel(const In* __restrict__ in, index_t n, Transform transform, Op op, Acc identity,
                              Acc* __restrict__ block_partials, unsigned int* __restrict__ blocks_done,
                              Acc* __restrict__ out, bool vector_ok) {
  __shared__ SharedArray<Acc, BlockThreads / kWarpThreads> warp_partials;
  __shared__ bool is_last_block;

  using Vec = Vector<In>;
  constexpr int kItems = Vec::kItems;
  const index_t thread_rank = static_cast<index_t>(blockIdx.x) * BlockThreads + threadIdx.x;
  const index_t thread_count = static_cast<index_t>(gridDim.x) * BlockThreads;

  // One accumulator per element of a vector; each trip's LoadsInFlight vectors are folded first,
  // element by element, so the chains stay short and independent (one accumulator for everything
  // serialised 8-16 dependent adds per trip and cost ~10% on floating-point sums, which the compiler
  // may not reassociate). One accumulator per loaded element (16) took 38-44 registers and 5 blocks
  // per SM; this takes 32-38 and measured 0.5-1% faster on an H200 (the sum's order differs, and
  // is as fixed as before).
  Acc acc[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) acc[i] = identity;
  // Whole tiles of the 16-byte-aligned body, shared out in runs of consecutive tiles.
  const index_t head = unaligned_head(in, n);
  const In* body = in + head;
  const index_t vector_count = (n - head) / kItems;
  constexpr index_t kTileVectors = static_cast<index_t>(BlockThreads) * LoadsInFlight;
  const index_t tiles = vector_count / kTileVectors;
  const index_t block = blockIdx.x;
  const index_t per_block = tiles / gridDim.x;
  const index_t extra = tiles % gridDim.x;
  const index_t first_tile = block * per_block + (block < extra ? block : extra);
  const index_t block_tiles = per_block + (block < extra ? 1 : 0);
  const In* tile = body + (first_tile * kTileVectors + threadIdx.x) * kItems;
  for (index_t t = 0; t < block_tiles; ++t, tile += kTileVectors * kItems) {
    Vec loaded[LoadsInFlight];
#pragma unroll
    for (int u = 0; u < LoadsInFlight; ++u) loaded[u] = load_items_readonly(tile + u * BlockThreads * kItems, vector_ok);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      Acc x = transform(loaded[0].item[i]);
#pragma unroll
      for (int u = 1; u < LoadsInFlight; ++u) x = op(x, transform(loaded[u].item[i]));
      acc[i] = op(acc[i], x);
    }
  }
  // The rest (less than a tile of vectors, the scalar head before the first 16-byte boundary and the
  // scalar tail), grid-strided.
  for (index_t v = tiles * kTileVectors + thread_rank; v < vector_count; v += thread_count) {
    const Vec loaded = load_items_readonly(body + v * kItems, vector_ok);
#pragma unroll
    for (int i = 0; i < kItems; ++i) acc[i] = op(acc[i], transform(loaded.item[i]));
  }
  if (thread_rank < head) acc[0] = op(acc[0], transform(in[thread_rank]));
  const index_t tail_start = head + vector_count * kItems;
  if (tail_start + thread_rank < n) acc[0] = op(acc[0], transform(in[tail_start + thread_rank]));
  Acc thread_total = identity;
#pragma unroll
  for (int i = 0; i < kItems; ++i) thread_total = op(thread_total, acc[i]);

  const Acc block_total = block_reduce<BlockThreads>(thread_total, op, identity, warp_partials.data());
  if (threadIdx.x == 0) {
    block_partials[blockIdx.x] = block_total;
    // Release: the partial must be visible device-wide before the counter says it is there.
    __threadfence();
    is_last_block = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last_block) return;
  // Acquire side of the pattern: every other block fenced before its increment.
  __threadfence();
  constexpr unsigned kFoldLoads = kLastBlockFoldLoads;
  Acc total = identity;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kFoldLoads * BlockThreads) {
    Acc loaded[kFoldLoads];
#pragma unroll
    for (unsigned u = 0; u < kFoldLoads; ++u) {
      const unsigned i = b + u * BlockThreads;
      loaded[u] = i < gridDim.x ? load_cg(block_partials + i) : identity;
    }
#pragma unroll
    for (unsigned u = 0; u < kFoldLoads; ++u) total = op(total, loaded[u]);
  }
  // Thread-strided folding above meets partials in a fixed order, so the result is deterministic.
  total = block_reduce<BlockThreads>(total, op, identity, warp_partials.data());
  if (threadIdx.x == 0) {
    *out = total;
    *blocks_done = 0;  // every other block has counted: ready for the next kernel on the stream
  }
}

// The grid of device_reduce for n elements on the current device: kWaves full waves, or one block per
// whole tile where the input is smaller.
template <class Tuning, class In, class Acc, class Transform, class Op>
int device_reduce_grid(index_t n) {
  constexpr auto kernel =
      reduce_single_pass_kernel<Tuning::kBlockThreads, Tuning::kLoadsInFlight, In, Acc, Transform, Op>;
  const DeviceInfo& device = current_device_info();
  const index_t tile_items = static_cast<index_t>(Tuning::kBlockThreads) * Tuning::kLoadsInFlight * Vector<In>::kItems;
  const index_t wave = static_cast<index_t>(device.sm_count) * blocks_per_sm<kernel>(Tuning::kBlockThreads);
  return static_cast<int>(std::clamp<index_t>(n / tile_items, 1, wave * Tuning::kWaves));
}

// Dispatch. Tuning: ReduceTuning, or another with its members (for tuning experiments).
template <class Tuning = ReduceTuning, class In, class Acc, class Transform, class Op>
void device_reduce(const Queue& queue, const In* in, index_t n, Transform transform, Op op, Acc identity, Acc* out) {
  const StreamHandle stream = queue.stream;
  constexpr auto kernel =
      reduce_single_pass_kernel<Tuning::kBlockThreads, Tuning::kLoadsInFlight, In, Acc, Transform, Op>;
  const int grid = device_reduce_grid<Tuning, In, Acc, Transform, Op>(n);

  // The per-block partials and the completion counter (zero before and after the kernel).
  const StreamScratch scratch(queue.device, to_cuda(stream), sizeof(Acc) * static_cast<std::size_t>(grid));
  auto* partials = static_cast<Acc*>(scratch.scratch());
  auto* blocks_done = scratch.counter();
  kernel<<<grid, Tuning::kBlockThreads, 0, to_cuda(stream)>>>(in, n, transform, op, identity, partials, blocks_done,
                                                                 out, vector_aligned(in));
  TESSERA_CUDA_CHECK_LAUNCH();
}

// The most applications of op that an element meets in device_reduce of n elements on the current
// device, the identity's included (for a floating-point sum: the depth d of its summation tree, so
// that the result lies within gamma_d * sum|x| of the exact sum). From the kernel above:
//   a tile's element: LoadsInFlight - 1 within its trip's loads, 1 into the accumulator, 1 more for
//     each later tile of the thread block's even share of ceil(tiles / grid) tiles;
//   the rest after the tiles: fewer than a tile of vectors grid-strided (at most LoadsInFlight per
//     thread), the scalar head and the scalar tail (at most 1 each);
//   Vector<In>::kItems to fold the thread's accumulators after the identity;
//   2 log2(32) in block_reduce (the warp, then the warps' partials);
//   in the last thread block, kFoldLoads per trip of ceil(grid / (kFoldLoads BlockThreads)) trips,
//     then block_reduce again.
template <class Tuning = ReduceTuning, class In, class Acc, class Transform, class Op>
index_t device_reduce_depth(index_t n) {
  if (n <= 0) return 0;
  constexpr index_t kFoldLoads = kLastBlockFoldLoads;
  constexpr index_t kBlockReduce = 2 * 5;
  const index_t grid = device_reduce_grid<Tuning, In, Acc, Transform, Op>(n);
  const index_t tile_items = static_cast<index_t>(Tuning::kBlockThreads) * Tuning::kLoadsInFlight * Vector<In>::kItems;
  const index_t share = ceil_div<index_t>(n / tile_items, grid);
  const index_t thread = (Tuning::kLoadsInFlight - 1) + 1 + (share > 0 ? share - 1 : 0) + Tuning::kLoadsInFlight + 2 +
                         Vector<In>::kItems;
  const index_t last_block = kFoldLoads * ceil_div<index_t>(grid, kFoldLoads * Tuning::kBlockThreads);
  return thread + kBlockReduce + last_block + kBlockReduce;
}

}  // namespace tessera::kernels::cuda::detail
