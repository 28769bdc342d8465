// The local matrix product's kernels: the float SIMT and double tensor-core tiles (their agents in
// agent_gemm_simt.cuh and agent_gemm_dmma.cuh), and the passes beside them (C = beta * C, the copy
// of B to aligned rows, the sum of the split-K planes). Launched by gemm.cu; tuned in
// tessera/kernels/cuda/tuning/gemm.cuh.
#pragma once

#include <cuda_runtime.h>

#include "agent_gemm_dmma.cuh"
#include "agent_gemm_simt.cuh"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/tuning/gemm.cuh"

namespace tessera::kernels::cuda::detail {

template <bool VectorA, bool VectorB, bool VectorC>
__global__ void __launch_bounds__(SgemmTuning::kThreads, SgemmTuning::kMinBlocksPerSm)
    sgemm_simt_kernel(index_t m, index_t n, index_t k, index_t k_chunk, float alpha, const float* __restrict__ a,
                      index_t lda, const float* __restrict__ b, index_t ldb, float beta, float* __restrict__ c,
                      index_t ldc, index_t c_plane) {
  __shared__ __align__(16) SgemmPanelsA a_panel;
  __shared__ __align__(16) SgemmPanelsB b_panel;
  sgemm_simt_agent<VectorA, VectorB, VectorC>(a_panel, b_panel, m, n, k, k_chunk, alpha, a, lda, b, ldb, beta, c, ldc,
                                              c_plane);
}

template <class Tu, bool VectorA, bool VectorB, bool VectorC>
__global__ void __launch_bounds__(Tu::kThreads, Tu::kMinBlocks)
    dgemm_dmma_kernel(index_t m, index_t n, index_t k, double alpha, const double* __restrict__ a, index_t lda,
                      const double* __restrict__ b, index_t ldb, double beta, double* __restrict__ c, index_t ldc) {
  dgemm_dmma_agent<Tu, VectorA, VectorB, VectorC>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// C = beta * C over an m x n block (k == 0 or alpha == 0: A and B are not read, as in BLAS).
template <class T>
__global__ void scale_matrix_kernel(index_t m, index_t n, T beta, T* c, index_t ldc) {
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < m * n; e += stride) {
    T* p = c + (e / n) * ldc + e % n;
    *p = beta == T(0) ? T(0) : beta * *p;
  }
}

// dst[r * dst_ld + c] = src[r * src_ld + c] for c < cols, 0 for cols <= c < dst_ld (dst_ld a multiple
// of 4, dst 16-byte aligned): each thread reads 4 consecutive floats (coalesced at any alignment)
// and writes them as one vector.
__global__ void __launch_bounds__(GemmCopyBTuning::kThreads)
    pad_rows_kernel(const float* __restrict__ src, index_t src_ld, index_t rows, index_t cols,
                    float* __restrict__ dst, index_t dst_ld) {
  const index_t c0 = (static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (c0 >= dst_ld) return;
  for (index_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* s = src + r * src_ld + c0;
    const float4 v = make_float4(c0 < cols ? s[0] : 0.f, c0 + 1 < cols ? s[1] : 0.f, c0 + 2 < cols ? s[2] : 0.f,
                                 c0 + 3 < cols ? s[3] : 0.f);
    *reinterpret_cast<float4*>(dst + r * dst_ld + c0) = v;
  }
}

// C = alpha * (P_0 + P_1 + ... + P_{planes-1}) + beta * C, the slices' partial planes added in plane
// order (deterministic); beta == 0 leaves C unread. A thread owns 4 consecutive columns of a row
// (one 16-byte load per plane); the grid strides over rows.
template <bool VectorC>
__global__ void __launch_bounds__(SplitKReduceTuning::kThreads)
    sgemm_split_k_reduce_kernel(index_t m, index_t n, float alpha, const float* __restrict__ partials,
                                index_t partial_ld, index_t partial_plane, int planes, float beta,
                                float* __restrict__ c, index_t ldc) {
  const index_t col = (static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (col >= n) return;
  const int valid = n - col < 4 ? static_cast<int>(n - col) : 4;
  for (index_t row = blockIdx.y; row < m; row += gridDim.y) {
    const float* p = partials + row * partial_ld + col;
    float sum[4] = {0.f, 0.f, 0.f, 0.f};
    for (int plane = 0; plane < planes; ++plane, p += partial_plane) {
      if (valid == 4) {
        const float4 v = __ldcs(reinterpret_cast<const float4*>(p));  // read once: stream past the caches
        sum[0] += v.x;
        sum[1] += v.y;
        sum[2] += v.z;
        sum[3] += v.w;
      } else {
        // Columns past n in the plane's padding were never written: leave them unread.
        for (int j = 0; j < valid; ++j) sum[j] += p[j];
      }
    }
    float* q = c + row * ldc + col;
    if (VectorC && valid == 4) {
      float4 v = make_float4(alpha * sum[0], alpha * sum[1], alpha * sum[2], alpha * sum[3]);
      if (beta != 0.f) {
        const float4 old = *reinterpret_cast<const float4*>(q);
        v.x = fmaf(beta, old.x, v.x);
        v.y = fmaf(beta, old.y, v.y);
        v.z = fmaf(beta, old.z, v.z);
        v.w = fmaf(beta, old.w, v.w);
      }
      *reinterpret_cast<float4*>(q) = v;
    } else {
      for (int j = 0; j < valid; ++j) q[j] = beta != 0.f ? fmaf(beta, q[j], alpha * sum[j]) : alpha * sum[j];
    }
  }
}

}  // namespace tessera::kernels::cuda::detail
