// Double-precision GEMM on the FP64 tensor cores (DMMA), row-major C = alpha*A*B + beta*C.
//
// A thread block of 8 warps computes a 128x128 tile of C; warp (wm, wn) a 64x32 sub-tile as 4x4
// tensor-core tiles of 16x8 (64 accumulators per lane). K advances in steps of 16 through a
// 3-stage cp.async pipeline in shared memory (two steps in flight while one is multiplied);
// the copies are 16 bytes where rows are 16-byte aligned, 8 bytes otherwise, and zero-fill
// whatever lies past M, N or K, so edges need no other code. Shared rows are padded (A by 4, B by 4
// doubles) so that the fragment reads of a half-warp hit 16 distinct 8-byte bank pairs.
#pragma once

#include <cuda_runtime.h>

#include "async_copy.cuh"
#include "mma_f64.cuh"
#include "tessera/kernels/config.hpp"
#include "warp.cuh"

namespace tessera::kernels::cuda::detail {

struct DgemmTuning {
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = 128;
  static constexpr int kBlockK = 16;
  static constexpr int kStages = 3;
  static constexpr int kThreads = 256;
  static constexpr int kWarpM = 64;
  static constexpr int kWarpN = 32;
  static constexpr int kStrideA = kBlockK + 4;  // doubles per shared row of the A panel (m-major)
  static constexpr int kStrideB = kBlockN + 4;  // doubles per shared row of the B panel (k-major)
  static constexpr int kStageDoubles = kBlockM * kStrideA + kBlockK * kStrideB;
  static constexpr std::size_t kSharedBytes = sizeof(double) * kStages * kStageDoubles;
};

template <bool VectorA, bool VectorB, bool VectorC>
__global__ void __launch_bounds__(DgemmTuning::kThreads, 1)
    dgemm_dmma_kernel(index_t m, index_t n, index_t k, double alpha, const double* __restrict__ a, index_t lda,
                      const double* __restrict__ b, index_t ldb, double beta, double* __restrict__ c, index_t ldc) {
  using Tu = DgemmTuning;
  extern __shared__ __align__(16) double shared[];
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = lane_id();
  const int warp = tid / kWarpThreads;
  const int warp_m = warp / (Tu::kBlockN / Tu::kWarpN);  // 0..1
  const int warp_n = warp % (Tu::kBlockN / Tu::kWarpN);  // 0..3
  const index_t row0 = static_cast<index_t>(blockIdx.y) * Tu::kBlockM;
  const index_t col0 = static_cast<index_t>(blockIdx.x) * Tu::kBlockN;

  auto a_stage = [&](int s) { return shared + s * Tu::kStageDoubles; };
  auto b_stage = [&](int s) { return shared + s * Tu::kStageDoubles + Tu::kBlockM * Tu::kStrideA; };

  auto load_stage = [&](int s, index_t k0) {
    double* as = a_stage(s);
    double* bs = b_stage(s);
    if constexpr (VectorA) {
      constexpr int kChunksPerRow = Tu::kBlockK / 2;
#pragma unroll
      for (int i = 0; i < Tu::kBlockM * kChunksPerRow / Tu::kThreads; ++i) {
        const int chunk = tid + i * Tu::kThreads;
        const int r = chunk / kChunksPerRow;
        const int kc = (chunk % kChunksPerRow) * 2;
        const index_t gr = row0 + r;
        const index_t gk = k0 + kc;
        const index_t left = gr < m ? k - gk : 0;
        const int bytes = left >= 2 ? 16 : left == 1 ? 8 : 0;
        copy_async_16(as + r * Tu::kStrideA + kc, bytes ? a + gr * lda + gk : a, bytes);
      }
    } else {
#pragma unroll
      for (int i = 0; i < Tu::kBlockM * Tu::kBlockK / Tu::kThreads; ++i) {
        const int e = tid + i * Tu::kThreads;
        const int r = e / Tu::kBlockK;
        const int kc = e % Tu::kBlockK;
        const index_t gr = row0 + r;
        const index_t gk = k0 + kc;
        const bool ok = gr < m && gk < k;
        copy_async_8(as + r * Tu::kStrideA + kc, ok ? a + gr * lda + gk : a, ok ? 8 : 0);
      }
    }
    if constexpr (VectorB) {
      constexpr int kChunksPerRow = Tu::kBlockN / 2;
#pragma unroll
      for (int i = 0; i < Tu::kBlockK * kChunksPerRow / Tu::kThreads; ++i) {
        const int chunk = tid + i * Tu::kThreads;
        const int r = chunk / kChunksPerRow;
        const int nc = (chunk % kChunksPerRow) * 2;
        const index_t gk = k0 + r;
        const index_t gc = col0 + nc;
        const index_t left = gk < k ? n - gc : 0;
        const int bytes = left >= 2 ? 16 : left == 1 ? 8 : 0;
        copy_async_16(bs + r * Tu::kStrideB + nc, bytes ? b + gk * ldb + gc : b, bytes);
      }
    } else {
#pragma unroll
      for (int i = 0; i < Tu::kBlockK * Tu::kBlockN / Tu::kThreads; ++i) {
        const int e = tid + i * Tu::kThreads;
        const int r = e / Tu::kBlockN;
        const int nc = e % Tu::kBlockN;
        const index_t gk = k0 + r;
        const index_t gc = col0 + nc;
        const bool ok = gk < k && gc < n;
        copy_async_8(bs + r * Tu::kStrideB + nc, ok ? b + gk * ldb + gc : b, ok ? 8 : 0);
      }
    }
  };

  double acc[4][4][4] = {};  // [16-row tile][8-column tile][fragment]
  const index_t k_steps = (k + Tu::kBlockK - 1) / Tu::kBlockK;

  // Prologue: stages 0 .. kStages-2 in flight. Every iteration commits one group (possibly empty),
  // so "all but kStages-2 groups complete" always means "the stage about to be used has landed".
#pragma unroll
  for (int s = 0; s < Tu::kStages - 1; ++s) {
    if (s < k_steps) load_stage(s, s * Tu::kBlockK);
    copy_async_commit();
  }

  for (index_t step = 0; step < k_steps; ++step) {
    copy_async_wait<Tu::kStages - 2>();
    // Publishes stage `step` to all warps, and retires every warp's reads of the stage that the
    // load below overwrites (it was multiplied in the previous iteration).
    __syncthreads();
    const index_t next = step + Tu::kStages - 1;
    if (next < k_steps) load_stage(static_cast<int>(next % Tu::kStages), next * Tu::kBlockK);
    copy_async_commit();

    const int s = static_cast<int>(step % Tu::kStages);
    const double* as = a_stage(s) + (warp_m * Tu::kWarpM + lane / 4) * Tu::kStrideA + lane % 4;
    const double* bs = b_stage(s) + (lane % 4) * Tu::kStrideB + warp_n * Tu::kWarpN + lane / 4;
#pragma unroll
    for (int kk = 0; kk < Tu::kBlockK; kk += 4) {
      double af[4][2];
      double bf[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        af[i][0] = as[(i * 16) * Tu::kStrideA + kk];
        af[i][1] = as[(i * 16 + 8) * Tu::kStrideA + kk];
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) bf[j] = bs[kk * Tu::kStrideB + j * 8];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma_16x8x4_f64(acc[i][j], af[i][0], af[i][1], bf[j]);
    }
  }
  copy_async_wait<0>();

  // Epilogue: fragment r of tile (i, j) is row lane/4 + 8*(r/2), column 2*(lane%4) + r%2.
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const index_t row = row0 + warp_m * Tu::kWarpM + i * 16 + half * 8 + lane / 4;
      if (row >= m) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const index_t col = col0 + warp_n * Tu::kWarpN + j * 8 + (lane % 4) * 2;
        double* p = c + row * ldc + col;
        double r0 = alpha * acc[i][j][half * 2 + 0];
        double r1 = alpha * acc[i][j][half * 2 + 1];
        if (VectorC && col + 1 < n) {
          if (beta != 0.0) {
            const double2 old = *reinterpret_cast<const double2*>(p);
            r0 = fma(beta, old.x, r0);
            r1 = fma(beta, old.y, r1);
          }
          *reinterpret_cast<double2*>(p) = make_double2(r0, r1);
        } else {
          if (col < n) p[0] = beta != 0.0 ? fma(beta, p[0], r0) : r0;
          if (col + 1 < n) p[1] = beta != 0.0 ? fma(beta, p[1], r1) : r1;
        }
      }
    }
}

}  // namespace tessera::kernels::cuda::detail
