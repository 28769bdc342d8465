// Split-K for the float tiled GEMM: when the output tiles fill the resident block slots of the
// device only partly in the last wave (wave quantization), K is cut into S slices, each slice of
// every tile is one thread block writing its partial product P_s to a plane of a workspace, and a
// small elementwise pass forms C = alpha * (P_0 + ... + P_{S-1}) + beta * C, adding the planes in
// that fixed order (deterministic; no atomics; beta == 0 leaves C unread).
//
// Host-only (no device code), so that the tests can check the policy and force a split directly.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/tuning/gemm.cuh"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels::cuda {

namespace detail {

struct SplitKPlan {
  int splits = 1;       // slices of K, each at least 1 deep
  index_t k_chunk = 0;  // depth of every slice but the last (a multiple of the kernel's K step)
};

// Cuts k into at most `requested` slices whose depth is a multiple of `k_step` (so that vector
// loads stay aligned in every slice). Fewer slices where k is too short for that many.
inline SplitKPlan split_k_chunks(index_t k, int requested, int k_step) {
  SplitKPlan plan;
  const index_t wanted = std::max<index_t>(1, requested);
  const index_t per_slice = (k + wanted - 1) / wanted;
  plan.k_chunk = std::max<index_t>(k_step, (per_slice + k_step - 1) / k_step * k_step);
  plan.splits = static_cast<int>(std::max<index_t>(1, (k + plan.k_chunk - 1) / plan.k_chunk));
  if (plan.splits == 1) plan.k_chunk = k;
  return plan;
}

// Where the blocks run: SMs and resident blocks of the kernel per SM.
struct SplitKDevice {
  index_t sms = 0;
  int blocks_per_sm = 0;
  index_t slots() const { return sms * blocks_per_sm; }
};

// Predicted seconds of the float tiled GEMM with `splits` slices: whole waves of slice blocks (a
// wave = every resident slot; a last wave that puts at most one block on each SM costs
// lone_block_time of a wave, a fuller one a whole wave), plus, for a split, the pass (the S planes
// read once, C read and written). The slices' stores of their planes hide behind the arithmetic
// (180 MB over 3 ms for 5000 x 3001 x 4097 in 3 slices).
inline double predict_split_k_seconds(index_t m, index_t n, index_t tiles, int block_m, int block_n,
                                      const SplitKPlan& plan, const SplitKDevice& device,
                                      const SplitKPolicy& policy) {
  const index_t units = tiles * plan.splits;
  const index_t slots = std::max<index_t>(1, device.slots());  // choose_split_k never passes 0
  const index_t full_waves = units / slots;
  const index_t rest = units % slots;
  const double waves = static_cast<double>(full_waves) +
                       (rest == 0                                            ? 0.0
                        : rest <= device.sms && device.blocks_per_sm > 1 ? policy.lone_block_time
                                                                          : 1.0);
  const double slice_seconds =
      static_cast<double>(block_m) * block_n * static_cast<double>(plan.k_chunk) / policy.slot_fma_per_second;
  double seconds = waves * slice_seconds;
  if (plan.splits > 1) {
    const double plane_bytes = 4.0 * static_cast<double>(m) * static_cast<double>(n);
    seconds += (plan.splits + 2.0) * plane_bytes / policy.bytes_per_second + policy.launch_seconds;
  }
  return seconds;
}

// The split the float tiled GEMM uses: S in [1, max_splits] with the least predicted time, S = 1
// unless that beats no split by required_gain.
inline SplitKPlan choose_split_k(index_t m, index_t n, index_t k, int block_m, int block_n, int k_step,
                                 const SplitKDevice& device, const SplitKPolicy& policy = {}) {
  const SplitKPlan none = split_k_chunks(k, 1, k_step);
  if (m <= 0 || n <= 0 || k <= 0 || device.sms <= 0 || device.blocks_per_sm <= 0) return none;
  const index_t tiles = ((m + block_m - 1) / block_m) * ((n + block_n - 1) / block_n);
  const index_t padded_n = (n + 3) / 4 * 4;
  const double base = predict_split_k_seconds(m, n, tiles, block_m, block_n, none, device, policy);
  SplitKPlan best = none;
  double best_seconds = base * (1.0 - policy.required_gain);
  for (int s = 2; s <= policy.max_splits; ++s) {
    if (k < s * policy.min_slice_depth) break;
    const SplitKPlan plan = split_k_chunks(k, s, k_step);
    if (plan.splits != s) continue;
    if (4.0 * s * static_cast<double>(m) * static_cast<double>(padded_n) > policy.max_workspace_bytes) break;
    const double seconds = predict_split_k_seconds(m, n, tiles, block_m, block_n, plan, device, policy);
    if (seconds < best_seconds) {
      best = plan;
      best_seconds = seconds;
    }
  }
  return best;
}

}  // namespace detail

// Test and benchmark hooks of the float tiled engine (defined in gemm.cu; not a public contract).
// The split the policy picks on the current device for an m x n x k product with the given
// alignment of A, B and C rows (which selects the kernel instance, hence its occupancy).
int tiled_sgemm_policy_splits(index_t m, index_t n, index_t k, bool rows_aligned_a, bool rows_aligned_b,
                              bool rows_aligned_c);
// The float tiled GEMM with `splits` slices of K requested instead of the policy's (same contract
// as gemm; fewer slices where K is too short). Returns the number of slices it ran. copy_b: B's
// rows copied to 16-byte aligned ones where they are not: < 0 where the engine's rule says so, 0
// never, > 0 always.
int tiled_sgemm_forced_splits(const Queue& queue, int splits, int copy_b, index_t m, index_t n, index_t k, float alpha,
                              const float* a, index_t lda, const float* b, index_t ldb, float beta, float* c,
                              index_t ldc);

}  // namespace tessera::kernels::cuda
