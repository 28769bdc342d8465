// scan: the precompiled device-wide prefix sums: the generic one-pass scan (device_scan.cuh) with
// plus, and the two-pass form (device_scan_two_pass.cuh).
#include <cstdint>

#include "cuda_backend.hpp"
#include "tessera/kernels/cuda/device_scan.cuh"
#include "device_scan_two_pass.cuh"

namespace tessera::kernels::cuda {

template <class T>
void scan(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, T carry_in) {
  detail::device_scan(queue, in, out, n, kind, tessera::plus{}, carry_in);
}

template <class T>
index_t scan_segment_count(index_t n) {
  return detail::two_pass_scan_segments<T>(n);
}

template <class T>
void scan_totals(const Queue& queue, const T* in, index_t n, T* segment_prefix, T* total) {
  detail::device_scan_totals(in, n, segment_prefix, total, queue.stream);
}

template <class T>
void scan_from_totals(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, T carry_in,
                      const T* segment_prefix) {
  detail::device_scan_from_totals(in, out, n, kind, carry_in, segment_prefix, queue.stream);
}

// The rounding structure of the two-pass scan (device_scan_two_pass.cuh), as scan.hpp describes it:
//   run: a thread's vector is scanned element by element from its seed, s = (running + the warp's
//     exclusive prefix) + (the warp's carry + the lane's exclusive prefix);
//   tile_depth: an element reaches a seed or a tile total through its vector's fold
//     (kVectorItems - 1), the lanes' scan (5), the warp carry's chain over the steps
//     (kVectorsPerThread) and the warps' scan (5), or the lane prefix's addition (1);
//   between seeds of one tile: the warp prefix, the seed and the output on each side (6); at a tile
//     start, the running sum instead of the first two on j's side (5);
//   segment_depth: pass 1 folds kSegmentItems / (kReduceThreads kReduceLoads) elements into each of
//     a thread's kReduceLoads accumulators, folds those (kReduceLoads - 1) and reduces the block (10);
//   at a segment start: carry-in + segment prefix and the output on j's side, on a's the carry-in +
//     the previous segment's prefix, its running sum over kTilesPerSegment - 1 tiles, the warp
//     prefix, the seed and the output (kTilesPerSegment + 5);
//   prefix_roundings: two consecutive segment prefixes from pass 1b differ by the nodes of the lane
//     scans (at most 31 + 30) and of the warps' scan (31 + 30) that lead to them, and 3 additions
//     on each side; prefix_depth: the two scans (5 + 5) and the two additions, with the running
//     total of each chunk of kPrefixThreads segments.
template <class T>
ScanRounding scan_rounding() {
  using Tuning = detail::TwoPassScanTuning<T>;
  using Tile = typename Tuning::Tile;
  ScanRounding r;
  r.run = Tile::kVectorItems;
  r.tile = Tile::kTileItems;
  r.segment = Tuning::kSegmentItems;
  r.tile_depth = Tile::kVectorItems - 1 + 5 + Tile::kVectorsPerThread + 5 + 1;
  r.segment_depth = static_cast<int>(Tuning::kSegmentItems / (Tuning::kReduceThreads * Tuning::kReduceLoads)) +
                    Tuning::kReduceLoads - 1 + 10;
  r.run_roundings = 6;
  r.tile_roundings = 6;
  r.segment_roundings = Tuning::kTilesPerSegment + 5;
  r.prefix_roundings = 4 * 31 + 6;
  r.prefix_depth = 5 + 5 + 2;
  r.prefix_chunk = Tuning::kPrefixThreads;
  return r;
}
template ScanRounding scan_rounding<float>();
template ScanRounding scan_rounding<double>();

#define TESSERA_CUDA_TWO_PASS_SCAN(T)                                                               \
  template index_t scan_segment_count<T>(index_t);                                                  \
  template void scan_totals<T>(const Queue&, const T*, index_t, T*, T*);                            \
  template void scan_from_totals<T>(const Queue&, const T*, T*, index_t, ScanKind, T, const T*);
TESSERA_CUDA_TWO_PASS_SCAN(std::int32_t)
TESSERA_CUDA_TWO_PASS_SCAN(std::int64_t)
TESSERA_CUDA_TWO_PASS_SCAN(float)
TESSERA_CUDA_TWO_PASS_SCAN(double)

template void scan<std::int32_t>(const Queue&, const std::int32_t*, std::int32_t*, index_t, ScanKind, std::int32_t);
template void scan<std::int64_t>(const Queue&, const std::int64_t*, std::int64_t*, index_t, ScanKind, std::int64_t);
template void scan<float>(const Queue&, const float*, float*, index_t, ScanKind, float);
template void scan<double>(const Queue&, const double*, double*, index_t, ScanKind, double);

}  // namespace tessera::kernels::cuda
