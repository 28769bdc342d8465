// --verify: checks of each app's result that scale with the run. No rank ever holds more than its
// own blocks (plus, for matmul, the row panel of A and the column panel of B that its block of C
// needs, or vectors of length M, K or N): the checks compare local recomputations and a few values
// exchanged between ranks, never a serial copy of the data.
//
// Floating-point results are held to bounds proven from the summation order the library's kernels
// actually use (kernels/reduce.hpp: reduce_sum_depth; kernels/scan.hpp: ScanRounding): a correct
// result never fails, and a wrong one fails wherever the arithmetic allows it to be told apart.
// Bounds use the unit roundoff u (2^-24 float, 2^-53 double) and gamma_d = d u / (1 - d u), the
// bound of a sum whose every element meets at most d rounded additions: |computed - exact| <=
// gamma_d sum|x| (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., 3.1 and 4.2).
//
// Every function is collective and returns the same Verdict on every rank.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "app.hpp"
#include "exact_reference.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/predicate.hpp"
#include "tessera/kernels/reduce.hpp"
#include "tessera/kernels/scan.hpp"

namespace tessera::apps::verify {

// Unit roundoff of T (2^-24 for float, 2^-53 for double).
template <class T>
constexpr long double unit_roundoff() {
  return std::numeric_limits<T>::epsilon() / 2;
}

// gamma_d = d u / (1 - d u), rounded up; infinity when d u >= 1/2 (no useful bound).
inline long double gamma(long double depth, long double u) {
  if (depth <= 0) return 0;
  const long double du = depth * u;
  if (!(du < 0.5L)) return std::numeric_limits<long double>::infinity();
  return du / (1 - du) * (1 + 8 * LDBL_EPSILON);
}

inline std::string sci(long double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3Le", v);
  return buf;
}

inline std::string fixed(long double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3Lg", v);
  return buf;
}

// Sums of long doubles over all ranks, in place (counts of any size).
inline void allreduce_sum(const Context& ctx, long double* data, index_t count) {
  for (index_t done = 0; done < count;) {
    const int piece = static_cast<int>(std::min<index_t>(count - done, kMpiChunkElements));
    TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, piece, MPI_LONG_DOUBLE, MPI_SUM, ctx.comm().get()));
    done += piece;
  }
}

// Sums modulo 2^64 over all ranks, in place.
inline void allreduce_sum(const Context& ctx, std::uint64_t* data, index_t count) {
  for (index_t done = 0; done < count;) {
    const int piece = static_cast<int>(std::min<index_t>(count - done, kMpiChunkElements));
    TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, piece, MPI_UINT64_T, MPI_SUM, ctx.comm().get()));
    done += piece;
  }
}

// Maxima of long doubles over all ranks, in place.
inline void allreduce_max(const Context& ctx, long double* data, int count) {
  TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_LONG_DOUBLE, MPI_MAX, ctx.comm().get()));
}

inline bool all_ranks(const Context& ctx, bool ok) { return ctx.comm().allreduce<std::int32_t>(ok ? 1 : 0, ReduceOp::min) == 1; }

// Every rank's row of `width` values: row r of the result is rank r's `mine`.
inline std::vector<long double> allgather_rows(const Context& ctx, const std::vector<long double>& mine) {
  const std::size_t width = mine.size();
  std::vector<long double> table(width * static_cast<std::size_t>(ctx.size()), 0.0L);
  std::copy(mine.begin(), mine.end(), table.begin() + static_cast<std::ptrdiff_t>(width * ctx.rank()));
  allreduce_sum(ctx, table.data(), static_cast<index_t>(table.size()));
  return table;
}

// The first wrong position of a check, agreed by all ranks: its global index and what the owning
// rank said about it ("" when none is wrong).
inline std::pair<index_t, std::string> first_failure(const Context& ctx, index_t index, const std::string& what) {
  constexpr index_t kNone = std::numeric_limits<index_t>::max();
  const index_t first = ctx.comm().allreduce(index < 0 ? kNone : index, ReduceOp::min);
  if (first == kNone) return {-1, ""};
  const int owner = ctx.comm().allreduce(index == first ? ctx.rank() : ctx.size(), ReduceOp::min);
  return {first, ctx.comm().bcast_string(what, owner)};
}

// ---- global_sum --------------------------------------------------------------------------------------

// The exact sum of every rank's block (apps/common/exact_reference.hpp), on every rank: each rank's
// threads deposit their share, the partial sums add exactly (integer words), then over the ranks
// with one integer MPI_Allreduce.
template <class T>
ExactReference<T> exact_sum(const Context& ctx, const std::vector<T>& host) {
  ExactReference<T> total;
  const auto n = static_cast<index_t>(host.size());
#if defined(_OPENMP)
#pragma omp parallel if (n >= (index_t(1) << 16))
#endif
  {
    ExactReference<T> mine;
#if defined(_OPENMP)
#pragma omp for schedule(static)
#endif
    for (index_t i = 0; i < n; ++i) mine.add(host[static_cast<std::size_t>(i)]);
#if defined(_OPENMP)
#pragma omp critical(tessera_verify_exact_sum)
#endif
    total.add(mine);
  }
  total.normalize();
  allreduce_sum(ctx, total.words(), ExactReference<T>::kWords);
  total.normalize();
  return total;
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Integer sums must match a second reduction modulo 2^64 exactly; min and max a host loop and MPI.
// Floating-point sums are compared with the exact sum (an independent summation, exact at any size
// and rank count):
//   --reproducible: bitwise equal to the exact sum correctly rounded (IEEE's rules for NaN,
//     infinities, signed zeros, and overflow: an exact sum that rounds past the largest finite value
//     must give the infinity);
//   plain: within gamma_d sum|x| of the exact sum, d the depth of the summation actually run: the
//     deepest rank's local reduce (reduce_sum_depth, from the backend's order and this device)
//     plus P - 1 for MPI's combination of the P partials (any order: MPI picks it). The error is
//     reported in units of that bound. A NaN input makes the sum NaN; infinities of one sign that
//     infinity (or NaN where the finite elements can overflow to the other); finite inputs a
//     finite sum unless an intermediate sum can overflow ((1 + gamma_d) sum|x| beyond the range).
template <class T>
Verdict check_reduce(const DistArray<T>& array, ReduceOp op, T result, bool reproducible) {
  const Context& ctx = array.context();
  const std::vector<T> host = array.local_to_host();
  Verdict v;
  if constexpr (std::is_integral_v<T>) {
    T expected{};
    if (op == ReduceOp::sum) {
      std::uint64_t s = 0;
      for (const T x : host) s += static_cast<std::uint64_t>(static_cast<std::int64_t>(x));
      allreduce_sum(ctx, &s, 1);
      expected = static_cast<T>(static_cast<std::make_unsigned_t<T>>(s));
    } else {
      T local = reduce_identity<T>(op);
      for (const T x : host) local = op == ReduceOp::min ? std::min(local, x) : std::max(local, x);
      expected = ctx.comm().allreduce(local, op);
    }
    v.ok = expected == result;
    v.detail = std::string("exact ") + to_string(op) + " of a second reduction (modulo 2^64 / host loop + MPI) is " +
               std::to_string(expected);
  } else if (op != ReduceOp::sum) {
    int any_nan = 0;
    T local = reduce_identity<T>(op);
    for (const T x : host) {
      if (std::isnan(x)) any_nan = 1;
      else local = op == ReduceOp::min ? std::min(local, x) : std::max(local, x);
    }
    any_nan = ctx.comm().allreduce(any_nan, ReduceOp::max);
    const T expected = ctx.comm().allreduce(local, op);
    v.ok = any_nan ? std::isnan(result) : result == expected;
    v.detail = std::string("exact ") + to_string(op) + " of a host loop + MPI is " +
               (any_nan ? std::string("nan") : format_number(expected));
  } else {
    const ExactReference<T> exact = exact_sum(ctx, host);
    const T rounded = exact.rounded();
    const std::string reference = "the exact sum (an independent exact summation over all ranks)";
    if (reproducible) {
      v.ok = same_bits(result, rounded) || (std::isnan(result) && std::isnan(rounded));
      if (v.ok) {
        v.detail = "bitwise equal to " + reference + " correctly rounded, " + format_number(rounded);
      } else {
        v.detail = format_number(result) + " is not " + reference + " correctly rounded, " + format_number(rounded);
        if (std::isfinite(result) && std::isfinite(rounded)) {
          // Distance in units in the last place (of the rounded sum).
          const long double ulp = std::nextafter(std::fabs(rounded), std::numeric_limits<T>::infinity()) - std::fabs(rounded);
          v.detail += " (" + fixed((static_cast<long double>(result) - rounded) / ulp) + " ulps off)";
        }
      }
    } else {
      const long double u = unit_roundoff<T>();
      const index_t local_depth = ctx.comm().allreduce(kernels::reduce_sum_depth<T>(ctx.queue(), array.local_size()),
                                                       ReduceOp::max);
      const index_t depth = local_depth + ctx.size() - 1;
      const long double g = gamma(static_cast<long double>(depth), u);
      const long double magnitude = exact.magnitude_sum_upper();  // sum |x| over the finite elements
      const long double bound = g * magnitude;
      const bool may_overflow = (1 + g) * magnitude >= static_cast<long double>(std::numeric_limits<T>::max());
      const std::string order = "summation depth " + std::to_string(depth) + ": " + std::to_string(local_depth) +
                                " in the deepest rank's reduce on the " + to_string(ctx.backend()) + " backend, " +
                                std::to_string(ctx.size() - 1) + " for MPI's combination of " +
                                std::to_string(ctx.size()) + (ctx.size() == 1 ? " partial" : " partials");
      if (exact.nan_count() > 0 || (exact.pos_inf_count() > 0 && exact.neg_inf_count() > 0)) {
        v.ok = std::isnan(result);
        v.detail = "the input holds NaN or both infinities, so the sum must be NaN";
      } else if (exact.pos_inf_count() > 0 || exact.neg_inf_count() > 0) {
        const bool positive = exact.pos_inf_count() > 0;
        v.ok = (std::isinf(result) && (result > 0) == positive) || (std::isnan(result) && may_overflow);
        v.detail = std::string("the input holds ") + (positive ? "+inf" : "-inf") + ", so must the sum" +
                   (may_overflow ? " (or NaN: the finite elements may overflow the other way)" : "");
      } else if (!std::isfinite(g)) {
        v.checked = false;
        v.detail = "the " + order + " is too deep for a bound (d u >= 1/2)";
      } else if (!std::isfinite(result)) {
        v.ok = may_overflow;
        v.detail = may_overflow ? "an intermediate sum may overflow (sum|x| = " + sci(magnitude) +
                                      "): a non-finite sum is possible"
                                : "the sum is " + format_number(result) + ", but every element is finite and " +
                                      "no partial sum can overflow (sum|x| = " + sci(magnitude) + ")";
        v.checked = !may_overflow || !v.ok;
      } else {
        const long double error = exact.distance_upper(result);
        v.ok = error <= bound;
        const std::string of_bound = bound > 0 ? fixed(error / bound) : (error > 0 ? "inf" : "0");
        v.detail = "|sum - exact sum| = " + sci(error) + ", " + of_bound + " of the bound gamma_" +
                   std::to_string(depth) + " * sum|x| = " + sci(bound) + " (exact sum " + sci(exact.approximate()) +
                   ", correctly rounded " + format_number(rounded) + "; " + order + ")";
        if (!v.ok) v.detail = "error beyond the bound: " + v.detail;
      }
    }
  }
  v.ok = all_ranks(ctx, v.ok);
  return v;
}

// ---- prefix_sum ----------------------------------------------------------------------------------------

// Integers wrap and must match exactly: out[i] - out[i-1] == in[i] (inclusive; in[i-1] exclusive)
// modulo 2^bits, inside each block and across block borders, and the first element is in[0] (0).
//
// Floating point: by exact residuals, against bounds proven from the scan's rounding structure
// (kernels/scan.hpp, ScanRounding; y_j is the element added at j: in[j] inclusive, in[j-1]
// exclusive, and a block's first y is the previous block's last element).
//
// Step rule. Where the scan runs from one element to the next (local position j, j % run != 0),
// out[j] = fl(out[j-1] + y_j), so the residual r_j = out[j] - out[j-1] - y_j is that one rounding:
// |r_j| <= u |out[j]| (round to nearest: the error is at most half an ulp of the result, and at
// most u |result| where the result is normal; sums with subnormal results are exact). The bound
// allowed is u (|out[j]| + |out[j-1]|), which also admits an output whose every element is within
// one rounding of the exact prefix (a more accurate scan than ours). The residual is computed in a
// wider type W (double for float, long double for double): two roundings of W, at most
// 3 u_W (|out[j]| + |out[j-1]| + |y_j|), are added to the bound. Nothing else is allowed, so a
// lost, doubled or changed element there shows at once: an element lost shows as r_j = -y_j, one
// output element off by e as r_j = e, r_{j+1} = -e.
//
// Seed rule. At seeds (j % run == 0, and a block's first element) the scan restarts from a prefix
// s_j computed another way, so out[j] - out[j-1] - y_j holds the difference of two roundings of the
// same prefix and may be much larger than u |out[j]| (up to the drift of run - 1 steps, on the CPU
// backend 65535). Instead, with a the previous seed (across a block border: the last seed of the
// previous non-empty block), the quantity checked is
//   D_j = out[j] - out[a] - sum_{a < i <= j} y_i
//       = (s_j - S_j) - (s_a - S_a) + rho_j - rho_a,
// S_j the exact prefix before j and rho the rounding of out at a seed (inclusive: out = fl(s + in);
// exclusive: out = s, rho = 0); the steps between a and j cancel out of it. By ScanRounding, D_j
// is a sum of the rounding errors of
//   - summation trees of depth tile_depth over the window from the start of a's tile to j (or of
//     a's segment, at segment level), two of them (a's and j's) or, at segment level, the tile
//     totals and a's own (one tree's worth) plus a segment total of depth segment_depth:
//     2 gamma_tile W, or (gamma_segment + gamma_tile) W, W = sum |in| over the window;
//   - N operations (run_roundings, tile_roundings or segment_roundings) whose results are bounded
//     by B = (|out[a]| + |out[j]| + |in[a]| + |in[j]| (inclusive) + 2 W) (1 + 2^-16): each seed is
//     within |out|/(1 - u) + |in| of its output, each running or warp prefix within the seed plus
//     the partial sums (at most (1 + gamma) W) between them, and the factor covers the (1 - u)^-k
//     of at most a few hundred such steps: N u B;
//   - at segment level, prefix_roundings operations on segment prefixes, which are sums of whole
//     segments from the block's start: within twice the largest exact prefix of the block up to j
//     plus their own error, a tree of depth segment_depth + prefix_depth + segments / prefix_chunk
//     over the block's elements: M = 2 (2 max|S| + gamma_prefix sum|in|), P u M (the outer 2
//     covers the prefix chains' (1 - u)^-k);
// plus the error of computing D_j in long double (two roundings and those of the sum over [a, j)).
// The first element of the whole array has no seed before it and must equal in[0] (0 exclusive).
// A lost, doubled or changed element at a seed is caught when it exceeds that bound, which at the
// segment level is of the order of gamma_segment times the sum of |in| over a segment.
//
// Non-finite values: from the first NaN or infinity of the input on (one place later for an
// exclusive scan), every output must be non-finite. Before it, a non-finite output is wrong unless
// a partial sum can overflow (2 sum|in| beyond the range), in which case the positions it touches
// are counted as not checked.
template <class T>
Verdict check_scan_float(const DistArray<T>& in, const DistArray<T>& out, ScanKind kind) {
  using Wide = std::conditional_t<std::is_same_v<T, float>, double, long double>;
  constexpr index_t kNone = std::numeric_limits<index_t>::max();
  const Context& ctx = in.context();
  const bool inclusive = kind == ScanKind::inclusive;
  const std::vector<T> x = in.local_to_host();
  const std::vector<T> y = out.local_to_host();
  const auto m = static_cast<index_t>(x.size());
  const index_t g0 = in.global_offset();
  const kernels::ScanRounding model = kernels::scan_rounding<T>(ctx.queue());
  const long double u = unit_roundoff<T>();
  const long double u_wide = std::numeric_limits<Wide>::epsilon() / 2.0L;
  const long double u_ld = LDBL_EPSILON / 2;
  const long double eps_d = std::numeric_limits<double>::epsilon();
  const long double tmax = std::numeric_limits<T>::max();
  const auto out_at = [&](index_t k) { return static_cast<long double>(y[static_cast<std::size_t>(k)]); };
  const auto in_at = [&](index_t k) { return static_cast<long double>(x[static_cast<std::size_t>(k)]); };

  // The first non-finite input over all ranks, and sum |in| over the finite ones.
  index_t first_special = kNone;
  double local_abs = 0;
  for (index_t k = 0; k < m; ++k) {
    if (!std::isfinite(x[static_cast<std::size_t>(k)])) first_special = std::min(first_special, g0 + k);
    else local_abs += std::fabs(static_cast<double>(x[static_cast<std::size_t>(k)]));
  }
  first_special = ctx.comm().allreduce(first_special, ReduceOp::min);
  long double finite_abs = local_abs;  // only decides whether an overflow is possible (with a margin)
  allreduce_sum(ctx, &finite_abs, 1);
  const index_t contaminated = first_special == kNone ? kNone : inclusive ? first_special : first_special + 1;
  const bool may_overflow = 2 * finite_abs * (1 + 1e-6L) >= tmax;

  const index_t segments = (m + model.segment - 1) / std::max<index_t>(model.segment, 1);
  const long double gamma_tile = gamma(model.tile_depth, u);
  const long double gamma_segment = gamma(model.segment_depth, u);
  const long double gamma_prefix =
      gamma(static_cast<long double>(model.segment_depth + model.prefix_depth) +
                static_cast<long double>((segments + model.prefix_chunk - 1) / std::max<index_t>(model.prefix_chunk, 1)),
            u);
  // Sums of |in| over at most a segment, in double: within (count + 1) eps_d of exact, relatively.
  const long double window_factor = 1 + 2 * static_cast<long double>(model.segment + 1) * eps_d;

  index_t bad = 0, unchecked = 0, first_bad = -1;
  std::string first_bad_text;
  long double worst_step = 0, worst_seed = 0;
  auto wrong = [&](index_t k, const std::string& why) {
    ++bad;
    if (first_bad < 0) {
      first_bad = g0 + k;
      first_bad_text = why;
    }
  };
  // A position whose value or predecessor is not finite (or after a non-finite input): true when
  // it was dealt with here.
  auto special = [&](index_t k, index_t before) {
    const index_t g = g0 + k;
    if (g >= contaminated) {
      if (std::isfinite(y[static_cast<std::size_t>(k)]))
        wrong(k, "out[" + std::to_string(g) + "] is finite, after a NaN or infinity in the input");
      return true;
    }
    if (std::isfinite(y[static_cast<std::size_t>(k)]) && (before < 0 || std::isfinite(y[static_cast<std::size_t>(before)])))
      return false;
    if (may_overflow) ++unchecked;
    else wrong(k, "out[" + std::to_string(g) + "] is " + format_number(y[static_cast<std::size_t>(k)]) +
                      ", but no partial sum of the finite input can overflow");
    return true;
  };

  // The bound of D_j at a seed (see above), given the window's sum |in| and the values around it.
  enum class Level { run, tile, segment };
  auto seed_bound = [&](Level level, long double window, long double out_a, long double out_j, long double in_a,
                        long double in_j, long double prefix_magnitude) {
    const long double b = (std::fabs(out_a) + std::fabs(out_j) + (inclusive ? std::fabs(in_a) + std::fabs(in_j) : 0) +
                           2 * window) * (1 + 0x1p-16L);
    switch (level) {
      case Level::run: return 2 * gamma_tile * window + model.run_roundings * u * b;
      case Level::tile: return 2 * gamma_tile * window + model.tile_roundings * u * b;
      case Level::segment:
      default:
        return (gamma_segment + gamma_tile) * window + model.segment_roundings * u * b +
               (prefix_magnitude > 0 ? model.prefix_roundings * u * prefix_magnitude : 0);
    }
  };
  // D_j = out[j] - out[a] - the sum of y over (a, j] (`between`, computed within `between_slack`).
  auto check_seed = [&](index_t k, Level level, long double window, long double out_a, long double in_a,
                        long double between, long double between_slack, long double prefix_magnitude) {
    const long double out_j = out_at(k);
    const long double d = (out_j - out_a) - between;
    const long double slack = 2 * u_ld * (std::fabs(out_j) + std::fabs(out_a) + std::fabs(between)) + between_slack;
    const long double bound = seed_bound(level, window, out_a, out_j, in_a, in_at(k), prefix_magnitude);
    if (!std::isfinite(bound)) {
      ++unchecked;  // a summation too deep for gamma (d u >= 1/2)
    } else if (!(std::fabs(d) <= bound + slack)) {
      wrong(k, "out[" + std::to_string(g0 + k) + "] = " + sci(out_j) + " restarts " + sci(d) +
                   " away from the previous restart's output plus the elements added since, beyond the bound " +
                   sci(bound + slack));
    } else if (bound > 0) {
      worst_seed = std::max(worst_seed, std::fabs(d) / (bound + slack));
    }
  };

  // One pass over the block, run by run: the seed at the run's start, then the steps.
  //   prefix, abs_total: sum in[0..k) and sum |in[0..k)| of the block, and the largest |prefix|;
  //   added: sum y over (a, k] since the last seed a (Wide; at most `run` terms);
  //   tile_abs, segment_abs: sum |in| since the current tile's / segment's start (reset there),
  //   previous_tile_abs: the last complete tile's.
  double prefix = 0, abs_total = 0, max_prefix = 0, tile_abs = 0, segment_abs = 0;
  Wide added = 0, added_abs = 0;
  index_t added_count = 0;
  auto prefix_magnitude = [&](index_t k) {
    const long double sum_error = static_cast<long double>(k + 1) * eps_d * abs_total;
    return 2 * (2 * (max_prefix + sum_error) + gamma_prefix * (abs_total + sum_error));
  };
  auto added_slack = [&](long double y_last) {
    return 2 * static_cast<long double>(added_count + 2) * u_wide * (static_cast<long double>(added_abs) + std::fabs(y_last));
  };
  index_t last_seed = 0;
  for (index_t s = 0; s < m; s += model.run) {
    const index_t end = std::min(m, s + model.run);
    // The seed at s (the block's first element waits for the previous block's summary).
    const bool segment_start = s % model.segment == 0, tile_start = s % model.tile == 0;
    if (s > 0) {
      const T y_s = inclusive ? x[static_cast<std::size_t>(s)] : x[static_cast<std::size_t>(s - 1)];
      if (!special(s, s - model.run)) {
        const Level level = segment_start ? Level::segment : tile_start ? Level::tile : Level::run;
        const long double window = (level == Level::segment ? segment_abs : tile_abs) * window_factor;
        const index_t a = s - model.run;
        check_seed(s, level, window, out_at(a), in_at(a), static_cast<long double>(added) + y_s, added_slack(y_s),
                   level == Level::segment ? prefix_magnitude(s) : 0);
      }
    }
    if (segment_start) segment_abs = 0;
    if (tile_start) tile_abs = 0;
    added = 0;
    added_abs = 0;
    added_count = 0;
    last_seed = s;
    // The seed's own element, then the steps.
    max_prefix = std::max(max_prefix, std::fabs(prefix));
    const double x_s = x[static_cast<std::size_t>(s)];
    if (std::isfinite(x_s)) {
      prefix += x_s;
      abs_total += std::fabs(x_s);
      tile_abs += std::fabs(x_s);
      segment_abs += std::fabs(x_s);
    }
    Wide worst_here = 0;
    for (index_t k = s + 1; k < end; ++k) {
      const Wide out_j = y[static_cast<std::size_t>(k)], out_i = y[static_cast<std::size_t>(k - 1)];
      const T x_k = x[static_cast<std::size_t>(k)];
      const Wide add = inclusive ? x_k : x[static_cast<std::size_t>(k - 1)];
      const Wide r = std::fabs((out_j - out_i) - add);
      const Wide magnitude = std::fabs(out_j) + std::fabs(out_i);
      const Wide bound = static_cast<Wide>(u) * magnitude + static_cast<Wide>(3 * u_wide) * (magnitude + std::fabs(add));
      if (!(r <= bound)) {
        if (!special(k, k - 1))
          wrong(k, "out[" + std::to_string(g0 + k) + "] - out[" + std::to_string(g0 + k - 1) + "] - in[" +
                       std::to_string(inclusive ? g0 + k : g0 + k - 1) + "] = " +
                       sci(static_cast<long double>((out_j - out_i) - add)) + ", beyond the rounding bound " +
                       sci(static_cast<long double>(bound)));
      } else if (r > worst_here * bound) {
        worst_here = r / bound;
      }
      if (std::isfinite(add)) {
        added += add;
        added_abs += std::fabs(add);
        ++added_count;
      }
      max_prefix = std::max(max_prefix, std::fabs(prefix));
      if (std::isfinite(x_k)) {
        prefix += x_k;
        abs_total += std::fabs(x_k);
        tile_abs += std::fabs(x_k);
        segment_abs += std::fabs(x_k);
      }
    }
    worst_step = std::max(worst_step, static_cast<long double>(worst_here));
  }
  max_prefix = std::max(max_prefix, std::fabs(prefix));

  // The block's first element: a seed whose predecessor is the previous non-empty block's last.
  enum Field { kCount, kLastIn, kSeedOut, kSeedIn, kAdded, kAddedSlack, kWindow, kPrefixMagnitude, kFields };
  std::vector<long double> row(kFields, 0.0L);
  if (m > 0) {
    row[kCount] = static_cast<long double>(m);
    row[kLastIn] = in_at(m - 1);
    row[kSeedOut] = out_at(last_seed);
    row[kSeedIn] = in_at(last_seed);
    row[kAdded] = static_cast<long double>(added);
    row[kAddedSlack] = added_slack(0);
    row[kWindow] = segment_abs * window_factor;
    row[kPrefixMagnitude] = prefix_magnitude(m);
  }
  const std::vector<long double> rows = allgather_rows(ctx, row);
  if (m > 0) {
    int before = -1;
    for (int r = ctx.rank() - 1; r >= 0 && before < 0; --r)
      if (rows[static_cast<std::size_t>(r) * kFields + kCount] > 0) before = r;
    const long double* p = before >= 0 ? rows.data() + static_cast<std::size_t>(before) * kFields : nullptr;
    if (!p) {
      if (!special(0, -1)) {
        const T expected = inclusive ? x[0] : T(0);
        if (!(y[0] == expected))
          wrong(0, "out[0] = " + format_number(y[0]) + ", not " + format_number(expected) + " (nothing comes before it)");
      }
    } else if (g0 >= contaminated || !std::isfinite(y[0]) || !std::isfinite(p[kSeedOut])) {
      if (g0 >= contaminated || !std::isfinite(y[0])) special(0, -1);
      else if (may_overflow) ++unchecked;
      else wrong(0, "out[" + std::to_string(g0 - 1) + "] is not finite, but no partial sum of the finite input can overflow");
    } else {
      const long double y_0 = inclusive ? in_at(0) : p[kLastIn];
      check_seed(0, Level::segment, p[kWindow], p[kSeedOut], p[kSeedIn], p[kAdded] + y_0,
                 p[kAddedSlack] + 2 * u_ld * std::fabs(y_0), p[kPrefixMagnitude]);
    }
  }

  const index_t total_bad = ctx.comm().allreduce(bad, ReduceOp::sum);
  const index_t total_unchecked = ctx.comm().allreduce(unchecked, ReduceOp::sum);
  long double worst[2] = {worst_step, worst_seed};
  allreduce_max(ctx, worst, 2);
  const auto [first, first_text] = first_failure(ctx, first_bad, first_bad_text);
  const index_t n = in.global_size();
  Verdict v;
  v.ok = total_bad == 0;
  if (!v.ok) {
    v.detail = std::to_string(total_bad) + " of " + std::to_string(n) + " elements wrong; the first: " + first_text;
    return v;
  }
  v.checked = total_unchecked < n || n == 0;
  v.detail = "every step out[i] - out[i-1] - in[i] within u (|out[i]| + |out[i-1]|) (worst " + fixed(worst[0]) +
             " of it), every restart within its proven bound (worst " + fixed(worst[1]) + "; restarts every " +
             std::to_string(model.run) + " elements on the " + to_string(ctx.backend()) + " backend)";
  if (contaminated != kNone)
    v.detail += "; from index " + std::to_string(std::min(contaminated, n)) +
                " on (after a NaN or infinity in the input) only checked to be non-finite";
  if (total_unchecked > 0)
    v.detail = std::to_string(total_unchecked) + " of " + std::to_string(n) +
               " elements not checked (a partial sum may overflow: sum|in| = " + sci(finite_abs) + "); " + v.detail;
  return v;
}

template <class T>
Verdict check_scan(const DistArray<T>& in, const DistArray<T>& out, ScanKind kind) {
  const Context& ctx = in.context();
  Verdict v;
  if (!(in.partition() == out.partition())) {
    v.ok = false;
    v.detail = "the output's partition differs from the input's";
    return v;
  }
  if constexpr (std::is_floating_point_v<T>) {
    return check_scan_float(in, out, kind);
  } else {
    using U = std::make_unsigned_t<T>;
    const std::vector<T> x = in.local_to_host();
    const std::vector<T> y = out.local_to_host();
    const auto m = static_cast<index_t>(x.size());
    const std::vector<index_t> counts = ctx.comm().allgather<index_t>(m);
    const std::vector<T> last_in = ctx.comm().allgather<T>(m ? x.back() : T(0));
    const std::vector<T> last_out = ctx.comm().allgather<T>(m ? y.back() : T(0));
    int before = -1;  // nearest non-empty rank before this one
    for (int r = ctx.rank() - 1; r >= 0 && before < 0; --r)
      if (counts[static_cast<std::size_t>(r)] > 0) before = r;
    index_t bad = 0, first_bad = -1;
    for (index_t i = 0; i < m; ++i) {
      const std::size_t s = static_cast<std::size_t>(i);
      const U prev_out = i > 0 ? U(y[s - 1]) : before >= 0 ? U(last_out[static_cast<std::size_t>(before)]) : U(0);
      const U addend = kind == ScanKind::inclusive ? U(x[s])
                       : i > 0                     ? U(x[s - 1])
                       : before >= 0               ? U(last_in[static_cast<std::size_t>(before)])
                                                   : U(0);
      if (U(U(y[s]) - prev_out) != addend) {
        if (first_bad < 0) first_bad = in.global_offset() + i;
        ++bad;
      }
    }
    const index_t total_bad = ctx.comm().allreduce(bad, ReduceOp::sum);
    const auto [first, text] = first_failure(ctx, first_bad, "");
    v.ok = total_bad == 0;
    v.detail = v.ok ? "all " + std::to_string(in.global_size()) + " differences out[i] - out[i-1] match the input exactly"
                    : std::to_string(total_bad) + " of " + std::to_string(in.global_size()) +
                          " differences out[i] - out[i-1] do not match the input; the first at index " + std::to_string(first);
    return v;
  }
}

// ---- filter ----------------------------------------------------------------------------------------------

// An order-sensitive fingerprint of a sequence: the sum, modulo 2^64, of a hash of each element's
// global position and bits. Two sequences with the same fingerprint and length are, with
// overwhelming probability, the same sequence in the same order.
template <class T>
std::uint64_t element_hash(index_t position, T value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  return mix64(mix64(static_cast<std::uint64_t>(position) + 0x632BE59BD9B4E019ull) ^ bits);
}

// By count and order: count_if over the input, and a host recount of this rank's block, must both
// give the output's length; every kept element satisfies the predicate; and the output's
// fingerprint (each element hashed with its global position in the output, whatever the output's
// partition, ragged or rebalanced) equals that of the local recomputation placed at each rank's
// global offset (an Exscan of the local counts).
template <class T>
Verdict check_filter(const DistArray<T>& in, const DistArray<T>& out, const Predicate<T>& pred) {
  const Context& ctx = in.context();
  const std::vector<T> x = in.local_to_host();
  const std::vector<T> y = out.local_to_host();
  index_t kept_here = 0;
  std::uint64_t expected_print = 0;
  std::vector<T> kept;
  for (const T value : x)
    if (pred(value)) kept.push_back(value);
  kept_here = static_cast<index_t>(kept.size());
  const index_t offset = ctx.comm().exscan_sum(kept_here);
  for (index_t j = 0; j < kept_here; ++j) expected_print += element_hash(offset + j, kept[j]);
  std::uint64_t actual_print = 0;
  index_t unsatisfied = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    actual_print += element_hash(out.global_offset() + static_cast<index_t>(j), y[j]);
    if (!pred(y[j])) ++unsatisfied;
  }
  std::uint64_t prints[2] = {expected_print, actual_print};
  allreduce_sum(ctx, prints, 2);
  const index_t expected_count = ctx.comm().allreduce(kept_here, ReduceOp::sum);
  const index_t counted = count_if(in, pred);
  unsatisfied = ctx.comm().allreduce(unsatisfied, ReduceOp::sum);

  Verdict v;
  if (counted != expected_count || out.global_size() != expected_count) {
    v.ok = false;
    v.detail = "count mismatch: output holds " + std::to_string(out.global_size()) + ", count_if says " +
               std::to_string(counted) + ", the host recount says " + std::to_string(expected_count);
  } else if (unsatisfied != 0) {
    v.ok = false;
    v.detail = std::to_string(unsatisfied) + " kept elements do not satisfy the predicate";
  } else if (prints[0] != prints[1]) {
    v.ok = false;
    v.detail = "the kept elements or their order differ from a per-rank recomputation";
  } else {
    v.ok = true;
    v.detail = std::to_string(expected_count) +
               " kept: count_if and a host recount agree; every kept element satisfies the predicate; "
               "order and values match a per-rank recomputation";
  }
  return v;
}

// ---- matmul ----------------------------------------------------------------------------------------------

// Every element of C is computed by a sum of K products in some order (SUMMA's panels, the local
// GEMM's tiles, split-K planes, the vendor library's choice): each product rounded once (or fused)
// and at most K additions on its way, the first into C's zero included. So |C - AB| <= gamma_{K+2}
// (|A||B|) elementwise whatever the order (one spare).
inline index_t matmul_depth(index_t k) { return k + 2; }

// Work of the per-element check: multiply-adds per rank (K times the rank's block of C), above
// which Freivalds' check runs instead.
inline constexpr long double kElementCheckBudget = 0x1p34L;

// Per element: each rank recomputes its own block of C in double from A's row panel (its process
// row's blocks of A, broadcast along the row) and B's column panel (its process column's blocks of
// B, broadcast along the column): O(its blocks + the two panels) of memory. The reference R and
// the magnitude |A||B| are sums of K exact products (float inputs) or of K products rounded once
// (double), in double: within gamma^double_{K+1} (|A||B|) of exact. The element passes when
//   |C - R| <= (gamma_{K+2} + gamma^double_{K+1}) (|A||B|) / (1 - gamma^double_{K+1}) + (K + 2) eta
// (|C - R| taken from its double rounding, eta T's smallest subnormal for products that underflow).
// Elements whose row of A or column of B holds NaN or an infinity are not checked; a non-finite C
// where the inputs are finite is wrong unless (1 + gamma) (|A||B|) reaches the overflow threshold.
template <class T>
Verdict check_matmul_elements(const DistMatrix<T>& a, const DistMatrix<T>& b, const DistMatrix<T>& c) {
  const ProcessGrid& grid = a.grid();
  const Context& ctx = grid.context();
  const index_t rows = c.local_rows(), cols = c.local_cols(), k = a.cols();
  const std::size_t srows = static_cast<std::size_t>(rows), scols = static_cast<std::size_t>(cols),
                    sk = static_cast<std::size_t>(k);

  // A's row panel (rows x K) and B's column panel (K x cols), in double.
  std::vector<double> a_panel(srows * sk), b_panel(sk * scols);
  {
    const std::vector<T> mine = a.local_to_host();
    for (int q = 0; q < grid.cols(); ++q) {
      const index_t width = a.col_partition().local_size(q), offset = a.col_partition().offset(q);
      std::vector<T> block = q == grid.process_col() ? mine : std::vector<T>(srows * static_cast<std::size_t>(width));
      grid.row().comm().bcast(block.data(), rows * width, q);
      for (index_t i = 0; i < rows; ++i)
        for (index_t j = 0; j < width; ++j)
          a_panel[static_cast<std::size_t>(i * k + offset + j)] = block[static_cast<std::size_t>(i * width + j)];
    }
  }
  {
    const std::vector<T> mine = b.local_to_host();
    for (int q = 0; q < grid.rows(); ++q) {
      const index_t height = b.row_partition().local_size(q), offset = b.row_partition().offset(q);
      std::vector<T> block = q == grid.process_row() ? mine : std::vector<T>(static_cast<std::size_t>(height) * scols);
      grid.column().comm().bcast(block.data(), height * cols, q);
      std::copy(block.begin(), block.end(), b_panel.begin() + static_cast<std::ptrdiff_t>(offset * cols));
    }
  }
  std::vector<double> b_abs(b_panel.size());
  for (std::size_t i = 0; i < b_panel.size(); ++i) b_abs[i] = std::fabs(b_panel[i]);
  std::vector<char> row_special(srows, 0), col_special(scols, 0);
  for (index_t i = 0; i < rows; ++i)
    for (index_t p = 0; p < k; ++p)
      if (!std::isfinite(a_panel[static_cast<std::size_t>(i * k + p)])) row_special[static_cast<std::size_t>(i)] = 1;
  for (index_t p = 0; p < k; ++p)
    for (index_t j = 0; j < cols; ++j)
      if (!std::isfinite(b_panel[static_cast<std::size_t>(p * cols + j)])) col_special[static_cast<std::size_t>(j)] = 1;

  const std::vector<T> cb = c.local_to_host();
  const long double u_double = std::numeric_limits<double>::epsilon() / 2;
  const long double g_reference = gamma(static_cast<long double>(k + 1), u_double);
  const long double g = gamma(static_cast<long double>(matmul_depth(k)), unit_roundoff<T>());
  const long double factor = (g + g_reference) / (1 - g_reference);
  const long double underflow = static_cast<long double>(k + 2) * std::numeric_limits<T>::denorm_min();
  const long double tmax = std::numeric_limits<T>::max();

  constexpr index_t kRows = 4, kCols = 256;  // a tile of R and |A||B| in L1
  constexpr index_t kNoIndex = std::numeric_limits<index_t>::max();
  index_t bad = 0, unchecked = 0, overflowing = 0, first_bad = kNoIndex;
  long double worst = 0;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic) reduction(+ : bad, unchecked, overflowing) reduction(max : worst) reduction(min : first_bad)
#endif
  for (index_t i0 = 0; i0 < rows; i0 += kRows) {
    double reference[kRows][kCols], magnitude[kRows][kCols];
    const index_t tile_rows = std::min(kRows, rows - i0);
    for (index_t j0 = 0; j0 < cols; j0 += kCols) {
      const index_t tile_cols = std::min(kCols, cols - j0);
      for (index_t r = 0; r < kRows; ++r)
        for (index_t j = 0; j < kCols; ++j) reference[r][j] = magnitude[r][j] = 0;
      for (index_t p = 0; p < k; ++p) {
        const double* b_row = b_panel.data() + p * cols + j0;
        const double* b_abs_row = b_abs.data() + p * cols + j0;
        for (index_t r = 0; r < tile_rows; ++r) {
          const double av = a_panel[static_cast<std::size_t>((i0 + r) * k + p)];
          const double aa = std::fabs(av);
          double* ref = reference[r];
          double* mag = magnitude[r];
#if defined(_OPENMP)
#pragma omp simd
#endif
          for (index_t j = 0; j < tile_cols; ++j) {
            ref[j] += av * b_row[j];
            mag[j] += aa * b_abs_row[j];
          }
        }
      }
      for (index_t r = 0; r < tile_rows; ++r)
        for (index_t j = 0; j < tile_cols; ++j) {
          const index_t gi = i0 + r, gj = j0 + j;
          if (row_special[static_cast<std::size_t>(gi)] || col_special[static_cast<std::size_t>(gj)]) {
            ++unchecked;
            continue;
          }
          if (!std::isfinite(magnitude[r][j])) {  // |A||B| beyond double's range: no bound to compare with
            ++unchecked;
            ++overflowing;
            continue;
          }
          const long double cij = cb[static_cast<std::size_t>(gi * cols + gj)];
          const long double bound = factor * magnitude[r][j] + underflow;
          if (!std::isfinite(cij)) {
            if ((1 + g) * magnitude[r][j] >= tmax) {
              ++unchecked;
              ++overflowing;
            } else {
              ++bad;
              first_bad = std::min(first_bad, (c.row_offset() + gi) * c.cols() + c.col_offset() + gj);
            }
            continue;
          }
          const long double diff = std::fabs(static_cast<long double>(static_cast<double>(cij) - reference[r][j])) / (1 - u_double);
          if (!(diff <= bound)) {
            ++bad;
            first_bad = std::min(first_bad, (c.row_offset() + gi) * c.cols() + c.col_offset() + gj);
          } else if (bound > 0) {
            worst = std::max(worst, diff / bound);
          }
        }
    }
  }
  const index_t total_bad = ctx.comm().allreduce(bad, ReduceOp::sum);
  const index_t total_unchecked = ctx.comm().allreduce(unchecked, ReduceOp::sum);
  const index_t total_overflowing = ctx.comm().allreduce(overflowing, ReduceOp::sum);
  const index_t first = ctx.comm().allreduce(first_bad, ReduceOp::min);
  // Why elements went unchecked: non-finite inputs, products that may pass the largest value, or both.
  const index_t nonfinite = total_unchecked - total_overflowing;
  const std::string why = nonfinite > 0 && total_overflowing > 0
                              ? std::to_string(nonfinite) + " with NaN or infinity in their row of A or column of B, " +
                                    std::to_string(total_overflowing) + " whose |A||B| reaches the largest value: C may overflow"
                          : nonfinite > 0 ? std::string("NaN or infinity in their row of A or column of B")
                                          : std::string("|A||B| reaches the largest value: C may overflow");
  allreduce_max(ctx, &worst, 1);
  const index_t total = c.rows() * c.cols();
  Verdict v;
  v.ok = total_bad == 0;
  const std::string method = "against a double-precision recomputation of each element from A's row and B's column, "
                             "within gamma_" + std::to_string(matmul_depth(k)) + " (|A||B|)_ij";
  if (!v.ok) {
    v.detail = std::to_string(total_bad) + " of " + std::to_string(total) + " elements of C wrong (" + method +
               "); the first at row " + std::to_string(first / c.cols()) + ", column " + std::to_string(first % c.cols());
    return v;
  }
  const index_t checked = total - total_unchecked;
  v.checked = checked > 0 || total == 0;
  if (checked == 0 && total > 0) {
    v.detail = "none of the " + std::to_string(total) + " elements of C could be compared (" + why + ")";
    return v;
  }
  v.detail = std::to_string(checked) + " of " + std::to_string(total) + " elements of C match (" + method +
             "; worst " + fixed(worst) + " of the bound)";
  if (total_unchecked > 0)
    v.detail += "; " + std::to_string(total_unchecked) + " not checked (" + why + ")";
  return v;
}

// Freivalds' check (1977), for products too large to recompute: for random x, A(Bx) must equal Cx.
// Three trials; each is three distributed matrix-vector products on the ranks' own blocks (partial
// vectors summed with an Allreduce), O(MK + KN + MN) work. In long double, row i passes when
//   |(A(Bx))_i - (Cx)_i| <= gamma_{K+2} w_i + gamma^ld_{K+N+2} (2 w_i + (|C||x|)_i) + (K + 2) eta,
//   w = |A|(|B||x|),
// the first term the product's own rounding, the second that of the check (u^ld = 2^-64). It sees
// an error e in C_ij only when |e x_j| exceeds its row's bound, so one wrong element escapes unless
// it is larger than about that bound: the message states it. Rows that depend on a NaN or an
// infinity (any in B, or in their row of A or C) are not checked.
template <class T>
Verdict check_matmul_freivalds(const DistMatrix<T>& a, const DistMatrix<T>& b, const DistMatrix<T>& c,
                               std::uint64_t seed, long double work, long double budget) {
  const Context& ctx = a.grid().context();
  const index_t m = a.rows(), k = a.cols(), n = b.cols();
  const std::vector<T> ah = a.local_to_host(), bh = b.local_to_host(), ch = c.local_to_host();
  constexpr int kTrials = 3;
  using Acc = long double;
  // out[row_offset + i] += sum_j block[i][j] * in[col_offset + j] (with |.| when absolute).
  auto product = [&](const std::vector<T>& block, const DistMatrix<T>& mat, const std::vector<Acc>& in, bool absolute) {
    std::vector<Acc> out(static_cast<std::size_t>(mat.rows()), Acc(0));
    const index_t rows = mat.local_rows(), cols = mat.local_cols();
    for (index_t i = 0; i < rows; ++i) {
      Acc s = 0;
      for (index_t j = 0; j < cols; ++j) {
        Acc e = block[static_cast<std::size_t>(i * cols + j)];
        if (absolute) e = std::fabs(e);
        s += e * in[static_cast<std::size_t>(mat.col_offset() + j)];
      }
      out[static_cast<std::size_t>(mat.row_offset() + i)] += s;
    }
    allreduce_sum(ctx, out.data(), static_cast<index_t>(out.size()));
    return out;
  };
  const long double g = gamma(static_cast<long double>(matmul_depth(k)), unit_roundoff<T>());
  const long double g_check = gamma(static_cast<long double>(k + n + 2), LDBL_EPSILON / 2);
  const long double underflow = static_cast<long double>(k + 2) * std::numeric_limits<T>::denorm_min();

  index_t bad_rows = 0, unchecked_rows = 0;
  long double worst_ratio = 0, largest_bound = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<Acc> x(static_cast<std::size_t>(n)), xa(static_cast<std::size_t>(n));
    for (index_t j = 0; j < n; ++j) {
      const std::uint64_t s = seed ^ (0xF1E2D3C4B5A69788ull + static_cast<std::uint64_t>(trial));
      x[static_cast<std::size_t>(j)] = counter_value<double>(s, static_cast<std::uint64_t>(j));
      xa[static_cast<std::size_t>(j)] = std::fabs(x[static_cast<std::size_t>(j)]);
    }
    const std::vector<Acc> abx = product(ah, a, product(bh, b, x, false), false);
    const std::vector<Acc> cx = product(ch, c, x, false);
    const std::vector<Acc> w = product(ah, a, product(bh, b, xa, true), true);
    const std::vector<Acc> cw = product(ch, c, xa, true);
    for (index_t i = 0; i < m; ++i) {
      const std::size_t s = static_cast<std::size_t>(i);
      if (!std::isfinite(w[s])) {  // NaN or infinity in B or in this row of A
        if (trial == 0) ++unchecked_rows;
        continue;
      }
      if (!std::isfinite(cw[s])) {
        if ((1 + g) * w[s] >= std::numeric_limits<T>::max()) {
          if (trial == 0) ++unchecked_rows;
        } else {
          ++bad_rows;
        }
        continue;
      }
      const long double bound = g * w[s] + g_check * (2 * w[s] + cw[s]) + underflow;
      const long double diff = std::fabs(abx[s] - cx[s]);
      largest_bound = std::max(largest_bound, bound);
      if (!(diff <= bound)) ++bad_rows;
      else if (bound > 0) worst_ratio = std::max(worst_ratio, diff / bound);
    }
  }
  // Every rank computed the same full vectors; agree anyway, in case a rank's long double differs.
  Verdict v;
  v.ok = all_ranks(ctx, bad_rows == 0);
  const std::string why = "per-element check skipped: K x the largest block of C is " + sci(work) + " multiply-adds, above " +
                          sci(budget);
  if (!v.ok) {
    v.detail = "Freivalds: A(Bx) differs from Cx beyond the rounding bound in " + std::to_string(bad_rows) +
               " row checks over " + std::to_string(kTrials) + " trials (" + why + ")";
    return v;
  }
  if (unchecked_rows == m && m > 0) {
    v.checked = false;
    v.detail = "Freivalds: no row of C could be compared (NaN or infinity in B, or in every row of A or C)";
    return v;
  }
  // E|x_j| = 1/2: an error in one element is seen when larger than about twice its row's bound.
  v.detail = "Freivalds, " + std::to_string(kTrials) + " trials: A(Bx) matches Cx within each row's rounding bound (worst " +
             fixed(worst_ratio) + " of it); an error in one element of C is seen only above about " +
             sci(2 * largest_bound) + " (" + why + ")";
  if (unchecked_rows > 0)
    v.detail += "; " + std::to_string(unchecked_rows) + " rows not checked (NaN or infinity)";
  return v;
}

// Per element where the recomputation fits the budget (multiply-adds on the busiest rank), else
// Freivalds.
template <class T>
Verdict check_matmul(const DistMatrix<T>& a, const DistMatrix<T>& b, const DistMatrix<T>& c, std::uint64_t seed,
                     long double budget = kElementCheckBudget) {
  static_assert(std::is_floating_point_v<T>, "check_matmul: float or double");
  const Context& ctx = a.grid().context();
  const long double mine = static_cast<long double>(c.local_rows()) * static_cast<long double>(c.local_cols()) *
                           static_cast<long double>(a.cols());
  long double work = mine;
  allreduce_max(ctx, &work, 1);
  if (work <= budget) return check_matmul_elements(a, b, c);
  return check_matmul_freivalds(a, b, c, seed, work, budget);
}

}  // namespace tessera::apps::verify
