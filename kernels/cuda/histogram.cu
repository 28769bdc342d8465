// CUDA histograms: the precompiled instances of the device pass (device_histogram.cuh) for the
// apps' sample types, one binning each.
#include <cstdint>

#include "../src/histogram_backends.hpp"
#include "tessera/kernels/cuda/device_histogram.cuh"

namespace tessera::kernels::cuda {

template <class T>
void histogram_even(const T* in, index_t n, const EvenBins& bins, index_t* counts, StreamHandle stream) {
  const detail::DeviceEvenBinning<T> binning{
      kernels::detail::make_even_binning<T>(bins.lower, bins.upper, bins.count)};
  detail::device_histogram(in, n, binning, static_cast<int>(bins.count), counts, stream);
}

template <class T>
void histogram_edges(const T* in, index_t n, const double* edges, index_t bins, index_t* counts, StreamHandle stream) {
  detail::DeviceEdgesBinning<T> binning{};
  binning.edges = edges;
  binning.bins = static_cast<int>(bins);
  detail::device_histogram(in, n, binning, static_cast<int>(bins), counts, stream);
}

template <class T>
void bincount(const T* in, index_t n, index_t bins, index_t* counts, StreamHandle stream) {
  const detail::DeviceBincountBinning<T> binning{{static_cast<int>(bins)}};
  detail::device_histogram(in, n, binning, static_cast<int>(bins), counts, stream);
}

template <class T>
void sample_range(const T* in, index_t n, SampleRange<T>* range, StreamHandle stream) {
  detail::device_sample_range(in, n, range, stream);
}

#define TESSERA_CUDA_HISTOGRAM(T)                                                                     \
  template void histogram_even<T>(const T*, index_t, const EvenBins&, index_t*, StreamHandle);        \
  template void histogram_edges<T>(const T*, index_t, const double*, index_t, index_t*, StreamHandle); \
  template void sample_range<T>(const T*, index_t, SampleRange<T>*, StreamHandle);
TESSERA_CUDA_HISTOGRAM(std::int32_t)
TESSERA_CUDA_HISTOGRAM(std::int64_t)
TESSERA_CUDA_HISTOGRAM(float)
TESSERA_CUDA_HISTOGRAM(double)
#undef TESSERA_CUDA_HISTOGRAM

template void bincount<std::int32_t>(const std::int32_t*, index_t, index_t, index_t*, StreamHandle);
template void bincount<std::int64_t>(const std::int64_t*, index_t, index_t, index_t*, StreamHandle);

}  // namespace tessera::kernels::cuda
