// Block-level primitives built on the warp ones (as cub/block/): each warp reduces its lanes, one warp
// combines the per-warp results held in shared memory.
#pragma once

#include <type_traits>

#include "tessera/kernels/cuda/warp.cuh"

namespace tessera::kernels::cuda::detail {

// Shared memory for N values of T. A __shared__ variable may not have a constructor to run, which a
// user's struct with default member initialisers has: such types get raw, suitably aligned bytes.
// Others get a plain array, whose accesses the compiler keeps in the shared address space (through
// the raw bytes, 4-byte reductions took 6 more registers, or spilled, and ran 1.7% slower).
template <class T, int N, bool = std::is_trivially_default_constructible_v<T>>
struct SharedArray {
  T items[N];
  __device__ __forceinline__ T* data() { return items; }
  __device__ __forceinline__ T& operator[](int i) { return items[i]; }
};
template <class T, int N>
struct alignas(T) SharedArray<T, N, false> {
  unsigned char bytes[sizeof(T) * N];
  __device__ __forceinline__ T* data() { return reinterpret_cast<T*>(bytes); }
  __device__ __forceinline__ T& operator[](int i) { return data()[i]; }
};

// Reduces one value per thread over the thread block; the result is valid in thread 0 only.
// `warp_partials` is shared memory of BlockThreads / 32 elements; the call contains a barrier,
// so every thread of the block must make it. Commutative operations only (butterfly order).
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

// The same in thread order (thread 0's value first), for any associative operation. The result is
// valid in thread 0 only; contains a barrier.
template <int BlockThreads, class T, class Op>
__device__ __forceinline__ T block_reduce_ordered(T value, Op op, T identity, T* warp_partials) {
  static_assert(BlockThreads % kWarpThreads == 0 && BlockThreads <= kWarpThreads * kWarpThreads);
  constexpr int kWarps = BlockThreads / kWarpThreads;
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  value = warp_reduce_suffix(value, op);
  if (lane_id() == 0) warp_partials[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane_id() < kWarps ? warp_partials[lane_id()] : identity;
    value = warp_reduce_suffix(value, op);
  }
  return value;
}

}  // namespace tessera::kernels::cuda::detail
