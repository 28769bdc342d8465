// scan: the public device-wide prefix sum (see device_scan.cuh for the pass).
#include <cstdint>

#include "cuda_backend.hpp"
#include "device_scan.cuh"

namespace tessera::kernels::cuda {

template <class T>
void scan(const T* in, T* out, index_t n, ScanKind kind, T carry_in, Stream stream) {
  detail::device_scan(in, out, n, kind, carry_in, stream);
}

template void scan<std::int32_t>(const std::int32_t*, std::int32_t*, index_t, ScanKind, std::int32_t, Stream);
template void scan<std::int64_t>(const std::int64_t*, std::int64_t*, index_t, ScanKind, std::int64_t, Stream);
template void scan<float>(const float*, float*, index_t, ScanKind, float, Stream);
template void scan<double>(const double*, double*, index_t, ScanKind, double, Stream);

}  // namespace tessera::kernels::cuda
