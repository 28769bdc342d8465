// CUDA stencils: the precompiled instances of tessera/kernels/cuda/device_stencil.cuh.
#include "../src/stencil_backends.hpp"
#include "tessera/kernels/cuda/device_stencil.cuh"

namespace tessera::kernels::cuda {

template <class T>
void stencil_2d(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                const StencilWeights<T>& weights, T* max_change, StreamHandle stream) {
  detail::stencil_2d(in, in_ld, out, out_ld, rows, cols, weights, max_change, stream);
}

template <class T>
void convolve_1d(const T* in, index_t n, std::span<const T> weights, T* out, StreamHandle stream) {
  detail::convolve_1d(in, n, weights, out, stream);
}

void pack_rectangles(const void* base, std::span<const Rectangle> rectangles, void* packed, std::size_t element_bytes,
                     StreamHandle stream) {
  detail::pack_rectangles<false>(const_cast<void*>(base), packed, rectangles, element_bytes, stream);
}

void unpack_rectangles(const void* packed, std::span<const Rectangle> rectangles, void* base, std::size_t element_bytes,
                       StreamHandle stream) {
  detail::pack_rectangles<true>(base, const_cast<void*>(packed), rectangles, element_bytes, stream);
}

template void stencil_2d<float>(const float*, index_t, float*, index_t, index_t, index_t, const StencilWeights<float>&,
                                float*, StreamHandle);
template void stencil_2d<double>(const double*, index_t, double*, index_t, index_t, index_t,
                                 const StencilWeights<double>&, double*, StreamHandle);
template void convolve_1d<float>(const float*, index_t, std::span<const float>, float*, StreamHandle);
template void convolve_1d<double>(const double*, index_t, std::span<const double>, double*, StreamHandle);

}  // namespace tessera::kernels::cuda
