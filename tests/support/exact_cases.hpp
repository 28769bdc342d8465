// Test data and a bitwise comparison shared by the exact-sum tests of every backend (tests/unit
// for the CPU, tests/gpu for CUDA): values over the whole exponent range, and a table of inputs
// whose correctly rounded sum is known by construction (ties, overflow, subnormals, signed zeros,
// inf and NaN).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace tessera::test {

// Same value and sign, or both NaN.
template <class T>
::testing::AssertionResult same_bits(T expected, T actual) {
  if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
  if (std::memcmp(&expected, &actual, sizeof(T)) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::hexfloat << "expected " << expected << " got " << actual;
}

// Values spread over the whole exponent range of T, both signs, subnormals included; exponents
// capped at `max_exp` so that the caller chooses whether the sum can overflow.
template <class T>
std::vector<T> wide_values(std::size_t n, std::uint64_t seed, int max_exp) {
  std::mt19937_64 gen(seed);
  const int min_exp = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits;
  std::uniform_int_distribution<int> exponent(min_exp, max_exp);
  std::uniform_real_distribution<double> mantissa(0.5, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(std::ldexp(static_cast<T>(mantissa(gen)), exponent(gen)) * (gen() & 1 ? 1 : -1));
  return v;
}

template <class T>
struct KnownExactSum {
  std::vector<T> values;
  T expected;  // the correctly rounded sum, with IEEE's rules for zeros and specials
};

template <class T>
std::vector<KnownExactSum<T>> known_exact_sums() {
  using L = std::numeric_limits<T>;
  const T inf = L::infinity(), nan = L::quiet_NaN(), max = L::max(), tiny = L::denorm_min(), eps = L::epsilon();
  const T half_ulp_of_max = std::ldexp(T(1), L::max_exponent - L::digits - 1);
  return {
      {{}, T(0)},
      {{-T(0)}, -T(0)},
      {{T(0)}, T(0)},
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
}

}  // namespace tessera::test
