// Block-level primitives built on the warp ones (as cub/block/): each warp reduces or scans its
// lanes, one warp combines the per-warp results held in shared memory.
#pragma once

#include "warp.cuh"

namespace tessera::kernels::cuda::detail {

// Reduces one value per thread over the thread block; the result is valid in thread 0 only.
// `warp_partials` is shared memory of BlockThreads / 32 elements; the call contains a barrier,
// so every thread of the block must make it.
template <int BlockThreads, class T, class Op>
__device__ __forceinline__ T block_reduce(T value, Op op, T identity, T* warp_partials) {
  static_assert(BlockThreads % kWarpThreads == 0 && BlockThreads <= kWarpThreads * kWarpThreads);
  constexpr int kWarps = BlockThreads / kWarpThreads;
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  value = warp_reduce(value, op);
  if (lane_id() == 0) warp_partials[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane_id() < kWarps ? warp_partials[lane_id()] : identity;
    value = warp_reduce(value, op);
  }
  return value;
}

}  // namespace tessera::kernels::cuda::detail
