// --verify of tessera-histogram: two checks independent of the histogram kernels, collective, with
// the same verdict on every rank.
//  1. The counts add up: the samples in the bins must be count_if(lower <= x <= upper) over the
//     array (the filter's counting reduction), those below count_if(x < lower), those above
//     count_if(x > upper), and the NaN the rest. The bounds are the ones the comparison type sees:
//     float(lower) for float samples and equal bins; for given edges, compared in double, the
//     smallest float >= the first edge and the largest float <= the last; for integers the
//     integers in [lower, upper] (exact for |x| < 2^53).
//  2. Every bin recounted: each rank finds the bin of each of its samples on the host, written here
//     from numpy's own steps rather than the kernels' code: given edges by a binary search in double
//     (numpy's searchsorted: the last edge e_i <= x, the last bin closed); equal bins as
//     numpy.histogram finds them (numpy/lib/histograms.py), an estimate from (x - lower) * norm
//     in the comparison type (float for float samples, else double) corrected by one step against
//     numpy.linspace's edges rounded to that type. A search of the edges is not the same where the
//     bins are narrower than the samples' spacing: the rounded edges then repeat, and the estimate
//     decides between the bins they bound. The recounts are summed over the ranks with MPI, and
//     every bin, and the samples below, above and NaN, must match. One more pass over the samples;
//     bins are recounted in windows of at most 2^24 (one pass over the samples per window), so the
//     check's memory stays bounded. The edges of equal bins are compared with numpy.linspace's too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "app.hpp"
#include "tessera/framework/algorithms.hpp"
#include "verify.hpp"

namespace tessera::apps::verify {

// The histogram as the check sees it: each rank's block of bins (all of them when replicated).
struct HistogramCounts {
  index_t first_bin = 0;             // global index of counts[0]
  std::vector<index_t> counts;       // this rank's bins
  index_t bins = 0;                  // all bins
  index_t below = 0, above = 0, nan = 0;
  bool replicated = true;            // every rank holds all bins
};

// The bounds [lower, upper] of "in range" as count_if on T sees them, or none when no T is in range.
template <class T>
struct CountBounds {
  T lower{}, upper{};
  bool below_all = false;  // every value is below the range (integers, a range above T's largest)
  bool above_all = false;  // every value is above it
};

// The first x of T in [lo, hi] where the monotone predicate `p` holds, and whether there is one.
template <class T, class P>
std::pair<T, bool> first_where(T lo, T hi, P p) {
  if (!p(hi)) return {hi, false};
  while (lo < hi) {
    const T mid = static_cast<T>(lo + static_cast<T>((static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo)) / 2));
    if (p(mid)) hi = mid;
    else lo = static_cast<T>(mid + 1);
  }
  return {lo, true};
}

template <class T>
CountBounds<T> count_bounds(double lower, double upper, bool edges_in_double) {
  CountBounds<T> b;
  if constexpr (std::is_integral_v<T>) {
    // Integers are compared as doubles (numpy converts them; int64 beyond 2^53 rounds): the T whose
    // doubles lie in [lower, upper], found by searches, since a T's double is monotone in it.
    constexpr T min = std::numeric_limits<T>::lowest(), max = std::numeric_limits<T>::max();
    const auto [first, some_at_or_above] = first_where(min, max, [&](T x) { return static_cast<double>(x) >= lower; });
    const auto [past, some_above] = first_where(min, max, [&](T x) { return static_cast<double>(x) > upper; });
    b.below_all = !some_at_or_above;           // every T's double is below lower
    b.above_all = some_above && past == min;   // every T's double is above upper
    b.lower = first;
    b.upper = some_above ? static_cast<T>(past - 1) : max;
    if (b.above_all) b.upper = min;
  } else if (std::is_same_v<T, float> && edges_in_double) {
    float lo = static_cast<float>(lower), hi = static_cast<float>(upper);
    if (static_cast<double>(lo) < lower) lo = std::nextafter(lo, std::numeric_limits<float>::infinity());
    if (static_cast<double>(hi) > upper) hi = std::nextafter(hi, -std::numeric_limits<float>::infinity());
    b.lower = static_cast<T>(lo);
    b.upper = static_cast<T>(hi);
  } else {
    b.lower = static_cast<T>(lower);
    b.upper = static_cast<T>(upper);
  }
  return b;
}

// The bin of x among edges keys[0..bins] (double, ascending): bins + HistogramSlot for the samples
// in no bin.
inline index_t recount_bin(double x, const std::vector<double>& keys) {
  const index_t bins = static_cast<index_t>(keys.size()) - 1;
  if (x != x) return bins + 2;             // NaN
  if (x < keys.front()) return bins;       // below
  if (x > keys.back()) return bins + 1;    // above
  // The last i in [0, bins) with keys[i] <= x (keys[0] <= x holds).
  const auto it = std::upper_bound(keys.begin(), keys.end() - 1, x);
  return static_cast<index_t>(it - keys.begin()) - 1;
}

// numpy.linspace(start, stop, num)[i] in double, as numpy computes it: i * step + start with
// step = (stop - start) / (num - 1), or (i / (num - 1)) * (stop - start) + start where the step
// underflows to zero; the last value is stop.
inline double numpy_linspace_at(double start, double stop, index_t num, index_t i) {
  if (i == num - 1) return stop;
  const double div = static_cast<double>(num - 1), delta = stop - start, step = delta / div;
  double v = step == 0 ? static_cast<double>(i) / div : static_cast<double>(i);
  v = step == 0 ? v * delta : v * step;  // one rounding each: no multiply-add (ISO C++, -ffp-contract=off)
  return v + start;
}

// numpy.histogram's bin of a sample with `bins` equal bins over [lower, upper], the comparisons and
// the estimate in B: keep lower <= x <= upper; k = int((x - lower) * norm), norm = bins / width in
// double rounded to B (width: upper - lower for a given range; max - min in the samples' type
// without one), each operation rounded in B; k = bins - 1 where it reached bins; then k - 1 where
// x < e_k, else k + 1 where x >= e_{k+1} and k is not the last bin.
// The edges are computed where they are compared (no memory per bin).
template <class B>
struct NumpyEqualBins {
  double lo, hi;
  B lower, upper, norm;
  index_t bins;
  NumpyEqualBins(double lo_, double hi_, index_t count, double width)
      : lo(lo_), hi(hi_), lower(static_cast<B>(lo_)), upper(static_cast<B>(hi_)),
        norm(static_cast<B>(static_cast<double>(count) / (width != 0 ? width : hi_ - lo_))), bins(count) {}
  B edge(index_t i) const { return static_cast<B>(numpy_linspace_at(lo, hi, bins + 1, i)); }  // numpy.linspace's, rounded to B
  index_t operator()(B x) const {
    if (x != x) return bins + 2;
    if (x < lower) return bins;
    if (x > upper) return bins + 1;
    const B offset = x - lower;
    const B f = offset * norm;
    index_t k = f >= static_cast<B>(bins) ? bins - 1 : static_cast<index_t>(f);
    if (x < edge(k)) --k;
    else if (k != bins - 1 && x >= edge(k + 1)) ++k;
    return k;
  }
};

// edges: all bins + 1 edges (double); even: equal bins (float samples then compare with the edges
// rounded to float, as numpy does), width: the denominator of their norm (EvenBins::width; 0:
// upper - lower).
template <class T>
Verdict check_histogram(const DistArray<T>& array, const HistogramCounts& h, const std::vector<double>& edges, bool even,
                        double width = 0) {
  const Context& ctx = array.context();
  const bool in_double = !even || !std::is_same_v<T, float>;
  Verdict v;

  // 1. The totals, against count_if.
  const CountBounds<T> b = count_bounds<T>(edges.front(), edges.back(), in_double);
  const index_t n = array.global_size();
  index_t in_range_count = 0, below = 0, above = 0;
  if (b.below_all) {
    below = n;
  } else if (b.above_all) {
    above = n;
  } else {
    in_range_count = count_if(array, in_range(b.lower, b.upper));
    below = count_if(array, less_than(b.lower));
    above = count_if(array, greater_than(b.upper));
  }
  index_t in_bins = 0;
  for (index_t c : h.counts) in_bins += c;
  if (!h.replicated) in_bins = ctx.comm().allreduce(in_bins, ReduceOp::sum);
  const index_t nan = n - in_range_count - below - above;
  std::string bad;
  if (in_bins != in_range_count)
    bad += "the bins hold " + std::to_string(in_bins) + " samples, count_if finds " + std::to_string(in_range_count) + " in range; ";
  if (h.below != below) bad += std::to_string(h.below) + " below, count_if finds " + std::to_string(below) + "; ";
  if (h.above != above) bad += std::to_string(h.above) + " above, count_if finds " + std::to_string(above) + "; ";
  if (h.nan != nan) bad += std::to_string(h.nan) + " NaN, the rest of the samples are " + std::to_string(nan) + "; ";

  // 2. Every bin recounted on the host: each sample's bin once, then the counts window by window.
  const std::vector<T> host = array.local_to_host();
  std::vector<std::uint32_t> bin_of;  // per sample, its bin or bins + slot (bins <= 2^30)
  bin_of.reserve(host.size());
  if (!even) {
    for (const T x : host) bin_of.push_back(static_cast<std::uint32_t>(recount_bin(static_cast<double>(x), edges)));
  } else if (in_double) {
    const NumpyEqualBins<double> numpy_bins(edges.front(), edges.back(), h.bins, width);
    for (const T x : host) bin_of.push_back(static_cast<std::uint32_t>(numpy_bins(static_cast<double>(x))));
  } else {
    const NumpyEqualBins<float> numpy_bins(edges.front(), edges.back(), h.bins, width);
    for (const T x : host) bin_of.push_back(static_cast<std::uint32_t>(numpy_bins(static_cast<float>(x))));
  }
  if (even) {  // the edges the run reports (and writes) are numpy.linspace's
    for (std::size_t i = 0; i < edges.size(); ++i) {
      const double want = numpy_linspace_at(edges.front(), edges.back(), h.bins + 1, static_cast<index_t>(i));
      if (!(edges[i] == want)) {  // the same on every rank: the edges are
        bad += "edge " + std::to_string(i) + " is " + format_number(edges[i]) + ", numpy.linspace gives " + format_number(want) + "; ";
        break;
      }
    }
  }
  constexpr index_t kWindow = index_t(1) << 24;
  index_t wrong_bins = 0;
  std::string first_wrong;
  for (index_t window = 0; window < h.bins + 3; window += kWindow) {
    const index_t end = std::min(window + kWindow, h.bins + 3);  // the last window has the 3 outside slots
    std::vector<std::uint64_t> recount(static_cast<std::size_t>(end - window), 0);
    for (const std::uint32_t bin : bin_of)
      if (bin >= window && bin < end) ++recount[static_cast<std::size_t>(bin - window)];
    allreduce_sum(ctx, recount.data(), static_cast<index_t>(recount.size()));
    for (index_t k = window; k < end; ++k) {
      index_t reported = -1;  // -1: this rank does not answer for bin k (a replicated bin: rank 0 does)
      if (k >= h.bins) {
        if (ctx.is_root()) reported = k == h.bins ? h.below : k == h.bins + 1 ? h.above : h.nan;
      } else if ((!h.replicated || ctx.is_root()) && k >= h.first_bin &&
                 k - h.first_bin < static_cast<index_t>(h.counts.size()))
        reported = h.counts[static_cast<std::size_t>(k - h.first_bin)];
      const auto found = static_cast<index_t>(recount[static_cast<std::size_t>(k - window)]);
      if (reported >= 0 && reported != found) {
        if (wrong_bins++ == 0)
          first_wrong = (k < h.bins ? "bin " + std::to_string(k) : std::string(k == h.bins ? "below" : k == h.bins + 1 ? "above" : "NaN")) +
                        " holds " + std::to_string(reported) + ", a recount finds " + std::to_string(found);
      }
    }
  }
  // The first wrong bin on any rank, and how many ranks' bins differ.
  const index_t wrong_anywhere = ctx.comm().allreduce(wrong_bins, ReduceOp::sum);
  if (wrong_anywhere > 0) {
    const int reporter = ctx.comm().allreduce(wrong_bins > 0 ? ctx.rank() : ctx.size(), ReduceOp::min);
    const std::string text = ctx.comm().bcast_string(first_wrong, reporter);
    bad += text + (wrong_anywhere > 1 ? " (and " + std::to_string(wrong_anywhere - 1) + " more)" : "") + "; ";
  }
  v.ok = all_ranks(ctx, bad.empty());
  if (!v.ok) {
    // Rank 0's text where it saw the problem; else the first rank that did.
    const int reporter = ctx.comm().allreduce(bad.empty() ? ctx.size() : ctx.rank(), ReduceOp::min);
    bad = ctx.comm().bcast_string(ctx.rank() == reporter ? bad.substr(0, bad.size() - 2) : std::string(), reporter);
  }
  v.detail = v.ok ? std::to_string(in_bins) + " in the bins, " + std::to_string(below) + " below, " + std::to_string(above) +
                        " above, " + std::to_string(nan) + " NaN: as count_if finds; all " + std::to_string(h.bins) +
                        " bins match a host recount"
                  : bad;
  return v;
}

}  // namespace tessera::apps::verify
