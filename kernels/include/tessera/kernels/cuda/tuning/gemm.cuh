// Tuning of the local matrix product (kernels/cuda/gemm.cu and its kernels), the one place it lives:
// the float SIMT tile, the double tensor-core tile, the split of K, and the small passes beside them.
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every architecture,
// tuning/arch.cuh; none of these was measured on an sm_80 device; the double tile's kStages and
// kMinBlocks fit the shared memory of both, 164 KiB per SM on sm_80 and 228 KiB on sm_90).
// Plain C++: host-only tests of the split policy include it.
#pragma once

#include <cstddef>

#include "tessera/kernels/config.hpp"

namespace tessera::kernels::cuda::detail {

// The float tile (agent_gemm_simt.cuh): 128 x 128 of C per thread block of 256 threads, K steps
// of 8, A's shared rows padded by 4 floats; two resident blocks per SM at least (registers <= 128).
struct SgemmTuning {
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = 128;
  static constexpr int kBlockK = 8;
  static constexpr int kThreads = 256;
  static constexpr int kPadA = 4;
  static constexpr int kMinBlocksPerSm = 2;
};

// The double tile (agent_gemm_dmma.cuh).
template <int Stages = 3, int GroupM = 8, int BlockN = 64>
struct DgemmTuningT {
  static constexpr int kBlockM = 128;
  static constexpr int kBlockN = BlockN;
  static constexpr int kBlockK = 16;
  static constexpr int kStages = Stages;
  static constexpr int kGroupM = GroupM;
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

// The split of K of the float product (gemm_split_k.cuh).
struct SplitKPolicy {
  // K / S must reach this: shallower slices spend too much of their time in the pipeline's fill
  // and in the epilogue, which every slice repeats. (At 1000^3 four slices of 256 or less were the
  // fastest split, H200.)
  index_t min_slice_depth = 192;
  // Workspace of the S planes (bytes), from the stream-ordered pool.
  double max_workspace_bytes = 512.0 * (1 << 20);
  // Rates the predictions use, measured on H100/H200: the SIMT kernel sustains ~40 TFLOP/s over
  // 132 SMs at 2 blocks per SM, i.e. ~7.5e10 multiply-adds per second per resident block; device
  // copies move ~3e12 bytes/s on an H100 (4.2e12 on an H200; the lower figure keeps the split for
  // clear gains). Only their ratio decides, so other devices get a sensible if rougher choice.
  double slot_fma_per_second = 7.5e10;
  double bytes_per_second = 3.0e12;
  double launch_seconds = 5e-6;  // the extra kernel and the workspace allocation
  // A split must be predicted this much faster than no split (the model ignores effects of a few %).
  double required_gain = 0.03;
  int max_splits = 4;
  // Time of a block alone on its SM, next to one of two sharing it (H200: 1000^3 in 2 slices, 128
  // blocks on 132 SMs, took 0.074 ms; in 3, 192 blocks so that some SMs hold two, 0.085 ms: a lone
  // block runs 1.75x as fast, ~0.57 of the time). Without it the model saw no gain in filling a
  // partial wave's empty SMs and chose 3 there; over 13 shapes (H200, every S timed) its choices
  // were 35% slower in sum than the best ones, and 4% with it.
  double lone_block_time = 0.57;
};

// C = beta * C where the product reads neither A nor B (k == 0 or alpha == 0): a grid-stride loop
// over at most kWaves thread blocks per SM.
struct GemmScaleTuning {
  static constexpr int kThreads = 256;
  static constexpr int kWaves = 4;
};

// The pass that adds the split-K planes into C: a thread per 4 consecutive columns, at most
// kThreads per block, about kBlocksPerSm thread blocks per SM in all (a few waves); each strides
// over the rows.
struct SplitKReduceTuning {
  static constexpr int kThreads = 256;
  static constexpr int kBlocksPerSm = 16;
};

// The copy of B to 16-byte aligned rows (a thread per 4 floats, about kBlocksPerSm thread blocks
// per SM, each striding over the rows), and when the float product makes it. Rows of B that are not
// 16-byte aligned make every thread load its 4 B values one by one: at 5000 x 3001 x 4097 (H200)
// that costs 11% against the same product with B's rows aligned (3.48 against 3.13 ms in 3 slices;
// A's unaligned rows cost nothing measurable there). A copy with aligned rows moves B once each way
// (~25 us for those 49 MB), against 2 m FLOP per element of B in the product: made where m >=
// kMinRows (the copy then costs under 4% of the product at ~41 TFLOP/s and 4.2 TB/s, 0.8% at m =
// 5000) and B is large enough (kMinElements) for one more launch not to matter.
struct GemmCopyBTuning {
  static constexpr int kThreads = 256;
  static constexpr int kBlocksPerSm = 16;
  static constexpr index_t kMinRows = 1024;
  static constexpr index_t kMinElements = index_t{1} << 20;
};

}  // namespace tessera::kernels::cuda::detail
