// Tuning of the reductions, the one place it lives: the reduction (device_reduce.cuh) and the
// order-keeping reduction (device_reduce_ordered.cuh).
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every
// architecture, tuning/arch.cuh; none of these was measured on an sm_80 device).
#pragma once

namespace tessera::kernels::cuda::detail {

// Tuning of the reduction, the one place it lives: 512 threads, 4 independent 16-byte loads per
// thread and loop trip (64 bytes in flight per thread, ~100 KiB per SM at 3-4 blocks per SM: well
// past what Little's law asks of HBM3e at ~4.8 TB/s), so a tile is 32 KiB of consecutive bytes.
// Measured against CUB on an H100 and an H200 (2^28 and 2^30 elements of float, double, int64;
// double max): 512 threads beat 256 (the earlier choice) by 0.2-0.7% on every row and 128 lost
// 0.5-4%; 3, 6 or 8 loads per trip, 2 or 5 waves instead of 4 were within +-0.5% of 256 x 4 x 4
// or worse (6 loads: -2% on double max). Capping the registers at 32 for 8 blocks of 256 per SM
// (CUB's occupancy) spilled and lost 1.5% on 8-byte sums and 18% on double max.
struct ReduceTuning {
  static constexpr int kBlockThreads = 512;
  static constexpr int kLoadsInFlight = 4;
  // Thread blocks per resident slot (CUB uses 5).
  static constexpr int kWaves = 4;
};

// Partials in flight per thread and trip when the last thread block folds them: a grid of a few
// thousand blocks would otherwise cost a dozen dependent L2 round trips there, at the end of the
// critical path.
inline constexpr int kLastBlockFoldLoads = 4;

// The one place the ordered reduction is tuned: 512 threads, 4 rows (4 16-byte loads per lane) in
// flight per warp, one 16-byte vector per lane and row, 4 waves of thread blocks. Measured on an H100
// against cub::DeviceReduce::Sum (2^26 / 2^28 floats): 512 threads 0.993x / 0.982x, 256 threads
// 0.977x / 0.981x; 2 or 4 vectors per lane (fewer shuffles, but each load instruction half
// coalesced) 0.95-0.98x, and 0.62x with 8 loads in flight; a variant with block-contiguous tiles
// and a barrier per group of tiles 0.95-0.97x.
struct OrderedReduceTuning {
  static constexpr int kBlockThreads = 512;
  static constexpr int kRowsInFlight = 4;
  static constexpr int kVectorsPerLane = 1;
  static constexpr int kWaves = 4;
};

}  // namespace tessera::kernels::cuda::detail
