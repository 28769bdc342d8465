// --verify of tessera-histogram: two checks independent of the histogram kernels, collective, with
// the same verdict on every rank.
//  1. The counts add up: the samples in the bins must be count_if(lower <= x <= upper) over the
//     array (the filter's counting reduction), those below count_if(x < lower), those above
//     count_if(x > upper), and the NaN the rest. The bounds are the ones the comparison type sees:
//     float(lower) for float samples and equal bins; for given edges, compared in double, the
//     smallest float >= the first edge and the largest float <= the last; for integers the
//     integers in [lower, upper] (exact for |x| < 2^53).
//  2. A sample of bins recounted: the first, the middle and the last bin and five chosen from the
//     seed; each rank counts its own samples x with e_b <= x < e_{b+1} (the last bin closed) in a
//     host loop, with plain comparisons, and the counts are summed with MPI.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "app.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/kernels/counter_rng.hpp"
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

template <class T>
CountBounds<T> count_bounds(double lower, double upper, bool edges_in_double) {
  CountBounds<T> b;
  if constexpr (std::is_integral_v<T>) {
    const long double lo = std::ceil(static_cast<long double>(lower)), hi = std::floor(static_cast<long double>(upper));
    const long double min = static_cast<long double>(std::numeric_limits<T>::lowest());
    const long double max = static_cast<long double>(std::numeric_limits<T>::max());
    b.below_all = lo > max;
    b.above_all = hi < min;
    b.lower = static_cast<T>(std::clamp(lo, min, max));
    b.upper = static_cast<T>(std::clamp(hi, min, max));
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

// edges: all bins + 1 edges (double); even: equal bins (float samples then compare with the edges
// rounded to float, as numpy does).
template <class T>
Verdict check_histogram(const DistArray<T>& array, const HistogramCounts& h, const std::vector<double>& edges, bool even,
                        std::uint64_t seed) {
  const Context& ctx = array.context();
  const bool in_double = !even || !std::is_same_v<T, float>;
  using C = std::conditional_t<std::is_same_v<T, float>, float, double>;
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

  // 2. Sampled bins, recounted on the host.
  std::vector<index_t> sampled = {0, h.bins / 2, h.bins - 1};
  for (std::uint64_t k = 0; k < 5; ++k) sampled.push_back(static_cast<index_t>(counter_bits(seed ^ 0x7A11EDull, k) % static_cast<std::uint64_t>(h.bins)));
  std::sort(sampled.begin(), sampled.end());
  sampled.erase(std::unique(sampled.begin(), sampled.end()), sampled.end());
  const std::vector<T> host = array.local_to_host();
  std::vector<std::uint64_t> recount(sampled.size(), 0), reported(sampled.size(), 0);
  for (std::size_t i = 0; i < sampled.size(); ++i) {
    const index_t bin = sampled[i];
    const bool last = bin == h.bins - 1;
    std::uint64_t c = 0;
    if (in_double) {
      const double lo = edges[static_cast<std::size_t>(bin)], hi = edges[static_cast<std::size_t>(bin) + 1];
      for (const T x : host) {
        const double d = static_cast<double>(x);
        c += d >= lo && (d < hi || (last && d == hi));
      }
    } else {
      const C lo = static_cast<C>(edges[static_cast<std::size_t>(bin)]), hi = static_cast<C>(edges[static_cast<std::size_t>(bin) + 1]);
      for (const T x : host) {
        const C d = static_cast<C>(x);
        c += d >= lo && (d < hi || (last && d == hi));
      }
    }
    recount[i] = c;
    const index_t local = bin - h.first_bin;
    if (local >= 0 && local < static_cast<index_t>(h.counts.size()) && (!h.replicated || ctx.is_root()))
      reported[i] = static_cast<std::uint64_t>(h.counts[static_cast<std::size_t>(local)]);
  }
  allreduce_sum(ctx, recount.data(), static_cast<index_t>(recount.size()));
  allreduce_sum(ctx, reported.data(), static_cast<index_t>(reported.size()));

  std::string bad;
  if (in_bins != in_range_count)
    bad += "the bins hold " + std::to_string(in_bins) + " samples, count_if finds " + std::to_string(in_range_count) + " in range; ";
  if (h.below != below) bad += std::to_string(h.below) + " below, count_if finds " + std::to_string(below) + "; ";
  if (h.above != above) bad += std::to_string(h.above) + " above, count_if finds " + std::to_string(above) + "; ";
  if (h.nan != nan) bad += std::to_string(h.nan) + " NaN, the rest of the samples are " + std::to_string(nan) + "; ";
  for (std::size_t i = 0; i < sampled.size(); ++i)
    if (recount[i] != reported[i])
      bad += "bin " + std::to_string(sampled[i]) + " holds " + std::to_string(reported[i]) + ", a recount finds " +
             std::to_string(recount[i]) + "; ";
  v.ok = all_ranks(ctx, bad.empty());
  if (!bad.empty()) bad.resize(bad.size() - 2);
  v.detail = v.ok ? std::to_string(in_bins) + " in the bins, " + std::to_string(below) + " below, " + std::to_string(above) +
                        " above, " + std::to_string(nan) + " NaN: as count_if finds; " + std::to_string(sampled.size()) +
                        " sampled bins match a host recount"
                  : bad;
  return v;
}

}  // namespace tessera::apps::verify
