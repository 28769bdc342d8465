// Single-precision GEMM on the FP32 pipes (SIMT; no TF32), row-major C = alpha*A*B + beta*C.
//
// A thread block computes a 128x128 tile of C; each of its 256 threads an 8x8 register block, split
// into four 4x4 quadrants 64 rows / 64 columns apart, so that its shared-memory reads are 16-byte
// vectors that a warp serves in two wavefronts. K advances in steps of 8 through two shared-memory
// buffers: the next step's A and B panels are loaded from global memory into registers (16-byte
// loads where the rows allow) while the current step is multiplied, then stored to the idle
// buffer (one barrier per step). A is stored transposed (k-major, padded by 4 floats so that the
// transposing stores do not conflict). Edges: loads past M, N or K read zeros, stores are guarded.
//
// Split-K (gemm_split_k.cuh): blockIdx.z selects a slice of K, k_chunk deep (a multiple of the K
// step, so that 16-byte loads stay aligned), and the block stores into C + blockIdx.z * c_plane.
// The unsplit product is the single slice k_chunk = k of C itself; a split one writes the slices'
// partial products (alpha 1, beta 0) to the planes of a workspace, which a second pass adds.
#pragma once

#include <cuda_runtime.h>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/tuning/gemm.cuh"

namespace tessera::kernels::cuda::detail {

// The shared memory of one thread block: A and B panels, two buffers each (16-byte aligned).
using SgemmPanelsA = float[2][SgemmTuning::kBlockK][SgemmTuning::kBlockM + SgemmTuning::kPadA];
using SgemmPanelsB = float[2][SgemmTuning::kBlockK][SgemmTuning::kBlockN];

// One thread block's tile (blockIdx.x: tile column, blockIdx.y: tile row, blockIdx.z: slice of K).
// VectorA / VectorB / VectorC: the rows of that matrix start on 16-byte boundaries (base aligned,
// leading dimension a multiple of 4), so whole in-bounds 4-float groups move as one vector.
template <bool VectorA, bool VectorB, bool VectorC>
__device__ __forceinline__ void sgemm_simt_agent(SgemmPanelsA& a_panel, SgemmPanelsB& b_panel, index_t m, index_t n,
                                                 index_t k, index_t k_chunk, float alpha, const float* __restrict__ a,
                                                 index_t lda, const float* __restrict__ b, index_t ldb, float beta,
                                                 float* __restrict__ c, index_t ldc, index_t c_plane) {
  using Tu = SgemmTuning;
  // This block's slice of K starts here. The loads test against the end of the whole K (slices end
  // on K-step multiples, so only the last slice meets an edge), through k_rest = k - (first k of the
  // step): one 64-bit register and a 32-bit step count, which keeps the kernel within 128 registers.
  const index_t k_begin = blockIdx.z * k_chunk;

  const int tid = static_cast<int>(threadIdx.x);
  const index_t row0 = static_cast<index_t>(blockIdx.y) * Tu::kBlockM;
  const index_t col0 = static_cast<index_t>(blockIdx.x) * Tu::kBlockN;

  // Global-load assignment: A as 128 rows x two 4-float groups, B as 8 rows x 32 groups.
  const int a_row = tid / 2;
  const int a_k = (tid % 2) * 4;
  const int b_k = tid / 32;
  const int b_col = (tid % 32) * 4;
  const index_t a_global_row = row0 + a_row;
  const index_t b_global_col = col0 + b_col;

  // Running source pointers (advanced by one K step per iteration) keep the loaders' 64-bit
  // address arithmetic out of the inner loop and the register budget.
  const bool a_row_ok = a_global_row < m;
  const float* a_src = a + (a_row_ok ? a_global_row * lda + k_begin + a_k : 0);
  const float* b_src = b + (k_begin + b_k) * ldb + b_global_col;
  const index_t b_cols_left = n - b_global_col;
  float4 a_next;
  float4 b_next;
  // k_rest: k minus the first k of the step being loaded (so > 0; < 8 only at the end of K).
  auto load_a = [&](index_t k_rest) {
    const index_t k_left = a_row_ok ? k_rest - a_k : 0;
    if (VectorA && k_left >= 4) {
      a_next = *reinterpret_cast<const float4*>(a_src);
    } else {
      a_next.x = k_left > 0 ? a_src[0] : 0.f;
      a_next.y = k_left > 1 ? a_src[1] : 0.f;
      a_next.z = k_left > 2 ? a_src[2] : 0.f;
      a_next.w = k_left > 3 ? a_src[3] : 0.f;
    }
    a_src += Tu::kBlockK;
  };
  auto load_b = [&](index_t k_rest) {
    const index_t cols_left = b_k < k_rest ? b_cols_left : 0;
    if (VectorB && cols_left >= 4) {
      b_next = *reinterpret_cast<const float4*>(b_src);
    } else {
      b_next.x = cols_left > 0 ? b_src[0] : 0.f;
      b_next.y = cols_left > 1 ? b_src[1] : 0.f;
      b_next.z = cols_left > 2 ? b_src[2] : 0.f;
      b_next.w = cols_left > 3 ? b_src[3] : 0.f;
    }
    b_src += Tu::kBlockK * ldb;
  };
  auto store_panels = [&](int buffer) {
    a_panel[buffer][a_k + 0][a_row] = a_next.x;
    a_panel[buffer][a_k + 1][a_row] = a_next.y;
    a_panel[buffer][a_k + 2][a_row] = a_next.z;
    a_panel[buffer][a_k + 3][a_row] = a_next.w;
    *reinterpret_cast<float4*>(&b_panel[buffer][b_k][b_col]) = b_next;
  };

  const int tx = tid % 16;  // column group of this thread's register block
  const int ty = tid / 16;  // row group
  float acc[8][8] = {};

  // Steps of this slice: the host keeps k / kBlockK below 2^31.
  const index_t slice_depth = k - k_begin < k_chunk ? k - k_begin : k_chunk;
  const int k_steps = static_cast<int>((slice_depth + Tu::kBlockK - 1) / Tu::kBlockK);
  index_t k_rest = k - k_begin;
  load_a(k_rest);
  load_b(k_rest);
  store_panels(0);
  __syncthreads();
  int buffer = 0;
  for (int step = 0; step < k_steps; ++step) {
    const bool more = step + 1 < k_steps;
    k_rest -= Tu::kBlockK;
    if (more) {
      load_a(k_rest);
      load_b(k_rest);
    }
#pragma unroll
    for (int kk = 0; kk < Tu::kBlockK; ++kk) {
      const float4 a_lo = *reinterpret_cast<const float4*>(&a_panel[buffer][kk][ty * 4]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&a_panel[buffer][kk][64 + ty * 4]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&b_panel[buffer][kk][tx * 4]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&b_panel[buffer][kk][64 + tx * 4]);
      const float av[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
      const float bv[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    // The idle buffer was last read before the previous barrier, so it may be overwritten now;
    // the barrier below publishes it and retires the reads of the current one.
    if (more) store_panels(buffer ^ 1);
    __syncthreads();
    buffer ^= 1;
  }

  // Epilogue: beta == 0 never reads C (NaN or garbage there must not propagate). A slice of a split
  // product stores into its own plane of the workspace.
  c += blockIdx.z * c_plane;
  const index_t first_row = row0 + ty * 4;
  const index_t first_col = col0 + tx * 4;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int row_in_tile = i < 4 ? i : 60 + i;  // rows ty*4 + 0..3, then 64 + ty*4 + 0..3
    if (first_row + row_in_tile >= m) continue;
    float* c_row = c + (first_row + row_in_tile) * ldc + first_col;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float* p = c_row + half * 64;
      const index_t cols_left = n - first_col - half * 64;
      float r[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) r[j] = alpha * acc[i][half * 4 + j];
      if (VectorC && cols_left >= 4) {
        if (beta != 0.f) {
          const float4 old = *reinterpret_cast<const float4*>(p);
          r[0] = fmaf(beta, old.x, r[0]);
          r[1] = fmaf(beta, old.y, r[1]);
          r[2] = fmaf(beta, old.z, r[2]);
          r[3] = fmaf(beta, old.w, r[3]);
        }
        *reinterpret_cast<float4*>(p) = make_float4(r[0], r[1], r[2], r[3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (j < cols_left) p[j] = beta != 0.f ? fmaf(beta, p[j], r[j]) : r[j];
      }
    }
  }
}

}  // namespace tessera::kernels::cuda::detail
