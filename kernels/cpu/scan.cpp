// CPU scan: each thread sums its chunk, one thread turns the chunk sums into chunk carry-ins (seeded
// with the caller's carry-in), then each thread scans its chunk from its carry-in. Reads the input
// twice and writes once; in place is safe because the second pass reads in[i] before writing out[i].
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_backend.hpp"
#include "parallel.hpp"

namespace tessera::kernels::cpu {
namespace {

template <class T>
T add(T a, T b) {
  return reduce_combine(ReduceOp::sum, a, b);
}

template <class T>
void scan_range(const T* in, T* out, index_t n, ScanKind kind, T carry) {
  if (kind == ScanKind::inclusive) {
    for (index_t i = 0; i < n; ++i) {
      carry = add(carry, in[i]);
      out[i] = carry;
    }
  } else {
    for (index_t i = 0; i < n; ++i) {
      const T x = in[i];
      out[i] = carry;
      carry = add(carry, x);
    }
  }
}

template <class T>
T sum_range(const T* in, index_t n) {
  T s = T(0);
  for (index_t i = 0; i < n; ++i) s = add(s, in[i]);
  return s;
}

}  // namespace

template <class T>
void scan(const T* in, T* out, index_t n, ScanKind kind, T carry_in) {
  const int threads = threads_for(n);
  if (threads == 1) {
    scan_range(in, out, n, kind, carry_in);
    return;
  }
  std::vector<T> carry(static_cast<std::size_t>(threads) + 1);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int team = omp_get_num_threads();
    const Chunk c = chunk_of(n, t, team);
    carry[static_cast<std::size_t>(t) + 1] = sum_range(in + c.begin, c.end - c.begin);
#pragma omp barrier
#pragma omp single
    {
      carry[0] = carry_in;
      for (int i = 1; i <= team; ++i) carry[i] = add(carry[i - 1], carry[i]);
    }
    scan_range(in + c.begin, out + c.begin, c.end - c.begin, kind, carry[static_cast<std::size_t>(t)]);
  }
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
    scan_range(in + begin, out + begin, std::min(n, begin + kSegmentItems) - begin, kind,
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
