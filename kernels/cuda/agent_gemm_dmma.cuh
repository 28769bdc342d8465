// Double-precision GEMM on the FP64 tensor cores (DMMA), row-major C = alpha*A*B + beta*C.
//
// A thread block of 4 warps computes a 128x64 tile of C (two blocks per SM); warp (wm, wn) a
// 64x32 sub-tile as 8x2 tensor-core tiles (64 accumulators per lane, half the 255 registers a
// thread may have). Two blocks of 4 warps rather than one of 8 (a 128x128 tile) keep the tensor
// pipe fed while one block waits at its barrier (cuBLAS's sm90 DGEMM uses the same 128x64x16,
// 4-warp, 3-stage, m16n8k8 shape). K advances in steps of 16 through a kStages-deep cp.async
// pipeline in shared memory; the copies are 16 bytes where rows are 16-byte aligned, 8 bytes
// otherwise, and zero-fill whatever lies past M, N or K, so edges need no other code.
//
// Operands swapped: the tensor-core tile is 16 columns x 8 rows of C, the MMA's A operand is a
// 16-column slice of B (MMA row g is C column 2g, MMA row g + 8 is column 2g + 1) and its B operand
// is 8 rows of A. Lane (g, t) takes k slots 4t + 2q and 4t + 2q + 1 in the q-th 8-deep half of a
// step (mma_f64.cuh explains why any shared numbering of k is allowed). Then every operand pair of
// a fragment is one 16-byte shared-memory load that lands in the fragment's register order: the
// MMA-A fragment is B[k][2g .. 2g+1] of two adjacent k rows (two LDS.128), the MMA-B fragment
// A[g][k .. k+1] (one LDS.128), so no register moves sit between the loads and the products (the
// unswapped layout interleaves rows g and g + 8 within a fragment, so each 16-byte load had to be
// split into it; on H100/H200 ncu saw issue slots busy fall from 38% to 27% and the FP64 tensor
// pipe rise from 71% to 79% with the swap).
// Within a half step the warp issues its 16 products on 16 different accumulator tiles, so no
// product waits for the previous one's result.
// Bank conflicts: A rows are padded to 18 doubles, so the 8 lanes of a 16-byte phase (rows g and
// g + 1, k 4t) hit 8 distinct 16-byte bank groups. B rows (k-major, kBlockN doubles) are not
// padded but swizzled: column n of row r is stored at n ^ (4 * ((r / 4) % 4)), which keeps 16-byte
// pairs whole (bit 0 is untouched) and puts the pairs 2g of rows 4t + j (lanes g = 2p, 2p + 1 of a
// phase) in 8 distinct bank groups.
//
// Blocks walk the tile grid in groups of kGroupM tile rows (column by column inside a group), so
// the blocks resident at one time share A and B panels in L2 instead of streaming all of B.
#pragma once

#include <cuda_runtime.h>

#include "tessera/kernels/cuda/async_copy.cuh"
#include "mma_f64.cuh"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/tuning/gemm.cuh"
#include "tessera/kernels/cuda/warp.cuh"

namespace tessera::kernels::cuda::detail {

// Tile (row, column) of linear block `id` when tiles are visited in groups of group_m tile rows.
__device__ __forceinline__ void grouped_tile(index_t id, index_t tiles_m, index_t tiles_n, int group_m, index_t& tm,
                                             index_t& tn) {
  const index_t per_group = static_cast<index_t>(group_m) * tiles_n;
  const index_t first_m = (id / per_group) * group_m;
  const index_t rows = tiles_m - first_m < group_m ? tiles_m - first_m : group_m;
  const index_t in_group = id % per_group;
  tm = first_m + in_group % rows;
  tn = in_group / rows;
}

// One thread block's tile (blockIdx.x: linear tile index), staged in the block's dynamic shared
// memory (the kernel launches with Tu::kSharedBytes of it).
template <class Tu, bool VectorA, bool VectorB, bool VectorC>
__device__ __forceinline__ void dgemm_dmma_agent(index_t m, index_t n, index_t k, double alpha,
                                                 const double* __restrict__ a, index_t lda,
                                                 const double* __restrict__ b, index_t ldb, double beta,
                                                 double* __restrict__ c, index_t ldc) {
  static_assert(Tu::kBlockK == 16 && Tu::kWarpM == 64 && Tu::kWarpN == 32, "fragment code assumes these");
  extern __shared__ __align__(16) double shared[];
  const int tid = static_cast<int>(threadIdx.x);
  const int lane = lane_id();
  const int warp = tid / kWarpThreads;
  const int warp_m = warp / (Tu::kBlockN / Tu::kWarpN);
  const int warp_n = warp % (Tu::kBlockN / Tu::kWarpN);
  const int g = lane / 4;
  const int t = lane % 4;
  index_t tile_m, tile_n;
  grouped_tile(blockIdx.x, (m + Tu::kBlockM - 1) / Tu::kBlockM, (n + Tu::kBlockN - 1) / Tu::kBlockN, Tu::kGroupM,
               tile_m, tile_n);
  const index_t row0 = tile_m * Tu::kBlockM;
  const index_t col0 = tile_n * Tu::kBlockN;

  auto a_stage = [&](int s) { return shared + s * Tu::kStageDoubles; };
  auto b_stage = [&](int s) { return shared + s * Tu::kStageDoubles + Tu::kBlockM * Tu::kStrideA; };

  // Loader: each thread copies the same rows / columns of every stage, so its source pointers,
  // the row (A) or column (B) bounds and its shared offsets are fixed before the loop, and only
  // the k bound is tested per step. This keeps the loader's 64-bit address arithmetic out of the
  // register budget, which the accumulators fill.
  constexpr int kAPerRow = VectorA ? Tu::kBlockK / 2 : Tu::kBlockK;       // copies per A row
  constexpr int kACopies = Tu::kBlockM * kAPerRow / Tu::kThreads;         // per thread and stage
  constexpr int kARowStep = Tu::kThreads / kAPerRow;                      // rows between them
  constexpr int kBPerRow = VectorB ? Tu::kBlockN / 2 : Tu::kBlockN;
  constexpr int kBCopies = Tu::kBlockK * kBPerRow / Tu::kThreads;
  constexpr int kBRowStep = Tu::kThreads / kBPerRow;
  const int a_r = tid / kAPerRow;
  const int a_k = (tid % kAPerRow) * (VectorA ? 2 : 1);
  static_assert(kBRowStep == 2 || kBRowStep == 4, "the B swizzle of copy i must not depend on b_r");
  const int b_r = tid / kBPerRow;
  const int b_n = (tid % kBPerRow) * (VectorB ? 2 : 1);
  const index_t a_rows_left = m - row0 - a_r;  // copy i is in bounds if i * kARowStep < this
  const index_t a_row_step = static_cast<index_t>(kARowStep) * lda;
  const double* a_src = a + (a_rows_left > 0 ? (row0 + a_r) * lda + a_k : 0);
  const index_t b_cols_left = n - col0 - b_n;
  const int b_bytes = b_cols_left >= 2 && VectorB ? 16 : b_cols_left >= 1 ? 8 : 0;
  const index_t b_row_step = static_cast<index_t>(kBRowStep) * ldb;
  const double* b_src = b + (b_bytes ? static_cast<index_t>(b_r) * ldb + col0 + b_n : 0);
  const int a_dst = a_r * Tu::kStrideA + a_k;
  const int b_dst = b_r * Tu::kStrideB + b_n;

  // Copies stage `s` of k step k0 and advances the sources by one step.
  auto load_stage = [&](int s, index_t k0) {
    double* as = a_stage(s) + a_dst;
    double* bs = b_stage(s) + b_dst;
    const index_t k_left_a = k - k0 - a_k;
    const int a_bytes = VectorA ? (k_left_a >= 2 ? 16 : k_left_a == 1 ? 8 : 0) : (k_left_a >= 1 ? 8 : 0);
#pragma unroll
    for (int i = 0; i < kACopies; ++i) {
      const int bytes = i * kARowStep < a_rows_left ? a_bytes : 0;
      const double* src = bytes ? a_src + i * a_row_step : a;
      if constexpr (VectorA)
        copy_async_16(as + i * kARowStep * Tu::kStrideA, src, bytes);
      else
        copy_async_8(as + i * kARowStep * Tu::kStrideA, src, bytes);
    }
#pragma unroll
    for (int i = 0; i < kBCopies; ++i) {
      const int r = b_r + i * kBRowStep;  // row of the stage; r / 4 % 4 is known at compile time
      const int bytes = k0 + r < k ? b_bytes : 0;
      const double* src = bytes ? b_src + i * b_row_step : b;
      // Swizzled column (see above): (i * kBRowStep) / 4 % 4 does not depend on b_r < kBRowStep <= 4.
      const int swz = (((i * kBRowStep) >> 2) & 3) << 2;
      double* dst = bs + i * kBRowStep * Tu::kStrideB;
      if constexpr (VectorB)
        copy_async_16(dst + ((b_n ^ swz) - b_n), src, bytes);
      else
        copy_async_8(dst + ((b_n ^ swz) - b_n), src, bytes);
    }
    a_src += Tu::kBlockK;
    b_src += static_cast<index_t>(Tu::kBlockK) * ldb;
  };

  // acc[mt][nt]: the 16x8 MMA tile of C columns 16*nt .. 16*nt + 15 and rows 8*mt .. 8*mt + 7 of
  // the warp tile.
  double acc[8][2][4] = {};
  const index_t k_steps = (k + Tu::kBlockK - 1) / Tu::kBlockK;

  // Lane offsets inside a stage. B: row 4t (+ 2q + e), column warp_n*32 + 16*nt + 2g, swizzled by
  // 4 * ((4t + 2q + e) / 4 % 4) = 4t, which leaves the 16-column tile unchanged. A: row
  // warp_m*64 + g (+ 8*mt), k 4t (+ 2q).
  const int b_frag = 4 * t * Tu::kStrideB + warp_n * Tu::kWarpN + ((2 * g) ^ (4 * t));
  const int a_frag = (warp_m * Tu::kWarpM + g) * Tu::kStrideA + 4 * t;

  // Prologue: stages 0 .. kStages-2 in flight. Every iteration commits one group (possibly empty),
  // so "all but kStages-2 groups complete" always means "the stage about to be used has landed".
#pragma unroll
  for (int s = 0; s < Tu::kStages - 1; ++s) {
    if (s < k_steps) load_stage(s, s * Tu::kBlockK);
    copy_async_commit();
  }

  int s = 0;               // stage multiplied in this iteration
  int s_load = Tu::kStages - 1;  // stage loaded in this iteration
  for (index_t step = 0; step < k_steps; ++step) {
    copy_async_wait<Tu::kStages - 2>();
    // Publishes stage `step` to all warps, and retires every warp's reads of the stage that the
    // load below overwrites (it was multiplied in the previous iteration).
    __syncthreads();
    const index_t next = step + Tu::kStages - 1;
    if (next < k_steps) load_stage(s_load, next * Tu::kBlockK);
    copy_async_commit();

    const double* as = a_stage(s) + a_frag;
    const double* bs = b_stage(s) + b_frag;
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      double fa[2][4];  // MMA-A fragments (B columns), per 16-column tile
      double fb[8][2];  // MMA-B fragments (A rows), per 8-row tile
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const double2 v = *reinterpret_cast<const double2*>(bs + (2 * q + e) * Tu::kStrideB + 16 * nt);
          fa[nt][2 * e] = v.x;
          fa[nt][2 * e + 1] = v.y;
        }
#pragma unroll
      for (int mt = 0; mt < 8; ++mt) {
        const double2 v = *reinterpret_cast<const double2*>(as + mt * 8 * Tu::kStrideA + 2 * q);
        fb[mt][0] = v.x;
        fb[mt][1] = v.y;
      }
#pragma unroll
      for (int mt = 0; mt < 8; ++mt)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) mma_16x8x8_f64(acc[mt][nt], fa[nt], fb[mt]);
    }
    s = s + 1 == Tu::kStages ? 0 : s + 1;
    s_load = s_load + 1 == Tu::kStages ? 0 : s_load + 1;
  }
  copy_async_wait<0>();

  // Epilogue: accumulator r of tile (mt, nt) is C row 8*mt + 2t + r%2, column 16*nt + 2g + r/2 of
  // the warp tile, so a lane's two values of one row are adjacent: one 16-byte store.
#pragma unroll
  for (int mt = 0; mt < 8; ++mt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const index_t row = row0 + warp_m * Tu::kWarpM + mt * 8 + 2 * t + e;
      if (row >= m) continue;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const index_t col = col0 + warp_n * Tu::kWarpN + nt * 16 + 2 * g;
        double* p = c + row * ldc + col;
        double r0 = alpha * acc[mt][nt][e];
        double r1 = alpha * acc[mt][nt][2 + e];
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
