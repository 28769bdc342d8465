// GEMM of the CUDA backend (both engines: our tiled kernels and cuBLAS) against the CPU backend on
// odd shapes, with leading dimensions larger than the rows, alpha and beta, k == 0, and C poisoned
// where beta == 0 says it must not be read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

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

template <class T>
void check_gemm(const Shape& s, GemmEngine engine) {
  const index_t lda = s.k + s.pad_a, ldb = s.n + s.pad_b, ldc = s.n + s.pad_c;
  const std::uint64_t seed = test_seed() + static_cast<std::uint64_t>(s.m * 1000003 + s.n * 1009 + s.k);
  const auto a = host_generate<T>(s.m * lda, seed);
  const auto b = host_generate<T>(s.k * ldb, seed + 1);
  auto c0 = host_generate<T>(s.m * ldc, seed + 2);
  const T alpha = static_cast<T>(s.alpha), beta = static_cast<T>(s.beta);

  std::vector<T> want = c0;
  kernels::gemm(cpu_queue(), engine, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, want.data(), ldc);

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
  kernels::gemm(cuda_queue(), engine, s.m, s.n, s.k, alpha, da.data(), lda, db.data(), ldb, beta, dc.data(), ldc);
  ASSERT_TRUE(dc.untouched_outside(s.m * ldc)) << "gemm wrote outside C";
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
          ASSERT_EQ(std::memcmp(&g, &c0[i * ldc + j], sizeof(T)), 0) << "padding of C written at " << i << "," << j;
        }
        continue;
      }
      ASSERT_TRUE(close(g, want[i * ldc + j], tol))
          << to_string(engine) << " m=" << s.m << " n=" << s.n << " k=" << s.k << " at (" << i << ", " << j << ")";
    }
  }
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

}  // namespace
}  // namespace tessera::gpu_test
