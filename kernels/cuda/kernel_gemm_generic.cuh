// GEMM for the element types that have no tuned kernel (integers, complex numbers), row-major
// C = alpha*A*B + beta*C, on the CUDA cores.
//
// A thread block of 16 x 16 threads computes a 64 x 64 tile of C, each thread a 4 x 4 register
// block whose rows (and columns) lie 16 apart, so that a warp's shared-memory reads of one A column
// and one B row are served without conflicts. K advances in steps of 16 through one shared-memory
// buffer per operand (A stored k-major, padded by one element). Loads past M, N or K read zeros;
// stores are guarded. Tile rows beyond the grid's 65535 are reached by a grid-stride loop.
//
// Arithmetic: integers in the unsigned type of their width (products and sums wrap modulo 2^w, as
// NumPy's do, and wrapping is defined there); complex numbers as pairs with the textbook product
// (as cuBLAS's cgemm/zgemm), std::complex's layout.
#pragma once

#include <cuda_runtime.h>

#include <complex>
#include <cstdint>
#include <type_traits>

#include "tessera/kernels/config.hpp"

namespace tessera::kernels::cuda::detail {

// The arithmetic of one element type: V the type the kernel computes in (same size and layout as T).
template <class T, class Enable = void>
struct GemmArithmetic;

template <class T>
struct GemmArithmetic<T, std::enable_if_t<std::is_integral_v<T>>> {
  using V = std::make_unsigned_t<T>;
  __device__ __forceinline__ static V zero() { return V(0); }
  __device__ __forceinline__ static bool is_zero(V x) { return x == V(0); }
  __device__ __forceinline__ static V mul(V x, V y) { return x * y; }
  __device__ __forceinline__ static V mul_add(V acc, V x, V y) { return acc + x * y; }
  __device__ __forceinline__ static V add(V x, V y) { return x + y; }
};

template <class F>
struct ComplexPair {
  F re, im;
};

template <class F>
struct GemmArithmetic<std::complex<F>> {
  using V = ComplexPair<F>;
  static_assert(sizeof(V) == sizeof(std::complex<F>), "a complex number is two of its parts");
  __device__ __forceinline__ static V zero() { return {F(0), F(0)}; }
  __device__ __forceinline__ static bool is_zero(V x) { return x.re == F(0) && x.im == F(0); }
  __device__ __forceinline__ static V mul(V x, V y) { return {x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re}; }
  __device__ __forceinline__ static V mul_add(V acc, V x, V y) {
    return {acc.re + x.re * y.re - x.im * y.im, acc.im + x.re * y.im + x.im * y.re};
  }
  __device__ __forceinline__ static V add(V x, V y) { return {x.re + y.re, x.im + y.im}; }
};

struct GemmGenericTuning {
  static constexpr int kThreadsX = 16;  // threads along a tile row (columns of C)
  static constexpr int kThreadsY = 16;
  static constexpr int kThreads = kThreadsX * kThreadsY;
  static constexpr int kPerThread = 4;  // rows and columns of C per thread
  static constexpr int kBlockM = kThreadsY * kPerThread;
  static constexpr int kBlockN = kThreadsX * kPerThread;
  static constexpr int kBlockK = 16;
};

template <class T>
__global__ void __launch_bounds__(GemmGenericTuning::kThreads)
    gemm_generic_kernel(index_t m, index_t n, index_t k, typename GemmArithmetic<T>::V alpha,
                        const typename GemmArithmetic<T>::V* __restrict__ a, index_t lda,
                        const typename GemmArithmetic<T>::V* __restrict__ b, index_t ldb,
                        typename GemmArithmetic<T>::V beta, typename GemmArithmetic<T>::V* __restrict__ c,
                        index_t ldc) {
  using A = GemmArithmetic<T>;
  using V = typename A::V;
  using Tu = GemmGenericTuning;
  constexpr int P = Tu::kPerThread;
  __shared__ V a_panel[Tu::kBlockK][Tu::kBlockM + 1];
  __shared__ V b_panel[Tu::kBlockK][Tu::kBlockN];

  const int tx = static_cast<int>(threadIdx.x) % Tu::kThreadsX;
  const int ty = static_cast<int>(threadIdx.x) / Tu::kThreadsX;
  const int tid = static_cast<int>(threadIdx.x);
  const index_t col0 = static_cast<index_t>(blockIdx.x) * Tu::kBlockN;
  const index_t tiles_m = (m + Tu::kBlockM - 1) / Tu::kBlockM;
  const bool beta_zero = A::is_zero(beta);

  for (index_t tile_row = blockIdx.y; tile_row < tiles_m; tile_row += gridDim.y) {
    const index_t row0 = tile_row * Tu::kBlockM;
    V acc[P][P];
#pragma unroll
    for (int i = 0; i < P; ++i)
#pragma unroll
      for (int j = 0; j < P; ++j) acc[i][j] = A::zero();

    for (index_t k0 = 0; k0 < k; k0 += Tu::kBlockK) {
      // A's tile: kBlockM rows x kBlockK, consecutive threads along K (a row's K run is contiguous).
      for (int e = tid; e < Tu::kBlockM * Tu::kBlockK; e += Tu::kThreads) {
        const int r = e / Tu::kBlockK, kk = e % Tu::kBlockK;
        const index_t gr = row0 + r, gk = k0 + kk;
        a_panel[kk][r] = gr < m && gk < k ? a[gr * lda + gk] : A::zero();
      }
      // B's tile: kBlockK rows x kBlockN, consecutive threads along a row.
      for (int e = tid; e < Tu::kBlockK * Tu::kBlockN; e += Tu::kThreads) {
        const int kk = e / Tu::kBlockN, cc = e % Tu::kBlockN;
        const index_t gk = k0 + kk, gc = col0 + cc;
        b_panel[kk][cc] = gk < k && gc < n ? b[gk * ldb + gc] : A::zero();
      }
      __syncthreads();
#pragma unroll 4
      for (int kk = 0; kk < Tu::kBlockK; ++kk) {
        V x[P], y[P];
#pragma unroll
        for (int i = 0; i < P; ++i) x[i] = a_panel[kk][ty + i * Tu::kThreadsY];
#pragma unroll
        for (int j = 0; j < P; ++j) y[j] = b_panel[kk][tx + j * Tu::kThreadsX];
#pragma unroll
        for (int i = 0; i < P; ++i)
#pragma unroll
          for (int j = 0; j < P; ++j) acc[i][j] = A::mul_add(acc[i][j], x[i], y[j]);
      }
      __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < P; ++i) {
      const index_t r = row0 + ty + i * Tu::kThreadsY;
      if (r >= m) continue;
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const index_t col = col0 + tx + j * Tu::kThreadsX;
        if (col >= n) continue;
        V* p = c + r * ldc + col;
        const V product = A::mul(alpha, acc[i][j]);
        *p = beta_zero ? product : A::add(product, A::mul(beta, *p));  // beta == 0: C is not read
      }
    }
  }
}

// C = beta * C (k == 0 or alpha == 0): C is only written where beta == 0.
template <class T>
__global__ void scale_matrix_generic_kernel(index_t m, index_t n, typename GemmArithmetic<T>::V beta,
                                            typename GemmArithmetic<T>::V* c, index_t ldc) {
  using A = GemmArithmetic<T>;
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < m * n; e += stride) {
    auto* p = c + (e / n) * ldc + e % n;
    *p = A::is_zero(beta) ? A::zero() : A::mul(beta, *p);
  }
}

}  // namespace tessera::kernels::cuda::detail
