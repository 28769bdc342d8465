// CPU stencils: the precompiled instances of tessera/kernels/cpu/stencil.hpp. This file is compiled
// with -ffp-contract=off (kernels/cpu/CMakeLists.txt): each product and sum of the sweeps rounds on
// its own, and the convolution's taps are the fused multiply-adds it writes, as on the cuda backend.
#include "tessera/kernels/cpu/stencil.hpp"

#include <algorithm>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#endif

#include "../src/stencil_backends.hpp"

namespace tessera::kernels::cpu {

template <class T>
void stencil_2d(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                const StencilWeights<T>& weights, T* max_change) {
  stencil_2d_rows(in, in_ld, out, out_ld, rows, cols, weights, max_change);
}

namespace {

// std::fma is one instruction where the processor has FMA and a library call elsewhere. On x86-64
// the loop below takes 4 AVX vectors of outputs at a time (32 floats, 16 doubles: four independent
// chains of multiply-adds) where the processor has AVX and FMA, chosen at run time; elsewhere the
// portable loop of stencil.hpp. Both give each output the same fused multiply-adds in the same
// order. (GCC 12 compiles the portable loop's 64-byte block to one 256-bit FMA and scalar code:
// 4.3 multiply-adds per ns at radius 16 on an AMD EPYC of the 2-core VM, against 25 for this loop.)
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define TESSERA_X86_FMA_LOOP 1

__attribute__((target("avx,fma"))) void convolve_outputs_fma(const float* in, index_t begin, index_t end,
                                                             const float* w, index_t taps, float* out) {
  const index_t radius = (taps - 1) / 2;
  index_t i = begin;
  for (; i + 32 <= end; i += 32) {
    const float* x = in + i + radius;  // x[j - k]: the input w[k] multiplies for output i + j
    __m256 a0 = _mm256_set1_ps(-0.0f), a1 = a0, a2 = a0, a3 = a0;
    for (index_t k = 0; k < taps; ++k) {
      const __m256 wk = _mm256_broadcast_ss(w + k);
      a0 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(x - k), a0);
      a1 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(x - k + 8), a1);
      a2 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(x - k + 16), a2);
      a3 = _mm256_fmadd_ps(wk, _mm256_loadu_ps(x - k + 24), a3);
    }
    _mm256_storeu_ps(out + i, a0);
    _mm256_storeu_ps(out + i + 8, a1);
    _mm256_storeu_ps(out + i + 16, a2);
    _mm256_storeu_ps(out + i + 24, a3);
  }
  for (; i < end; ++i) {
    const float* x = in + i + radius;
    __m128 acc = _mm_set_ss(-0.0f);
    for (index_t k = 0; k < taps; ++k) acc = _mm_fmadd_ss(_mm_load_ss(w + k), _mm_load_ss(x - k), acc);
    out[i] = _mm_cvtss_f32(acc);
  }
}

__attribute__((target("avx,fma"))) void convolve_outputs_fma(const double* in, index_t begin, index_t end,
                                                             const double* w, index_t taps, double* out) {
  const index_t radius = (taps - 1) / 2;
  index_t i = begin;
  for (; i + 16 <= end; i += 16) {
    const double* x = in + i + radius;
    __m256d a0 = _mm256_set1_pd(-0.0), a1 = a0, a2 = a0, a3 = a0;
    for (index_t k = 0; k < taps; ++k) {
      const __m256d wk = _mm256_broadcast_sd(w + k);
      a0 = _mm256_fmadd_pd(wk, _mm256_loadu_pd(x - k), a0);
      a1 = _mm256_fmadd_pd(wk, _mm256_loadu_pd(x - k + 4), a1);
      a2 = _mm256_fmadd_pd(wk, _mm256_loadu_pd(x - k + 8), a2);
      a3 = _mm256_fmadd_pd(wk, _mm256_loadu_pd(x - k + 12), a3);
    }
    _mm256_storeu_pd(out + i, a0);
    _mm256_storeu_pd(out + i + 4, a1);
    _mm256_storeu_pd(out + i + 8, a2);
    _mm256_storeu_pd(out + i + 12, a3);
  }
  for (; i < end; ++i) {
    const double* x = in + i + radius;
    __m128d acc = _mm_set_sd(-0.0);
    for (index_t k = 0; k < taps; ++k) acc = _mm_fmadd_sd(_mm_load_sd(w + k), _mm_load_sd(x - k), acc);
    out[i] = _mm_cvtsd_f64(acc);
  }
}

bool have_fma_loop() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma");
  }();
  return have;
}
#endif

template <class T>
void convolve_outputs(const T* in, index_t begin, index_t end, const T* w, index_t taps, T* out) {
#ifdef TESSERA_X86_FMA_LOOP
  if (have_fma_loop()) {
    convolve_outputs_fma(in, begin, end, w, taps, out);
    return;
  }
#endif
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

void unpack_rectangles_from(std::span<void* const> places, std::span<const Rectangle> rectangles, void* base,
                            std::size_t element_bytes) {
  for (std::size_t i = 0; i < rectangles.size(); ++i) copy_rectangles_in(places[i], rectangles.subspan(i, 1), base, element_bytes);
}

template void stencil_2d<float>(const float*, index_t, float*, index_t, index_t, index_t, const StencilWeights<float>&,
                                float*);
template void stencil_2d<double>(const double*, index_t, double*, index_t, index_t, index_t,
                                 const StencilWeights<double>&, double*);
template void convolve_1d<float>(const float*, index_t, std::span<const float>, float*);
template void convolve_1d<double>(const double*, index_t, std::span<const double>, double*);

}  // namespace tessera::kernels::cpu
