// The two-pass scan of the CUDA backend (kernels::scan_totals + kernels::scan_from_totals) against
// the CPU backend's scan and reduce on the same random data: sizes around every tile and segment
// edge, misaligned starts (scalar paths), in place, both kinds, with a carry-in. Integers must match
// exactly; floating-point prefixes within the rounding bound of the other GPU tests.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "gpu_test_support.hpp"

namespace tessera::gpu_test {
namespace {

template <class T>
class TwoPassScanGpu : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(TwoPassScanGpu, ElementTypes);

// A segment of the CUDA two-pass scan is 8 tiles: 81920 elements of 4 bytes, 32768 of 8 bytes.
template <class T>
std::vector<index_t> two_pass_sizes() {
  std::vector<index_t> sizes = odd_sizes();
  const index_t segment = sizeof(T) == 4 ? 81920 : 32768;
  if (!small_mode())
    for (index_t k : {index_t(1), index_t(2), index_t(7)})
      for (index_t d : {index_t(-1), index_t(0), index_t(1)}) sizes.push_back(k * segment + d);
  return sizes;
}

template <class T>
void check_two_pass(const std::vector<T>& host, ScanKind kind, T carry_in, bool in_place, index_t offset) {
  const auto n = static_cast<index_t>(host.size());
  std::vector<T> want(host.size());
  kernels::scan(cpu_queue(), host.data(), want.data(), n, kind, carry_in);
  T want_total{};
  kernels::reduce(cpu_queue(), host.data(), n, ReduceOp::sum, &want_total);

  const Queue& q = cuda_queue();
  const index_t segments = kernels::scan_segment_count<T>(q, n);
  DeviceArray<T> prefix(segments);
  DeviceArray<T> total(1);
  prefix.poison();
  total.poison();
  DeviceArray<T> in(n, offset);
  DeviceArray<T> separate_out(in_place ? 0 : n, offset);
  DeviceArray<T>& out = in_place ? in : separate_out;
  out.poison();
  in.upload(host);
  kernels::scan_totals(q, in.data(), n, prefix.data(), total.data());
  ASSERT_TRUE(prefix.untouched_outside(segments)) << where(n, "scan_totals partials");
  ASSERT_TRUE(total.untouched_outside(1)) << where(n, "scan_totals total");
  kernels::scan_from_totals(q, in.data(), out.data(), n, kind, carry_in, prefix.data());
  ASSERT_TRUE(out.untouched_outside(n)) << where(n, to_string(kind));

  double abs_sum = 0;
  for (const T& x : host) abs_sum += std::fabs(static_cast<double>(x));
  EXPECT_TRUE(close(total.download()[0], want_total, sum_tolerance<T>(abs_sum, n))) << where(n, "total");
  const std::vector<T> got = out.download();
  double abs_prefix = std::fabs(static_cast<double>(carry_in));
  const double tol_per_abs_sum = sum_tolerance<T>(1.0, n);
  for (index_t i = 0; i < n; ++i) {
    abs_prefix += std::fabs(static_cast<double>(host[static_cast<std::size_t>(i)]));
    ASSERT_TRUE(close(got[static_cast<std::size_t>(i)], want[static_cast<std::size_t>(i)], tol_per_abs_sum * abs_prefix))
        << where(n, to_string(kind)) << " i=" << i << " in_place=" << in_place << " offset=" << offset;
  }
}

TYPED_TEST(TwoPassScanGpu, MatchesTheCpuScanAtEveryEdge) {
  using T = TypeParam;
  for (index_t n : two_pass_sizes<T>()) {
    const std::vector<T> host = host_generate<T>(n, test_seed() + 31 + static_cast<std::uint64_t>(n));
    for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
      check_two_pass<T>(host, kind, static_cast<T>(3), false, 0);
      check_two_pass<T>(host, kind, static_cast<T>(7), true, 0);   // in place, vector path
      check_two_pass<T>(host, kind, static_cast<T>(-2), true, 1);  // in place, scalar path
    }
  }
}

TYPED_TEST(TwoPassScanGpu, LargeArray) {
  using T = TypeParam;
  if (small_mode()) GTEST_SKIP() << "large size skipped in small mode";
  const index_t n = (index_t(1) << 26) + 3;
  const std::vector<T> host = host_generate<T>(n, test_seed() + 77);
  check_two_pass<T>(host, ScanKind::inclusive, static_cast<T>(1), false, 0);
}

}  // namespace
}  // namespace tessera::gpu_test
