// Tuning of the exact sum (kernels/cuda/exact_sum.cu), the one place it lives.
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every
// architecture, tuning/arch.cuh; none of these was measured on an sm_80 device).
#pragma once

#include "tessera/kernels/config.hpp"

namespace tessera::kernels::cuda::detail {

struct ExactSumTuning {
  static constexpr int kThreads = 256;
  // At most this many elements per thread block: keeps every shared limb below 2^62 (each element
  // or window flush adds at most two deposits below 2^32 to one limb).
  static constexpr index_t kMaxBlockElements = index_t(1) << 28;
  // 16-byte loads per trip of each thread (the next trip's are issued before this trip's work),
  // and the resident blocks per SM the registers must allow. For double, capping registers to fit
  // more blocks spills (64 registers: 204 bytes; 80: 156), so it keeps 116 registers, 2 blocks.
  static constexpr int kLoadsInFlight = 2;  // per trip; the next trip's are in flight too
  template <class T>
  static constexpr int min_blocks_per_sm() { return sizeof(T) == 8 ? 1 : 4; }
  static constexpr int kFinishThreads = 1024;
  static constexpr int kFinishLoads = 8;  // partials in flight per thread of the finishing block
};

}  // namespace tessera::kernels::cuda::detail
