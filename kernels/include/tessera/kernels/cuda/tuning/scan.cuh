// Tuning of the scan, the one place it lives: the single-pass scan (device_scan.cuh) and the
// two-pass scan of the distributed scan (kernels/cuda/device_scan_two_pass.cuh).
#pragma once

#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/tuning/arch.cuh"
#include "tessera/kernels/cuda/tuning/look_back.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"

namespace tessera::kernels::cuda::detail {

// The look-back's sleeps (tuning/look_back.cuh) per architecture and type.
template <int Arch, class T>
struct ScanLookback;

// sm_90: CUB's sm90 values for 4-byte types, and its 8-byte ones for every other size (CUB's
// float and double values, 1140/688 and 1215/576, were not tried). On an H200 at 2^28 and 2^30
// they took the scan from 0.94-0.99x to 1.03-1.11x CUB.
template <class T>
struct ScanLookback<900, T> : LookbackDelays<sizeof(T) == 4 ? 1245 : 1290, sizeof(T) == 4 ? 648 : 632> {};

// sm_80: CUB's sm80 values (tuned by CUB on an A100; not measured with this scan): per size for
// 1- to 8-byte types, float's and double's own, and CUB's default for other sizes.
template <class T>
struct ScanLookback<800, T>
    : std::conditional_t<
          std::is_same_v<T, float>, LookbackDelays<1050, 724>,
          std::conditional_t<
              std::is_same_v<T, double>, LookbackDelays<1100, 388>,
              std::conditional_t<
                  sizeof(T) == 1, LookbackDelays<725, 368>,
                  std::conditional_t<
                      sizeof(T) == 2, LookbackDelays<1040, 488>,
                      std::conditional_t<sizeof(T) == 4, LookbackDelays<1180, 268>,
                                         std::conditional_t<sizeof(T) == 8, LookbackDelays<785, 716>,
                                                            LookbackDelays<450, 0>>>>>>> {};

// The single-pass scan. Items per thread decides most for a look-back scan: fewer tiles, fewer
// look-backs and more bytes in flight per resident thread block. Measured on an H100 at 2^30
// elements (docs/KERNELS.md): with 256 threads, 4-byte types went 0.93x -> 0.99x CUB from 6 to 8
// vectors and ~1.0x at 10 (40 items); 8-byte types 0.72x -> 0.76x from 6 to 8, and 10 or 12 gave no
// steady gain. 128 threads (6 vectors) and 512 threads (4 vectors) were slower. Other element sizes
// keep about 128 bytes of items per thread. The launch shape was measured on H100/H200 only; sm_80
// runs the same (tuning/arch.cuh: a launch shape is one for every architecture).
template <class T>
struct ScanTuning {
  static constexpr int kVectorsPerThread =
      sizeof(T) == 4 ? 10 : sizeof(T) == 8 ? 8
                                           : (128 / static_cast<int>(sizeof(Vector<T>)) < 1 ? 1
                                              : 128 / static_cast<int>(sizeof(Vector<T>)) > 8
                                                  ? 8
                                                  : 128 / static_cast<int>(sizeof(Vector<T>)));
  static constexpr int kBlockThreads = 256;
  // Resident blocks per SM the compiler must allow (registers <= 64): 8-byte inclusive scans took
  // 80 registers (3 blocks per SM) while CUB's scan keeps 5 blocks of 56 resident (ncu, H100).
  // Larger elements are left to the compiler (a register cap would spill them).
  static constexpr int kMinBlocksPerSm = sizeof(T) <= 8 ? 4 : 1;
  // Tried: tile index = blockIdx.x instead of the atomic counter (0-3% more), left out because it
  // relies on the hardware starting thread blocks in index order, which CUDA does not promise.
  // Tried (one H200, 2^28 and 2^30, exclusive sums, 2026-12-02): resident thread blocks looping over
  // tiles with the next tile's loads in flight (cp.async into shared memory, 1-3 tiles ahead,
  // 4-40 KB tiles, 2-5 blocks an SM). Tiles taken from the counter ahead of their scan broke the
  // order the look-back needs (a tile waits on predecessors that other blocks will scan only after
  // their own earlier tiles): 11-42% of the copy rate; tiles by grid stride (every block resident at
  // once, so not kept) 45-78%; this kernel 78-87% in the same runs.
  static constexpr int kVectorItems = Vector<T>::kItems;
  static constexpr int kItemsPerThread = kVectorsPerThread * kVectorItems;
  static constexpr int kWarpItems = kWarpThreads * kItemsPerThread;
  static constexpr int kTileItems = kBlockThreads * kItemsPerThread;
  // Values only device code reads, for the architecture of the device pass (tuning/arch.cuh).
  template <int Arch>
  using Lookback = ScanLookback<tuned_arch(Arch), T>;
  using Device = Lookback<kDeviceArch>;
};

// The pipelined single-pass scan (sm_90, scan_pipelined_kernel in device_scan.cuh) for elements of
// 4 and 8 bytes: one resident thread block per SM of a producer warp (bulk copies of whole tiles
// into a ring of kStages tiles), a reducing warp (each tile's aggregate published as soon as it has
// landed), a look-back warp and kScanWarps scanning warps, each of those owning kWarpItems
// consecutive elements of a tile in the single-pass scan's arrangement. Bytes in flight decide:
// one H200, exclusive sums, % of the copy rate at 2^28 / 2^30 elements, 4-byte and 8-byte types
// (tessera_bench_kernels --ops scan,scan-variants, 2026-12-03, bench/results/kernels.json): 4 slots
// of 32 KB 76.5-77.2 / 78.6-78.7 and 80.7-81.0 / 81.9-82.1; 6 slots 87.0 / 89.5 and 90.1-90.5 /
// 91.3-91.5; 7 slots (the most that fit in 227 KB) 88.9-89.0 / 91.1-91.2 and 92.6-93.1 / 93.5-93.6;
// 9 slots of 24 KB 88.3-88.7 / 91.0 and 87.9-89.2 / 88.6-89.6; 16 scanning warps with 7 slots
// 85.4-86.5 / 87.5-88.6 and 76.5-87.2; two blocks an SM of 7 slots of 16 KB 87.9 / 90.0 and
// 74.4-76.1; the one-tile-per-block kernel 78.9-80.4 / 80.7-81.7 and 84.7-85.8 / 85.3-87.1.
template <class T, int Stages = 7, int VectorsPerThread = 8, int MinBlocks = 1, int ScanWarps = 8>
struct ScanPipelineTuning {
  static constexpr int kScanWarps = ScanWarps;
  static constexpr int kRoleWarps = 3;  // producer, reducer, look-back
  static constexpr int kThreads = (kScanWarps + kRoleWarps) * kWarpThreads;
  static constexpr int kVectorsPerThread = VectorsPerThread;  // per scanning lane and tile
  static constexpr int kStages = Stages;
  static constexpr int kMinBlocks = MinBlocks;
  static constexpr int kVectorItems = Vector<T>::kItems;
  static constexpr int kItemsPerThread = kVectorsPerThread * kVectorItems;
  static constexpr int kWarpItems = kWarpThreads * kItemsPerThread;
  static constexpr int kTileItems = kScanWarps * kWarpItems;
  // The one-tile-per-block kernel below 32 MiB (2^22 floats: 0.018-0.019 against 0.023-0.025 ms;
  // 2^22 doubles within 3%; from 2^24 elements the pipelined kernel is 1.05-1.15x as fast).
  static constexpr index_t kMinItems = (index_t{32} << 20) / static_cast<index_t>(sizeof(T));
  template <int Arch>
  using Lookback = ScanLookback<tuned_arch(Arch), T>;
  using Device = Lookback<kDeviceArch>;
};

// The two-pass scan: the single-pass scan's tile arrangement, segments of tiles per thread block.
template <class T>
struct TwoPassScanTuning {
  using Tile = ScanTuning<T>;
  // Tiles per thread block: few enough segments per wave of blocks to keep every SM busy to the
  // end (2^28 floats: 3277 segments of 81920), many enough that pass 1's partials stay tiny.
  static constexpr int kTilesPerSegment = 8;
  static constexpr index_t kSegmentItems = static_cast<index_t>(Tile::kTileItems) * kTilesPerSegment;
  static constexpr int kReduceThreads = 256;
  static constexpr int kReduceLoads = 4;  // 16-byte loads in flight per thread in pass 1
  static constexpr int kPrefixThreads = 1024;
};

}  // namespace tessera::kernels::cuda::detail
