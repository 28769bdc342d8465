// Which bin a sample falls in: the binnings of histogram.hpp, one code for both backends (host and
// device), so that the two count the same samples in the same bins. A binning maps a sample to its
// slot: its bin in [0, bins), or bins + a HistogramSlot for the samples in no bin.
//
// Equal bins follow numpy.histogram exactly (numpy/lib/histograms.py): the sample, converted to the
// comparison type B, is kept when lower <= x <= upper (in B); the estimate f = (x - lower) * norm is
// computed in B with two roundings (no fused multiply-add), its integer part k, clamped to bins - 1,
// is then corrected by one step against the edges: k - 1 where x < e_k, k + 1 where x >= e_{k+1}
// (not past the last bin). The edges are numpy.linspace's, i * step + lower in double with
// step = (upper - lower) / bins, rounded to B; e_bins = upper. Evaluating two edges per sample
// costs double-precision arithmetic, so the correction runs only where it can change something:
// where the fraction of f lies within `margin` of a whole number, a bound (computed on the host
// below) on how far the estimate and the rounded edges can stray from the exact position. Elsewhere
// e_k <= x < e_{k+1} is certain, and numpy's correction would keep k as well.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/detail/rounded.hpp"
#include "tessera/kernels/histogram.hpp"

namespace tessera::kernels::detail {

// What a binning returns: the slot of the counts array the sample counts in, that is its bin in
// [0, bins), or for a sample in no bin bins + kSlotBelow / kSlotAbove / kSlotNaN (the layout of
// histogram.hpp). bins + kSlotNone is "no sample" (a lane without an element in a partial tile of
// the device pass): a slot the device counts into and never reads.
inline constexpr int kSlotBelow = static_cast<int>(HistogramSlot::below);
inline constexpr int kSlotAbove = static_cast<int>(HistogramSlot::above);
inline constexpr int kSlotNaN = static_cast<int>(HistogramSlot::nan);
inline constexpr int kSlotNone = 3;

// The type samples are compared and binned in: float for float samples, double for the others.
template <class T>
using BinType = std::conditional_t<std::is_same_v<T, float>, float, double>;

template <class T>
TESSERA_HOST_DEVICE_INLINE BinType<T> to_bin_type(T sample) {
  return static_cast<BinType<T>>(sample);  // exact, except int64 beyond 2^53 (rounded to nearest, as numpy)
}

// ---- equal bins ------------------------------------------------------------------------------------

template <class T>
struct EvenBinning {
  using B = BinType<T>;
  B lower;         // the range in B: a sample is in range when lower <= x <= upper
  B upper;
  B norm;          // numpy's norm, bins / (upper - lower) in double, rounded to B
  B margin;        // the estimate's fraction must lie in [margin, 1 - margin] to skip the edges
  double lower_d;  // the edges in double: e_i = i * step + lower_d, before rounding to B
  double step;
  double delta;    // upper - lower in double (numpy's edges when step underflows to zero)
  int bins;
  bool step_is_zero;

  // numpy.linspace(lower, upper, bins + 1)[i], rounded to B.
  TESSERA_HOST_DEVICE_INLINE B edge(int i) const {
    if (i >= bins) return upper;
    const double y = step_is_zero ? mul_rn(static_cast<double>(i) / static_cast<double>(bins), delta)
                                  : mul_rn(static_cast<double>(i), step);
    return static_cast<B>(add_rn(y, lower_d));
  }

  // The slot of a sample: its bin, or bins + its tail slot.
  TESSERA_HOST_DEVICE_INLINE int operator()(T sample) const {
    return bin_or(sample, bins + kSlotBelow, bins + kSlotAbove, bins + kSlotNaN);
  }

  // A sample's bin where lower <= x <= upper; otherwise `below`, `above`, or `nan` for a NaN.
  TESSERA_HOST_DEVICE_INLINE int bin_or(T sample, int below, int above, int nan) const {
    const B x = to_bin_type(sample);
    if (!(x >= lower)) return x != x ? nan : below;
    if (!(x <= upper)) return above;
    const B f = mul_rn(sub_rn(x, lower), norm);
    int k = f < static_cast<B>(bins) ? static_cast<int>(f) : bins - 1;
    const B fraction = f - static_cast<B>(k);  // exact: k is f's integer part (or below it)
    if (fraction >= margin && fraction <= B(1) - margin) return k;
    // numpy's correction, one step at most.
    if (x < edge(k)) {
      --k;
    } else if (k != bins - 1 && x >= edge(k + 1)) {
      ++k;
    }
    return k;
  }
};

// The binning of EvenBins{lower, upper, bins} for samples of T (host code; the caller checked the
// bins). The margin bounds, in bins, |f - p| + |e_i - E_i| * norm, where p = (x - lower) * N and
// E_i = lower + i / N are exact (N = bins / (upper - lower)) and u is B's unit roundoff:
//   f:   x - lower_B and the product round once each, norm twice (double, then B): 3.01 u bins;
//        lower_B differs from lower by u |lower|: u |lower| N.
//   e_i: the double edge is within 5 2^-53 M of E_i (M = max |lower|, |upper|), rounding to B adds
//        u M: (u + 5 2^-53) M N.
//   width: a norm from a width other than upper - lower (EvenBins::width) moves f by the relative
//        difference of the two, times the bins.
// With 25% to spare. A margin of a half or more sends every sample through the correction.
template <class T>
EvenBinning<T> make_even_binning(double lower, double upper, std::int64_t bins, double width = 0) {
  using B = BinType<T>;
  EvenBinning<T> b{};
  b.bins = static_cast<int>(bins);
  b.lower = static_cast<B>(lower);
  b.upper = static_cast<B>(upper);
  b.lower_d = lower;
  b.delta = upper - lower;
  const double denominator = width != 0 ? width : b.delta;
  const double norm = static_cast<double>(bins) / denominator;
  const double width_shift = std::fabs(denominator - b.delta) / std::fmin(denominator, b.delta) * static_cast<double>(bins);
  b.norm = static_cast<B>(norm);
  b.step = b.delta / static_cast<double>(bins);
  b.step_is_zero = b.step == 0;
  const double u = std::numeric_limits<B>::epsilon() / 2;
  const double m_abs = std::fmax(std::fabs(lower), std::fabs(upper));
  const double margin =
      1.25 * (3.01 * u * static_cast<double>(bins) + norm * (u * std::fabs(lower) + (u + 5 * 0x1p-53) * m_abs) + width_shift);
  b.margin = margin < 0.5 && std::isfinite(margin) ? static_cast<B>(margin * (1 + 4 * u)) : B(1);
  return b;
}

// ---- arbitrary edges ---------------------------------------------------------------------------------

// Edges as the sample type compares them. Float samples: x >= e exactly when x >= (the smallest float
// >= e), and x <= e exactly when x <= (the largest float <= e), so each lower edge is rounded up and
// the last edge down: the float comparisons then give numpy's double ones. Other samples: the
// double edges themselves.
template <class T>
using EdgeKey = BinType<T>;

template <class T>
TESSERA_HOST_DEVICE_INLINE EdgeKey<T> lower_edge_key(double edge) {
  if constexpr (std::is_same_v<EdgeKey<T>, float>) {
#if defined(__CUDA_ARCH__)
    return __double2float_ru(edge);
#else
    float f = static_cast<float>(edge);
    if (static_cast<double>(f) < edge) f = std::nextafter(f, std::numeric_limits<float>::infinity());
    return f;
#endif
  } else {
    return edge;
  }
}

template <class T>
TESSERA_HOST_DEVICE_INLINE EdgeKey<T> upper_edge_key(double edge) {
  if constexpr (std::is_same_v<EdgeKey<T>, float>) {
#if defined(__CUDA_ARCH__)
    return __double2float_rd(edge);
#else
    float f = static_cast<float>(edge);
    if (static_cast<double>(f) > edge) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
    return f;
#endif
  } else {
    return edge;
  }
}

// A lookup table that shortens the search: `cells` equal cells of [first, last], and for each cell
// boundary b_j = first + (last - first) j / cells the number of keys below it, table[j]. A sample
// in cell c has its bin in [table[c] - 1, table[c + 1] - 1]: one or two bins where the edges are
// about even. The cell is computed in double and may be off by one near a boundary, so the range is
// checked (keys[lo] <= x < keys[hi + 1]) and the full search runs where the check fails: the table
// changes the speed, never a result. No table (cells 0) where an outer edge is infinite, or where
// the keys' range is empty (every sample is then outside).
struct EdgeCells {
  int cells = 0;
  double first = 0;
  double scale = 0;  // cells / (last - first)
};

inline constexpr int kMaxEdgeCells = 4096;

TESSERA_HOST_DEVICE_INLINE int edge_cell_count(int bins) { return bins < kMaxEdgeCells ? bins : kMaxEdgeCells; }

template <class T>
TESSERA_HOST_DEVICE_INLINE EdgeCells edge_cells(EdgeKey<T> first, EdgeKey<T> last, int bins) {
  EdgeCells c;
  const double lo = static_cast<double>(first), hi = static_cast<double>(last);
  const bool finite = lo - lo == 0 && hi - hi == 0;  // not inf, not NaN (isfinite without <cmath> on the device)
  if (!finite || !(hi > lo)) return c;
  c.cells = edge_cell_count(bins);
  c.first = lo;
  c.scale = c.cells / (hi - lo);
  return c;
}

// table[j] for j in [0, cells]: the keys (of keys[0, bins)) below the boundary b_j.
template <class T, class Keys>
TESSERA_HOST_DEVICE_INLINE int edge_table_entry(const Keys& keys, int bins, const EdgeCells& cells, EdgeKey<T> last, int j) {
  const double boundary = j == cells.cells ? static_cast<double>(last) : cells.first + j / cells.scale;
  int below = 0, length = bins;  // the first key at or above the boundary
  while (length > 0) {
    const int half = length / 2;
    if (static_cast<double>(keys(below + half)) < boundary) {
      below += half + 1;
      length -= half + 1;
    } else {
      length = half;
    }
  }
  return below;
}

// The slot of a sample given the keys of the lower edges, keys[0, bins), and of the last edge:
// the last i with keys[i] <= x, found by a branch-free binary search (ceil(log2 bins) probes), over
// the bins of the sample's cell where a table is given (cells.cells > 0). Keys and Table are any
// callables i -> value (shared memory, global memory, a host array).
template <class T, class Keys, class Table>
TESSERA_HOST_DEVICE_INLINE int edges_bin(T sample, const Keys& keys, int bins, EdgeKey<T> first, EdgeKey<T> last,
                                         const EdgeCells& cells, const Table& table) {
  const EdgeKey<T> x = static_cast<EdgeKey<T>>(sample);
  if (!(x >= first)) return bins + (x != x ? kSlotNaN : kSlotBelow);
  if (!(x <= last)) return bins + kSlotAbove;
  int base = 0;
  int length = bins;
  if (cells.cells > 0) {
    int cell = static_cast<int>((static_cast<double>(x) - cells.first) * cells.scale);
    cell = cell < 0 ? 0 : cell < cells.cells ? cell : cells.cells - 1;
    int lo = table(cell) - 1, hi = table(cell + 1) - 1;
    lo = lo < 0 ? 0 : lo;
    hi = hi < bins - 1 ? hi : bins - 1;
    hi = hi > lo ? hi : lo;
    if (keys(lo) <= x && (hi == bins - 1 || keys(hi + 1) > x)) {
      base = lo;
      length = hi - lo + 1;
    }
  }
  while (length > 1) {
    const int half = length / 2;
    base = keys(base + half) <= x ? base + half : base;
    length -= half;
  }
  return base;
}

// ---- bincount ----------------------------------------------------------------------------------------

template <class T>
struct BincountBinning {
  int bins;
  TESSERA_HOST_DEVICE_INLINE int operator()(T sample) const {
    if (sample < 0) return bins + kSlotBelow;
    if (sample >= static_cast<T>(bins)) return bins + kSlotAbove;
    return static_cast<int>(sample);
  }
};

// ---- a binning of the user's ----------------------------------------------------------------------------

// The caller's binner (sample -> an integer bin) as a binning: a bin in [0, bins) is that bin,
// kBinBelow and kBinAbove the slots below and above; any other value goes to the NaN slot, which
// for these binnings counts the binner's invalid answers (the histogram refuses them). Samples of
// any type the binner takes.
template <class Binner>
struct UserBinning {
  using wrapped_functor = Binner;
  Binner binner;
  int bins;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE int operator()(const T& sample) const {
    const auto b = binner(sample);
    using B = decltype(b);
    static_assert(std::is_integral_v<B>, "histogram: the binner must return an integer bin");
    if constexpr (std::is_signed_v<B>) {
      // Without branches (it runs once per sample): in range is one unsigned comparison; outside,
      // -1 - b is 0 for kBinBelow, 1 for kBinAbove and 2 or more (or negative, so huge) for any
      // other value, and min(-1 - b, 2) is the tail slot: below, above or NaN.
      using U = std::make_unsigned_t<std::common_type_t<B, int>>;
      static_assert(kBinBelow == -1 && kBinAbove == -2 && kSlotBelow == 0 && kSlotAbove == 1 && kSlotNaN == 2);
      const U u = static_cast<U>(b);
      const U tail = static_cast<U>(static_cast<U>(-1) - u);
      const int tail_slot = static_cast<int>(tail < static_cast<U>(kSlotNaN) ? tail : static_cast<U>(kSlotNaN));
      return u < static_cast<U>(bins) ? static_cast<int>(u) : bins + tail_slot;
    } else {
      return static_cast<unsigned long long>(b) < static_cast<unsigned long long>(bins) ? static_cast<int>(b)
                                                                                       : bins + kSlotNaN;
    }
  }
};

// ---- the range of the samples ------------------------------------------------------------------------

// sample_range as a reduction: each sample becomes a range of itself (a NaN the empty range), and
// ranges combine by min, max and sum (commutative, so the even-share device reduction applies).
template <class T>
struct SampleRangeOf {
  TESSERA_HOST_DEVICE_INLINE SampleRange<T> operator()(T x) const {
    if (x != x) return empty();
    return {x, x, 1};
  }
  TESSERA_HOST_DEVICE_INLINE static SampleRange<T> empty() {
    if constexpr (std::numeric_limits<T>::has_infinity) {
      return {std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(), 0};
    } else {
      return {std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(), 0};
    }
  }
};

template <class T>
struct CombineSampleRanges {
  static constexpr bool commutative = true;
  TESSERA_HOST_DEVICE_INLINE SampleRange<T> operator()(const SampleRange<T>& a, const SampleRange<T>& b) const {
    return {b.min < a.min ? b.min : a.min, b.max > a.max ? b.max : a.max, a.count + b.count};
  }
};

}  // namespace tessera::kernels::detail
