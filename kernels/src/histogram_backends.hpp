// The backend halves of the histograms (kernels/cpu/histogram.cpp and kernels/cuda/histogram.cu),
// kept beside the dispatch instead of in the shared backend headers. Backend memory throughout; the
// edges of histogram_edges are backend memory too.
#pragma once

#include "tessera/kernels/histogram.hpp"

namespace tessera::kernels {

namespace cpu {
template <class T>
void histogram_even(const T* in, index_t n, const EvenBins& bins, index_t* counts);
template <class T>
void histogram_edges(const T* in, index_t n, const double* edges, index_t bins, index_t* counts);
template <class T>
void bincount(const T* in, index_t n, index_t bins, index_t* counts);
template <class T>
void sample_range(const T* in, index_t n, SampleRange<T>* range);
}  // namespace cpu

#if TESSERA_HAVE_CUDA
namespace cuda {
template <class T>
void histogram_even(const Queue& queue, const T* in, index_t n, const EvenBins& bins, index_t* counts);
template <class T>
void histogram_edges(const Queue& queue, const T* in, index_t n, const double* edges, index_t bins, index_t* counts);
template <class T>
void bincount(const Queue& queue, const T* in, index_t n, index_t bins, index_t* counts);
template <class T>
void sample_range(const Queue& queue, const T* in, index_t n, SampleRange<T>* range);
}  // namespace cuda
#endif

}  // namespace tessera::kernels
