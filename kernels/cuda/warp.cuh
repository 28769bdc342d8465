// Warp-level primitives on register shuffles (the bottom layer, as cub/warp/): a reduction and an
// inclusive scan across the 32 lanes of a full warp. Every lane must call them (full mask).
#pragma once

#include <cstdint>

namespace tessera::kernels::cuda::detail {

constexpr int kWarpThreads = 32;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x) & (kWarpThreads - 1); }

// All lanes receive the combination of all 32 lanes' values (butterfly, so no broadcast is needed).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T value, Op op) {
#pragma unroll
  for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) value = op(value, __shfl_xor_sync(kFullMask, value, offset));
  return value;
}

// Lane i receives value[0] op ... op value[i] (Hillis-Steele over shuffles: log2(32) steps).
template <class T, class Op>
__device__ __forceinline__ T warp_inclusive_scan(T value, Op op) {
  const int lane = lane_id();
#pragma unroll
  for (int offset = 1; offset < kWarpThreads; offset *= 2) {
    const T other = __shfl_up_sync(kFullMask, value, offset);
    if (lane >= offset) value = op(other, value);
  }
  return value;
}

// Exclusive scan from an inclusive one: lane i gets lane i-1's inclusive value, lane 0 `identity`.
// Shuffling (rather than subtracting the own value) keeps floating-point results exact.
template <class T>
__device__ __forceinline__ T warp_shift_exclusive(T inclusive, T identity) {
  const T shifted = __shfl_up_sync(kFullMask, inclusive, 1);
  return lane_id() == 0 ? identity : shifted;
}

template <class T>
__device__ __forceinline__ T warp_broadcast(T value, int src_lane) { return __shfl_sync(kFullMask, value, src_lane); }

}  // namespace tessera::kernels::cuda::detail
