// Double-precision GEMM on the FP64 tensor cores (DMMA), row-major C = alpha*A*B + beta*C.
//
// A thread block of 4 warps computes a 128x64 tile of C (two blocks per SM); warp (wm, wn) a
// 64x32 sub-tile as 4x4 tensor-core tiles of 16x8 (64 accumulators per lane, which with the
// fragments fills the 255 registers a thread may have). Two blocks of 4 warps rather than one of 8
// (a 128x128 tile) keep the tensor pipe fed while one block waits at its barrier (cuBLAS's
// sm90 DGEMM uses the same 128x64x16, 4-warp, 3-stage, m16n8k8 shape). K advances in steps of 16 through a kStages-deep cp.async
// pipeline in shared memory; the copies are 16 bytes where rows are 16-byte aligned, 8 bytes
// otherwise, and zero-fill whatever lies past M, N or K, so edges need no other code.
//
// Fragments (mma_f64.cuh): each lane takes four adjacent k of A per row, so A comes out of shared
// memory as 16-byte loads (one LDS.128 per two k instead of one LDS.64 per k), and a 16-deep step
// is two m16n8k8 instructions on sm_90 (four m16n8k4 on sm_80).
// Bank conflicts: A rows are padded to 18 doubles, so the 8 lanes of a 16-byte phase (rows g and
// g + 1, k 4t) hit 8 distinct 16-byte bank groups. B rows (k-major, kBlockN doubles) are not
// padded but swizzled: column n of row r is stored at n ^ (4 * ((r / 4) % 4)), which keeps 16-byte
// pairs whole (bit 0 is untouched) and spreads the rows 4t + j that a half-warp reads over all 16
// 8-byte bank pairs.
//
// Blocks walk the tile grid in groups of kGroupM tile rows (column by column inside a group), so
// the blocks resident at one time share A and B panels in L2 instead of streaming all of B.
#pragma once

#include <cuda_runtime.h>

#include "async_copy.cuh"
#include "mma_f64.cuh"
#include "tessera/kernels/config.hpp"
#include "warp.cuh"

namespace tessera::kernels::cuda::detail {

template <int Stages = 3, int Shape = 8, int GroupM = 8, int NHalves = 1, int BlockN = 64>
struct DgemmTuningT {
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = BlockN;
  static constexpr int kBlockK = 16;
  static constexpr int kStages = Stages;
  static constexpr int kShape = Shape;
  static constexpr int kGroupM = GroupM;
  static constexpr int kNHalves = NHalves;
  static constexpr int kWarpM = 64;
  static constexpr int kWarpN = 32;
  static constexpr int kThreads = 32 * (kBlockM / kWarpM) * (kBlockN / kWarpN);
  // Two blocks of 4 warps per SM where they fit: while one block waits at its barrier, the
  // other's products keep the tensor pipe busy (one block of 8 warps left it idle there).
  static constexpr int kMinBlocks = kThreads <= 128 ? 2 : 1;
  static constexpr int kStrideA = kBlockK + 2;  // doubles per shared row of the A panel (m-major)
  static constexpr int kStrideB = kBlockN;      // doubles per shared row of the B panel (k-major, swizzled)
  static constexpr int kStageDoubles = kBlockM * kStrideA + kBlockK * kStrideB;
  static constexpr std::size_t kSharedBytes = sizeof(double) * kStages * kStageDoubles;
};
using DgemmTuning = DgemmTuningT<>;

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

template <class Tu, bool VectorA, bool VectorB, bool VectorC>
__global__ void __launch_bounds__(Tu::kThreads, Tu::kMinBlocks)
    dgemm_dmma_kernel(index_t m, index_t n, index_t k, double alpha, const double* __restrict__ a, index_t lda,
                      const double* __restrict__ b, index_t ldb, double beta, double* __restrict__ c, index_t ldc) {
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

  double acc[4][4][4] = {};  // [16-row tile][8-column tile][fragment]
  const index_t k_steps = (k + Tu::kBlockK - 1) / Tu::kBlockK;

  // Lane offsets inside a stage. A: rows g (+8, +16 per tile), k 4t. B: rows 4t + j, and the
  // swizzled column of n = warp_n*32 + 8*jt + g, which is warp_n*32 + (8*jt ^ (g ^ 4t)): tiles
  // jt = 0, 2 use x, tiles 1, 3 use x ^ 8 (plus 16 for jt >= 2).
  const int a_offset = (warp_m * Tu::kWarpM + g) * Tu::kStrideA + 4 * t;
  const int x = g ^ (4 * t);
  const int b_offset0 = 4 * t * Tu::kStrideB + warp_n * Tu::kWarpN + x;
  const int b_offset1 = 4 * t * Tu::kStrideB + warp_n * Tu::kWarpN + (x ^ 8);

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

    const double* as = a_stage(s) + a_offset;
    const double* bs = b_stage(s);
    // kNHalves parts of the warp tile along n (default 1: all four 8-column B tiles in registers
    // at once; 2 would hold two at a time and read the A fragments twice per step, for a smaller
    // live set if a larger warp tile needed it).
#pragma unroll
    for (int half = 0; half < Tu::kNHalves; ++half) {
      constexpr int kTilesN = 4 / Tu::kNHalves;
      double bf[kTilesN][4];
#pragma unroll
      for (int q = 0; q < kTilesN; ++q) {
        const int jt = half * kTilesN + q;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          bf[q][j] = bs[((jt & 1) ? b_offset1 : b_offset0) + (jt >> 1) * 16 + j * Tu::kStrideB];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        double af[8];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const double* p = as + (i * 16 + h * 8) * Tu::kStrideA;
          const double2 lo = *reinterpret_cast<const double2*>(p);
          const double2 hi = *reinterpret_cast<const double2*>(p + 2);
          af[0 + h] = lo.x;
          af[2 + h] = lo.y;
          af[4 + h] = hi.x;
          af[6 + h] = hi.y;
        }
#pragma unroll
        for (int q = 0; q < kTilesN; ++q) mma_16x8x16_f64<Tu::kShape>(acc[i][half * kTilesN + q], af, bf[q]);
      }
    }
    s = s + 1 == Tu::kStages ? 0 : s + 1;
    s_load = s_load + 1 == Tu::kStages ? 0 : s_load + 1;
  }
  copy_async_wait<0>();

  // Epilogue: fragment r of tile (i, j) is row g + 8*(r/2), column 2*t + r%2.
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const index_t row = row0 + warp_m * Tu::kWarpM + i * 16 + half * 8 + g;
      if (row >= m) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const index_t col = col0 + warp_n * Tu::kWarpN + j * 8 + t * 2;
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
