// CPU histograms: the precompiled instances of the templates in cpu/histogram.hpp.
#include <cstdint>

#include "../src/histogram_backends.hpp"
#include "tessera/kernels/cpu/histogram.hpp"

namespace tessera::kernels::cpu {

#define TESSERA_CPU_HISTOGRAM(T)                                                                      \
  template void histogram_even<T>(const T*, index_t, const EvenBins&, index_t*);                      \
  template void histogram_edges<T>(const T*, index_t, const double*, index_t, index_t*);              \
  template void sample_range<T>(const T*, index_t, SampleRange<T>*);
TESSERA_CPU_HISTOGRAM(std::int32_t)
TESSERA_CPU_HISTOGRAM(std::int64_t)
TESSERA_CPU_HISTOGRAM(float)
TESSERA_CPU_HISTOGRAM(double)
#undef TESSERA_CPU_HISTOGRAM

template void bincount<std::int32_t>(const std::int32_t*, index_t, index_t, index_t*);
template void bincount<std::int64_t>(const std::int64_t*, index_t, index_t, index_t*);

}  // namespace tessera::kernels::cpu
