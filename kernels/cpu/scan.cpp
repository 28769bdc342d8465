// CPU prefix sums: the one-pass entry is the generic scan of cpu/algorithms.hpp with plus (each
// thread sums its chunk, the chunk sums become chunk carry-ins, each thread scans its chunk); the
// two-pass entry keeps fixed segments so that the caller can size the segment prefixes beforehand
// (and so that its rounding does not depend on the thread count: scan_rounding).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_backend.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"
#include "tessera/kernels/cpu/parallel.hpp"

namespace tessera::kernels::cpu {
namespace {

template <class T>
T add(T a, T b) {
  return plus{}(a, b);
}

// A segment's total: the blocked pairwise fold of reduce (cpu/algorithms.hpp), so that its rounding
// error stays within gamma_{fold_depth} * sum|x| of the segment.
template <class T>
T sum_range(const T* in, index_t n) {
  plus op;
  return fold_range(0, n, [in](index_t i) { return in[i]; }, op, T(0));
}

}  // namespace

// The one-pass entry: the generic scan (cpu/algorithms.hpp) with plus.
template <class T>
void scan(const T* in, T* out, index_t n, ScanKind kind, T carry_in) {
  scan(in, out, n, kind, plus{}, carry_in);
}

// Two-pass scan: fixed segments (not one chunk per thread), so that the partials' count is known
// before the call.
constexpr index_t kSegmentItems = index_t(1) << 16;

template <class T>
index_t scan_segment_count(index_t n) {
  return (n + kSegmentItems - 1) / kSegmentItems;
}

template <class T>
void scan_totals(const T* in, index_t n, T* segment_prefix, T* total) {
  const index_t segments = scan_segment_count<T>(n);
#pragma omp parallel for schedule(static) num_threads(threads_for(n))
  for (index_t s = 0; s < segments; ++s) {
    const index_t begin = s * kSegmentItems;
    segment_prefix[s] = sum_range(in + begin, std::min(n, begin + kSegmentItems) - begin);
  }
  T running = T(0);
  for (index_t s = 0; s < segments; ++s) {
    const T segment_sum = segment_prefix[s];
    segment_prefix[s] = running;
    running = add(running, segment_sum);
  }
  *total = running;
}

template <class T>
void scan_from_totals(const T* in, T* out, index_t n, ScanKind kind, T carry_in, const T* segment_prefix) {
  const index_t segments = scan_segment_count<T>(n);
#pragma omp parallel for schedule(static) num_threads(threads_for(n))
  for (index_t s = 0; s < segments; ++s) {
    const index_t begin = s * kSegmentItems;
    plus op;
    scan_range(in + begin, out + begin, std::min(n, begin + kSegmentItems) - begin, kind, op,
               add(carry_in, segment_prefix[s]));
  }
}

// Seeds only at segment starts (inside a segment the scan runs from one element to the next); a
// seed is carry_in + segment_prefix[s] (one rounding), segment_prefix a running sum of segment
// totals (one rounding each), the block total its continuation. Between two seeds: the segment
// total's tree, s_j and s_a, out[j] and out[a] (4 roundings of the seeds' size), one rounding of a
// segment prefix (or of the block total).
template <class T>
ScanRounding scan_rounding() {
  ScanRounding r;
  r.run = r.tile = r.segment = kSegmentItems;
  r.tile_depth = 0;
  r.segment_depth = static_cast<int>(fold_depth(kSegmentItems));
  r.segment_roundings = 4;
  r.prefix_roundings = 1;
  r.prefix_depth = 0;
  r.prefix_chunk = 1;
  return r;
}
template ScanRounding scan_rounding<float>();
template ScanRounding scan_rounding<double>();

#define TESSERA_CPU_TWO_PASS_SCAN(T)                                          \
  template index_t scan_segment_count<T>(index_t);                            \
  template void scan_totals<T>(const T*, index_t, T*, T*);                    \
  template void scan_from_totals<T>(const T*, T*, index_t, ScanKind, T, const T*);
TESSERA_CPU_TWO_PASS_SCAN(std::int32_t)
TESSERA_CPU_TWO_PASS_SCAN(std::int64_t)
TESSERA_CPU_TWO_PASS_SCAN(float)
TESSERA_CPU_TWO_PASS_SCAN(double)

template void scan<std::int32_t>(const std::int32_t*, std::int32_t*, index_t, ScanKind, std::int32_t);
template void scan<std::int64_t>(const std::int64_t*, std::int64_t*, index_t, ScanKind, std::int64_t);
template void scan<float>(const float*, float*, index_t, ScanKind, float);
template void scan<double>(const double*, double*, index_t, ScanKind, double);

}  // namespace tessera::kernels::cpu
