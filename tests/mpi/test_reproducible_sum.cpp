// reproducible_sum: bitwise equal to an independent exact reference (big-integer sum, rounded to
// nearest even by nearest-candidate search) and bitwise the same on 1, 2, .. P ranks and on any
// partition of the same data.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "algo_test_util.hpp"
#include "support/exact_reference.hpp"
#include "tessera/framework/algorithms.hpp"

namespace tessera {
namespace {

template <class T>
class ReproducibleSum : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ReproducibleSum, FloatTypes);

template <class T>
::testing::AssertionResult same_bits(T expected, T actual) {
  using Bits = std::conditional_t<std::is_same_v<T, double>, std::uint64_t, std::uint32_t>;
  if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
  if (std::bit_cast<Bits>(expected) == std::bit_cast<Bits>(actual)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << std::hexfloat << expected << ", got " << actual;
}

// The sum of `global` on every sub-group of 1 .. P ranks, each with the block partition and a
// random ragged one: all must equal the reference bit for bit.
template <class T>
void check_everywhere(const std::vector<T>& global, const std::string& where) {
  const T expected = test::exact_sum_reference(global);
  const Context& world = test::world();
  const index_t n = static_cast<index_t>(global.size());
  for (int ranks = 1; ranks <= world.size(); ++ranks) {
    const Context ctx = world.first(ranks);
    if (ctx.is_null()) continue;
    const auto block = DistArray<T>::from_replicated(ctx, global);
    PhaseTimes times;
    EXPECT_TRUE(same_bits(expected, reproducible_sum(block, &times))) << where << " ranks=" << ranks;
    const auto ragged = DistArray<T>::from_replicated(ctx, global, test::random_partition(n, ranks, test::seed() + 11));
    EXPECT_TRUE(same_bits(expected, reproducible_sum(ragged))) << where << " ranks=" << ranks << " (ragged)";
  }
}

TYPED_TEST(ReproducibleSum, RandomDataMatchesExactReferenceOnAnyRankCount) {
  using T = TypeParam;
  for (index_t n : test::algorithm_sizes(test::world().size())) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    check_everywhere(test::random_vector<T>(n, s), test::where(n, s));
  }
}

TYPED_TEST(ReproducibleSum, CancellationAndMixedMagnitudes) {
  using T = TypeParam;
  using L = std::numeric_limits<T>;
  const std::uint64_t s = test::seed() + 101;
  std::mt19937_64 gen(s);
  std::uniform_int_distribution<int> exponent(L::min_exponent - L::digits, L::max_exponent - 8);
  std::uniform_real_distribution<double> mantissa(0.5, 1.0);
  // Large values that cancel in pairs (x and -x far apart in the array), with small ones between:
  // the exact sum is that of the small ones, which naive summation loses entirely.
  std::vector<T> global;
  std::vector<T> small;
  for (int i = 0; i < 2000; ++i) {
    const T big = static_cast<T>(std::ldexp(static_cast<T>(mantissa(gen)), L::max_exponent - 4 - static_cast<int>(gen() % 40)));
    global.push_back(big);
    small.push_back(static_cast<T>(std::ldexp(static_cast<T>(mantissa(gen)), -static_cast<int>(gen() % 60))));
    global.push_back(small.back());
  }
  for (int i = 0; i < 2000; ++i) global.push_back(-global[static_cast<std::size_t>(2 * i)]);
  std::shuffle(global.begin() + 1, global.end(), gen);
  check_everywhere(global, "cancelling pairs, seed=" + std::to_string(s));
  EXPECT_TRUE(same_bits(test::exact_sum_reference(small), test::exact_sum_reference(global)));

  // Values over the whole exponent range, subnormals included (1e300 next to 1e-300 for double).
  std::vector<T> wide(3001);
  for (auto& x : wide) x = static_cast<T>(std::ldexp(static_cast<T>(mantissa(gen)), exponent(gen)) * (gen() & 1 ? 1 : -1));
  wide[7] = static_cast<T>(1e30);
  wide[8] = static_cast<T>(1e-30);
  check_everywhere(wide, "wide exponents, seed=" + std::to_string(s));
}

TYPED_TEST(ReproducibleSum, KnownSumsZerosSubnormalsAndSpecials) {
  using T = TypeParam;
  using L = std::numeric_limits<T>;
  const T inf = L::infinity(), nan = L::quiet_NaN(), max = L::max(), tiny = L::denorm_min(), eps = L::epsilon();
  struct Case {
    std::vector<T> v;
    T expected;
    const char* what;
  };
  const std::vector<Case> cases = {
      {{}, T(0), "empty"},
      {{-T(0), -T(0), -T(0)}, -T(0), "only -0"},
      {{-T(0), T(0), -T(0)}, T(0), "-0 and +0"},
      {{T(2), -T(2), -T(0)}, T(0), "exact cancellation"},
      {{max, max, -max, -max, max}, max, "overflowing partial sums"},
      {{max, max, max}, inf, "overflow"},
      {{-max, -max, -max}, -inf, "negative overflow"},
      {{T(1), eps / 2}, T(1), "tie to even, down"},
      {{T(1) + eps, eps / 4, eps / 4}, T(1) + 2 * eps, "tie to even, up, from two pieces"},
      {{tiny, tiny, tiny, tiny, tiny}, 5 * tiny, "subnormals"},
      {{L::min(), -tiny, T(0)}, L::min() - tiny, "largest subnormal"},
      {{T(1), nan, T(2), T(3)}, nan, "NaN"},
      {{T(1), inf, T(2), -inf}, nan, "inf - inf"},
      {{-max, T(1), inf, -max}, inf, "+inf wins"},
      {{T(5), -inf, T(1)}, -inf, "-inf wins"},
  };
  for (const Case& c : cases) {
    EXPECT_TRUE(same_bits(c.expected, test::exact_sum_reference(c.v))) << "reference: " << c.what;
    check_everywhere(c.v, c.what);
  }
}

}  // namespace
}  // namespace tessera
