// CPU stencils: the precompiled instances of tessera/kernels/cpu/stencil.hpp. This file is compiled
// with -ffp-contract=off (kernels/cpu/CMakeLists.txt): each product and sum of the sweeps rounds on
// its own, and the convolution's taps are the fused multiply-adds it writes, as on the cuda backend.
#include "tessera/kernels/cpu/stencil.hpp"

#include <algorithm>

#include "../src/stencil_backends.hpp"

namespace tessera::kernels::cpu {

template <class T>
void stencil_2d(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                const StencilWeights<T>& weights, T* max_change) {
  stencil_2d_rows(in, in_ld, out, out_ld, rows, cols, weights, max_change);
}

namespace {

// std::fma is one instruction where the processor has FMA and a library call elsewhere; on x86-64
// Linux with GCC both versions are compiled and the loader picks the one the processor runs.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define TESSERA_FMA_CLONES __attribute__((target_clones("fma", "default"), flatten))
#else
#define TESSERA_FMA_CLONES
#endif

TESSERA_FMA_CLONES void convolve_outputs(const float* in, index_t begin, index_t end, const float* w, index_t taps,
                                         float* out) {
  convolve_1d_outputs(in, begin, end, w, taps, out);
}

TESSERA_FMA_CLONES void convolve_outputs(const double* in, index_t begin, index_t end, const double* w, index_t taps,
                                         double* out) {
  convolve_1d_outputs(in, begin, end, w, taps, out);
}

}  // namespace

template <class T>
void convolve_1d(const T* in, index_t n, std::span<const T> weights, T* out) {
  if (n <= 0) return;
  const auto taps = static_cast<index_t>(weights.size());
  parallel_for_chunks(n, threads_for(n), [&](int, Chunk c) { convolve_outputs(in, c.begin, c.end, weights.data(), taps, out); });
}

void pack_rectangles(const void* base, std::span<const Rectangle> rectangles, void* packed, std::size_t element_bytes) {
  copy_rectangles_out(base, rectangles, packed, element_bytes);
}

void pack_rectangles_to(const void* base, std::span<const Rectangle> rectangles, std::span<void* const> places,
                        std::size_t element_bytes) {
  for (std::size_t i = 0; i < rectangles.size(); ++i) copy_rectangles_out(base, rectangles.subspan(i, 1), places[i], element_bytes);
}

void unpack_rectangles(const void* packed, std::span<const Rectangle> rectangles, void* base, std::size_t element_bytes) {
  copy_rectangles_in(packed, rectangles, base, element_bytes);
}

template void stencil_2d<float>(const float*, index_t, float*, index_t, index_t, index_t, const StencilWeights<float>&,
                                float*);
template void stencil_2d<double>(const double*, index_t, double*, index_t, index_t, index_t,
                                 const StencilWeights<double>&, double*);
template void convolve_1d<float>(const float*, index_t, std::span<const float>, float*);
template void convolve_1d<double>(const double*, index_t, std::span<const double>, double*);

}  // namespace tessera::kernels::cpu
