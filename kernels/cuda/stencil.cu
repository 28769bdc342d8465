// CUDA stencils: the precompiled instances of tessera/kernels/cuda/device_stencil.cuh.
#include "../src/stencil_backends.hpp"
#include "tessera/kernels/cuda/device_stencil.cuh"

namespace tessera::kernels::cuda {

template <class T>
void stencil_2d(const Queue& queue, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                const StencilWeights<T>& weights, T* max_change) {
  detail::stencil_2d(queue, in, in_ld, out, out_ld, rows, cols, weights, max_change);
}

template <class T>
void stencil_2d_frame(const Queue& queue, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<T>& weights, T* max_change,
                      std::span<const FrameCopy<T>> copies) {
  detail::stencil_2d_frame(in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, copies, queue.stream);
}

template <class T>
bool stencil_2d_frame_last(const Queue& queue, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows,
                           index_t cols, const StencilFrame& frame, const StencilWeights<T>& weights, T* max_change,
                           std::span<const FrameCopy<T>> copies, const FrameFlags& flags) {
  return detail::stencil_2d_frame_last(in, in_ld, out, out_ld, rows, cols, frame, weights, max_change, copies, flags,
                                       queue.stream);
}

template <class T>
void convolve_1d(const Queue& queue, const T* in, index_t n, std::span<const T> weights, T* out) {
  detail::convolve_1d(queue, in, n, weights, out);
}

void pack_rectangles(const Queue& queue, const void* base, std::span<const Rectangle> rectangles, void* packed,
                     std::size_t element_bytes) {
  detail::pack_rectangles<false>(const_cast<void*>(base), packed, rectangles, element_bytes, queue.stream);
}

void pack_rectangles_to(const Queue& queue, const void* base, std::span<const Rectangle> rectangles,
                        std::span<void* const> places, std::size_t element_bytes) {
  detail::pack_rectangles_to(const_cast<void*>(base), rectangles, places, element_bytes, queue.stream);
}

void unpack_rectangles(const Queue& queue, const void* packed, std::span<const Rectangle> rectangles, void* base,
                       std::size_t element_bytes) {
  detail::pack_rectangles<true>(base, const_cast<void*>(packed), rectangles, element_bytes, queue.stream);
}

void unpack_rectangles_from(const Queue& queue, std::span<void* const> places, std::span<const Rectangle> rectangles,
                            void* base, std::size_t element_bytes) {
  detail::pack_rectangles_at<true>(base, rectangles, nullptr, places, element_bytes, queue.stream);
}

template void stencil_2d<float>(const Queue&, const float*, index_t, float*, index_t, index_t, index_t,
                                const StencilWeights<float>&, float*);
template void stencil_2d<double>(const Queue&, const double*, index_t, double*, index_t, index_t, index_t,
                                 const StencilWeights<double>&, double*);
template void stencil_2d_frame<float>(const Queue&, const float*, index_t, float*, index_t, index_t, index_t,
                                      const StencilFrame&, const StencilWeights<float>&, float*,
                                      std::span<const FrameCopy<float>>);
template void stencil_2d_frame<double>(const Queue&, const double*, index_t, double*, index_t, index_t, index_t,
                                       const StencilFrame&, const StencilWeights<double>&, double*,
                                       std::span<const FrameCopy<double>>);
template bool stencil_2d_frame_last<float>(const Queue&, const float*, index_t, float*, index_t, index_t, index_t,
                                           const StencilFrame&, const StencilWeights<float>&, float*,
                                           std::span<const FrameCopy<float>>, const FrameFlags&);
template bool stencil_2d_frame_last<double>(const Queue&, const double*, index_t, double*, index_t, index_t, index_t,
                                            const StencilFrame&, const StencilWeights<double>&, double*,
                                            std::span<const FrameCopy<double>>, const FrameFlags&);
template void convolve_1d<float>(const Queue&, const float*, index_t, std::span<const float>, float*);
template void convolve_1d<double>(const Queue&, const double*, index_t, std::span<const double>, double*);

}  // namespace tessera::kernels::cuda
