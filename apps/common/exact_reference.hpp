// An exact sum of floats or doubles, built differently from the library's (kernels/exact_sum.hpp),
// for checking the library's sums (--verify, and the tests): sign-magnitude big integers (the
// positive and the negative elements summed apart, so only additions of magnitudes happen), each
// element split with frexp rather than by its bits, and a rounding that extracts no bits: it takes
// the floating-point neighbours of an approximation and picks the one nearest the exact value (ties
// to the even significand), comparing exact big-integer distances.
//
// The state is plain uint64 words: 32-bit digits with 32 bits of headroom each (a carry pass every
// 2^31 elements), and counts. Normalized states of several ranks add word by word, exactly, with an
// integer MPI_SUM (2^31 ranks at most), and normalize() afterwards restores the digits.
#pragma once

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace tessera::apps {

template <class T>
class ExactReference {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "ExactReference: float or double");

 public:
  static constexpr int kPrecision = std::numeric_limits<T>::digits;                   // 24 or 53
  static constexpr long kLsb = std::numeric_limits<T>::min_exponent - kPrecision;     // 2^-149 or 2^-1074
  // Digits of 32 bits from 2^kLsb to 2^max_exponent, with 64 bits to spare for the element count.
  static constexpr int kDigits = static_cast<int>((std::numeric_limits<T>::max_exponent - kLsb + 64 + 31) / 32);
  static constexpr int kWords = 2 * kDigits + 6;

  ExactReference() { words_.fill(0); }

  // Adds one element (any value: NaN and infinities are counted, not summed).
  void add(T x) {
    ++words_[kCount];
    if (std::isnan(x)) {
      ++words_[kNan];
      return;
    }
    if (std::isinf(x)) {
      ++words_[x > 0 ? kPosInf : kNegInf];
      return;
    }
    if (x == 0) {
      if (std::signbit(x)) ++words_[kNegZero];
      return;
    }
    int e = 0;
    const T f = std::frexp(std::fabs(x), &e);  // |x| = f 2^e, f in [0.5, 1)
    // f 2^p is an integer below 2^p, exactly (scaling by a power of two); |x| = m 2^(e - p).
    auto m = static_cast<std::uint64_t>(f * kScale);
    long shift = e - kPrecision - kLsb;  // in units of 2^kLsb; negative only by m's trailing zeros
    if (shift < 0) {
      m >>= -shift;
      shift = 0;
    }
    std::uint64_t* digit = words_.data() + (x > 0 ? 0 : kDigits);
    const auto index = static_cast<int>(shift / 32);
    const int bit = static_cast<int>(shift % 32);
    const std::uint64_t low = m << bit;  // m < 2^53 and bit < 32: the bits above 64 are `high`
    const std::uint64_t high = bit ? m >> (64 - bit) : 0;
    digit[index] += low & 0xffffffffu;
    digit[index + 1] += low >> 32;
    if (high) digit[index + 2] += high;
    if (++words_[kPending] == kDepositsPerNormalize) normalize();
  }

  // Adds another partial sum, exactly.
  void add(ExactReference other) {
    normalize();
    other.normalize();
    for (int i = 0; i < kWords; ++i) words_[i] += other.words_[i];
    normalize();
  }

  // The carry pass: every digit below 2^32 afterwards. Needed before the words are summed over
  // ranks (see above) and done by every query.
  void normalize() {
    for (int part = 0; part < 2; ++part) {
      std::uint64_t* digit = words_.data() + part * kDigits;
      for (int i = 0; i + 1 < kDigits; ++i) {
        digit[i + 1] += digit[i] >> 32;
        digit[i] &= 0xffffffffu;
      }
    }
    words_[kPending] = 0;
  }

  // The state, for an MPI_Allreduce of kWords MPI_UINT64_T with MPI_SUM (normalize before and after).
  std::uint64_t* words() { return words_.data(); }

  std::uint64_t count() const { return words_[kCount]; }
  std::uint64_t nan_count() const { return words_[kNan]; }
  std::uint64_t pos_inf_count() const { return words_[kPosInf]; }
  std::uint64_t neg_inf_count() const { return words_[kNegInf]; }

  // The exact sum rounded to nearest, ties to even, with IEEE's rules for specials and zeros: NaN
  // for a NaN or both infinities, an infinity for infinities of one sign, -0 only when every
  // element is -0, and an infinity where the exact sum rounds beyond the largest finite value.
  T rounded() const {
    if (nan_count() || (pos_inf_count() && neg_inf_count())) return std::numeric_limits<T>::quiet_NaN();
    if (pos_inf_count()) return std::numeric_limits<T>::infinity();
    if (neg_inf_count()) return -std::numeric_limits<T>::infinity();
    const Magnitude p = part(0), n = part(1);
    const int c = compare(p, n);
    if (c == 0) return (count() > 0 && words_[kNegZero] == count()) ? -T(0) : T(0);
    const bool negative = c < 0;
    const Magnitude exact = negative ? subtract(n, p) : subtract(p, n);
    const T max = std::numeric_limits<T>::max();
    const long double approx = to_long_double(exact);
    const T centre = approx > static_cast<long double>(max) ? max : static_cast<T>(approx);
    // The approximation is within an ulp or so: the nearest lies among two neighbours each side.
    // "Beyond" stands for 2^max_exponent, whose significand is even: a tie at the top goes to
    // infinity, as IEEE rounding does.
    T lo = centre;
    for (int k = 0; k < 3 && lo > 0; ++k) lo = std::nextafter(lo, T(0));
    bool have = false;
    T best = 0;
    Magnitude best_distance;
    auto consider = [&](const Magnitude& value, T as, bool even) {
      const Magnitude d = compare(value, exact) >= 0 ? subtract(value, exact) : subtract(exact, value);
      const int cmp = have ? compare(d, best_distance) : -1;
      if (cmp < 0 || (cmp == 0 && even)) {
        best_distance = d;
        best = as;
        have = true;
      }
    };
    bool reached_max = false;
    int taken = 0;
    for (T v = lo; taken < 7; v = std::nextafter(v, std::numeric_limits<T>::infinity()), ++taken) {
      consider(magnitude_of(v), v, significand_is_even(v));
      if (v == max) {
        reached_max = true;
        break;
      }
    }
    if (reached_max) {
      Magnitude beyond;
      add_shifted(beyond, 1, std::numeric_limits<T>::max_exponent - kLsb);
      consider(beyond, std::numeric_limits<T>::infinity(), true);
    }
    return negative ? -best : best;
  }

  // sum |x| over the finite elements, rounded up (an upper bound within a relative 8 LDBL_EPSILON).
  long double magnitude_sum_upper() const {
    Magnitude total = part(0);
    add(total, part(1));
    return upper(to_long_double(total));
  }

  // |value - the exact sum of the finite elements| for a finite value, rounded up (an upper bound
  // within a relative 8 LDBL_EPSILON).
  long double distance_upper(T value) const {
    ExactReference with = *this;
    with.add(-value);
    const Magnitude p = with.part(0), n = with.part(1);
    return upper(to_long_double(compare(p, n) >= 0 ? subtract(p, n) : subtract(n, p)));
  }

  // The exact sum of the finite elements, to long double (for messages).
  long double approximate() const {
    const Magnitude p = part(0), n = part(1);
    return compare(p, n) >= 0 ? to_long_double(subtract(p, n)) : -to_long_double(subtract(n, p));
  }

 private:
  static constexpr int kCount = 2 * kDigits, kNan = kCount + 1, kPosInf = kCount + 2, kNegInf = kCount + 3,
                       kNegZero = kCount + 4, kPending = kCount + 5;
  static constexpr std::uint64_t kDepositsPerNormalize = std::uint64_t(1) << 31;
  static constexpr T kScale = static_cast<T>(std::uint64_t(1) << kPrecision);

  // A non-negative integer in units of 2^kLsb: little-endian base-2^32 digits.
  using Magnitude = std::vector<std::uint32_t>;

  Magnitude part(int which) const {
    ExactReference copy = *this;
    copy.normalize();
    const std::uint64_t* digit = copy.words_.data() + which * kDigits;
    Magnitude m(static_cast<std::size_t>(kDigits));
    for (int i = 0; i < kDigits; ++i) m[static_cast<std::size_t>(i)] = static_cast<std::uint32_t>(digit[i]);
    trim(m);
    return m;
  }

  static void trim(Magnitude& m) {
    while (!m.empty() && m.back() == 0) m.pop_back();
  }

  static int compare(Magnitude a, Magnitude b) {
    trim(a);
    trim(b);
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
    for (std::size_t i = a.size(); i-- > 0;)
      if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
  }

  // a - b for a >= b.
  static Magnitude subtract(Magnitude a, const Magnitude& b) {
    std::int64_t borrow = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::int64_t d = std::int64_t(a[i]) - (i < b.size() ? b[i] : 0) - borrow;
      borrow = d < 0 ? 1 : 0;
      if (d < 0) d += std::int64_t(1) << 32;
      a[i] = static_cast<std::uint32_t>(d);
    }
    trim(a);
    return a;
  }

  static void add(Magnitude& a, const Magnitude& b) {
    if (a.size() < b.size()) a.resize(b.size(), 0);
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::uint64_t s = std::uint64_t(a[i]) + (i < b.size() ? b[i] : 0) + carry;
      a[i] = static_cast<std::uint32_t>(s);
      carry = s >> 32;
    }
    if (carry) a.push_back(static_cast<std::uint32_t>(carry));
  }

  static void add_shifted(Magnitude& a, std::uint64_t value, long shift) {  // a += value 2^shift
    Magnitude b(static_cast<std::size_t>(shift / 32), 0);
    const int bit = static_cast<int>(shift % 32);
    b.push_back(static_cast<std::uint32_t>(value << bit));
    b.push_back(static_cast<std::uint32_t>((value << bit) >> 32));
    if (bit) b.push_back(static_cast<std::uint32_t>(value >> (64 - bit)));
    add(a, b);
  }

  // The exact value of a finite T, in units of 2^kLsb.
  static Magnitude magnitude_of(T v) {
    ExactReference r;
    if (v != 0) r.add(v);
    return r.part(v > 0 ? 0 : 1);
  }

  static bool significand_is_even(T v) {
    using Bits = std::conditional_t<std::is_same_v<T, double>, std::uint64_t, std::uint32_t>;
    Bits b;
    std::memcpy(&b, &v, sizeof b);
    return (b & 1u) == 0;
  }

  // The top three digits (96 bits, past long double's 64), truncated: within a relative 2^-63 of m.
  static long double to_long_double(const Magnitude& m) {
    long double v = 0;
    for (std::size_t i = m.size(), taken = 0; i-- > 0 && taken < 3; ++taken)
      v += std::ldexp(static_cast<long double>(m[i]), static_cast<int>(32 * static_cast<long>(i) + kLsb));
    return v;
  }

  static long double upper(long double v) { return v * (1 + 8 * LDBL_EPSILON); }

  std::array<std::uint64_t, kWords> words_;
};

}  // namespace tessera::apps
