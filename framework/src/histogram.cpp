// The precompiled histograms of the apps' element types (the templates: algorithms/histogram.hpp).
#include "tessera/framework/algorithms/histogram.hpp"

#include <cstdint>

namespace tessera {

#define TESSERA_HISTOGRAM_INSTANTIATE(T)                                                                  \
  template Histogram histogram<T>(const DistArray<T>&, const EvenBins&, PhaseTimes*);                     \
  template Histogram histogram<T>(const DistArray<T>&, std::span<const double>, PhaseTimes*);             \
  template DistributedHistogram histogram_distributed<T>(const DistArray<T>&, const EvenBins&, PhaseTimes*); \
  template DistributedHistogram histogram_distributed<T>(const DistArray<T>&, std::span<const double>, PhaseTimes*); \
  template SampleRange<T> sample_range<T>(const DistArray<T>&, PhaseTimes*);
TESSERA_HISTOGRAM_INSTANTIATE(std::int32_t)
TESSERA_HISTOGRAM_INSTANTIATE(std::int64_t)
TESSERA_HISTOGRAM_INSTANTIATE(float)
TESSERA_HISTOGRAM_INSTANTIATE(double)
#undef TESSERA_HISTOGRAM_INSTANTIATE

template Histogram bincount<std::int32_t>(const DistArray<std::int32_t>&, index_t, PhaseTimes*);
template Histogram bincount<std::int64_t>(const DistArray<std::int64_t>&, index_t, PhaseTimes*);

}  // namespace tessera
