// Tuning of the exact sum (kernels/cuda/exact_sum.cu), the one place it lives.
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every
// architecture, tuning/arch.cuh; none of these was measured on an sm_80 device).
#pragma once

#include "tessera/kernels/config.hpp"

namespace tessera::kernels::cuda::detail {

struct ExactSumTuning {
  // At most this many elements per thread block: keeps every shared limb below 2^62 (each element
  // or window flush adds at most two deposits below 2^32 to one limb).
  static constexpr index_t kMaxBlockElements = index_t(1) << 28;
  // Threads per block, resident blocks per SM the registers must allow, and 16-byte loads per trip
  // of each thread (the next trip's are issued before this trip's work). One H200, cost against
  // CUB's sum in the same run at 2^28 / 2^30 elements (bench/results/local_kernels.json, 2026-12-01):
  //  - float: 512 x 2, 2 loads (60 registers): 1.07-1.08x / 1.05x; 256 x 4 within 1% at 2^28; 3 or
  //    more loads, or more than 4 blocks of 256 an SM, spill and take 1.3-3x as long.
  //  - double: 256 x 2, 8 loads (116 registers): 1.03-1.04x / 1.01x; 4 loads 1.06-1.07x, 2 loads
  //    1.27x (memory latency bounds it at 2 blocks an SM); capping registers for 3 blocks spills.
  template <class T>
  static constexpr int threads() { return sizeof(T) == 8 ? 256 : 512; }
  static constexpr int kMinBlocksPerSm = 2;
  template <class T>
  static constexpr int loads_in_flight() { return sizeof(T) == 8 ? 8 : 2; }
  static constexpr int kFinishThreads = 1024;
  static constexpr int kFinishLoads = 8;  // partials in flight per thread of the finishing block
};

}  // namespace tessera::kernels::cuda::detail
