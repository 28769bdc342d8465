// The CUDA exact sum (kernels::exact_sum_partial on the cuda queue, rounded by exact_sum_round)
// against the independent big-integer reference of tests/support/exact_reference.hpp, bitwise.
// The data is chosen to drive every level of the kernel: the floating-point expansions (random
// data), their overflow into the shared superaccumulator (values over the whole exponent range),
// the slow path (inf, NaN, doubles at or above 2^960), the signed-zero rule, misaligned starts
// (scalar loads) and sizes around the vector and grid edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gpu_test_support.hpp"
#include "support/exact_cases.hpp"
#include "support/exact_reference.hpp"
#include "tessera/kernels/exact_sum.hpp"

namespace tessera::gpu_test {
namespace {

using test::same_bits;
using test::wide_values;

// The CUDA exact sum of `host`, placed `offset` elements past a 16-byte boundary.
template <class T>
T cuda_exact(const std::vector<T>& host, index_t offset = 0) {
  const auto n = static_cast<index_t>(host.size());
  DeviceArray<T> in(n, offset);
  in.upload(host);
  auto* acc = static_cast<kernels::ExactAccumulator<T>*>(kernels::allocate(cuda_queue(), sizeof(kernels::ExactAccumulator<T>)));
  poison_bytes(acc, sizeof(*acc), 0xA5);  // the kernel must overwrite every field
  kernels::exact_sum_partial(cuda_queue(), in.data(), n, acc);
  kernels::ExactAccumulator<T> host_acc{};
  kernels::copy_to_host(cuda_queue(), &host_acc, acc, sizeof host_acc);
  kernels::deallocate(cuda_queue(), acc);
  EXPECT_EQ(host_acc.count, n);
  return kernels::exact_sum_round(host_acc);
}

template <class T>
class ExactSumGpu : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ExactSumGpu, FloatTypes);

TYPED_TEST(ExactSumGpu, RandomDataAtOddSizesAndOffsets) {
  using T = TypeParam;
  for (index_t n : odd_sizes()) {
    const std::vector<T> v = host_generate<T>(n, test_seed() + static_cast<std::uint64_t>(n));
    const T want = test::exact_sum_reference(v);
    for (index_t offset : {index_t(0), index_t(1)})
      EXPECT_TRUE(same_bits(want, cuda_exact(v, offset))) << where(n, "random") << " offset=" << offset;
  }
}

TYPED_TEST(ExactSumGpu, ValuesOverTheWholeExponentRange) {
  using T = TypeParam;
  const int top = std::numeric_limits<T>::max_exponent;
  const std::vector<std::size_t> sizes = small_mode() ? std::vector<std::size_t>{3001} : std::vector<std::size_t>{3001, 65537, 1000003};
  for (std::size_t n : sizes) {
    for (int round = 0; round < 4; ++round) {
      const std::uint64_t s = test_seed() * 31 + n + static_cast<std::uint64_t>(round);
      // Below the top no sum can overflow; at the top the exact sum may round to +-inf.
      const std::vector<T> v = wide_values<T>(n, s, round % 2 ? top - 12 : top);
      EXPECT_TRUE(same_bits(test::exact_sum_reference(v), cuda_exact(v))) << "n=" << n << " seed " << s;
    }
  }
}

TYPED_TEST(ExactSumGpu, CancellationOfLargeValuesLeavesTheSmallOnes) {
  using T = TypeParam;
  // Pairs +-big scattered among small values: the exact sum is the sum of the small values alone,
  // far below the running sums' magnitude. Big values near the top of the range (doubles at or
  // above 2^960 take the kernel's slow path; floats all take the fast one).
  std::mt19937_64 gen(test_seed() + 5);
  const index_t n = small_mode() ? 4099 : 1000003;
  std::vector<T> v = host_generate<T>(n, test_seed() + 6);
  std::uniform_int_distribution<int> big_exp(std::numeric_limits<T>::max_exponent - 70, std::numeric_limits<T>::max_exponent - 2);
  for (index_t i = 0; i + 1 < n; i += 7) {
    const T big = std::ldexp(T(1) + static_cast<T>(gen() % 1000) / T(1024), big_exp(gen));
    v[static_cast<std::size_t>(i)] = big;
    v[static_cast<std::size_t>(n - 1 - i)] = -big;
  }
  EXPECT_TRUE(same_bits(test::exact_sum_reference(v), cuda_exact(v)));
  EXPECT_TRUE(same_bits(test::exact_sum_reference(v), cuda_exact(v, 1)));
}

TYPED_TEST(ExactSumGpu, KnownSumsZerosSubnormalsAndSpecials) {
  using T = TypeParam;
  const auto cases = test::known_exact_sums<T>();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(same_bits(cases[i].expected, test::exact_sum_reference(cases[i].values))) << "reference, case " << i;
    EXPECT_TRUE(same_bits(cases[i].expected, cuda_exact(cases[i].values))) << "case " << i;
  }
}

TYPED_TEST(ExactSumGpu, SignedZerosAndSpecialsInsideLargeArrays) {
  using T = TypeParam;
  using L = std::numeric_limits<T>;
  for (index_t n : {index_t(33), index_t(4097), index_t(small_mode() ? 8193 : 1000003)}) {
    const std::vector<T> all_negative_zero(static_cast<std::size_t>(n), -T(0));
    EXPECT_TRUE(same_bits(-T(0), cuda_exact(all_negative_zero))) << where(n, "all -0");
    std::vector<T> one_positive = all_negative_zero;
    one_positive[static_cast<std::size_t>(n / 2)] = T(0);
    EXPECT_TRUE(same_bits(T(0), cuda_exact(one_positive))) << where(n, "-0 and one +0");

    std::vector<T> v = host_generate<T>(n, test_seed() + 11 + static_cast<std::uint64_t>(n));
    const std::size_t at = static_cast<std::size_t>(n * 2 / 3);
    std::vector<T> with_inf = v;
    with_inf[at] = L::infinity();
    EXPECT_TRUE(same_bits(L::infinity(), cuda_exact(with_inf))) << where(n, "+inf");
    std::vector<T> with_both = with_inf;
    with_both[0] = -L::infinity();
    EXPECT_TRUE(std::isnan(cuda_exact(with_both))) << where(n, "+inf and -inf");
    std::vector<T> with_nan = v;
    with_nan[static_cast<std::size_t>(n - 1)] = L::quiet_NaN();
    EXPECT_TRUE(std::isnan(cuda_exact(with_nan, 1))) << where(n, "NaN");
  }
}

TYPED_TEST(ExactSumGpu, LargeRandomArray) {
  using T = TypeParam;
  if (small_mode()) GTEST_SKIP() << "large size skipped in small mode";
  const index_t n = (index_t(1) << 26) + 3;
  const std::vector<T> v = host_generate<T>(n, test_seed() + 99);
  EXPECT_TRUE(same_bits(test::exact_sum_reference(v), cuda_exact(v))) << where(n, "large");
}

}  // namespace
}  // namespace tessera::gpu_test
