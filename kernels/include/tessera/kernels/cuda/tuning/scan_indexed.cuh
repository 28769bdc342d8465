// Tuning of scan_indexed (device_scan_indexed.cuh), the one place it lives: the launch shape, and
// the look-back's sleeps taken from the scan's (tuning/scan.cuh) for the item's size. Not measured
// on its own yet: items per thread keep about 128 bytes of items in registers per thread, as the
// scan does for sizes other than 4 and 8 bytes.
#pragma once

#include "tessera/kernels/cuda/tuning/arch.cuh"
#include "tessera/kernels/cuda/tuning/scan.cuh"

namespace tessera::kernels::cuda::detail {

template <class T>
struct ScanIndexedTuning {
  static constexpr int kBlockThreads = 256;
  static constexpr int kItemsPerThread =
      128 / static_cast<int>(sizeof(T)) < 2 ? 2 : (128 / static_cast<int>(sizeof(T)) > 16 ? 16 : 128 / static_cast<int>(sizeof(T)));
  static constexpr int kMinBlocksPerSm = 1;
  static constexpr int kWarpItems = kWarpThreads * kItemsPerThread;
  static constexpr int kTileItems = kBlockThreads * kItemsPerThread;
  template <int Arch>
  using Lookback = ScanLookback<tuned_arch(Arch), T>;
  using Device = Lookback<kDeviceArch>;
};

}  // namespace tessera::kernels::cuda::detail
