// CUDA histograms: the precompiled instances of the device pass (device_histogram.cuh) for the
// apps' sample types, one binning each.
#include <cstdint>

#include "../src/histogram_backends.hpp"
#include "tessera/kernels/cuda/device_histogram.cuh"

namespace tessera::kernels::cuda {

template <class T>
void histogram_even(const Queue& queue, const T* in, index_t n, const EvenBins& bins, index_t* counts) {
  const detail::DeviceEvenBinning<T> binning{
      kernels::detail::make_even_binning<T>(bins.lower, bins.upper, bins.count, bins.width)};
  detail::device_histogram(in, n, binning, static_cast<int>(bins.count), counts, queue.stream);
}

template <class T>
void histogram_edges(const Queue& queue, const T* in, index_t n, const double* edges, index_t bins, index_t* counts) {
  detail::DeviceEdgesBinning<T> binning{};
  binning.edges = edges;
  binning.bins = static_cast<int>(bins);
  detail::device_histogram(in, n, binning, static_cast<int>(bins), counts, queue.stream);
}

template <class T>
void bincount(const Queue& queue, const T* in, index_t n, index_t bins, index_t* counts) {
  const detail::DeviceBincountBinning<T> binning{{static_cast<int>(bins)}};
  detail::device_histogram(in, n, binning, static_cast<int>(bins), counts, queue.stream);
}

template <class T>
void sample_range(const Queue& queue, const T* in, index_t n, SampleRange<T>* range) {
  detail::device_sample_range(queue, in, n, range);
}

#define TESSERA_CUDA_HISTOGRAM(T)                                                                     \
  template void histogram_even<T>(const Queue&, const T*, index_t, const EvenBins&, index_t*);        \
  template void histogram_edges<T>(const Queue&, const T*, index_t, const double*, index_t, index_t*); \
  template void sample_range<T>(const Queue&, const T*, index_t, SampleRange<T>*);
TESSERA_CUDA_HISTOGRAM(std::int32_t)
TESSERA_CUDA_HISTOGRAM(std::int64_t)
TESSERA_CUDA_HISTOGRAM(float)
TESSERA_CUDA_HISTOGRAM(double)
#undef TESSERA_CUDA_HISTOGRAM

template void bincount<std::int32_t>(const Queue&, const std::int32_t*, index_t, index_t, index_t*);
template void bincount<std::int64_t>(const Queue&, const std::int64_t*, index_t, index_t, index_t*);

}  // namespace tessera::kernels::cuda
