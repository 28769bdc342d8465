// The superaccumulator alone (kernels/exact_sum.hpp) and its CPU kernel, against the independent
// big-integer reference of tests/support/exact_reference.hpp, bitwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/exact_reference.hpp"
#include "support/test_support.hpp"
#include "tessera/kernels/exact_sum.hpp"

namespace tessera {
namespace {

template <class T>
using Bits = std::conditional_t<std::is_same_v<T, double>, std::uint64_t, std::uint32_t>;

template <class T>
Bits<T> bits_of(T x) {
  return std::bit_cast<Bits<T>>(x);
}

// Same value and sign, or both NaN.
template <class T>
::testing::AssertionResult same_bits(T expected, T actual) {
  if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
  if (bits_of(expected) == bits_of(actual)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << std::hexfloat << expected << " got " << actual;
}

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

// Values spread over the whole exponent range of T, both signs, subnormals included; exponents
// capped at `max_exp` so that the caller chooses whether the sum can overflow.
template <class T>
std::vector<T> wide_values(std::size_t n, std::uint64_t seed, int max_exp) {
  std::mt19937_64 gen(seed);
  const int min_exp = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;
  std::uniform_int_distribution<int> exp(min_exp, max_exp);
  std::uniform_real_distribution<double> mant(0.5, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(std::ldexp(static_cast<T>(mant(gen)), exp(gen)) * (gen() & 1 ? 1 : -1));
  return v;
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
  using L = std::numeric_limits<T>;
  const T inf = L::infinity(), nan = L::quiet_NaN(), max = L::max(), tiny = L::denorm_min(), eps = L::epsilon();
  const T half_ulp_of_max = std::ldexp(T(1), L::max_exponent - L::digits - 1);
  struct Case {
    std::vector<T> v;
    T expected;
  };
  const std::vector<Case> cases = {
      {{}, T(0)},
      {{-T(0)}, -T(0)},
      {{-T(0), -T(0)}, -T(0)},
      {{-T(0), T(0)}, T(0)},
      {{T(1.5), -T(1.5)}, T(0)},
      {{max, max, -max}, max},                 // the naive sum overflows; the exact one does not
      {{max, max}, inf},
      {{-max, -max}, -inf},
      {{max, half_ulp_of_max}, inf},          // max + half an ulp: a tie, to the even 2^emax -> inf
      {{max, half_ulp_of_max / 2}, max},      // a quarter ulp: back to max
      {{T(1), eps / 2}, T(1)},                 // tie -> even (1)
      {{T(1), eps / 2, tiny}, T(1) + eps},     // just past the tie
      {{T(1) + eps, eps / 2}, T(1) + 2 * eps}, // tie -> even (1 + 2 eps)
      {{tiny, tiny, tiny}, 3 * tiny},          // subnormals add exactly
      {{L::min(), -tiny}, L::min() - tiny},    // largest subnormal
      {{T(1e30), T(3), -T(1e30), T(0.25)}, T(3.25)},
      {{inf, T(1)}, inf},
      {{-inf, max, max}, -inf},
      {{inf, -inf}, nan},
      {{T(1), nan, inf}, nan},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_TRUE(same_bits(cases[i].expected, test::exact_sum_reference(cases[i].v))) << "reference, case " << i;
    EXPECT_TRUE(same_bits(cases[i].expected, serial_exact(cases[i].v))) << "case " << i;
    EXPECT_TRUE(same_bits(cases[i].expected, kernel_exact(cases[i].v))) << "case " << i;
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
