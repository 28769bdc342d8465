// An exact sum of floats or doubles for tests, built differently from the code under test
// (kernels/exact_sum.hpp): sign-magnitude big integers (positive and negative parts kept apart, so
// only additions of magnitudes happen), and a rounding that does not extract bits at all: it takes
// the floating-point neighbours of an approximation and picks the one nearest the exact value,
// ties to the even significand, comparing exact big-integer distances.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace tessera::test {

// A non-negative integer, little-endian base-2^32 digits.
struct Magnitude {
  std::vector<std::uint32_t> digit;

  void add_shifted(std::uint64_t value, long shift) {  // += value * 2^shift
    const std::size_t index = static_cast<std::size_t>(shift / 32);
    const int bit = static_cast<int>(shift % 32);
    // value << bit spans at most 3 digits
    std::uint64_t parts[3] = {(value << bit) & 0xffffffffu, (bit ? (value >> (32 - bit)) : (value >> 32)) & 0xffffffffu,
                              bit ? (value >> (64 - bit)) : 0};
    if (bit == 0) parts[2] = 0;
    std::uint64_t carry = 0;
    for (std::size_t k = 0; k < 3 || carry; ++k) {
      const std::size_t i = index + k;
      if (digit.size() <= i) digit.resize(i + 1, 0);
      const std::uint64_t s = std::uint64_t(digit[i]) + (k < 3 ? parts[k] : 0) + carry;
      digit[i] = static_cast<std::uint32_t>(s);
      carry = s >> 32;
    }
  }
  void add(const Magnitude& o) {
    std::uint64_t carry = 0;
    if (digit.size() < o.digit.size()) digit.resize(o.digit.size(), 0);
    for (std::size_t i = 0; i < digit.size(); ++i) {
      const std::uint64_t s = std::uint64_t(digit[i]) + (i < o.digit.size() ? o.digit[i] : 0) + carry;
      digit[i] = static_cast<std::uint32_t>(s);
      carry = s >> 32;
    }
    if (carry) digit.push_back(static_cast<std::uint32_t>(carry));
  }
  void trim() {
    while (!digit.empty() && digit.back() == 0) digit.pop_back();
  }
  bool is_zero() const {
    return std::all_of(digit.begin(), digit.end(), [](std::uint32_t d) { return d == 0; });
  }
};

inline int compare(Magnitude a, Magnitude b) {
  a.trim();
  b.trim();
  if (a.digit.size() != b.digit.size()) return a.digit.size() < b.digit.size() ? -1 : 1;
  for (std::size_t i = a.digit.size(); i-- > 0;)
    if (a.digit[i] != b.digit[i]) return a.digit[i] < b.digit[i] ? -1 : 1;
  return 0;
}

// a - b for a >= b.
inline Magnitude subtract(Magnitude a, const Magnitude& b) {
  std::int64_t borrow = 0;
  for (std::size_t i = 0; i < a.digit.size(); ++i) {
    std::int64_t d = std::int64_t(a.digit[i]) - (i < b.digit.size() ? b.digit[i] : 0) - borrow;
    borrow = d < 0 ? 1 : 0;
    if (d < 0) d += std::int64_t(1) << 32;
    a.digit[i] = static_cast<std::uint32_t>(d);
  }
  a.trim();
  return a;
}

// A signed value as positive part minus negative part, in units of 2^Lsb<T>.
template <class T>
struct ExactReference {
  static constexpr long kLsb = std::is_same_v<T, double> ? -1074 : -149;
  Magnitude positive, negative;
  long count = 0, neg_zero = 0, nan = 0, pos_inf = 0, neg_inf = 0;

  void add(T x) {
    ++count;
    if (std::isnan(x)) { ++nan; return; }
    if (std::isinf(x)) { (x > 0 ? pos_inf : neg_inf)++; return; }
    if (x == 0) { if (std::signbit(x)) ++neg_zero; return; }
    int e = 0;
    const T f = std::frexp(std::fabs(x), &e);  // |x| = f * 2^e, f in [0.5, 1)
    // f * 2^64 is an integer (f has at most 53 significant bits) and exact in long double.
    const auto m = static_cast<std::uint64_t>(std::ldexp(static_cast<long double>(f), 64));
    // |x| = m * 2^(e - 64); in units of 2^kLsb the shift is e - 64 - kLsb, which may be negative
    // only by the trailing zero bits of m.
    long shift = e - 64 - kLsb;
    std::uint64_t mm = m;
    while (shift < 0) { mm >>= 1; ++shift; }
    (x > 0 ? positive : negative).add_shifted(mm, shift);
  }

  // The exact value of a finite T (or of 2^(max exponent + 1), for `beyond`), in units of 2^kLsb.
  static Magnitude magnitude_of(long double v) {
    ExactReference r;
    if (v != 0) r.add(static_cast<T>(v));
    return r.positive;
  }

  T rounded() const {
    if (nan || (pos_inf && neg_inf)) return std::numeric_limits<T>::quiet_NaN();
    if (pos_inf) return std::numeric_limits<T>::infinity();
    if (neg_inf) return -std::numeric_limits<T>::infinity();
    const int c = compare(positive, negative);
    if (c == 0) return (count > 0 && neg_zero == count) ? -T(0) : T(0);
    const bool neg = c < 0;
    const Magnitude exact = neg ? subtract(negative, positive) : subtract(positive, negative);
    // Approximation from the top digits (truncated: within a few ulps of the exact value).
    long double approx = 0;
    for (std::size_t i = exact.digit.size(), taken = 0; i-- > 0 && taken < 4; ++taken)
      approx += std::ldexp(static_cast<long double>(exact.digit[i]), static_cast<int>(32 * i + kLsb));
    const T max = std::numeric_limits<T>::max();
    T centre = approx > static_cast<long double>(max) ? max : static_cast<T>(approx);
    // Candidates: centre and two neighbours each side; "beyond" stands for 2^(emax+1), whose
    // significand is even, so that a tie at the top goes to infinity as IEEE rounding does.
    std::vector<T> candidates;
    T lo = centre;
    for (int k = 0; k < 3 && lo > 0; ++k) lo = std::nextafter(lo, T(0));
    for (T v = lo; candidates.size() < 7; v = std::nextafter(v, std::numeric_limits<T>::infinity())) {
      candidates.push_back(v);
      if (v == max) break;
    }
    Magnitude best_distance;
    bool have_best = false;
    T best = 0;
    auto consider = [&](const Magnitude& value, T as, bool beyond) {
      const Magnitude d = compare(value, exact) >= 0 ? subtract(value, exact) : subtract(exact, value);
      const int cmp = have_best ? compare(d, best_distance) : -1;
      bool take = cmp < 0;
      if (cmp == 0) take = is_even(as, beyond);  // a tie: the even significand
      if (take) {
        best_distance = d;
        best = as;
        have_best = true;
      }
    };
    for (T v : candidates) consider(magnitude_of(v), v, false);
    if (candidates.back() == max) {
      Magnitude beyond;
      beyond.add_shifted(1, std::numeric_limits<T>::max_exponent - kLsb);
      consider(beyond, std::numeric_limits<T>::infinity(), true);
    }
    return neg ? -best : best;
  }

 private:
  static bool is_even(T v, bool beyond) {
    if (beyond) return true;
    using Bits = std::conditional_t<std::is_same_v<T, double>, std::uint64_t, std::uint32_t>;
    Bits b;
    std::memcpy(&b, &v, sizeof b);
    return (b & 1u) == 0;
  }
};

template <class T>
T exact_sum_reference(const std::vector<T>& values) {
  ExactReference<T> r;
  for (T x : values) r.add(x);
  return r.rounded();
}

}  // namespace tessera::test
