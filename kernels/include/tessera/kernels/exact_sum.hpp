// Exact summation of float and double: a long fixed-point superaccumulator with deferred carries
// (the idea of Kulisch's long accumulator, in the form of Collange, Defour, Graillat and Iakymchuk's
// ExBLAS and Neal's "small superaccumulator": 64-bit signed limbs that each carry 32 bits of digit
// and 32 bits of headroom, so that deposits add without carry propagation).
//
// The accumulator covers every finite value of T exactly: limb i weighs 2^(32 i + kLsbExponent),
// where kLsbExponent is the exponent of T's smallest subnormal, and the top limb leaves room for
// 2^63 elements of T's largest magnitude. An element x = m * 2^e (integer m < 2^p) is deposited by
// adding the three (double) or two (float) 32-bit pieces of m << ((e - kLsbExponent) mod 32) to
// consecutive limbs. Each limb absorbs 2^31 deposits before a carry pass (normalize) is needed.
//
// Partial accumulators combine exactly: normalize both (limbs in [0, 2^32), top limb signed),
// then add limb-wise; normalized limbs from up to 2^31 partials sum in int64 without overflow,
// which is what lets MPI combine them with a plain integer MPI_SUM.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

template <class T>
struct ExactSumFormat;

template <>
struct ExactSumFormat<double> {
  using Bits = std::uint64_t;
  static constexpr int kPrecision = 53;          // significand bits, hidden bit included
  static constexpr int kExponentBits = 11;
  static constexpr int kLsbExponent = -1074;     // 2^-1074: the smallest subnormal
  // 2^-1074 .. 2^1024 is 2098 bits, plus 64 bits of count headroom, plus a sign: 68 limbs of 32.
  static constexpr int kLimbs = 68;
  static constexpr int kDepositLimbs = 3;        // 53 + 31 bits of shifted significand
};

template <>
struct ExactSumFormat<float> {
  using Bits = std::uint32_t;
  static constexpr int kPrecision = 24;
  static constexpr int kExponentBits = 8;
  static constexpr int kLsbExponent = -149;
  // 2^-149 .. 2^128 is 277 bits, plus 64 bits of count headroom, plus a sign: 11 limbs of 32.
  static constexpr int kLimbs = 11;
  static constexpr int kDepositLimbs = 2;        // 24 + 31 bits
};

// Deposits one limb may take between two carry passes, with room to spare for the partial merges.
inline constexpr std::int64_t kExactSumDepositsPerNormalize = std::int64_t(1) << 30;

// The state of an exact sum. Plain int64 fields only, so that an array of them is an MPI_INT64_T
// buffer, and so that the same bytes mean the same thing on host and device.
template <class T>
struct ExactAccumulator {
  static constexpr int kLimbs = ExactSumFormat<T>::kLimbs;
  std::int64_t limb[kLimbs];       // value = sum limb[i] * 2^(32 i + kLsbExponent)
  std::int64_t nan_count;          // NaN elements
  std::int64_t pos_inf_count;      // +inf elements
  std::int64_t neg_inf_count;      // -inf elements
  std::int64_t count;              // elements deposited
  std::int64_t non_neg_zero_count; // > 0 iff some element is not -0 (a backend may count fewer: only 0 vs > 0 means anything)

  static constexpr int kFields = kLimbs + 5;
};

static_assert(sizeof(ExactAccumulator<double>) == ExactAccumulator<double>::kFields * sizeof(std::int64_t));
static_assert(sizeof(ExactAccumulator<float>) == ExactAccumulator<float>::kFields * sizeof(std::int64_t));

// One element split into what a deposit needs.
struct ExactSumElement {
  std::uint64_t magnitude;  // integer significand m (0 for zeros)
  int position;             // e - kLsbExponent: the bit of the accumulator that m's LSB lands on
  bool negative;
  bool special;             // inf or NaN: not deposited
  bool nan;
  bool is_negative_zero;
};

template <class T>
TESSERA_HOST_DEVICE inline ExactSumElement exact_sum_decompose(T x) {
  using F = ExactSumFormat<T>;
  using Bits = typename F::Bits;
  Bits bits;
  std::memcpy(&bits, &x, sizeof bits);
  constexpr int kFractionBits = F::kPrecision - 1;
  constexpr Bits kFractionMask = (Bits(1) << kFractionBits) - 1;
  constexpr Bits kExponentMask = (Bits(1) << F::kExponentBits) - 1;
  constexpr Bits kSignBit = Bits(1) << (sizeof(Bits) * 8 - 1);
  const Bits biased = (bits >> kFractionBits) & kExponentMask;
  const Bits fraction = bits & kFractionMask;
  ExactSumElement out{};
  out.negative = (bits & kSignBit) != 0;
  out.is_negative_zero = bits == kSignBit;
  if (biased == kExponentMask) {
    out.special = true;
    out.nan = fraction != 0;
    return out;
  }
  // Subnormals share the exponent of the smallest normal and have no hidden bit; either way the
  // LSB of m sits (biased - 1) bits above the smallest subnormal, biased taken as 1 for subnormals.
  out.magnitude = biased ? (fraction | (Bits(1) << kFractionBits)) : fraction;
  out.position = static_cast<int>(biased ? biased - 1 : 0);
  return out;
}

// magnitude * 2^position (magnitude < 2^53, position >= 0) cut along the 32-bit limb grid: limbs
// index, index + 1 and index + 2 receive piece[0], piece[1] and piece[2] (each below 2^32).
struct ExactSumPieces {
  int index;
  std::uint64_t piece[3];
};

TESSERA_HOST_DEVICE inline ExactSumPieces exact_sum_split(std::uint64_t magnitude, int position) {
  const int shift = position & 31;
  // magnitude << shift needs up to 53 + 31 = 84 bits: low 64 bits and the bits above them.
  const std::uint64_t low = magnitude << shift;
  const std::uint64_t high = shift ? magnitude >> (64 - shift) : 0;
  return {position >> 5, {low & 0xffffffffu, low >> 32, high}};
}

// Adds (-1)^negative * magnitude * 2^position to the limbs (magnitude < 2^53, position >= 0).
template <class T>
TESSERA_HOST_DEVICE inline void exact_sum_deposit(std::int64_t* limb, std::uint64_t magnitude, int position,
                                                  bool negative) {
  constexpr int kLimbs = ExactSumFormat<T>::kLimbs;
  const ExactSumPieces p = exact_sum_split(magnitude, position);
  const std::int64_t sign = negative ? -1 : 1;
  limb[p.index] += sign * static_cast<std::int64_t>(p.piece[0]);
  if (p.index + 1 < kLimbs) limb[p.index + 1] += sign * static_cast<std::int64_t>(p.piece[1]);
  if (p.index + 2 < kLimbs) limb[p.index + 2] += sign * static_cast<std::int64_t>(p.piece[2]);
}

template <class T>
TESSERA_HOST_DEVICE inline void exact_sum_clear(ExactAccumulator<T>& acc) {
  for (int i = 0; i < ExactAccumulator<T>::kFields; ++i) reinterpret_cast<std::int64_t*>(&acc)[i] = 0;
}

// Adds one element (any value, specials included).
template <class T>
TESSERA_HOST_DEVICE inline void exact_sum_add(ExactAccumulator<T>& acc, T x) {
  const ExactSumElement e = exact_sum_decompose(x);
  acc.count += 1;
  acc.non_neg_zero_count += e.is_negative_zero ? 0 : 1;
  if (e.special) {
    if (e.nan) acc.nan_count += 1;
    else if (e.negative) acc.neg_inf_count += 1;
    else acc.pos_inf_count += 1;
    return;
  }
  if (e.magnitude) exact_sum_deposit<T>(acc.limb, e.magnitude, e.position, e.negative);
}

// Carry pass: afterwards limbs 0 .. kLimbs-2 lie in [0, 2^32) and the top limb holds the sign.
// Valid while every limb is below 2^62 in magnitude.
template <class T>
TESSERA_HOST_DEVICE inline void exact_sum_normalize(ExactAccumulator<T>& acc) {
  constexpr int kLimbs = ExactSumFormat<T>::kLimbs;
  for (int i = 0; i + 1 < kLimbs; ++i) {
    const std::int64_t carry = acc.limb[i] >> 32;  // arithmetic shift: floor division by 2^32
    acc.limb[i] -= carry * (std::int64_t(1) << 32);
    acc.limb[i + 1] += carry;
  }
}

// acc += other, exactly. Both are normalized first; the result is normalized.
template <class T>
TESSERA_HOST_DEVICE inline void exact_sum_merge(ExactAccumulator<T>& acc, ExactAccumulator<T> other) {
  exact_sum_normalize(acc);
  exact_sum_normalize(other);
  auto* a = reinterpret_cast<std::int64_t*>(&acc);
  const auto* b = reinterpret_cast<const std::int64_t*>(&other);
  for (int i = 0; i < ExactAccumulator<T>::kFields; ++i) a[i] += b[i];
  exact_sum_normalize(acc);
}

// The exact sum rounded to nearest, ties to even, with the IEEE rules for specials and zeros
// (see tessera::reproducible_sum). Host code.
template <class T>
T exact_sum_round(ExactAccumulator<T> acc) {
  using F = ExactSumFormat<T>;
  constexpr int kLimbs = F::kLimbs;
  if (acc.nan_count > 0 || (acc.pos_inf_count > 0 && acc.neg_inf_count > 0))
    return std::numeric_limits<T>::quiet_NaN();
  if (acc.pos_inf_count > 0) return std::numeric_limits<T>::infinity();
  if (acc.neg_inf_count > 0) return -std::numeric_limits<T>::infinity();

  exact_sum_normalize(acc);
  const bool negative = acc.limb[kLimbs - 1] < 0;
  if (negative) {
    for (int i = 0; i < kLimbs; ++i) acc.limb[i] = -acc.limb[i];
    exact_sum_normalize(acc);  // now the magnitude, every limb in [0, 2^32) but the top one >= 0
  }
  int top = kLimbs - 1;
  while (top >= 0 && acc.limb[top] == 0) --top;
  if (top < 0) {
    // An exact zero: -0 only when every element was -0 (IEEE: -0 + -0 = -0, x + -x = +0).
    return (acc.count > 0 && acc.non_neg_zero_count == 0) ? -T(0) : T(0);
  }
  // Bit k of the magnitude, and whether any bit below k is set.
  auto bit = [&](long k) -> bool {
    if (k < 0) return false;
    const long i = k >> 5;
    if (i >= kLimbs) return false;
    return (static_cast<std::uint64_t>(acc.limb[i]) >> (k & 31)) & 1u;
  };
  auto any_below = [&](long k) -> bool {
    if (k <= 0) return false;
    const long i = k >> 5;
    for (long j = 0; j < i && j < kLimbs; ++j)
      if (acc.limb[j]) return true;
    if (i >= kLimbs) return false;
    const std::uint64_t mask = (std::uint64_t(1) << (k & 31)) - 1;
    return (static_cast<std::uint64_t>(acc.limb[i]) & mask) != 0;
  };
  long msb = 32L * top;  // position of the highest set bit
  for (std::uint64_t v = static_cast<std::uint64_t>(acc.limb[top]) >> 1; v; v >>= 1) ++msb;
  // The LSB of the rounded result: p bits below the MSB, but never below the subnormal LSB.
  long lsb = msb - (F::kPrecision - 1);
  if (lsb < 0) lsb = 0;
  std::uint64_t mantissa = 0;
  for (long k = msb; k >= lsb; --k) mantissa = (mantissa << 1) | (bit(k) ? 1u : 0u);
  const bool guard = bit(lsb - 1);
  const bool sticky = any_below(lsb - 1);
  if (guard && (sticky || (mantissa & 1u))) ++mantissa;  // may carry into 2^p: still exact in T
  // mantissa <= 2^p is exact in T; ldexp rounds nothing except an overflow, which gives inf,
  // the correct rounding of any exact sum at or beyond the largest finite value plus half an ulp.
  const T magnitude = std::ldexp(static_cast<T>(mantissa), static_cast<int>(lsb + F::kLsbExponent));
  return negative ? -magnitude : magnitude;
}

// Deposits in[0, n) into *acc_out (backend memory; overwritten, not added to). The result is
// normalized. Stream-ordered under cuda: *acc_out is ready once the queue is synchronized.
template <class T>
void exact_sum_partial(const Queue& queue, const T* in, index_t n, ExactAccumulator<T>* acc_out);

}  // namespace tessera::kernels
