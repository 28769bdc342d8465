// Tuning of the transpose (device_transpose.cuh), the one place it lives.
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every
// architecture, tuning/arch.cuh; none of these was measured on an sm_80 device).
#pragma once

#include <cstddef>

namespace tessera::kernels::cuda::detail {

// The one place the transpose is tuned, per element size. Measured on an H100 with
// tessera_bench_transpose --variants (2026-11-24; median ms of 10-15 calls):
//   vector tiles: kUnitRows x kUnitCols units of V x V elements (V = 16 / ElementBytes),
//     kVectorThreads threads, each moving kUnitRows * kUnitCols / kVectorThreads units. Both unit
//     counts are at least 8 (the swizzle's period: 8 16-byte slots span the 32 banks), so that each
//     side of a tile is a run of at least 128 bytes. float 16384^2: 16 x 16 units, 128 threads
//     0.750; 256 threads 0.756; 8 x 8 and 64 threads 0.807; 32 x 16 and 256 threads 0.747;
//     16 x 16 and 128 threads with evict-first loads and stores (ld.global.cs / st.global.cs)
//     0.744-0.753, no gain beyond the spread between runs, so the tiles load through the read-only
//     path (__ldg) and store with the default policy. double 16384 x 8192: 32 x 32 and 256 threads
//     0.749, 16 x 16 and 128 or 256 threads 0.746-0.747. int8 32768^2: 16 x 8 and 128 threads
//     0.781, 8 x 8 and 64 threads 0.798, 8 x 16 and 128 threads 0.789.
//     On an H200 (2026-12-01): float 16 x 16 units and 128 threads against 32 x 16 and 256: 0.274 /
//     0.274 ms (16384 x 8192), 0.142 / 0.142 (8192^2), 8.9-9.0 / 9.8-10.0 us at 1000^2 (geam
//     8.4-8.7: more, smaller tiles over 132 SMs); double 16 x 16 units and 256 threads against 32 x
//     32: 0.541 / 0.580 ms (16384 x 8192, geam 0.537-0.538), 0.274 / 0.297 (8192^2, geam 0.271-0.272).
//   4-byte vector tiles (1- and 2-byte elements on rows aligned to 4 bytes but not 16): 32 x 32
//     units of 4 x 4 bytes or 2 x 2 halves.
//   scalar tiles (rows not on 16-byte boundaries where kSkewedTiles is false, as only a forced
//     tuning has it): kScalarTileRows x kScalarTileCols elements,
//     kScalarThreads threads; more loads in flight per thread and longer runs per row pay.
//     float 16383 x 16385: 32 x 32 and 128 threads 1.702, 64 x 32 1.478, 32 x 64 1.566, 64 x 64
//     and 256 threads 1.545, 128 x 64 and 256 threads 1.335. double 8191 x 16385: 32 x 32 1.161,
//     64 x 32 1.137, 64 x 64 1.088. int8 32767 x 32769: 32 x 32 3.529, 64 x 64 3.306, 64 x 128
//     3.500. int16 32767 x 16385: 32 x 32 2.712, 64 x 64 2.291.
//   edge tiles: the scalar tiles of the strips beside vector tiles, kEdgeTile square. Small: the
//     launch's registers and shared memory are the larger of its two agents' (64 x 64 edge tiles
//     took double 16384 x 8192 from 0.749 to 0.803 and float 1000^2 from 0.010 to 0.013).
//   skinny tiles: kSkinnySteps elements per thread.
//   kWaves: the grid is at most this many waves of resident thread blocks; each block then loops.
template <int ElementBytes>
struct TransposeTuning {
  static constexpr int kUnitRows = ElementBytes == 16 ? 32 : 16;
  static constexpr int kUnitCols = ElementBytes == 1 ? 8 : ElementBytes == 16 ? 32 : 16;
  static constexpr int kVectorThreads = ElementBytes >= 8 ? 256 : 128;
  static constexpr int kWordUnits = 32;
  static constexpr int kWordThreads = 256;
  static constexpr int kScalarTileRows = ElementBytes == 16 ? 32 : ElementBytes == 4 ? 128 : 64;
  static constexpr int kScalarTileCols = ElementBytes == 16 ? 32 : 64;
  static constexpr int kScalarThreads = ElementBytes == 16 ? 128 : 256;
  static constexpr int kEdgeTile = 32;
  static constexpr int kSkinnyThreads = 256;
  static constexpr int kSkinnySteps = ElementBytes <= 2 ? 16 : 32 / ElementBytes;
  static constexpr int kWaves = 32;
  // Rows not on 16-byte boundaries, 4- and 8-byte elements: skewed tiles (transpose_skewed_kernel:
  // padded tiles in a two-dimensional grid with each output row cut on 32-byte sector boundaries, so
  // that no sector inside an output row is written in part by two thread blocks) of kSkewedTile^2
  // elements, kSkewedThreads threads, at least kSkewedBlocksPerSm resident per SM, instead of the
  // scalar tiles above. tessera_bench_transpose --variants, H100, 2026-11-24 (ms, median
  // of 10; skewed / the same padded tiles without the cut (64^2 floats, 32^2 doubles at 128 threads)
  // / geam): float 16383 x 16385 0.796 / 1.176 / 0.982 (90.4% of the copy rate), 8191 x 8193
  // 0.202 / 0.284 / 0.241, 8191 x 16385 0.403 / 0.589 / 0.489; skewed 32^2 and 256 threads 0.925,
  // 0.234, 0.472. double, 32^2 and 256 threads (64 registers) 1.600 / 1.900 /
  // 1.610, 8191 x 8193 0.401 / 0.452 / 0.406; 128 threads (118 registers) 1.603 and 0.403. ncu on a
  // standalone copy of both float kernels: L2 write sectors 33.6M against the uncut tiles' 40.9M,
  // DRAM reads 1.07 against 1.13 GB.
  // 1- and 2-byte elements: the skewed tiles moved as 4-byte words, kSkewedInWords words of each
  // input row by kSkewedOutWords of each output row, transposed in registers on the way in
  // (transpose_skewed_words_kernel; bytes: 512 threads, 2 blocks an SM) or, for halves, fed by
  // cp.async through a staging area first (kSkewedWordsStaged,
  // transpose_skewed_words_kernel with kStaged; 256 threads, 4 blocks). tessera_bench_transpose
  // --variants, H200, 2026-12-01, three runs (transpose.json; ms; in/out words, threads x blocks):
  // int8 32767 x 32769: registers 64/64 512x2 0.713-0.722, 64/32 512x2 0.758-0.771, 32/32 256x4
  // 0.852-0.855, 32/32 512x2 0.984; staged 64/32 512x2 0.780-0.788, 32/32 256x4 0.735-0.788, 64/64
  // 512x1 0.897; the earlier form that gathered each output word from shared memory on the way out
  // 0.906 (64/32); scalar tiles 2.758-2.767. 8191 x 16385: registers 64/64 0.120-0.123, 64/32
  // 0.116-0.118, staged 64/32 0.121-0.124, the gathering form 0.134. int16 32767 x 16385: staged
  // 64/32 256x4 0.700-0.734, 64/64 512x2 0.717-0.751; registers 64/64 512x2 0.762-0.770, 64/32
  // 0.924; the gathering form 0.794-0.797; scalar 1.807-1.812. 8191 x 16385: staged 64/32
  // 0.192-0.200, registers 64/64 0.208-0.212, the gathering form 0.217-0.218. Thread blocks that
  // each walk many tiles and copy the next one in while writing out the current: 1.012-1.016 (int8)
  // and 0.839-0.841 (int16). ncu (int8 registers 64/32): 70% of the SM's throughput, DRAM at 52% of
  // its peak.
  static constexpr bool kSkewedTiles = ElementBytes <= 8;
  static constexpr int kSkewedTile = ElementBytes == 4 ? 64 : 32;
  static constexpr int kSkewedThreads = ElementBytes == 1 ? 512 : ElementBytes == 16 ? 128 : 256;
  static constexpr int kSkewedBlocksPerSm = ElementBytes == 1 ? 2 : ElementBytes <= 4 ? 4 : ElementBytes == 8 ? 8 : 1;
  static constexpr int kSkewedInWords = 64, kSkewedOutWords = ElementBytes == 1 ? 64 : 32;
  static constexpr bool kSkewedWordsStaged = ElementBytes == 2;
  // Doubles' skewed tiles loaded by cp.async straight into shared memory (no register holds a load,
  // so 8 blocks of 256 threads fit an SM at 32 registers). H200, 2026-12-01, ms against geam
  // 0.596 / 1.195 (8191 x 16385 / 16383 x 16385): 32^2 at 8 blocks 0.594 / 1.190, at 4 blocks 0.613
  // / 1.221, 64^2 at 4 blocks 0.592 / 1.185, 64^2 of 512 threads 0.604 / 1.203; loaded through
  // registers 0.649-0.650 / 1.290. Floats stay with registers: 0.349-0.357 / 0.688-0.706 by
  // cp.async against 0.309 / 0.607.
  static constexpr bool kSkewedAsync = ElementBytes == 8;
  // 16-byte elements on blocks whose sides are not multiples of kGridEdgeMultiple: skewed tiles of
  // 32^2 and kSkewedThreads threads instead of vector tiles with scalar edges. 16383 x 16385 (ms;
  // geam 3.086): skewed 3.103, uncut padded tiles 3.246 (128 threads) and 3.247 (256), vector tiles
  // 3.963; 8191 x 8193 (geam 0.768): skewed 0.770, uncut 0.787; 8191 x 16385 (geam 1.536): uncut 1.623,
  // vector tiles 1.986; 8192^2: vector tiles 0.755 (geam 0.738).
  static constexpr bool kGridEdgeBlocks = ElementBytes == 16;
  static constexpr int kGridEdgeMultiple = 32;
};

// Elements of any size, moved as runs of words (device_transpose_words): kTile x kTile elements per
// step of a thread block of kThreads, at most kWaves waves of resident thread blocks.
// Elements of kLargeBytes or more take a warp each (device_transpose_large).
struct TransposeWordsTuning {
  static constexpr int kThreads = 256;
  static constexpr int kTile = 32;
  static constexpr int kWaves = 32;
  static constexpr std::size_t kLargeBytes = 256;
};

}  // namespace tessera::kernels::cuda::detail
