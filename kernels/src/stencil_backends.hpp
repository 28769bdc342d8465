// The backend halves of the stencil operations (kernels/cpu/stencil.cpp and kernels/cuda/stencil.cu),
// kept beside the dispatch instead of in the shared backend headers.
#pragma once

#include <cstddef>
#include <span>

#include "tessera/kernels/stencil.hpp"

namespace tessera::kernels {

namespace cpu {
template <class T>
void stencil_2d(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                const StencilWeights<T>& weights, T* max_change);
template <class T>
void convolve_1d(const T* in, index_t n, std::span<const T> weights, T* out);
void pack_rectangles(const void* base, std::span<const Rectangle> rectangles, void* packed, std::size_t element_bytes);
void pack_rectangles_to(const void* base, std::span<const Rectangle> rectangles, std::span<void* const> places,
                        std::size_t element_bytes);
void unpack_rectangles(const void* packed, std::span<const Rectangle> rectangles, void* base, std::size_t element_bytes);
void unpack_rectangles_from(std::span<void* const> places, std::span<const Rectangle> rectangles, void* base,
                            std::size_t element_bytes);
}  // namespace cpu

#if TESSERA_HAVE_CUDA
namespace cuda {
template <class T>
void stencil_2d(const Queue& queue, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                const StencilWeights<T>& weights, T* max_change);
// copies: at most kMaxFramePacks (the dispatch copies the others after it).
template <class T>
void stencil_2d_frame(const Queue& queue, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows,
                      index_t cols, const StencilFrame& frame, const StencilWeights<T>& weights, T* max_change,
                      std::span<const FrameCopy<T>> copies);
template <class T>
bool stencil_2d_frame_last(const Queue& queue, const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows,
                           index_t cols, const StencilFrame& frame, const StencilWeights<T>& weights, T* max_change,
                           std::span<const FrameCopy<T>> copies, const FrameFlags& flags);
template <class T>
void convolve_1d(const Queue& queue, const T* in, index_t n, std::span<const T> weights, T* out);
void pack_rectangles(const Queue& queue, const void* base, std::span<const Rectangle> rectangles, void* packed,
                     std::size_t element_bytes);
void pack_rectangles_to(const Queue& queue, const void* base, std::span<const Rectangle> rectangles,
                        std::span<void* const> places, std::size_t element_bytes);
void unpack_rectangles(const Queue& queue, const void* packed, std::span<const Rectangle> rectangles, void* base,
                       std::size_t element_bytes);
void unpack_rectangles_from(const Queue& queue, std::span<void* const> places, std::span<const Rectangle> rectangles,
                            void* base, std::size_t element_bytes);
}  // namespace cuda
#endif

}  // namespace tessera::kernels
