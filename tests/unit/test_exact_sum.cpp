// The superaccumulator alone (kernels/exact_sum.hpp) and its CPU kernel, against the independent
// big-integer reference of tests/support/exact_reference.hpp, bitwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/exact_cases.hpp"
#include "support/exact_reference.hpp"
#include "support/test_support.hpp"
#include "tessera/kernels/exact_sum.hpp"

namespace tessera {
namespace {

using test::same_bits;
using test::wide_values;

template <class T>
T serial_exact(const std::vector<T>& v) {
  kernels::ExactAccumulator<T> acc;
  kernels::exact_sum_clear(acc);
  for (T x : v) kernels::exact_sum_add(acc, x);
  return kernels::exact_sum_round(acc);
}

template <class T>
T kernel_exact(const std::vector<T>& v) {
  kernels::ExactAccumulator<T> acc;
  kernels::exact_sum_partial(kernels::Queue{}, v.data(), static_cast<index_t>(v.size()), &acc);
  return kernels::exact_sum_round(acc);
}

template <class T>
class ExactSum : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ExactSum, FloatTypes);

TYPED_TEST(ExactSum, MatchesReferenceOnRandomData) {
  using T = TypeParam;
  for (index_t n : test::odd_sizes(65537)) {
    const auto v = test::random_vector<T>(n, test::seed() + static_cast<std::uint64_t>(n));
    const T ref = test::exact_sum_reference(v);
    EXPECT_TRUE(same_bits(ref, serial_exact(v))) << test::where(n);
    EXPECT_TRUE(same_bits(ref, kernel_exact(v))) << test::where(n);
  }
}

TYPED_TEST(ExactSum, MatchesReferenceAcrossTheExponentRange) {
  using T = TypeParam;
  const int top = std::numeric_limits<T>::max_exponent;
  for (int round = 0; round < 20; ++round) {
    const std::uint64_t s = test::seed() * 31 + static_cast<std::uint64_t>(round);
    // Below the top: no overflow possible; at the top: sums may overflow to inf.
    const auto v = wide_values<T>(3001, s, round % 2 ? top - 12 : top);
    EXPECT_TRUE(same_bits(test::exact_sum_reference(v), serial_exact(v))) << "seed " << s;
    EXPECT_TRUE(same_bits(test::exact_sum_reference(v), kernel_exact(v))) << "seed " << s;
  }
}

TYPED_TEST(ExactSum, KnownSumsAndSpecialValues) {
  using T = TypeParam;
  const auto cases = test::known_exact_sums<T>();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(same_bits(cases[i].expected, test::exact_sum_reference(cases[i].values))) << "reference, case " << i;
    EXPECT_TRUE(same_bits(cases[i].expected, serial_exact(cases[i].values))) << "case " << i;
    EXPECT_TRUE(same_bits(cases[i].expected, kernel_exact(cases[i].values))) << "case " << i;
  }
}

TYPED_TEST(ExactSum, MergeOrderDoesNotMatter) {
  using T = TypeParam;
  const std::uint64_t s = test::seed() + 77;
  const auto v = wide_values<T>(5000, s, std::numeric_limits<T>::max_exponent - 16);
  const T ref = test::exact_sum_reference(v);
  std::mt19937_64 gen(s);
  for (int round = 0; round < 10; ++round) {
    // Cut into random pieces, accumulate each, merge in a shuffled order.
    std::vector<std::size_t> cuts = {0, v.size()};
    for (int k = 0; k < 7; ++k) cuts.push_back(gen() % v.size());
    std::sort(cuts.begin(), cuts.end());
    std::vector<kernels::ExactAccumulator<T>> parts(cuts.size() - 1);
    for (std::size_t p = 0; p + 1 < cuts.size(); ++p) {
      kernels::exact_sum_clear(parts[p]);
      for (std::size_t i = cuts[p]; i < cuts[p + 1]; ++i) kernels::exact_sum_add(parts[p], v[i]);
    }
    std::shuffle(parts.begin(), parts.end(), gen);
    kernels::ExactAccumulator<T> total;
    kernels::exact_sum_clear(total);
    for (const auto& p : parts) kernels::exact_sum_merge(total, p);
    EXPECT_TRUE(same_bits(ref, kernels::exact_sum_round(total))) << "seed " << s << " round " << round;
  }
}

TYPED_TEST(ExactSum, ManyThreadsOnALargeBlock) {
  using T = TypeParam;
  // Large enough for the CPU kernel to split the block among threads (when OpenMP has several).
  const index_t n = 300007;
  auto v = test::random_vector<T>(n, test::seed() + 5);
  v[17] = static_cast<T>(1e30);
  v[n - 3] = static_cast<T>(-1e30);
  EXPECT_TRUE(same_bits(test::exact_sum_reference(v), kernel_exact(v))) << test::where(n);
}

}  // namespace
}  // namespace tessera
