// Warp-level primitives on register shuffles (the bottom layer, as cub/warp/): reductions and an
// inclusive scan across the 32 lanes of a full warp, for any trivially copyable value (values that
// are not 4- or 8-byte built-in types travel as 4-byte words). Every lane must call them (full mask).
//
// Order: warp_reduce combines lanes in butterfly order (lane 0's value meets lane 16's first), which
// is right only for a commutative operation. warp_reduce_ordered and warp_inclusive_scan combine
// lanes in lane order (op(lower lanes, higher lanes)), right for any associative operation.
#pragma once

#include <cstdint>
#include <type_traits>

namespace tessera::kernels::cuda::detail {

constexpr int kWarpThreads = 32;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ int lane_id() { return static_cast<int>(threadIdx.x) & (kWarpThreads - 1); }

// ---- shuffles of any trivially copyable value ----------------------------------------------------------

template <class T>
inline constexpr bool kNativeShuffle =
    std::is_same_v<T, int> || std::is_same_v<T, unsigned int> || std::is_same_v<T, long> ||
    std::is_same_v<T, unsigned long> || std::is_same_v<T, long long> || std::is_same_v<T, unsigned long long> ||
    std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
struct ShuffleWords {
  static constexpr int kCount = static_cast<int>((sizeof(T) + 3) / 4);
  unsigned int word[kCount];
};

// Calls shuffle(unsigned word) on each 4-byte word of `value` and reassembles the result.
template <class T, class Shuffle>
__device__ __forceinline__ T shuffle_words(const T& value, Shuffle shuffle) {
  static_assert(std::is_trivially_copyable_v<T>, "warp shuffles move trivially copyable values only");
  ShuffleWords<T> words{};
  __builtin_memcpy(&words, &value, sizeof(T));
#pragma unroll
  for (int w = 0; w < ShuffleWords<T>::kCount; ++w) words.word[w] = shuffle(words.word[w]);
  T result;
  __builtin_memcpy(&result, &words, sizeof(T));
  return result;
}

template <class T>
__device__ __forceinline__ T shfl_xor(const T& value, int lane_mask) {
  if constexpr (kNativeShuffle<T>) {
    return __shfl_xor_sync(kFullMask, value, lane_mask);
  } else {
    return shuffle_words(value, [lane_mask](unsigned w) { return __shfl_xor_sync(kFullMask, w, lane_mask); });
  }
}

template <class T>
__device__ __forceinline__ T shfl_up(const T& value, int delta) {
  if constexpr (kNativeShuffle<T>) {
    return __shfl_up_sync(kFullMask, value, delta);
  } else {
    return shuffle_words(value, [delta](unsigned w) { return __shfl_up_sync(kFullMask, w, delta); });
  }
}

template <class T>
__device__ __forceinline__ T shfl_down(const T& value, int delta) {
  if constexpr (kNativeShuffle<T>) {
    return __shfl_down_sync(kFullMask, value, delta);
  } else {
    return shuffle_words(value, [delta](unsigned w) { return __shfl_down_sync(kFullMask, w, delta); });
  }
}

template <class T>
__device__ __forceinline__ T shfl_idx(const T& value, int src_lane) {
  if constexpr (kNativeShuffle<T>) {
    return __shfl_sync(kFullMask, value, src_lane);
  } else {
    return shuffle_words(value, [src_lane](unsigned w) { return __shfl_sync(kFullMask, w, src_lane); });
  }
}

// ---- reductions and scans ------------------------------------------------------------------------

// All lanes receive the combination of all 32 lanes' values (butterfly, so no broadcast is needed).
// Commutative operations only (see above).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce(T value, Op op) {
#pragma unroll
  for (int offset = kWarpThreads / 2; offset > 0; offset /= 2) value = op(value, shfl_xor(value, offset));
  return value;
}

// Lane i receives value[i] op value[i+1] op ... op value[31]: the fold of lanes i..31 in lane order
// (lane 0 holds the whole warp's). Any associative operation; no identity needed: a lane whose
// partner would lie past lane 31 already holds everything up to lane 31.
template <class T, class Op>
__device__ __forceinline__ T warp_reduce_suffix(T value, Op op) {
  const int lane = lane_id();
#pragma unroll
  for (int offset = 1; offset < kWarpThreads; offset *= 2) {
    const T other = shfl_down(value, offset);
    if (lane + offset < kWarpThreads) value = op(value, other);
  }
  return value;
}

// Every lane receives value[0] op ... op value[31], combined in lane order. Any associative operation.
template <class T, class Op>
__device__ __forceinline__ T warp_reduce_ordered(T value, Op op) {
  return shfl_idx(warp_reduce_suffix(value, op), 0);
}

// Lane i receives value[0] op ... op value[i] (Hillis-Steele over shuffles: log2(32) steps). Lower
// lanes come first in every combination: any associative operation.
template <class T, class Op>
__device__ __forceinline__ T warp_inclusive_scan(T value, Op op) {
  const int lane = lane_id();
#pragma unroll
  for (int offset = 1; offset < kWarpThreads; offset *= 2) {
    const T other = shfl_up(value, offset);
    if (lane >= offset) value = op(other, value);
  }
  return value;
}

// Exclusive scan from an inclusive one: lane i gets lane i-1's inclusive value, lane 0 `identity`.
// Shuffling (rather than subtracting the own value) keeps floating-point results exact.
template <class T>
__device__ __forceinline__ T warp_shift_exclusive(T inclusive, T identity) {
  const T shifted = shfl_up(inclusive, 1);
  return lane_id() == 0 ? identity : shifted;
}

template <class T>
__device__ __forceinline__ T warp_broadcast(T value, int src_lane) { return shfl_idx(value, src_lane); }

}  // namespace tessera::kernels::cuda::detail
