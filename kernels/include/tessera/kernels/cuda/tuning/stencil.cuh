// Tuning of the stencil passes (device_stencil.cuh), the one place each pass is tuned.
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every
// architecture, tuning/arch.cuh; none of these was measured on an sm_80 device).
#pragma once

namespace tessera::kernels::cuda::detail {

struct Stencil2dTuning {
  static constexpr int kWarps = 4;           // warps of a thread block, side by side along the rows
  static constexpr int kVectorsPerLane = 2;  // 16-byte vectors of a row per lane (4 floats, 2 doubles)
  static constexpr int kPrefetchRows = 2;    // rows in flight ahead of the one computed
  static constexpr int kMinSegmentRows = 4;  // the shortest segment a warp walks (narrow regions)
  static constexpr int kMinBlocksPerSm = 5;  // 640 threads per SM, up to 102 registers per thread
  static constexpr int kNarrowCols = 16;     // regions this narrow or narrower: one thread per cell
  static constexpr int kNarrowThreads = 256;
  // float 16384^2 5-point sweep on an H100 (tessera_bench_stencil): 2 vectors per lane and 5
  // blocks per SM 0.875 ms (81.9% of the copy rate), 1 vector and 8 blocks 0.931 ms (77.0%). With
  // segments making one wave (`--only variants --reps 15`, 2026-11-24): 0.880 ms (81.5%).
};

// stencil_2d through the user stencil's tiled pass (device_cells.cuh, the cell StencilSweepCell):
// a thread block takes TX columns and marches down the rows, G a step, kMinBlocks blocks an SM.
// Where kTiled is false the aligned regions take the ring of Stencil2dBulkTuning on sm_90.
// One H200, tessera_bench_stencil --only sweep5,sweep9,double,variants, 2026-11-30, three runs, us
// per sweep: doubles (16384 x 8192), 1024 columns: 5-point 577-581 against the ring's 581-585,
// 9-point 574-580 against 586-595 (512 columns and 2 blocks: 592-597); floats (16384^2), the
// best shape 612-619 (5-point) and 616-672 (9-point) against the ring's 580-588 and 586-594, the
// shapes with more registers a thread (1 block an SM, or 8 rows a step) 1.0-1.2 ms. (Doubles at 512
// columns and 1 block an SM: 558-560 in one run, not taken.) Floats at more warps an SM, 2026-12-01,
// two runs against the ring's 582-591: 1024 columns and 2 rows a step, 2 blocks (32 registers)
// 612-613 / 621 (9-point); 512 and 2 rows, 4 blocks 657 / 647-652; 4 rows and 3 blocks of 512 or 6
// of 256 (40 registers, 20 bytes spilled) 771-803; 8 rows a step at 64 registers (one run) 1.39-1.78 ms. The
// tiled pass stays about 5% behind the ring for this body whatever the shape, so floats keep the ring.
template <class T>
struct Stencil2dTiledTuning {
  static constexpr bool kTiled = sizeof(T) == 8;
  static constexpr int TX = 1024, TY = 1, CY = 1, G = 4;
  static constexpr int kBudget = 96 * 1024;  // bytes of shared memory the ring may take
  static constexpr int kMinBlocks = 1;
};

// The sweep through a ring of rows in shared memory that bulk copies fill (sm_90, aligned regions),
// the sweep of aligned regions where Stencil2dTiledTuning does not take them and the interior of
// stencil_2d_frame_last: a thread block of kWarps warps takes a strip of kWarps x 32 x
// kVectorsPerLane 16-byte vectors (2048 floats, 1024 doubles) and keeps kDepth rows of it in flight.
struct Stencil2dBulkTuning {
  static constexpr int kWarps = 8;
  static constexpr int kVectorsPerLane = 2;  // 16-byte vectors of a row per thread, kWarps x 32 vectors apart
  static constexpr int kDepth = 6;           // row slots of the ring (48 KiB with the strip's halo: 4 blocks per SM)
  static constexpr int kMinSegmentRows = 4;
  static constexpr int kMinBlocksPerSm = 4;  // up to 64 registers (48 used by the float 5-point sweep)
  // The 9-point sweep of doubles: 3 per SM (up to 85 registers; it uses 72). Built under the 64-register
  // cap of 4 blocks per SM, its results differed from the cpu backend's on an H100 from column 514
  // of 1030-, 2051- and 8192-wide regions (every seed tried, racecheck clean, PTX read correct);
  // with 3 they match (three seeds, memcheck and racecheck clean) at 0.778 ms for 16384 x 8192, 91.9%
  // of the copy rate (tessera_bench_stencil --only double, 2026-11-24).
  static constexpr int kMinBlocksPerSmNineDouble = 3;
  // float 16384^2 5-point sweep on an H100 (tessera_bench_stencil --only sweep5,sweep9,double,variants
  // --reps 15, 2026-11-24; copy rate 2994 GB/s): 8 warps and 6 slots 0.787 ms (91.1%), 8 warps and
  // 8 slots 0.793, 8 warps and 4 slots 0.805, 16 warps and 3 slots 0.781, 4 warps and 8 / 12
  // slots 0.813 / 0.823 (0.802 / 0.794 in another run), 4 warps of one vector per thread and 12
  // slots 0.842. Doubles, 16384 x 8192: 8 warps and 6 slots 0.793, 8 slots 0.787. The library's
  // rows with this tuning (bash bench/gpu/sweep.sh, --reps 10, 2026-11-24): 5-point float 0.792 ms
  // (90.7%), 9-point float 0.788 (91.1%), 5-point double 0.780 (92.1%).
  // The same variants on an H200 (tessera_bench_stencil --only sweep5,variants -n 15 -w 3, two runs,
  // 2026-12-02, copy 4205-4239 GB/s), us: this tuning 583.1 / 584.7 (87.6%), 4 warps and 12 slots
  // 581.3 / 582.0, 8 warps and 8 slots 583.1 / 583.2, 16 warps and 3 slots 583.4 / 587.3, 4 warps
  // and 8 slots 594.8 / 593.7, 8 warps and 4 slots 597.7 / 595.4: none is 2% ahead, so the H200
  // keeps the H100's tuning (no choice by device).
};

// The 1-D convolution up to kMaxRadius: each lane owns kVectorsPerLane consecutive 16-byte vectors of
// outputs; the inputs beside them come from the neighbouring lanes by shuffles.
struct Convolve1dLanesTuning {
  static constexpr int kThreads = 256;
  static constexpr int kVectorsPerLane = 2;
  static constexpr int kMaxRadius = 8;
  static constexpr int kMinBlocksPerSm = 4;   // 4-byte elements: up to 64 registers
  static constexpr int kMinBlocksPerSm8 = 3;  // 8-byte elements: up to 85 registers
};

// The 1-D convolution of wider kernels: tiles through shared memory, register blocks of outputs and
// taps (agent_stencil.cuh). % of the copy rate at radius 12 / 16 / 32 / 64, one H200, 2^28 floats,
// two runs of tessera_bench_stencil --only convolve,convolve-variants (2026-12-01): 13 outputs x 16
// taps, 4 blocks of 256 threads 80 / 72-73 / 47-48 / 28-29; 15 x 16 at 3 blocks 76-79 / 71-72 / 48 /
// 29; 15 x 8 78-79 / 68 / 43-44 / 25; 9 x 8 65-66 / 57 / 39 / 23; 128 threads of 23 x 8 83-84 / 72 /
// 45 / 25, of 31 x 8 70-72 / 66 / 48 / 28. One H100, one run (2026-12-02): 13 x 16 at 4 blocks
// 91.6 / 91.3 / 67.2 / 40.0; 15 x 16 at 3 blocks 91.9 / 92.7 / 67.9 / 40.9 (r = 64: 1.757 against
// 1.796 ms); the others 79-91 / 79-91 / 55-64 / 33-37.
struct Convolve1dTuning {
  static constexpr int kThreads = 256;
  static constexpr int kItems = 13;       // consecutive outputs per thread (odd: no bank conflicts)
  static constexpr int kTaps = 16;        // taps in registers at once
  static constexpr int kItems8 = 7;       // the same for 8-byte elements (within 64 registers; not
  static constexpr int kTaps8 = 4;        // measured against others)
  static constexpr int kPassTaps = 512;   // taps in shared memory at once (a pass over the tile)
  static constexpr int kMinBlocksPerSm = 4;   // up to 64 registers
  static constexpr int kMinBlocksPerSm8 = 4;
};

// The halo's pack and unpack. 128-thread blocks (40 registers each) fit beside a thread block of the
// 3-D user stencil's interior sweep (512 threads at 112 registers leave 8,192 of an SM's 65,536),
// so that the exchange's kernels run while the interior does instead of waiting for its blocks to
// leave: with them, and the shell's 128-thread blocks (cuda/device_cells.cuh, kPlanesTileY), the
// overlapped 3-D step on two H200s (7-point, 256^3 a rank) took 45.7-46.3 us against 46.4-47.1
// with 256-thread blocks, alternated in one session (bench/results/stencil.json).
struct PackTuning {
  static constexpr int kThreads = 128;
  static constexpr int kMaxRectangles = 32;  // per launch (the batch travels in the parameters)
};

}  // namespace tessera::kernels::cuda::detail
