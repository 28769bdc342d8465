// GEMM of the CUDA backend (both engines: our tiled kernels and cuBLAS) against the CPU backend on
// odd shapes, with leading dimensions larger than the rows, alpha and beta, k == 0, and C poisoned
// where beta == 0 says it must not be read. The float engine's split along K is tested both where
// its policy chooses it and forced (every split count, odd K, K too short to split, M or N of 1).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../../kernels/cuda/gemm_split_k.cuh"
#include "gpu_test_support.hpp"

namespace tessera::gpu_test {
namespace {

template <class T>
class GemmGpu : public ::testing::Test {};
using GemmTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(GemmGpu, GemmTypes);

struct Shape {
  index_t m, n, k;
  index_t pad_a = 0, pad_b = 0, pad_c = 0;  // leading dimension minus row length
  double alpha = 1.0, beta = 0.0;
};

// Runs the product on the device: (alpha, a, lda, b, ldb, beta, c, ldc).
template <class T>
using DeviceProduct = std::function<void(T, const T*, index_t, const T*, index_t, T, T*, index_t)>;

// Returns C as the device left it (for the determinism check).
template <class T>
std::vector<T> check_gemm_with(const Shape& s, const std::string& what, const DeviceProduct<T>& run_device) {
  const index_t lda = s.k + s.pad_a, ldb = s.n + s.pad_b, ldc = s.n + s.pad_c;
  const std::uint64_t seed = test_seed() + static_cast<std::uint64_t>(s.m * 1000003 + s.n * 1009 + s.k);
  const auto a = host_generate<T>(s.m * lda, seed);
  const auto b = host_generate<T>(s.k * ldb, seed + 1);
  auto c0 = host_generate<T>(s.m * ldc, seed + 2);
  const T alpha = static_cast<T>(s.alpha), beta = static_cast<T>(s.beta);

  std::vector<T> want = c0;
  kernels::gemm(cpu_queue(), GemmEngine::tiled, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, want.data(),
                ldc);

  DeviceArray<T> da(s.m * lda), db(s.k * ldb), dc(s.m * ldc);
  da.upload(a);
  db.upload(b);
  dc.poison();
  if (beta != T(0)) {
    dc.upload(c0);
  } else if (s.pad_c > 0) {
    // Only the padding columns keep known values; C's own elements stay poisoned (NaN for the
    // floating types): beta == 0 must overwrite them without reading them.
    std::vector<T> host_c = dc.download();
    for (index_t i = 0; i < s.m; ++i)
      for (index_t j = s.n; j < ldc; ++j) host_c[i * ldc + j] = c0[i * ldc + j];
    dc.upload(host_c);
  }
  run_device(alpha, da.data(), lda, db.data(), ldb, beta, dc.data(), ldc);
  EXPECT_TRUE(dc.untouched_outside(s.m * ldc)) << what << ": gemm wrote outside C";
  const std::vector<T> got = dc.download();

  // Each element is a k-term dot product of values in [-1, 1): bound its rounding by k * eps.
  const double eps = std::numeric_limits<T>::epsilon();
  const double tol = 4.0 * eps * (std::fabs(s.alpha) * static_cast<double>(s.k) + std::fabs(s.beta) + 1.0);
  for (index_t i = 0; i < s.m; ++i) {
    for (index_t j = 0; j < ldc; ++j) {
      const T g = got[i * ldc + j];
      if (j >= s.n) {
        // Padding between rows of C: must be left as it was.
        if (beta != T(0) || s.pad_c > 0) {
          EXPECT_EQ(std::memcmp(&g, &c0[i * ldc + j], sizeof(T)), 0)
              << what << ": padding of C written at " << i << "," << j;
          if (std::memcmp(&g, &c0[i * ldc + j], sizeof(T)) != 0) return got;
        }
        continue;
      }
      const bool ok = close(g, want[i * ldc + j], tol);
      EXPECT_TRUE(ok) << what << " m=" << s.m << " n=" << s.n << " k=" << s.k << " at (" << i << ", " << j
                      << "): got " << g << ", want " << want[i * ldc + j];
      if (!ok) return got;
    }
  }
  return got;
}

template <class T>
void check_gemm(const Shape& s, GemmEngine engine) {
  check_gemm_with<T>(s, to_string(engine), [&](T alpha, const T* a, index_t lda, const T* b, index_t ldb, T beta, T* c,
                                               index_t ldc) {
    kernels::gemm(cuda_queue(), engine, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, ldc);
  });
}

std::vector<Shape> shapes() {
  std::vector<Shape> list = {
      {1, 1, 1},
      {1, 7, 3},
      {17, 33, 65},
      {33, 17, 5, 0, 0, 0, 2.0, 0.0},
      {127, 129, 255},
      {128, 128, 16},
      {129, 127, 17, 3, 1, 5, -1.5, 0.5},   // lda > k, ldb > n, ldc > n, alpha and beta
      {64, 200, 0, 0, 0, 0, 1.0, 2.0},     // k == 0: C = beta * C
      {50, 40, 0},                         // k == 0, beta == 0: C = 0 (not NaN from the poison)
      {70, 90, 31, 1, 2, 3, 1.0, 0.0},     // beta == 0 with padded, poisoned C
      {256, 256, 256, 0, 0, 0, 1.0, 1.0},  // aligned vector paths with accumulation
      {0, 5, 5},
      {5, 0, 5},
  };
  // Rows of A and B not 16-byte aligned (the scalar-load / 8-byte-copy instances) over many tiles
  // in every direction, with alpha, beta and padded C. Kept in small mode so that memcheck covers
  // those instances past the first tile row and column.
  list.push_back({1100, 1031, 1025, 2, 0, 1, 0.75, 0.5});
  // Only A's rows unaligned, beta == 0 with poisoned C and unaligned C rows.
  if (!small_mode()) list.push_back({1030, 1028, 1029, 0, 0, 3, 1.0, 0.0});
  if (!small_mode()) list.push_back({1000, 999, 1001});
  if (!small_mode()) list.push_back({1153, 200, 40});  // 10 tile rows: a second, short group of 8 (DGEMM order)
  if (!small_mode()) list.push_back({1000, 1000, 1000, 4, 4, 4, 0.5, -1.0});
  return list;
}

TYPED_TEST(GemmGpu, TiledEngineOddShapes) {
  for (const Shape& s : shapes()) check_gemm<TypeParam>(s, GemmEngine::tiled);
}

TYPED_TEST(GemmGpu, VendorEngineOddShapes) {
  for (const Shape& s : shapes()) check_gemm<TypeParam>(s, GemmEngine::vendor);
}

// --- Split-K of the float tiled engine ----------------------------------------------------------

using kernels::cuda::detail::choose_split_k;
using kernels::cuda::detail::split_k_chunks;
using kernels::cuda::detail::SplitKPlan;
using kernels::cuda::detail::SplitKPolicy;
using kernels::cuda::detail::SplitKDevice;

constexpr int kTile = 128;   // the float kernel's 128 x 128 output tile
constexpr int kKStep = 8;    // its K step: slices are multiples of it
const SplitKDevice kH100{132, 2};  // 132 SMs x 2 resident blocks

// Fraction of the resident slots that whole waves of `units` blocks keep busy.
double wave_efficiency(index_t units, index_t slots) {
  const index_t waves = (units + slots - 1) / slots;
  return static_cast<double>(units) / static_cast<double>(waves * slots);
}

TEST(GemmSplitK, ChunksCoverKInStepMultiples) {
  for (index_t k : {1, 2, 7, 8, 9, 17, 31, 33, 255, 256, 257, 1000, 4095, 4096, 4097, 8191}) {
    for (int requested = 1; requested <= 6; ++requested) {
      const SplitKPlan plan = split_k_chunks(k, requested, kKStep);
      SCOPED_TRACE("k=" + std::to_string(k) + " requested=" + std::to_string(requested));
      ASSERT_GE(plan.splits, 1);
      ASSERT_LE(plan.splits, requested);
      if (plan.splits == 1) {
        EXPECT_EQ(plan.k_chunk, k);
        continue;
      }
      EXPECT_EQ(plan.k_chunk % kKStep, 0);
      // Every slice non-empty, all of K covered.
      EXPECT_LT((plan.splits - 1) * plan.k_chunk, k);
      EXPECT_GE(plan.splits * plan.k_chunk, k);
    }
  }
}

// The policy's choices on an H100/H200 (132 SMs, 2 blocks per SM), worked out by hand from the
// wave counts: the squares fill their waves to 97% at any split (1024 and 4096 tiles on 264 slots),
// so splitting only adds the pass; 5000 x 3001 is 40 x 24 = 960 tiles = 3.64 waves (91% busy), and
// three slices make 2880 blocks = 10.9 waves (99%). 1000^3 is 64 tiles: one block on each of 64
// SMs; 4 slices put one on each of 128 (a partial wave of lone blocks costs ~0.57 of a full one,
// as measured), where 3 would double some SMs up. The H200 timed every S at these shapes
// (docs/PERFORMANCE.md): the choices below were the fastest or within 1%.
TEST(GemmSplitK, PolicyOnH100Shapes) {
  const auto splits = [](index_t m, index_t n, index_t k) {
    return choose_split_k(m, n, k, kTile, kTile, kKStep, kH100).splits;
  };
  EXPECT_EQ(splits(4096, 4096, 4096), 1);
  EXPECT_EQ(splits(8192, 8192, 8192), 1);
  EXPECT_NEAR(wave_efficiency(960, kH100.slots()), 0.909, 1e-3);
  EXPECT_NEAR(wave_efficiency(3 * 960, kH100.slots()), 0.992, 1e-3);
  EXPECT_EQ(splits(5000, 3001, 4097), 3);
  EXPECT_EQ(splits(3001, 5000, 4097), 3);
  EXPECT_EQ(splits(2000, 2000, 8191), 1);  // 256 tiles: one wave at 97%
  EXPECT_EQ(splits(2000, 2000, 2000), 1);
  EXPECT_EQ(splits(3000, 2000, 1500), 1);  // 384 tiles: 2 slices make 2.9 waves of 264, no gain
  EXPECT_EQ(splits(1000, 1000, 1000), 4);  // 64 tiles
  EXPECT_EQ(splits(1500, 1500, 1500), 4);  // 144 tiles: 576 blocks = 2 waves + 48 lone blocks
  // 9 tiles on 264 slots: 4 slices of K quadruple the blocks at no wave cost.
  EXPECT_EQ(splits(300, 260, 4099), 4);
  // Too shallow to split: every slice must stay >= 192 deep.
  EXPECT_EQ(splits(300, 260, 383), 1);
  EXPECT_EQ(splits(300, 260, 384), 2);
  EXPECT_EQ(splits(300, 260, 575), 2);
  // Degenerate shapes.
  EXPECT_EQ(splits(1, 1, 100000), 4);
  EXPECT_EQ(splits(0, 10, 10000), 1);
  EXPECT_EQ(splits(10, 10, 0), 1);
}

// Busy time of the arithmetic in units of one slot-wave per unit of depth: whole waves, and a last
// wave that leaves every SM at most one block counted at `lone` of a wave where blocks can share.
double wave_time(index_t units, index_t depth, const SplitKDevice& device, double lone) {
  const index_t full = units / device.slots();
  const index_t rest = units % device.slots();
  double waves = static_cast<double>(full);
  if (rest > 0) waves += (rest <= device.sms && device.blocks_per_sm > 1) ? lone : 1.0;
  return waves * static_cast<double>(depth);
}

// Properties over random shapes and devices: bounds, slice depth, workspace, and less arithmetic
// time (a split pays for its pass only out of that).
TEST(GemmSplitK, PolicyInvariantsOnRandomShapes) {
  std::mt19937_64 rng(test_seed());
  std::uniform_int_distribution<index_t> dim(1, 20000);
  const SplitKPolicy policy;
  for (int trial = 0; trial < 2000; ++trial) {
    const index_t m = dim(rng), n = dim(rng), k = dim(rng);
    const SplitKDevice device{1 + static_cast<index_t>(rng() % 200), 1 + static_cast<int>(rng() % 4)};
    const SplitKPlan plan = choose_split_k(m, n, k, kTile, kTile, kKStep, device, policy);
    SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                 " sms=" + std::to_string(device.sms) + " blocks_per_sm=" + std::to_string(device.blocks_per_sm));
    ASSERT_GE(plan.splits, 1);
    ASSERT_LE(plan.splits, policy.max_splits);
    if (plan.splits == 1) {
      ASSERT_EQ(plan.k_chunk, k);
      continue;
    }
    ASSERT_GE(k, plan.splits * policy.min_slice_depth);
    ASSERT_LT((plan.splits - 1) * plan.k_chunk, k);
    ASSERT_LE(4.0 * plan.splits * m * ((n + 3) / 4 * 4), policy.max_workspace_bytes);
    const index_t tiles = ((m + kTile - 1) / kTile) * ((n + kTile - 1) / kTile);
    ASSERT_LT(wave_time(tiles * plan.splits, plan.k_chunk, device, policy.lone_block_time),
              wave_time(tiles, k, device, policy.lone_block_time));
  }
}

std::vector<Shape> split_shapes() {
  std::vector<Shape> list = {
      {129, 127, 1001, 3, 1, 5, -1.5, 0.5},  // odd K, padded rows, alpha and beta
      {70, 90, 517, 1, 2, 3, 1.0, 0.0},      // beta == 0 with padded, poisoned C
      {256, 260, 2048, 0, 0, 0, 1.0, 1.0},   // aligned rows: vector loads, vector pass over C
      {256, 256, 1024, 0, 0, 0, 0.5, 0.0},   // aligned, beta == 0 with poisoned C
      {1, 1, 33},                            // M = N = 1
      {1, 300, 257, 0, 0, 0, 2.0, 1.0},      // M = 1
      {300, 1, 100, 0, 0, 1, 1.0, 0.0},      // N = 1, poisoned C
      {33, 17, 9},                           // K of two steps: at most 2 slices
      {17, 33, 5, 0, 0, 0, 1.0, 0.5},        // K shorter than one step: no split
      {64, 200, 0, 0, 0, 0, 1.0, 2.0},       // K = 0: C = beta * C
      {200, 301, 777, 1, 0, 2, 1.0, 0.5},    // no row of A, B or C aligned, several tiles
      {130, 257, 600, 0, 0, 0, -1.0, 0.0},   // B and C rows unaligned, beta == 0 with poisoned C
  };
  if (!small_mode()) list.push_back({1100, 1031, 1025, 2, 0, 1, 0.75, 0.5});  // many tiles, unaligned A and C rows
  return list;
}

TEST(GemmSplitK, ForcedSplitsMatchCpu) {
  for (const Shape& s : split_shapes()) {
    for (int requested : {1, 2, 3, 4}) {
      // Odd counts with B copied to aligned rows (where its rows are not), even ones without.
      const int copy_b = requested % 2;
      const std::string what = "forced split " + std::to_string(requested) + (copy_b ? " with B copied" : "");
      int ran = 0;
      const auto run = [&](float alpha, const float* a, index_t lda, const float* b, index_t ldb, float beta, float* c,
                           index_t ldc) {
        ran = kernels::cuda::tiled_sgemm_forced_splits(cuda_queue(), requested, copy_b, s.m, s.n, s.k, alpha, a, lda, b,
                                                       ldb, beta, c, ldc);
      };
      const std::vector<float> first = check_gemm_with<float>(s, what, run);
      if (::testing::Test::HasFailure()) return;
      // The slices that K allows: at most the requested ones, and a real split wherever K spans
      // more than one K step.
      const SplitKPlan plan = split_k_chunks(s.k, requested, kKStep);
      EXPECT_EQ(ran, s.k == 0 ? 1 : plan.splits) << what << " k=" << s.k;
      EXPECT_LE(ran, requested) << what << " k=" << s.k;
      if (requested >= 2 && s.k > kKStep) {
        EXPECT_GE(ran, 2) << what << " k=" << s.k;
      }
      // Deterministic: the same inputs give the same bits.
      const std::vector<float> second = check_gemm_with<float>(s, what + " (again)", run);
      ASSERT_EQ(first.size(), second.size());
      EXPECT_EQ(std::memcmp(first.data(), second.data(), sizeof(float) * first.size()), 0)
          << what << ": two runs differ, m=" << s.m << " n=" << s.n << " k=" << s.k;
    }
  }
}

// Through the public call: a shape the policy splits on any device (9 tiles, K = 4099), with the
// policy's choice for these very buffers checked to be a split, so that the path cannot go untested.
TEST(GemmSplitK, PolicySplitThroughPublicGemm) {
  for (const Shape& s : {Shape{300, 260, 4099, 0, 0, 0, 0.75, 0.5}, Shape{300, 260, 4099, 0, 0, 3, 1.0, 0.0},
                         Shape{260, 300, 4096, 0, 0, 0, 1.0, 0.0}}) {
    const auto run = [&](float alpha, const float* a, index_t lda, const float* b, index_t ldb, float beta, float* c,
                         index_t ldc) {
      const auto aligned = [](const void* p, index_t ld) {
        return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && ld % 4 == 0;
      };
      const int splits =
          kernels::cuda::tiled_sgemm_policy_splits(s.m, s.n, s.k, aligned(a, lda), aligned(b, ldb), aligned(c, ldc));
      EXPECT_GT(splits, 1) << "the policy no longer splits m=" << s.m << " n=" << s.n << " k=" << s.k;
      kernels::gemm(cuda_queue(), GemmEngine::tiled, s.m, s.n, s.k, alpha, a, lda, b, ldb, beta, c, ldc);
    };
    check_gemm_with<float>(s, "policy split", run);
  }
}

}  // namespace
}  // namespace tessera::gpu_test
