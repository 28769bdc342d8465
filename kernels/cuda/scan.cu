// scan: the precompiled device-wide prefix sums: the generic one-pass scan (device_scan.cuh) with
// plus, and the two-pass form (device_scan_two_pass.cuh).
#include <cstdint>

#include "cuda_backend.hpp"
#include "tessera/kernels/cuda/device_scan.cuh"
#include "device_scan_two_pass.cuh"

namespace tessera::kernels::cuda {

template <class T>
void scan(const T* in, T* out, index_t n, ScanKind kind, T carry_in, Stream stream) {
  detail::device_scan(in, out, n, kind, tessera::plus{}, carry_in, stream);
}

template <class T>
index_t scan_segment_count(index_t n) {
  return detail::two_pass_scan_segments<T>(n);
}

template <class T>
void scan_totals(const T* in, index_t n, T* segment_prefix, T* total, Stream stream) {
  detail::device_scan_totals(in, n, segment_prefix, total, stream);
}

template <class T>
void scan_from_totals(const T* in, T* out, index_t n, ScanKind kind, T carry_in, const T* segment_prefix,
                      Stream stream) {
  detail::device_scan_from_totals(in, out, n, kind, carry_in, segment_prefix, stream);
}

#define TESSERA_CUDA_TWO_PASS_SCAN(T)                                                               \
  template index_t scan_segment_count<T>(index_t);                                                  \
  template void scan_totals<T>(const T*, index_t, T*, T*, Stream);                                  \
  template void scan_from_totals<T>(const T*, T*, index_t, ScanKind, T, const T*, Stream);
TESSERA_CUDA_TWO_PASS_SCAN(std::int32_t)
TESSERA_CUDA_TWO_PASS_SCAN(std::int64_t)
TESSERA_CUDA_TWO_PASS_SCAN(float)
TESSERA_CUDA_TWO_PASS_SCAN(double)

template void scan<std::int32_t>(const std::int32_t*, std::int32_t*, index_t, ScanKind, std::int32_t, Stream);
template void scan<std::int64_t>(const std::int64_t*, std::int64_t*, index_t, ScanKind, std::int64_t, Stream);
template void scan<float>(const float*, float*, index_t, ScanKind, float, Stream);
template void scan<double>(const double*, double*, index_t, ScanKind, double, Stream);

}  // namespace tessera::kernels::cuda
