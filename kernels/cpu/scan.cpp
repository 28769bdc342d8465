// CPU prefix sums: the one-pass entry is the generic scan of cpu/algorithms.hpp with plus (each
// thread sums its chunk, the chunk sums become chunk carry-ins, each thread scans its chunk); the
// two-pass entry keeps fixed segments so that the caller can size the segment prefixes beforehand.
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

template <class T>
T sum_range(const T* in, index_t n) {
  T s = T(0);
  for (index_t i = 0; i < n; ++i) s = add(s, in[i]);
  return s;
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
