// The generic device reductions and scans (kernels/cuda/*.cuh through the public templates) against
// the CPU backend, for user functors and element types: non-commutative operations over 8-, 12- and
// 16-byte structs, 1- and 2-byte integers, arrays that do not start on a 16-byte boundary, in-place
// scans. Every output buffer is poisoned first and its guard zones checked afterwards. (Select and
// the element-wise passes: generic_gpu_select_transform_test.cu.)
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "generic/generic_test_types.hpp"
#include "generic_gpu_inputs.hpp"
#include "gpu_test_support.hpp"
#include "tessera/kernels/cuda/device_scan.cuh"
#include "tessera/kernels/kernels.hpp"

namespace tessera::gpu_test {
namespace {

using test::Affine;
using test::ComposeAffine;
using test::ComposeTagged;
using test::Mat2;
using test::MatMul;
using test::Tagged;

template <class T, class Op>
void check_reduce_and_scan(const std::vector<T>& host, Op op, T identity, T init, const char* what) {
  const auto n = static_cast<index_t>(host.size());
  const T want = kernels::reduce(cpu_queue(), host.data(), n, op, identity);
  for (index_t offset : kOffsets) {
    DeviceArray<T> in(n, offset);
    in.poison();
    in.upload(host);
    const T got = kernels::reduce(cuda_queue(), in.data(), n, op, identity);
    ASSERT_TRUE(got == want) << where(n, what) << " offset=" << offset << " (reduce)";

    for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
      std::vector<T> want_scan(host.size());
      kernels::scan(cpu_queue(), host.data(), want_scan.data(), n, kind, op, init);
      DeviceArray<T> out(n, offset);
      out.poison();
      kernels::scan(cuda_queue(), in.data(), out.data(), n, kind, op, init);
      const std::vector<T> got_scan = out.download();
      for (index_t i = 0; i < n; ++i)
        ASSERT_TRUE(got_scan[static_cast<std::size_t>(i)] == want_scan[static_cast<std::size_t>(i)])
            << where(n, what) << " offset=" << offset << " i=" << i << " " << to_string(kind);
      ASSERT_TRUE(out.untouched_outside(n)) << where(n, what);
    }
    // In place.
    kernels::scan(cuda_queue(), in.data(), in.data(), n, ScanKind::inclusive, op, init);
    std::vector<T> want_in_place(host.size());
    kernels::scan(cpu_queue(), host.data(), want_in_place.data(), n, ScanKind::inclusive, op, init);
    const std::vector<T> got_in_place = in.download();
    for (index_t i = 0; i < n; ++i)
      ASSERT_TRUE(got_in_place[static_cast<std::size_t>(i)] == want_in_place[static_cast<std::size_t>(i)])
          << where(n, what) << " in place, i=" << i;
  }
}

TEST(GenericGpu, NonCommutativeReduceAndScanOfStructs) {
  for (index_t n : odd_sizes()) {
    const std::uint64_t s = test_seed() + static_cast<std::uint64_t>(n);
    check_reduce_and_scan(test::random_affines(n, s), ComposeAffine{}, Affine{}, Affine{3, 5}, "affine (8 bytes)");
    check_reduce_and_scan(test::random_matrices(n, s), MatMul{}, Mat2{}, Mat2{1, 2, 3, 4}, "mat2 (16 bytes)");
    check_reduce_and_scan(test::random_tagged(n, s), ComposeTagged{}, Tagged{}, Tagged{5, 1, 2}, "tagged (12 bytes)");
  }
}

TEST(GenericGpu, NarrowIntegersAndRunningMaxima) {
  for (index_t n : odd_sizes()) {
    const std::uint64_t s = test_seed() * 3 + static_cast<std::uint64_t>(n);
    check_reduce_and_scan(full_range<std::int8_t>(n, s), plus{}, std::int8_t(0), std::int8_t(-7), "int8 sum");
    check_reduce_and_scan(full_range<std::uint16_t>(n, s), maximum{}, std::uint16_t(0), std::uint16_t(3), "uint16 max");
    auto floats = uniform<float>(n, s);
    check_reduce_and_scan(floats, maximum{}, -std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), "float max");
  }
}

// The pipelined scan (sm_90) called directly at every size, so that its partial last tile, grids of
// more blocks than tiles and several rounds of its ring of tiles are all reached (the dispatch
// takes it only from ScanPipelineTuning::kMinItems elements), exclusive and inclusive, in place,
// against the cpu backend: integer sums (wrapping), a non-commutative 8-byte struct, float and
// double sums of small integers (exact in any order at these sizes) and a float maximum.
template <class T, class Op>
void check_pipelined_scan(const std::vector<T>& host, Op op, T init, const char* what) {
  const auto n = static_cast<index_t>(host.size());
  DeviceArray<T> in(n, 0);
  in.poison();
  in.upload(host);
  for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
    std::vector<T> want(host.size());
    kernels::scan(cpu_queue(), host.data(), want.data(), n, kind, op, init);
    DeviceArray<T> out(n, 0);
    out.poison();
    if (!kernels::cuda::detail::device_scan_pipelined(cuda_queue(), in.data(), out.data(), n, kind, op, init))
      GTEST_SKIP() << "the pipelined scan does not run on this device (sm_90 and later)";
    const std::vector<T> got = out.download();
    for (index_t i = 0; i < n; ++i)
      ASSERT_TRUE(got[static_cast<std::size_t>(i)] == want[static_cast<std::size_t>(i)])
          << where(n, what) << " i=" << i << " " << to_string(kind);
    ASSERT_TRUE(out.untouched_outside(n)) << where(n, what);
  }
  std::vector<T> want(host.size());
  kernels::scan(cpu_queue(), host.data(), want.data(), n, ScanKind::exclusive, op, init);
  ASSERT_TRUE(kernels::cuda::detail::device_scan_pipelined(cuda_queue(), in.data(), in.data(), n, ScanKind::exclusive, op, init));
  const std::vector<T> got = in.download();
  for (index_t i = 0; i < n; ++i)
    ASSERT_TRUE(got[static_cast<std::size_t>(i)] == want[static_cast<std::size_t>(i)]) << where(n, what) << " in place, i=" << i;
  ASSERT_TRUE(in.untouched_outside(n)) << where(n, what);
}

template <class T>
std::vector<T> small_integers(index_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (T& x : v) x = static_cast<T>(static_cast<int>(gen() % 5) - 2);
  return v;
}

TEST(GenericGpu, PipelinedScanAtEverySize) {
  std::vector<index_t> sizes = odd_sizes();
  // Tiles of 8192 four-byte / 4096 eight-byte elements: past the resident blocks' rounds of the
  // ring (132 SMs x 4 slots on an H200), and above the dispatch's threshold.
  if (!small_mode())
    for (index_t n : {index_t(8192) * 1100 + 3, index_t(4096) * 1100 + 1, (index_t(1) << 22) + 1}) sizes.push_back(n);
  for (index_t n : sizes) {
    const std::uint64_t s = test_seed() * 7 + static_cast<std::uint64_t>(n);
    check_pipelined_scan(full_range<std::int32_t>(n, s), plus{}, std::int32_t(-7), "int32 sum");
    if (HasFatalFailure() || IsSkipped()) return;
    check_pipelined_scan(full_range<std::int64_t>(n, s), plus{}, std::int64_t(5), "int64 sum");
    check_pipelined_scan(test::random_affines(n, s), ComposeAffine{}, Affine{3, 5}, "affine (8 bytes)");
    check_pipelined_scan(small_integers<float>(n, s), plus{}, 0.5f, "float sum of small integers");
    check_pipelined_scan(small_integers<double>(n, s), plus{}, -1.5, "double sum of small integers");
    check_pipelined_scan(uniform<float>(n, s), maximum{}, -std::numeric_limits<float>::infinity(), "float max");
    if (HasFatalFailure()) return;
  }
}

struct Widen {
  TESSERA_HOST_DEVICE std::int64_t operator()(std::int8_t x) const { return x; }
};
struct MomentsOf {
  TESSERA_HOST_DEVICE test::Moments operator()(float x) const { return test::Moments{1.0, double(x), 0.0}; }
};

TEST(GenericGpu, CommutativeTransformReduceWithWideningAndStructAccumulators) {
  for (index_t n : odd_sizes()) {
    const std::uint64_t s = test_seed() * 5 + static_cast<std::uint64_t>(n);
    const auto bytes = full_range<std::int8_t>(n, s);
    std::int64_t want = 0;
    for (auto b : bytes) want += b;
    const auto floats = uniform<float>(n, s);
    for (index_t offset : kOffsets) {
      DeviceArray<std::int8_t> in(n, offset);
      in.upload(bytes);
      EXPECT_EQ(kernels::transform_reduce(cuda_queue(), in.data(), n, Widen{}, plus{}, std::int64_t(0)), want)
          << where(n) << " offset=" << offset;
      DeviceArray<float> f(n, offset);
      f.upload(floats);
      const test::Moments got =
          kernels::transform_reduce(cuda_queue(), f.data(), n, MomentsOf{}, test::CombineMoments{}, test::Moments{});
      const test::Moments ref =
          kernels::transform_reduce(cpu_queue(), floats.data(), n, MomentsOf{}, test::CombineMoments{}, test::Moments{});
      EXPECT_EQ(got.count, static_cast<double>(n));
      EXPECT_NEAR(got.mean, ref.mean, 1e-12 * (1 + std::fabs(ref.mean))) << where(n);
      EXPECT_NEAR(got.m2, ref.m2, 1e-9 * (1 + ref.m2)) << where(n);
    }
  }
}

}  // namespace
}  // namespace tessera::gpu_test
