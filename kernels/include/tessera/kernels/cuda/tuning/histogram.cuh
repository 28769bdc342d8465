// Tuning of the histograms (device_histogram.cuh), the one place it lives.
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every
// architecture, tuning/arch.cuh; none of these was measured on an sm_80 device).
#pragma once

namespace tessera::kernels::cuda::detail {

struct HistogramTuning {
  // Threads of the 32-bit and global-atomic passes, and of the 16-bit ones (one thread block per SM).
  static constexpr int kBlockThreads = 512;
  static constexpr int kBlockThreads16 = 1024;
  // 16-byte loads per thread and loop trip.
  static constexpr int kLoadsInFlight = 4;
  // Thread blocks per resident slot: every extra block adds one flush of all its counters.
  static constexpr int kWaves = 1;
  // 32-bit counters while one copy of them fits at this many thread blocks per SM.
  static constexpr int kMinBlocksPerSmFor32Bit = 2;
  // Bin-range passes (each reads the samples again) before global atomics are cheaper.
  static constexpr int kMaxPasses = 8;
  // __launch_bounds__'s minimum resident thread blocks per SM of the 32-bit pass (caps registers).
  static constexpr int kMinBlocksPerSm = 1;
  // 16-bit counters: whether a thread adds each run of equal slots among its samples of a tile at
  // once: 0 never, 1 always, 2 in a warp where half the lanes' first samples of the tile share a
  // slot. H200, 2^28 floats at 65536 bins, uniform / 90% in one bin (ms): 0: 0.64 / 1.10,
  // 1: 0.72 / 0.52, 2: 0.64 / 0.53 (bench/results/histogram.json, 2026-12-01); H100: 0: 0.615 /
  // 1.065, 1: 0.689 / 0.497, 2: 0.610-0.614 / 0.515 (2026-12-02).
  static constexpr int kCountRuns = 2;
  // 16-bit counters: the top bits of a half that a drain moves to the global counts, which sets the
  // window between drains to 65536 - 2^(16 - bits) samples a block: 1: 32768 (2 tiles of 1024
  // threads), 2: 49152 (3 tiles; 3 would not hold whole tiles). H200, 2^28 floats at 65536 bins,
  // uniform / 90% in one bin, two runs (ms): 1: 0.641 / 0.536, 2: 0.645-0.647 / 0.509-0.512, and
  // 1: 0.643-0.680 / 0.531-0.533, 2: 0.604-0.605 / 0.502-0.504 (bench/results/histogram.json,
  // 2026-12-01): 5% on skewed samples, 0-11% on uniform ones; H100 (2026-12-02) 1: 0.643 / 0.539,
  // 2: 0.610-0.614 / 0.515.
  static constexpr int kDrainBits16 = 2;
  // Tried and dropped: equal bins over floats corrected together, the estimates within the margin of
  // a thread's tile held back (two in registers) and corrected after the tile, so that a warp runs
  // the correction a few times a tile instead of for every sample some lane needs it for. H200,
  // 2^28 floats at 65536 bins, uniform, two runs (ms): 0.657-0.663 against 0.638-0.648: the
  // correction is not what holds the 16-bit pass (ncu: issue slots 72% busy, DRAM 29%).
};

}  // namespace tessera::kernels::cuda::detail
