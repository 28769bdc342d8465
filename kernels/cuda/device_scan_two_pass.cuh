// Device-wide prefix sum in two passes (reduce, then scan), for callers that need the total of the
// input between the passes: the distributed scan sends its block total to the other ranks there.
//
//   pass 1 (scan_totals): one thread block per segment of kTilesPerSegment tiles sums its segment;
//     one block then turns the segment sums into their exclusive prefix and writes the total.
//   pass 2 (scan_from_totals): one thread block per segment scans its tiles in order, seeded with
//     carry_in + the segment's prefix. The tile arrangement is the single-pass scan's
//     (device_scan.cuh), but a tile's prefix is the block's running sum: no look-back, no tile
//     status, no dependence between thread blocks.
//
// Traffic: n reads in pass 1, n reads and n writes in pass 2 - the 3N that a reduce followed by a
// seeded single-pass scan also moves. What changes is the scan pass: the single-pass scan's warps
// wait at a barrier while one warp looks back over its predecessors (ncu: the top stall), and that
// latency, not bandwidth, held it at 71-74% of the copy rate on an H200.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tessera/kernels/cuda/block.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/device_scan.cuh"
#include "tessera/kernels/cuda/tuning/scan.cuh"
#include "tessera/kernels/cuda/ops.cuh"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"

namespace tessera::kernels::cuda::detail {

template <class T>
index_t two_pass_scan_segments(index_t n) {
  return ceil_div<index_t>(n, TwoPassScanTuning<T>::kSegmentItems);
}

// Pass 1a: partials[s] = the sum of segment s.
template <class T>
__global__ void __launch_bounds__(TwoPassScanTuning<T>::kReduceThreads)
    segment_sums_kernel(const T* __restrict__ in, index_t n, T* __restrict__ partials, bool vector_in) {
  using Tuning = TwoPassScanTuning<T>;
  constexpr int kThreads = Tuning::kReduceThreads;
  constexpr int kLoads = Tuning::kReduceLoads;
  constexpr int kItems = Vector<T>::kItems;
  __shared__ T warp_partials[kThreads / kWarpThreads];
  const Sum sum;
  const index_t begin = static_cast<index_t>(blockIdx.x) * Tuning::kSegmentItems;
  const index_t end = std::min(n, begin + Tuning::kSegmentItems);
  T acc[kLoads];
#pragma unroll
  for (int k = 0; k < kLoads; ++k) acc[k] = T(0);
  if (vector_in && end - begin == Tuning::kSegmentItems) {
    constexpr index_t kVectors = Tuning::kSegmentItems / kItems;
    static_assert(kVectors % (kThreads * kLoads) == 0, "a full segment is whole trips of every thread");
    for (index_t i = threadIdx.x; i < kVectors; i += kThreads * kLoads) {
      Vector<T> v[kLoads];
#pragma unroll
      for (int k = 0; k < kLoads; ++k) v[k] = load_vector_readonly(in + begin + (i + k * kThreads) * kItems);
#pragma unroll
      for (int k = 0; k < kLoads; ++k)
#pragma unroll
        for (int e = 0; e < kItems; ++e) acc[k] = sum(acc[k], v[k].item[e]);
    }
  } else {
    // A partial segment or unaligned input: the same kLoads accumulators, so that no element meets
    // more additions than in a full segment (scan_rounding's segment_depth).
    for (index_t i = begin + threadIdx.x; i < end; i += kThreads * kLoads)
#pragma unroll
      for (int k = 0; k < kLoads; ++k)
        if (i + k * kThreads < end) acc[k] = sum(acc[k], in[i + k * kThreads]);
  }
  T total = acc[0];
#pragma unroll
  for (int k = 1; k < kLoads; ++k) total = sum(total, acc[k]);
  total = block_reduce<kThreads>(total, sum, T(0), warp_partials);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Pass 1b, one thread block: partials become their exclusive prefix (in place), *total their sum.
template <class T>
__global__ void __launch_bounds__(TwoPassScanTuning<T>::kPrefixThreads)
    segment_prefix_kernel(T* __restrict__ partials, index_t segments, T* __restrict__ total) {
  constexpr int kThreads = TwoPassScanTuning<T>::kPrefixThreads;
  constexpr int kWarps = kThreads / kWarpThreads;
  __shared__ T warp_totals[kWarps];
  __shared__ T chunk_total;
  const Sum sum;
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const int lane = lane_id();
  T running = T(0);  // the same in every thread
  for (index_t base = 0; base < segments; base += kThreads) {
    const index_t i = base + threadIdx.x;
    const T x = i < segments ? partials[i] : T(0);
    const T inclusive = warp_inclusive_scan(x, sum);
    if (lane == kWarpThreads - 1) warp_totals[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
      const T w = lane < kWarps ? warp_totals[lane] : T(0);
      const T w_inclusive = warp_inclusive_scan(w, sum);
      const T w_exclusive = warp_shift_exclusive(w_inclusive, T(0));  // all 32 lanes: a full-mask shuffle
      if (lane < kWarps) warp_totals[lane] = w_exclusive;
      if (lane == kWarpThreads - 1) chunk_total = w_inclusive;
    }
    __syncthreads();
    // The shuffle runs in all lanes: inside `if (i < segments)` it was a divergent full-mask
    // shuffle, which hung whenever the segment count left a warp partly empty.
    const T exclusive = warp_shift_exclusive(inclusive, T(0));
    if (i < segments) partials[i] = sum(running, sum(warp_totals[warp], exclusive));
    running = sum(running, chunk_total);
    __syncthreads();  // warp_totals and chunk_total are rewritten by the next chunk
  }
  if (threadIdx.x == 0) *total = running;
}

// Pass 2: one block per segment, its tiles in order, seeded with carry_in + the segment's prefix.
template <class T, ScanKind Kind>
__global__ void __launch_bounds__(ScanTuning<T>::kBlockThreads, ScanTuning<T>::kMinBlocksPerSm)
    segment_scan_kernel(const T* in, T* out, index_t n, T carry_in, const T* __restrict__ segment_prefix,
                        bool vector_io) {
  using Tuning = ScanTuning<T>;
  constexpr int kWarps = Tuning::kBlockThreads / kWarpThreads;
  constexpr int kV = Tuning::kVectorsPerThread;
  __shared__ T warp_totals[kWarps];
  __shared__ T warp_prefixes[kWarps];
  const Sum sum;
  const T zero = T(0);
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const int lane = lane_id();
  const index_t segment_base = static_cast<index_t>(blockIdx.x) * TwoPassScanTuning<T>::kSegmentItems;
  T running = sum(carry_in, segment_prefix[blockIdx.x]);  // used by warp 0 only

  for (int t = 0; t < TwoPassScanTuning<T>::kTilesPerSegment; ++t) {
    const index_t tile_base = segment_base + static_cast<index_t>(t) * Tuning::kTileItems;
    if (tile_base >= n) break;  // the same in every thread of the block
    const index_t warp_base = tile_base + static_cast<index_t>(warp) * Tuning::kWarpItems;
    const bool full_vector_tile = vector_io && tile_base + Tuning::kTileItems <= n;

    // The whole tile is in registers before the first barrier and written after the second: in
    // place is safe, and no other block touches this segment.
    Vector<T> items[kV];
    load_warp_items<Tuning>(in, warp_base, n, full_vector_tile, items, zero);
    T lane_prefix[kV];
    const T warp_carry = warp_scan_items<Tuning>(items, lane_prefix, sum);
    if (lane == 0) warp_totals[warp] = warp_carry;
    __syncthreads();

    if (warp == 0) {
      const T warp_total = lane < kWarps ? warp_totals[lane] : zero;
      const T inclusive = warp_inclusive_scan(warp_total, sum);
      const T exclusive = warp_shift_exclusive(inclusive, zero);  // all 32 lanes: a full-mask shuffle
      if (lane < kWarps) warp_prefixes[lane] = sum(running, exclusive);
      running = sum(running, warp_broadcast(inclusive, kWarpThreads - 1));
    }
    __syncthreads();

    store_warp_scan<Tuning, Kind>(out, warp_base, n, full_vector_tile, items, lane_prefix, warp_prefixes[warp], sum);
  }
}

template <class T>
void device_scan_totals(const T* in, index_t n, T* segment_prefix, T* total, StreamHandle stream) {
  using Tuning = TwoPassScanTuning<T>;
  const index_t segments = two_pass_scan_segments<T>(n);
  TESSERA_ASSERT(segments <= 0x7fffffff, "scan_totals: more segments than one grid can hold");
  if (segments > 0) {
    segment_sums_kernel<T><<<static_cast<unsigned>(segments), Tuning::kReduceThreads, 0, to_cuda(stream)>>>(
        in, n, segment_prefix, is_aligned(in, kVectorBytes));
    TESSERA_CUDA_CHECK_LAUNCH();
  }
  segment_prefix_kernel<T><<<1, Tuning::kPrefixThreads, 0, to_cuda(stream)>>>(segment_prefix, segments, total);
  TESSERA_CUDA_CHECK_LAUNCH();
}

template <class T>
void device_scan_from_totals(const T* in, T* out, index_t n, ScanKind kind, T carry_in, const T* segment_prefix,
                             StreamHandle stream) {
  const index_t segments = two_pass_scan_segments<T>(n);
  if (segments == 0) return;
  TESSERA_ASSERT(segments <= 0x7fffffff, "scan_from_totals: more segments than one grid can hold");
  const bool vector_io = is_aligned(in, kVectorBytes) && is_aligned(out, kVectorBytes);
  const auto grid = static_cast<unsigned>(segments);
  constexpr int kThreads = ScanTuning<T>::kBlockThreads;
  if (kind == ScanKind::inclusive) {
    segment_scan_kernel<T, ScanKind::inclusive>
        <<<grid, kThreads, 0, to_cuda(stream)>>>(in, out, n, carry_in, segment_prefix, vector_io);
  } else {
    segment_scan_kernel<T, ScanKind::exclusive>
        <<<grid, kThreads, 0, to_cuda(stream)>>>(in, out, n, carry_in, segment_prefix, vector_io);
  }
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda::detail
