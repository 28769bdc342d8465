// Tuning of reduce_by_key's device pass (device_by_key.cuh), the one place it lives. unique and
// unique_by_key run select's pass (tuning/select.cuh).
#pragma once

#include "tessera/kernels/cuda/tuning/arch.cuh"
#include "tessera/kernels/cuda/tuning/scan.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"

namespace tessera::kernels::cuda::detail {

// A lane's step holds kSlotItems consecutive keys and their values: as many as one 16-byte load
// of the wider of the two moves (4 for 4-byte keys and values, 2 where either is 8 bytes, 1 for
// elements that do not fill vectors), so that both arrays are read with one load per step and
// lane. Steps per thread: about 256 bytes of keys and values in registers, at most 8 steps and 32
// items (a thread's run heads are one 32-bit word). On an H200 (2^26 int32 keys and float values,
// runs of 8) 2, 4 and 8 steps took 402, 379 and 294 us against CUB's 378. The look-back's sleeps are
// the scan's for the item's size. Steps > 0 sets the steps per thread instead (for measuring).
template <class K, class V, class Item, int Steps = 0>
struct ReduceByKeyTuning {
  static constexpr int kSlotItems = Vector<K>::kItems < Vector<V>::kItems ? Vector<K>::kItems : Vector<V>::kItems;
  static constexpr int kBlockThreads = 256;
  static constexpr int kBudgetSteps = static_cast<int>(256 / (kSlotItems * (sizeof(K) + sizeof(V))));
  static constexpr int kCappedSteps = kBudgetSteps < 1 ? 1 : (kBudgetSteps > 8 ? 8 : kBudgetSteps);
  static constexpr int kStepsPerThread =
      Steps > 0 ? Steps : (kCappedSteps * kSlotItems > 32 ? 32 / kSlotItems : kCappedSteps);
  static constexpr int kMinBlocksPerSm = sizeof(K) + sizeof(V) <= 16 ? 2 : 1;
  static constexpr int kItemsPerThread = kStepsPerThread * kSlotItems;
  static constexpr int kWarpItems = kWarpThreads * kItemsPerThread;
  static constexpr int kTileItems = kBlockThreads * kItemsPerThread;
  template <int Arch>
  using Lookback = ScanLookback<tuned_arch(Arch), Item>;
  using Device = Lookback<kDeviceArch>;
};

}  // namespace tessera::kernels::cuda::detail
