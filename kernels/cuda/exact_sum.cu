// CUDA exact sum (the format is in tessera/kernels/exact_sum.hpp).
//
// Two levels, so that the common case costs a few integer instructions per element and no memory
// traffic beyond the input:
//  - per thread, a 128-bit two's complement fixed-point "window" in registers, anchored at a bit
//    position `base` of the superaccumulator. An element whose significand lands inside the window
//    (0 <= position - base <= window_bits) is added to it exactly with one shift and one 128-bit
//    add. window_bits leaves enough headroom above that no thread can overflow the window.
//  - per thread block, the full superaccumulator in shared memory, reached by atomics: an element
//    below the window goes there directly; an element above it flushes the window there and moves
//    the window up. For data within a few dozen binades of each other this path is rare.
// At the end of the block the shared limbs are normalized and written as one partial per block;
// a second one-block kernel adds the normalized partials limb by limb (exact in int64, as each
// normalized limb is below 2^32) and normalizes the result. No host-side loop over partials.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "../src/exact_sum_backends.hpp"
#include "device_info.cuh"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda {
namespace {

// Tuning of the exact sum, in one place.
struct ExactSumTuning {
  static constexpr int kThreads = 256;
  // At most this many elements per thread block: keeps every shared limb below 2^62 (each element
  // or window flush adds at most two deposits below 2^32 to one limb).
  static constexpr index_t kMaxBlockElements = index_t(1) << 28;
};

using Fields = std::int64_t;

template <class T>
struct BlockAccumulator {
  static constexpr int kLimbs = ExactSumFormat<T>::kLimbs;
  unsigned long long limb[kLimbs];
  unsigned long long nan_count, pos_inf_count, neg_inf_count, non_neg_zero_count;
};

// Adds (-1)^negative * magnitude * 2^position to the shared limbs. magnitude < 2^53.
template <class T>
__device__ __forceinline__ void atomic_deposit(BlockAccumulator<T>& acc, std::uint64_t magnitude, int position,
                                               bool negative) {
  constexpr int kLimbs = ExactSumFormat<T>::kLimbs;
  const ExactSumPieces p = exact_sum_split(magnitude, position);
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    // Pieces beyond the top limb are provably zero (the value fits the accumulator); skip them.
    if (p.piece[k] != 0 && p.index + k < kLimbs) {
      const std::uint64_t add = negative ? (~p.piece[k] + 1) : p.piece[k];  // two's complement wraps as int64
      atomicAdd(&acc.limb[p.index + k], static_cast<unsigned long long>(add));
    }
  }
}

// Empties the 128-bit window (value * 2^base) into the shared superaccumulator, as four 32-bit
// pieces: three unsigned ones and a signed top one.
template <class T>
__device__ __forceinline__ void flush_window(BlockAccumulator<T>& acc, __int128 window, int base) {
  if (window == 0) return;
  const unsigned __int128 bits = static_cast<unsigned __int128>(window);
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    const std::uint64_t piece = static_cast<std::uint64_t>(bits >> (32 * j)) & 0xffffffffull;
    if (piece) atomic_deposit<T>(acc, piece, base + 32 * j, false);
  }
  const std::int64_t top = static_cast<std::int64_t>(window >> 96);  // arithmetic: in [-2^31, 2^31)
  if (top) atomic_deposit<T>(acc, static_cast<std::uint64_t>(top < 0 ? -top : top), base + 96, top < 0);
}

template <class T>
struct ThreadState {
  __int128 window = 0;
  int base = -1;  // -1: no window yet
  unsigned long long nan_count = 0, pos_inf_count = 0, neg_inf_count = 0, non_neg_zero_count = 0;
};

template <class T>
__device__ __forceinline__ void add_element(BlockAccumulator<T>& acc, ThreadState<T>& s, T x, int window_bits) {
  const ExactSumElement e = exact_sum_decompose(x);
  s.non_neg_zero_count += e.is_negative_zero ? 0 : 1;
  if (e.special) {
    if (e.nan) ++s.nan_count;
    else if (e.negative) ++s.neg_inf_count;
    else ++s.pos_inf_count;
    return;
  }
  if (e.magnitude == 0) return;
  int shift = e.position - s.base;
  if (s.base < 0 || shift > window_bits) {
    if (window_bits < 0) {  // no room for a window at all (absurd per-thread counts): all atomics
      atomic_deposit<T>(acc, e.magnitude, e.position, e.negative);
      return;
    }
    // Move the window so that this element sits a quarter of the window below its top: later
    // elements somewhat larger still fit, and much smaller ones too.
    flush_window<T>(acc, s.window, s.base);
    s.window = 0;
    s.base = e.position - (window_bits - window_bits / 4);
    if (s.base < 0) s.base = 0;
    shift = e.position - s.base;
  }
  if (shift < 0) {
    atomic_deposit<T>(acc, e.magnitude, e.position, e.negative);
    return;
  }
  const __int128 term = static_cast<__int128>(e.magnitude) << shift;
  s.window += e.negative ? -term : term;
}

template <class T>
using Vector = std::conditional_t<std::is_same_v<T, double>, double2, float4>;

template <class T>
__device__ __forceinline__ void add_vector(BlockAccumulator<T>& acc, ThreadState<T>& s, const Vector<T>& v,
                                           int window_bits) {
  if constexpr (std::is_same_v<T, double>) {
    add_element(acc, s, v.x, window_bits);
    add_element(acc, s, v.y, window_bits);
  } else {
    add_element(acc, s, v.x, window_bits);
    add_element(acc, s, v.y, window_bits);
    add_element(acc, s, v.z, window_bits);
    add_element(acc, s, v.w, window_bits);
  }
}

template <class T>
__global__ void __launch_bounds__(ExactSumTuning::kThreads)
    exact_sum_block_kernel(const T* __restrict__ in, index_t n, int window_bits, Fields* __restrict__ partials) {
  constexpr int kFields = ExactAccumulator<T>::kFields;
  constexpr int kLimbs = ExactSumFormat<T>::kLimbs;
  __shared__ BlockAccumulator<T> acc;
  auto* shared_fields = reinterpret_cast<unsigned long long*>(&acc);
  constexpr int kSharedFields = sizeof(BlockAccumulator<T>) / sizeof(unsigned long long);
  for (int i = threadIdx.x; i < kSharedFields; i += blockDim.x) shared_fields[i] = 0;
  __syncthreads();

  ThreadState<T> s;
  const index_t thread = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  constexpr int kVec = static_cast<int>(sizeof(Vector<T>) / sizeof(T));
  index_t scalar_begin = 0;
  if (detail::is_aligned(in, sizeof(Vector<T>))) {
    const index_t vectors = n / kVec;
    const auto* vin = reinterpret_cast<const Vector<T>*>(in);
    index_t i = thread;
    // Two loads in flight before the data-dependent work on either.
    for (; i + stride < vectors; i += 2 * stride) {
      const Vector<T> a = __ldg(vin + i);
      const Vector<T> b = __ldg(vin + i + stride);
      add_vector(acc, s, a, window_bits);
      add_vector(acc, s, b, window_bits);
    }
    if (i < vectors) add_vector(acc, s, __ldg(vin + i), window_bits);
    scalar_begin = vectors * kVec;
  }
  for (index_t i = scalar_begin + thread; i < n; i += stride) add_element(acc, s, __ldg(in + i), window_bits);

  flush_window<T>(acc, s.window, s.base);
  if (s.nan_count) atomicAdd(&acc.nan_count, s.nan_count);
  if (s.pos_inf_count) atomicAdd(&acc.pos_inf_count, s.pos_inf_count);
  if (s.neg_inf_count) atomicAdd(&acc.neg_inf_count, s.neg_inf_count);
  if (s.non_neg_zero_count) atomicAdd(&acc.non_neg_zero_count, s.non_neg_zero_count);
  __syncthreads();

  if (threadIdx.x == 0) {
    ExactAccumulator<T> out;
    for (int i = 0; i < kLimbs; ++i) out.limb[i] = static_cast<std::int64_t>(acc.limb[i]);
    out.nan_count = static_cast<std::int64_t>(acc.nan_count);
    out.pos_inf_count = static_cast<std::int64_t>(acc.pos_inf_count);
    out.neg_inf_count = static_cast<std::int64_t>(acc.neg_inf_count);
    out.count = 0;  // the finishing kernel sets the total
    out.non_neg_zero_count = static_cast<std::int64_t>(acc.non_neg_zero_count);
    exact_sum_normalize(out);
    const Fields* f = reinterpret_cast<const Fields*>(&out);
    for (int i = 0; i < kFields; ++i) partials[static_cast<index_t>(blockIdx.x) * kFields + i] = f[i];
  }
}

// One thread per field: sums the normalized partials of all blocks, then one thread normalizes.
template <class T>
__global__ void exact_sum_finish_kernel(const Fields* __restrict__ partials, int blocks, index_t n,
                                        ExactAccumulator<T>* out) {
  constexpr int kFields = ExactAccumulator<T>::kFields;
  Fields* fields = reinterpret_cast<Fields*>(out);
  for (int f = threadIdx.x; f < kFields; f += blockDim.x) {
    Fields total = 0;
    for (int b = 0; b < blocks; ++b) total += partials[static_cast<index_t>(b) * kFields + f];
    fields[f] = total;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    out->count = n;
    exact_sum_normalize(*out);
  }
}

}  // namespace

template <class T>
void exact_sum_partial(const T* in, index_t n, ExactAccumulator<T>* acc_out, StreamHandle stream_handle) {
  using Tuning = ExactSumTuning;
  constexpr int kFields = ExactAccumulator<T>::kFields;
  const cudaStream_t stream = detail::to_cuda(stream_handle);
  const detail::DeviceInfo& info = detail::current_device_info();
  const int resident = info.sm_count * detail::blocks_per_sm<exact_sum_block_kernel<T>>(Tuning::kThreads);
  const index_t needed_for_headroom = detail::ceil_div<index_t>(n, Tuning::kMaxBlockElements);
  const index_t wanted = std::max<index_t>(1, std::min<index_t>(resident, detail::ceil_div<index_t>(n, Tuning::kThreads)));
  const index_t blocks = std::max<index_t>(wanted, needed_for_headroom);
  TESSERA_ASSERT(blocks <= INT_MAX, "exact_sum: too many thread blocks");

  // The window holds a thread's whole share without overflow: per-thread count < 2^(headroom-1),
  // each term < 2^(precision + window_bits), and the 128-bit window keeps one bit for the sign.
  // (+ 8: a thread's grid-stride share of whole vectors plus the scalar tail can exceed the even split.)
  const index_t per_thread = detail::ceil_div<index_t>(n, blocks * Tuning::kThreads) + 8;
  int headroom = 1;
  while ((index_t(1) << (headroom - 1)) <= per_thread && headroom < 62) ++headroom;
  const int window_bits = 127 - ExactSumFormat<T>::kPrecision - headroom;

  Fields* partials = nullptr;
  const std::size_t partial_bytes = static_cast<std::size_t>(blocks) * kFields * sizeof(Fields);
  TESSERA_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&partials), partial_bytes, stream));
  exact_sum_block_kernel<T><<<static_cast<unsigned>(blocks), Tuning::kThreads, 0, stream>>>(in, n, window_bits,
                                                                                            partials);
  TESSERA_CUDA_CHECK_LAUNCH();
  exact_sum_finish_kernel<T><<<1, 128, 0, stream>>>(partials, static_cast<int>(blocks), n, acc_out);
  TESSERA_CUDA_CHECK_LAUNCH();
  TESSERA_CUDA_CHECK(cudaFreeAsync(partials, stream));
}

template void exact_sum_partial<float>(const float*, index_t, ExactAccumulator<float>*, StreamHandle);
template void exact_sum_partial<double>(const double*, index_t, ExactAccumulator<double>*, StreamHandle);

}  // namespace tessera::kernels::cuda
