// The CUDA backend against the CPU backend on the same random data: reduce, scan, select, count_if,
// fill, iota, generate, for int32, int64, float and double, at sizes around every warp, vector and
// tile edge. Outputs are poisoned before each run and checked to be fully written and not written
// past their end. Integers must match exactly; floating-point sums within a rounding bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gpu_test_support.hpp"

namespace tessera::gpu_test {
namespace {

template <class T>
class KernelsGpu : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(KernelsGpu, ElementTypes);

// ---------------------------------------------------------------------------------------------
// Checks of one operation at one size, shared by the typed tests below and the large-size tests.

template <class T>
void check_generate(index_t n, std::uint64_t seed) {
  const std::vector<T> want = host_generate<T>(n, seed);
  DeviceArray<T> out(n);
  out.poison();
  kernels::generate(cuda_queue(), out.data(), n, seed, 0);
  ASSERT_TRUE(out.untouched_outside(n)) << where(n, "generate");
  const std::vector<T> got = out.download();
  for (index_t i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(T)), 0) << where(n, "generate, not bit-identical") << " i=" << i;
}

template <class T>
void check_reduce(const std::vector<T>& host, index_t offset) {
  const auto n = static_cast<index_t>(host.size());
  DeviceArray<T> in(n, offset);
  in.upload(host);
  double abs_sum = 0;
  for (const T& x : host) abs_sum += std::fabs(static_cast<double>(x));
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::min, ReduceOp::max}) {
    T want{};
    kernels::reduce(cpu_queue(), host.data(), n, op, &want);
    DeviceArray<T> out(1);
    out.poison();
    kernels::reduce(cuda_queue(), in.data(), n, op, out.data());
    ASSERT_TRUE(out.untouched_outside(1)) << where(n, to_string(op));
    const T got = out.download()[0];
    const double tol = op == ReduceOp::sum ? sum_tolerance<T>(abs_sum, n) : 0.0;
    EXPECT_TRUE(close(got, want, tol)) << where(n, to_string(op)) << " offset=" << offset;
  }
}

template <class T>
void check_scan(const std::vector<T>& host, ScanKind kind, T carry_in, bool in_place, index_t offset) {
  const auto n = static_cast<index_t>(host.size());
  std::vector<T> want(host.size());
  kernels::scan(cpu_queue(), host.data(), want.data(), n, kind, carry_in);
  DeviceArray<T> in(n, offset);
  DeviceArray<T> separate_out(in_place ? 0 : n, offset);
  DeviceArray<T>& out = in_place ? in : separate_out;
  out.poison();
  in.upload(host);
  kernels::scan(cuda_queue(), in.data(), out.data(), n, kind, carry_in);
  ASSERT_TRUE(out.untouched_outside(n)) << where(n, to_string(kind));
  const std::vector<T> got = out.download();
  double abs_prefix = std::fabs(static_cast<double>(carry_in));
  const double tol_per_abs_sum = sum_tolerance<T>(1.0, n);  // the bound at the largest depth, n
  for (index_t i = 0; i < n; ++i) {
    abs_prefix += std::fabs(static_cast<double>(host[i]));
    const double tol = tol_per_abs_sum * abs_prefix;
    ASSERT_TRUE(close(got[i], want[i], tol))
        << where(n, to_string(kind)) << " i=" << i << " in_place=" << in_place << " offset=" << offset;
  }
}

template <class T>
void check_select(const std::vector<T>& host, Predicate<T> pred, index_t offset) {
  const auto n = static_cast<index_t>(host.size());
  std::vector<T> want(host.size());
  index_t want_count = -1;
  kernels::select(cpu_queue(), host.data(), n, pred, want.data(), &want_count);
  DeviceArray<T> in(n, offset);
  in.upload(host);
  DeviceArray<T> out(n, offset);
  DeviceArray<index_t> count(1);
  out.poison();
  count.poison();
  kernels::select(cuda_queue(), in.data(), n, pred, out.data(), count.data());
  const index_t got_count = count.download()[0];
  ASSERT_EQ(got_count, want_count) << where(n, "select count");
  ASSERT_TRUE(out.untouched_outside(got_count)) << where(n, "select");
  const std::vector<T> got = out.download(got_count);
  for (index_t i = 0; i < got_count; ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(T)), 0) << where(n, "select (stable order)") << " i=" << i;

  index_t want_counted = -1;
  kernels::count_if(cpu_queue(), host.data(), n, pred, &want_counted);
  count.poison();
  kernels::count_if(cuda_queue(), in.data(), n, pred, count.data());
  EXPECT_EQ(count.download()[0], want_counted) << where(n, "count_if");
  EXPECT_EQ(want_counted, want_count) << where(n, "cpu count_if vs select");
}

// ---------------------------------------------------------------------------------------------

TYPED_TEST(KernelsGpu, GenerateIsBitIdenticalToCpu) {
  for (index_t n : odd_sizes()) check_generate<TypeParam>(n, test_seed() + static_cast<std::uint64_t>(n));
}

TYPED_TEST(KernelsGpu, FillAndIota) {
  using T = TypeParam;
  for (index_t n : odd_sizes()) {
    DeviceArray<T> out(n);
    out.poison();
    kernels::fill(cuda_queue(), out.data(), n, T(7));
    ASSERT_TRUE(out.untouched_outside(n)) << where(n, "fill");
    for (const T& x : out.download()) ASSERT_EQ(x, T(7)) << where(n, "fill");

    const T start = std::is_integral_v<T> ? T(-5) : T(0.5);
    std::vector<T> want(static_cast<std::size_t>(n));
    kernels::iota(cpu_queue(), want.data(), n, start);
    out.poison();
    kernels::iota(cuda_queue(), out.data(), n, start);
    ASSERT_TRUE(out.untouched_outside(n)) << where(n, "iota");
    const std::vector<T> got = out.download();
    for (index_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << where(n, "iota") << " i=" << i;
  }
}

TYPED_TEST(KernelsGpu, ReduceSmallAndOddSizes) {
  for (index_t n : odd_sizes()) {
    const auto host = host_generate<TypeParam>(n, test_seed() ^ static_cast<std::uint64_t>(n));
    check_reduce(host, 0);
    // A start that is not 16-byte aligned exercises the scalar head of the vector loop.
    check_reduce(host, 1);
  }
}

TYPED_TEST(KernelsGpu, ReduceMinMaxPropagateNanAndFindExtremesAnywhere) {
  using T = TypeParam;
  const index_t n = 100003;
  auto host = host_generate<T>(n, test_seed());
  for (index_t where_at : {index_t(0), index_t(6143), n - 1}) {
    auto data = host;
    data[where_at] = std::numeric_limits<T>::lowest();
    check_reduce(data, 0);
    data[where_at] = std::numeric_limits<T>::max();
    check_reduce(data, 0);
    if constexpr (!std::is_integral_v<T>) {
      data[where_at] = std::numeric_limits<T>::quiet_NaN();
      DeviceArray<T> in(n);
      in.upload(data);
      DeviceArray<T> out(1);
      for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
        out.poison();
        kernels::reduce(cuda_queue(), in.data(), n, op, out.data());
        EXPECT_TRUE(std::isnan(out.download()[0])) << "NaN at " << where_at << " must propagate through " << to_string(op);
      }
    }
  }
}

TYPED_TEST(KernelsGpu, ScanSmallAndOddSizes) {
  using T = TypeParam;
  for (index_t n : odd_sizes()) {
    const auto host = host_generate<T>(n, test_seed() + 3 * static_cast<std::uint64_t>(n));
    const T carry = std::is_integral_v<T> ? T(-17) : T(0.25);
    check_scan(host, ScanKind::inclusive, T(0), false, 0);
    check_scan(host, ScanKind::exclusive, carry, false, 0);
    check_scan(host, ScanKind::inclusive, carry, true, 0);  // in place
    check_scan(host, ScanKind::exclusive, T(0), false, 1);  // misaligned: scalar path
  }
}

TYPED_TEST(KernelsGpu, ScanIntegerSumsWrap) {
  using T = TypeParam;
  if constexpr (std::is_integral_v<T>) {
    const index_t n = 20000;
    std::vector<T> host(static_cast<std::size_t>(n), std::numeric_limits<T>::max() / 3);
    check_scan(host, ScanKind::inclusive, std::numeric_limits<T>::max(), false, 0);
    check_reduce(host, 0);
  } else {
    GTEST_SKIP() << "integer wrap-around only";
  }
}

TYPED_TEST(KernelsGpu, SelectAndCountIfSmallAndOddSizes) {
  using T = TypeParam;
  for (index_t n : odd_sizes()) {
    const auto host = host_generate<T>(n, test_seed() + 5 * static_cast<std::uint64_t>(n));
    check_select(host, greater_than<T>(T(0)), 0);          // about half kept
    check_select(host, less_than<T>(T(-0.99 * (std::is_integral_v<T> ? 1000 : 1))), 0);  // few kept
    check_select(host, Predicate<T>{PredicateKind::ne, T(12345), T{}}, 1);  // all kept, misaligned
    check_select(host, in_range<T>(T(2), T(1)), 0);         // none kept
  }
}

TYPED_TEST(KernelsGpu, SelectPredicateKinds) {
  using T = TypeParam;
  const index_t n = 50021;
  auto host = host_generate<T>(n, test_seed() + 11);
  if constexpr (std::is_integral_v<T>) {
    for (index_t i = 0; i < n; i += 7) host[i] = 0;
  } else {
    for (index_t i = 0; i < n; i += 7) host[i] = 0;
    host[100] = std::numeric_limits<T>::quiet_NaN();
  }
  const T a = std::is_integral_v<T> ? T(10) : T(0.1);
  const T b = std::is_integral_v<T> ? T(500) : T(0.5);
  for (PredicateKind kind : {PredicateKind::gt, PredicateKind::ge, PredicateKind::lt, PredicateKind::le,
                             PredicateKind::eq, PredicateKind::ne, PredicateKind::between, PredicateKind::nonzero}) {
    SCOPED_TRACE(static_cast<int>(kind));
    check_select(host, Predicate<T>{kind, kind == PredicateKind::eq ? T(0) : a, b}, 0);
  }
}

// ---------------------------------------------------------------------------------------------
// 2^28 + 3 elements: many thousands of tiles, long look-back chains, a grid of whole waves.

template <class T>
class KernelsGpuLarge : public ::testing::Test {};
TYPED_TEST_SUITE(KernelsGpuLarge, ElementTypes);

TYPED_TEST(KernelsGpuLarge, AllOperationsAt2Pow28Plus3) {
  if (small_mode()) GTEST_SKIP() << "TESSERA_GPU_TEST_SMALL is set";
  using T = TypeParam;
  const index_t n = (index_t(1) << 28) + 3;
  const std::uint64_t seed = test_seed() + 28;
  check_generate<T>(n, seed);
  const auto host = host_generate<T>(n, seed);
  check_reduce(host, 0);
  check_reduce(host, 1);  // a scalar head, then whole tiles shared out unevenly over the blocks
  check_scan(host, ScanKind::exclusive, T(1), true, 0);
  check_select(host, greater_than<T>(T(0)), 0);
}

// ---------------------------------------------------------------------------------------------
// Beyond 2^31 elements (int32 data, 8 GiB per array): any 32-bit element index or offset breaks
// here. Inputs with analytic results keep the reference cheap; the outputs are checked in windows
// at the start, around 2^31 and at the end, and everywhere through their sums.

class KernelsGpuHuge : public ::testing::Test {};

TEST_F(KernelsGpuHuge, ReduceScanSelectAbove2Pow31Elements) {
  if (small_mode()) GTEST_SKIP() << "TESSERA_GPU_TEST_SMALL is set";
  using T = std::int32_t;
  const index_t n = (index_t(1) << 31) + 11;
  const std::size_t need = 3 * sizeof(T) * static_cast<std::size_t>(n) + (std::size_t(1) << 30);
  std::size_t free_bytes = 0, total_bytes = 0;
  kernels::release_cached_memory();  // blocks cached by earlier tests would count as used
  TESSERA_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < need) GTEST_SKIP() << "needs " << need << " bytes of device memory, " << free_bytes << " free";

  const Queue& q = cuda_queue();
  T* in = static_cast<T*>(kernels::allocate(q, sizeof(T) * n));
  T* out = static_cast<T*>(kernels::allocate(q, sizeof(T) * n));
  T* kept = static_cast<T*>(kernels::allocate(q, sizeof(T) * n));
  index_t* count = static_cast<index_t*>(kernels::allocate(q, sizeof(index_t)));
  T* scalar = static_cast<T*>(kernels::allocate(q, sizeof(T)));
  auto scalar_of = [&](auto* p) {
    std::remove_pointer_t<decltype(p)> v{};
    kernels::copy_to_host(q, &v, p, sizeof v);
    return v;
  };
  const std::vector<index_t> window_starts = {0, (index_t(1) << 31) - 4096, n - 4096};
  auto window = [&](const T* p, index_t start) {
    std::vector<T> w(4096);
    kernels::copy_to_host(q, w.data(), p + start, sizeof(T) * w.size());
    return w;
  };

  // iota: element i is i mod 2^32 as int32; its sum wraps to n(n-1)/2 mod 2^32.
  kernels::iota(q, in, n, T(0));
  const auto wrap = [](std::uint64_t v) { return static_cast<T>(static_cast<std::uint32_t>(v)); };
  kernels::reduce(q, in, n, ReduceOp::sum, scalar);
  EXPECT_EQ(scalar_of(scalar), wrap(static_cast<std::uint64_t>(n) * (n - 1) / 2)) << "sum of iota";
  kernels::reduce(q, in, n, ReduceOp::min, scalar);
  EXPECT_EQ(scalar_of(scalar), std::numeric_limits<T>::min()) << "min of iota";
  kernels::reduce(q, in, n, ReduceOp::max, scalar);
  EXPECT_EQ(scalar_of(scalar), std::numeric_limits<T>::max()) << "max of iota";

  // Inclusive scan of ones is iota(1): checked in windows, and its wrapped sum everywhere.
  kernels::fill(q, in, n, T(1));
  poison_bytes(out, sizeof(T) * n, 0xA5);
  kernels::scan(q, in, out, n, ScanKind::inclusive, T(0));
  for (index_t s : window_starts) {
    const auto w = window(out, s);
    for (index_t i = 0; i < 4096; ++i) ASSERT_EQ(w[i], wrap(static_cast<std::uint64_t>(s + i + 1))) << "scan at " << s + i;
  }
  kernels::reduce(q, out, n, ReduceOp::sum, scalar);
  EXPECT_EQ(scalar_of(scalar), wrap(static_cast<std::uint64_t>(n) * (n + 1) / 2)) << "sum of the scan of ones";

  // Select of the scan output's positive elements (values 1 .. 2^31-1, then negatives after the
  // wrap, then positives again from 2^32 on: none, since n < 2^32): the first 2^31 - 1 are kept.
  poison_bytes(kept, sizeof(T) * n, 0xA5);
  kernels::select(q, out, n, greater_than<T>(0), kept, count);
  const index_t kept_count = scalar_of(count);
  EXPECT_EQ(kept_count, (index_t(1) << 31) - 1) << "kept elements";
  for (index_t s : {index_t(0), kept_count - 4096}) {
    const auto w = window(kept, s);
    for (index_t i = 0; i < 4096; ++i) ASSERT_EQ(w[i], static_cast<T>(s + i + 1)) << "select at " << s + i;
  }
  // count_if of the ones exceeds 2^31: the count is 64-bit end to end.
  kernels::count_if(q, in, n, greater_than<T>(0), count);
  EXPECT_EQ(scalar_of(count), n) << "count_if above 2^31";

  for (void* p : {static_cast<void*>(in), static_cast<void*>(out), static_cast<void*>(kept), static_cast<void*>(count),
                  static_cast<void*>(scalar)})
    kernels::deallocate(q, p);
}

}  // namespace
}  // namespace tessera::gpu_test
