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
