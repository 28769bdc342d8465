// CUDA exact sum (the format is in tessera/kernels/exact_sum.hpp).
//
// Three levels, so that the common case costs a few floating-point additions per element and no
// memory traffic beyond the input:
//  - per thread, floating-point expansions in registers (ExBLAS, Collange et al. 2015): a0 + a1 +
//    a2 holds the running sum exactly, a0 in the element type, a1 and a2 in double. An element
//    enters a0 by Fast2Sum on the operands ordered by magnitude (error-free as long as nothing
//    overflows), and a1 takes the exact rounding error with one addition when that addition is
//    exact, which two subtractions prove; only when it is not does a TwoSum hand the error of the
//    error to a2. What is left after a2 (rare: data spread over very many binades within one
//    thread's share) goes to the block's superaccumulator. Float errors are exact in double, and
//    all these sums are multiples of 2^-149. Elements at or above 2^100 (float) or 2^960 (double),
//    and inf/NaN, skip the expansion (one integer test of the exponent field, once per float4 for
//    floats), so that no thread's a0 can overflow. At the end the two chains of a thread and then
//    the 32 lanes of a warp are merged exactly (by the same additions), and one lane per warp
//    deposits.
//  - the slow path, for those skipped elements: a 128-bit two's complement fixed-point "window" in
//    registers, anchored at a bit position `base` of the superaccumulator, that takes an element
//    with one shift and one 128-bit add, or, out of its range, the superaccumulator directly.
//  - per thread block, the full superaccumulator in shared memory, reached by atomics: the
//    expansions' overflow, and at the end each thread's expansion terms and window.
// At the end of the block the shared limbs are normalized and written as one partial per block;
// a second one-block kernel adds the normalized partials limb by limb (exact in int64, as each
// normalized limb is below 2^32; one warp per field) and normalizes the result. No host-side loop
// over partials. The result does not depend on the grid, the order or the device: it is exact.
//
// Signed zeros: a0 starts at -0 and stays -0 exactly as long as every element added to it was -0
// (IEEE round to nearest: -0 + -0 = -0, -0 + +0 = +0, x + -x = +0, and nothing leaves +0 or a
// non-zero value for -0), which is all the accumulator's non_neg_zero_count has to tell.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "../src/exact_sum_backends.hpp"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/stream_workspace.hpp"
#include "tessera/kernels/cuda/tuning/exact_sum.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::kernels::cuda {
namespace {

using detail::ExactSumTuning;
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

// ---------------------------------------------------------------------------------------------
// Level 1: floating-point expansions.

// Round-to-nearest addition and subtraction that the compiler may not contract or reorder.
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }

// Knuth's TwoSum: s + err == a + b exactly, s = fl(a + b), whatever the magnitudes (no overflow).
template <class F>
__device__ __forceinline__ F two_sum(F a, F b, F& err) {
  const F s = add_rn(a, b);
  const F b_virtual = sub_rn(s, a);
  const F a_virtual = sub_rn(s, b_virtual);
  err = add_rn(sub_rn(a, a_virtual), sub_rn(b, b_virtual));
  return s;
}

// Dekker's Fast2Sum with the operands ordered first: s + err == a + b exactly, s = fl(a + b). Three
// additions and a comparison where TwoSum takes six additions, and a shorter chain.
template <class F>
__device__ __forceinline__ F ordered_fast_two_sum(F a, F b, F& err) {
  const F s = add_rn(a, b);
  const bool a_larger = fabs(a) >= fabs(b);
  const F larger = a_larger ? a : b;
  const F smaller = a_larger ? b : a;
  err = sub_rn(smaller, sub_rn(s, larger));
  return s;
}

// A finite double whose bits are multiples of T's smallest subnormal (true of every sum and
// rounding error of T elements), deposited into the block superaccumulator.
// Not inlined: it is off the hot path, and inlining it at every call site costs registers there.
template <class T>
__device__ __noinline__ void deposit_term(BlockAccumulator<T>& acc, double v) {
  if (v == 0) return;
  const ExactSumElement e = exact_sum_decompose(v);  // position counts from 2^-1074
  int position = e.position + (ExactSumFormat<double>::kLsbExponent - ExactSumFormat<T>::kLsbExponent);
  std::uint64_t magnitude = e.magnitude;
  if (position < 0) {  // float grid: the bits below 2^-149 are zero, so this shift is exact
    magnitude >>= -position;
    position = 0;
  }
  atomic_deposit<T>(acc, magnitude, position, e.negative);
}

__device__ __forceinline__ bool is_negative_zero(float x) { return __float_as_uint(x) == 0x80000000u; }
__device__ __forceinline__ bool is_negative_zero(double x) {
  return static_cast<unsigned long long>(__double_as_longlong(x)) == 0x8000000000000000ull;
}

// The leading term is in the element type: for float input its addition runs in FP32, at twice
// the FP64 rate; its error, exact in double, enters the double terms.
template <class T>
struct Expansion {
  T a0 = -T(0);  // see the note on signed zeros above
  double a1 = 0.0;
  double a2 = 0.0;

  __device__ __forceinline__ void add(BlockAccumulator<T>& acc, T x) {
    T e0;
    a0 = ordered_fast_two_sum(a0, x, e0);
    add_to_tail(acc, static_cast<double>(e0));
  }

  // Adds d (a sum or error of T elements) to a1 and a2; what they cannot hold goes to acc.
  // s = fl(a1 + d) is exact iff s - a1 == d and s - d == a1: an exact s passes both; an inexact one
  // fails the test whose subtrahend is the larger operand, as that subtraction is exact (Dekker's
  // lemma). Five FP64 operations on the common path where TwoSum and its test took seven.
  __device__ __forceinline__ void add_to_tail(BlockAccumulator<T>& acc, double d) {
    const double s = add_rn(a1, d);
    if (sub_rn(s, a1) == d && sub_rn(s, d) == a1) {
      a1 = s;
      return;
    }
    // The error of the error: rare unless the data spans very many binades.
    double e1;
    a1 = two_sum(a1, d, e1);
    double e2;
    a2 = two_sum(a2, e1, e2);
    if (e2 != 0) deposit_term<T>(acc, e2);
  }

  // this += other, exactly (sums of whole shares stay far below the overflow bound too).
  __device__ __forceinline__ void merge(BlockAccumulator<T>& acc, const Expansion& other) {
    add(acc, other.a0);
    add_to_tail(acc, other.a1);
    add_to_tail(acc, other.a2);
  }

  // Tree-merges the warp's expansions into lane 0's (every lane of the warp must call this).
  __device__ __forceinline__ void merge_warp(BlockAccumulator<T>& acc) {
    const unsigned lane = threadIdx.x % 32;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
      Expansion other;
      other.a0 = __shfl_down_sync(0xffffffffu, a0, offset);
      other.a1 = __shfl_down_sync(0xffffffffu, a1, offset);
      other.a2 = __shfl_down_sync(0xffffffffu, a2, offset);
      if (lane < static_cast<unsigned>(offset)) merge(acc, other);
    }
  }

  __device__ __forceinline__ void flush(BlockAccumulator<T>& acc, unsigned long long& non_neg_zero_count) const {
    // a0 is -0 only if every element it took was -0: then nothing else is non-zero either.
    if (!is_negative_zero(a0)) non_neg_zero_count += 1;
    deposit_term<T>(acc, static_cast<double>(a0));
    deposit_term<T>(acc, a1);
    deposit_term<T>(acc, a2);
  }
};

// Elements the expansions may take: finite and below 2^100 (float) or 2^960 (double), so that no
// leading term can overflow: a warp merges the shares of its 32 lanes, 32 / threads of a block's
// at most kMaxBlockElements (2^28) elements; with at least 8 warps a block that is at most 2^25
// elements (and a few from the tail), each below 2^100, so every partial sum stays below 2^125
// times the growth of a lane's roundings ((1 + 2^-24)^(2^20) < 1.07) and of the merge's five
// levels: far below 2^128. One integer test on the exponent field.
static_assert(ExactSumTuning::kMaxBlockElements <= (index_t(1) << 28) &&
                  ExactSumTuning::threads<float>() >= 8 * 32 && ExactSumTuning::threads<double>() >= 8 * 32,
              "the overflow bound of the expansions assumes at most 2^28 elements a block and 8 warps");
__device__ __forceinline__ bool expansion_takes(float x) {
  constexpr unsigned kLimit = (127u + 100u) << 23;  // biased exponent of 2^100
  return (__float_as_uint(x) & 0x7f800000u) < kLimit;
}
__device__ __forceinline__ bool expansion_takes(double x) {
  constexpr unsigned kLimit = (1023u + 960u) << 20;  // biased exponent of 2^960, in the high word
  return (static_cast<unsigned>(__double2hiint(x)) & 0x7ff00000u) < kLimit;
}

// The slow path, out of line for the same reason as deposit_term.
template <class T>
__device__ __noinline__ void add_slow(BlockAccumulator<T>& acc, ThreadState<T>& s, T x, int window_bits) {
  add_element(acc, s, x, window_bits);
}

// Per thread: two independent expansion chains (twice the additions in flight) and the slow
// path's state. Kept as separate objects: the slow state's address escapes into add_slow, which
// puts that object in local memory, and the expansions must stay in registers.
template <class T>
__device__ __forceinline__ void add_fast(BlockAccumulator<T>& acc, Expansion<T>& chain, ThreadState<T>& slow, T x,
                                         int window_bits) {
  if (expansion_takes(x)) chain.add(acc, x);
  else add_slow(acc, slow, x, window_bits);
}

template <class T>
using Vector = std::conditional_t<std::is_same_v<T, double>, double2, float4>;

template <class T>
__device__ __forceinline__ void add_vector(BlockAccumulator<T>& acc, Expansion<T>& even, Expansion<T>& odd,
                                           ThreadState<T>& slow, const Vector<T>& v, int window_bits) {
  if constexpr (std::is_same_v<T, double>) {
    add_fast(acc, even, slow, v.x, window_bits);
    add_fast(acc, odd, slow, v.y, window_bits);
  } else {
    // One test for the four: the largest magnitude's exponent field (the limit has no fraction bits).
    constexpr unsigned kLimit = (127u + 100u) << 23;
    constexpr unsigned kMagnitude = 0x7fffffffu;
    const unsigned largest = max(max(__float_as_uint(v.x) & kMagnitude, __float_as_uint(v.y) & kMagnitude),
                                 max(__float_as_uint(v.z) & kMagnitude, __float_as_uint(v.w) & kMagnitude));
    if (largest < kLimit) {
      even.add(acc, v.x);
      odd.add(acc, v.y);
      even.add(acc, v.z);
      odd.add(acc, v.w);
      return;
    }
    add_fast(acc, even, slow, v.x, window_bits);
    add_fast(acc, odd, slow, v.y, window_bits);
    add_fast(acc, even, slow, v.z, window_bits);
    add_fast(acc, odd, slow, v.w, window_bits);
  }
}

template <class T>
__global__ void __launch_bounds__(ExactSumTuning::threads<T>(), ExactSumTuning::kMinBlocksPerSm)
    exact_sum_block_kernel(const T* __restrict__ in, index_t n, int window_bits, Fields* __restrict__ partials) {
  constexpr int kFields = ExactAccumulator<T>::kFields;
  constexpr int kLimbs = ExactSumFormat<T>::kLimbs;
  constexpr int kLoads = ExactSumTuning::loads_in_flight<T>();
  __shared__ BlockAccumulator<T> acc;
  auto* shared_fields = reinterpret_cast<unsigned long long*>(&acc);
  constexpr int kSharedFields = sizeof(BlockAccumulator<T>) / sizeof(unsigned long long);
  for (int i = threadIdx.x; i < kSharedFields; i += blockDim.x) shared_fields[i] = 0;
  __syncthreads();

  Expansion<T> even, odd;
  ThreadState<T> slow;
  const index_t thread = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  constexpr int kVec = static_cast<int>(sizeof(Vector<T>) / sizeof(T));
  index_t scalar_begin = 0;
  if (detail::is_aligned(in, sizeof(Vector<T>))) {
    const index_t vectors = n / kVec;
    const auto* vin = reinterpret_cast<const Vector<T>*>(in);
    index_t i = thread;
    // Software pipelined: the next trip's kLoads 16-byte loads are in flight while this trip's
    // elements are added, so that no warp waits on memory between its trips. Grid-strided: the
    // reduce's even share (each block one run of consecutive vectors) measured 2-5% slower for this
    // kernel, one wave of blocks (H200, 2^28 and 2^30).
    Vector<T> current[kLoads], next[kLoads];
    bool full = i + (kLoads - 1) * stride < vectors;
    if (full) {
#pragma unroll
      for (int k = 0; k < kLoads; ++k) current[k] = __ldg(vin + i + k * stride);
    }
    while (full) {
      const index_t i_next = i + kLoads * stride;
      const bool full_next = i_next + (kLoads - 1) * stride < vectors;
      if (full_next) {
#pragma unroll
        for (int k = 0; k < kLoads; ++k) next[k] = __ldg(vin + i_next + k * stride);
      }
#pragma unroll
      for (int k = 0; k < kLoads; ++k) add_vector(acc, even, odd, slow, current[k], window_bits);
#pragma unroll
      for (int k = 0; k < kLoads; ++k) current[k] = next[k];
      i = i_next;
      full = full_next;
    }
    for (; i < vectors; i += stride) add_vector(acc, even, odd, slow, __ldg(vin + i), window_bits);
    scalar_begin = vectors * kVec;
  }
  for (index_t i = scalar_begin + thread; i < n; i += stride) add_fast(acc, even, slow, __ldg(in + i), window_bits);

  // One lane per warp deposits: a block's threads x 2 chains depositing into the same few limbs made
  // shared-atomic contention a fixed cost of tens of microseconds per call.
  even.merge(acc, odd);
  even.merge_warp(acc);
  if (threadIdx.x % 32 == 0) even.flush(acc, slow.non_neg_zero_count);
  flush_window<T>(acc, slow.window, slow.base);
  if (slow.nan_count) atomicAdd(&acc.nan_count, slow.nan_count);
  if (slow.pos_inf_count) atomicAdd(&acc.pos_inf_count, slow.pos_inf_count);
  if (slow.neg_inf_count) atomicAdd(&acc.neg_inf_count, slow.neg_inf_count);
  if (slow.non_neg_zero_count) atomicAdd(&acc.non_neg_zero_count, slow.non_neg_zero_count);
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

// The threads form rows of kFields (one thread per field); row r adds the partials of blocks r,
// r + rows, ... with eight loads in flight (a warp per field striding over the blocks one load at a
// time took 8-11 us, a dozen dependent L2 round trips); then one thread per field adds the rows.
// Exact in int64: fewer than 2^31 partials, each field below 2^32 but the top limb, which is
// small. Then one thread normalizes.
template <class T>
__global__ void __launch_bounds__(ExactSumTuning::kFinishThreads)
    exact_sum_finish_kernel(const Fields* __restrict__ partials, int blocks, index_t n, ExactAccumulator<T>* out) {
  constexpr int kFields = ExactAccumulator<T>::kFields;
  constexpr int kRows = ExactSumTuning::kFinishThreads / kFields;
  constexpr int kLoads = ExactSumTuning::kFinishLoads;
  static_assert(kRows >= 1, "one row of threads must cover the fields");
  __shared__ Fields row_sums[kRows][kFields];
  Fields* fields = reinterpret_cast<Fields*>(out);
  const int field = static_cast<int>(threadIdx.x) % kFields;
  const int row = static_cast<int>(threadIdx.x) / kFields;
  if (row < kRows) {
    Fields total = 0;
    for (int b = row; b < blocks; b += kLoads * kRows) {
      Fields loaded[kLoads];
#pragma unroll
      for (int u = 0; u < kLoads; ++u) {
        const int block = b + u * kRows;
        loaded[u] = block < blocks ? partials[static_cast<index_t>(block) * kFields + field] : 0;
      }
#pragma unroll
      for (int u = 0; u < kLoads; ++u) total += loaded[u];
    }
    row_sums[row][field] = total;
  }
  // The result is built and normalized in shared memory and stored once, field by field: `out`
  // may be host memory the device reaches through unified addressing (the framework's reproducible
  // sum passes a pinned host buffer), where normalizing in place would be a chain of bus round trips.
  __shared__ ExactAccumulator<T> result;
  Fields* result_fields = reinterpret_cast<Fields*>(&result);
  __syncthreads();
  if (threadIdx.x < kFields) {
    Fields total = 0;
    for (int r = 0; r < kRows; ++r) total += row_sums[r][threadIdx.x];
    result_fields[threadIdx.x] = total;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    result.count = n;
    exact_sum_normalize(result);
  }
  __syncthreads();
  if (threadIdx.x < kFields) fields[threadIdx.x] = result_fields[threadIdx.x];
}

}  // namespace

template <class T>
void exact_sum_partial(const Queue& queue, const T* in, index_t n, ExactAccumulator<T>* acc_out) {
  using Tuning = ExactSumTuning;
  constexpr int kFields = ExactAccumulator<T>::kFields;
  const cudaStream_t stream = detail::to_cuda(queue.stream);
  const detail::DeviceInfo& info = detail::current_device_info();
  constexpr int kThreads = Tuning::threads<T>();
  const int resident = info.sm_count * detail::blocks_per_sm<exact_sum_block_kernel<T>>(kThreads);
  const index_t needed_for_headroom = detail::ceil_div<index_t>(n, Tuning::kMaxBlockElements);
  const index_t wanted = std::max<index_t>(1, std::min<index_t>(resident, detail::ceil_div<index_t>(n, kThreads)));
  const index_t blocks = std::max<index_t>(wanted, needed_for_headroom);
  TESSERA_ASSERT(blocks <= INT_MAX, "exact_sum: too many thread blocks");

  // The window holds a thread's whole share without overflow: per-thread count < 2^(headroom-1),
  // each term < 2^(precision + window_bits), and the 128-bit window keeps one bit for the sign.
  // (+ 8: a thread's grid-stride share of whole vectors plus the scalar tail can exceed the even split.)
  const index_t per_thread = detail::ceil_div<index_t>(n, blocks * kThreads) + 8;
  int headroom = 1;
  while ((index_t(1) << (headroom - 1)) <= per_thread && headroom < 62) ++headroom;
  const int window_bits = 127 - ExactSumFormat<T>::kPrecision - headroom;

  // The partials in the stream's workspace: no allocation before the launch (stream_workspace.hpp).
  const detail::StreamScratch scratch(queue.device, stream,
                                      static_cast<std::size_t>(blocks) * kFields * sizeof(Fields));
  auto* const partials = static_cast<Fields*>(scratch.scratch());
  exact_sum_block_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(in, n, window_bits, partials);
  TESSERA_CUDA_CHECK_LAUNCH();
  exact_sum_finish_kernel<T><<<1, Tuning::kFinishThreads, 0, stream>>>(partials, static_cast<int>(blocks), n, acc_out);
  TESSERA_CUDA_CHECK_LAUNCH();
}

template void exact_sum_partial<float>(const Queue&, const float*, index_t, ExactAccumulator<float>*);
template void exact_sum_partial<double>(const Queue&, const double*, index_t, ExactAccumulator<double>*);

}  // namespace tessera::kernels::cuda
