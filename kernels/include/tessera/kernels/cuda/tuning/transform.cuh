// Tuning of the element-wise passes (device_transform.cuh), the one place it lives.
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every
// architecture, tuning/arch.cuh; none of these was measured on an sm_80 device).
#pragma once

namespace tessera::kernels::cuda::detail {

// The one place the element-wise passes are tuned: 256 threads, 2 chunks (2 16-byte loads of each
// input) per thread: a tile of 8 KiB of 4-byte elements per thread block. Measured on an H100 at
// 2^26 and 2^28 floats against thrust::transform: 256 x 2 1.005-1.008x, 256 x 4 0.992-0.995x,
// 512 x 4 0.994x, 256 x 8 and 128 x 8 0.984-0.987x.
struct TransformTuning {
  static constexpr int kBlockThreads = 256;
  static constexpr int kUnroll = 2;
};

}  // namespace tessera::kernels::cuda::detail
