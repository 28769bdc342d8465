// Tuning of select (device_select.cuh), the one place it lives.
#pragma once

#include <type_traits>

#include "tessera/kernels/cuda/tuning/arch.cuh"
#include "tessera/kernels/cuda/tuning/look_back.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"

namespace tessera::kernels::cuda::detail {

// The look-back's sleeps (tuning/look_back.cuh) per architecture and element type.
template <int Arch, class T>
struct SelectLookback;

// sm_90: CUB's sm90 values of a select by predicate of 4-byte items, for every element size;
// 0.96x -> 1.15-1.17x CUB on an H200.
template <class T>
struct SelectLookback<900, T> : LookbackDelays<1150, 76> {};

// sm_80: CUB's sm80 values of a select by predicate per item size (tuned by CUB on an A100; not
// measured with this select): its 16-byte value for larger items.
template <class T>
struct SelectLookback<800, T>
    : std::conditional_t<
          sizeof(T) == 1, LookbackDelays<395, 0>,
          std::conditional_t<sizeof(T) == 2, LookbackDelays<870, 0>,
                             std::conditional_t<sizeof(T) == 4, LookbackDelays<1130, 0>,
                                                std::conditional_t<sizeof(T) == 8, LookbackDelays<1165, 832>,
                                                                   LookbackDelays<1140, 0>>>>> {};

// The scan's tile arrangement, with at most 32 items per thread so that a thread's kept flags fit
// one 32-bit word (8 vectors: 32 items of 4 bytes, 16 of 8 bytes; 2 vectors of 1-byte items), and at
// most 32 KiB of staged elements per thread block (large structs: fewer), with their 2-byte places
// where a companion array of values follows them (WithPlaces: unique_by_key). The launch shape was
// measured on an H200 only; sm_80 runs the same (tuning/arch.cuh: a launch shape is one for every
// architecture).
template <class T, bool WithPlaces = false>
struct SelectTuning {
  static_assert(sizeof(T) <= 128, "select: elements larger than 128 bytes are not supported on the cuda backend");
  static constexpr int kBlockThreads = 256;
  static constexpr int kFlagLimit = 32 / Vector<T>::kItems;
  static constexpr int kStageBudget = static_cast<int>(
      32768 / (kBlockThreads * (sizeof(Vector<T>) + (WithPlaces ? 2 * Vector<T>::kItems : 0))));
  static constexpr int kStageLimit = kStageBudget < 1 ? 1 : kStageBudget;
  static constexpr int kVectorsPerThread =
      kFlagLimit < 8 ? (kFlagLimit < kStageLimit ? kFlagLimit : kStageLimit) : (kStageLimit < 8 ? kStageLimit : 8);
  // 4 resident blocks (<= 64 registers; 5 was 4-8% slower on an H200, 128 or 384 threads and 4
  // vectors slower still).
  static constexpr int kMinBlocksPerSm = 4;
  static constexpr int kVectorItems = Vector<T>::kItems;
  static constexpr int kItemsPerThread = kVectorsPerThread * kVectorItems;
  static constexpr int kWarpItems = kWarpThreads * kItemsPerThread;
  static constexpr int kTileItems = kBlockThreads * kItemsPerThread;
  // Values only device code reads, for the architecture of the device pass (tuning/arch.cuh).
  template <int Arch>
  using Lookback = SelectLookback<tuned_arch(Arch), T>;
  using Device = Lookback<kDeviceArch>;
};

}  // namespace tessera::kernels::cuda::detail
