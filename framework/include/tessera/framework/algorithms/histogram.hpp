// Histograms of a distributed array: each rank counts its block into 64-bit counts (privatised in
// shared memory on the GPU, kernels/histogram.hpp) -> the ranks' counts summed with one collective
// of integers, so the result is exact and the same on every rank for any number of ranks. No fix-up
// pass: the summed counts are the result.
//
//   histogram(a, EvenBins{lower, upper, bins})      equal bins over [lower, upper]
//   histogram(a, edges)                             bins between the given edges (host memory)
//   bincount(a, bins)                               integer samples 0 .. bins - 1
//   histogram_distributed(a, EvenBins or edges)     the counts left block-distributed over the ranks
//   sample_range(a)                                 the smallest and largest sample, NaN skipped
//   histogram(a, binner, bins [, weights])          a binning of the caller's (below)
//
// numpy's conventions (kernels/histogram.hpp): the result is numpy.histogram(a, bins, range=(lower,
// upper)) or numpy.histogram(a, edges) of the whole array, count for count; samples below, above
// and NaN are counted apart. Global phase: one allreduce of bins + 3 int64 through the device path
// (device_comm.hpp: device buffers under cuda, NCCL where present), or for histogram_distributed one
// reduce-scatter of the bins (each rank receives the sum of its block of bins: half the traffic of
// an allreduce, and no rank holds all bins) plus an allgather of the three outside counts. Every
// call is collective; bad bins or edges throw the same UsageError on every rank before any work.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/histogram.hpp"
#include "tessera/kernels/histogram_by.hpp"
#include "tessera/kernels/reduce.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {

using kernels::EvenBins;
using kernels::SampleRange;

// The counts of a histogram, the same on every rank.
struct Histogram {
  std::vector<index_t> counts;  // per bin
  index_t below = 0;            // samples below the first edge (-inf included)
  index_t above = 0;            // samples above the last edge (+inf included)
  index_t nan = 0;              // NaN samples
  index_t in_bins() const {
    index_t total = 0;
    for (index_t c : counts) total += c;
    return total;
  }
  index_t samples() const { return in_bins() + below + above + nan; }
};

// The same with the bins' counts block-distributed: rank r holds bins [counts.global_offset(),
// + counts.local_size()) of the histogram; the outside counts are on every rank.
struct DistributedHistogram {
  DistArray<std::int64_t> counts;
  index_t below = 0;
  index_t above = 0;
  index_t nan = 0;
};

namespace detail {

// The three outside counts of every rank, summed (one allgather).
struct OutsideCounts {
  index_t below = 0, above = 0, nan = 0;
};

// Which histogram the local phase counts: equal bins, edges (already in backend memory) or bincount.
struct HistogramBins {
  enum class Kind { even, edges, bincount } kind = Kind::even;
  EvenBins even{};
  const double* edges = nullptr;  // backend memory, bins + 1
  index_t bins = 0;
};

template <class T>
void local_histogram(const DistArray<T>& array, const HistogramBins& bins, index_t* counts) {
  const kernels::Queue& q = array.context().queue();
  switch (bins.kind) {
    case HistogramBins::Kind::even: kernels::histogram_even(q, array.local_data(), array.local_size(), bins.even, counts); return;
    case HistogramBins::Kind::edges:
      kernels::histogram_edges(q, array.local_data(), array.local_size(), bins.edges, bins.bins, counts);
      return;
    case HistogramBins::Kind::bincount:
      if constexpr (std::is_integral_v<T>) kernels::bincount(q, array.local_data(), array.local_size(), bins.bins, counts);
      return;
  }
}

// The edges where the kernels read them: uploaded under cuda, the caller's host memory under cpu.
class EdgesOnBackend {
 public:
  EdgesOnBackend(const Context& ctx, std::span<const double> edges) {
    kernels::check_edges(edges);
    if (ctx.backend() == Backend::cpu) {
      data_ = edges.data();
    } else {
      buffer_.emplace(ctx.queue(), edges.size_bytes());
      kernels::copy_from_host(ctx.queue(), buffer_->data(), edges.data(), edges.size_bytes());
      data_ = buffer_->as<const double>();
    }
  }
  const double* data() const { return data_; }

 private:
  std::optional<kernels::ScratchBuffer> buffer_;
  const double* data_ = nullptr;
};

// The replicated histogram: local counts -> allreduce -> host.
template <class T>
Histogram histogram_allreduce(const DistArray<T>& array, const HistogramBins& bins, PhaseTimes* times) {
  const Context& ctx = array.context();
  const index_t slots = kernels::histogram_slots(bins.bins);
  Stopwatch setup;
  kernels::ScratchBuffer counts(ctx.queue(), static_cast<std::size_t>(slots) * sizeof(index_t));
  auto* device_counts = counts.as<index_t>();
  const DeviceComm device_comm(ctx);
  if (times) times->host += setup.seconds();
  return three_phases(
      ctx, times,
      // Local: this block's counts, in backend memory.
      [&] {
        local_histogram(array, bins, device_counts);
        return 0;
      },
      // Global: the sum over the ranks, in place (exact: integers).
      [&](int) {
        device_comm.allreduce_sum(device_counts, slots);
        return 0;
      },
      // The summed counts to the host.
      [&](int) {
        std::vector<index_t> all(static_cast<std::size_t>(slots));
        kernels::copy_to_host(ctx.queue(), all.data(), device_counts, all.size() * sizeof(index_t));
        Histogram h;
        h.below = all[static_cast<std::size_t>(bins.bins)];
        h.above = all[static_cast<std::size_t>(bins.bins) + 1];
        h.nan = all[static_cast<std::size_t>(bins.bins) + 2];
        all.resize(static_cast<std::size_t>(bins.bins));
        h.counts = std::move(all);
        return h;
      });
}

// The distributed histogram: local counts -> reduce-scatter of the bins (and an allgather of the
// outside counts) -> each rank's block of bins.
template <class T>
DistributedHistogram histogram_reduce_scatter(const DistArray<T>& array, const HistogramBins& bins, PhaseTimes* times) {
  const Context& ctx = array.context();
  const index_t slots = kernels::histogram_slots(bins.bins);
  Stopwatch setup;
  kernels::ScratchBuffer counts(ctx.queue(), static_cast<std::size_t>(slots) * sizeof(index_t));
  auto* device_counts = counts.as<index_t>();
  DistributedHistogram result{DistArray<std::int64_t>(ctx, bins.bins)};
  const DeviceComm device_comm(ctx);
  if (times) times->host += setup.seconds();
  const OutsideCounts outside = three_phases(
      ctx, times,
      // Local: this block's counts, and its three outside counts on the host.
      [&] {
        local_histogram(array, bins, device_counts);
        OutsideCounts mine;
        kernels::copy_to_host(ctx.queue(), &mine, device_counts + bins.bins, sizeof mine);
        return mine;
      },
      // Global: each rank's block of bins summed over the ranks; the outside counts of every rank.
      [&](const OutsideCounts& mine) {
        device_comm.reduce_scatter_sum(device_counts, result.counts.local_data(), result.counts.partition().counts());
        OutsideCounts total;
        for (const OutsideCounts& o : ctx.comm().allgather(mine)) {
          total.below += o.below;
          total.above += o.above;
          total.nan += o.nan;
        }
        return total;
      },
      no_fixup);
  result.below = outside.below;
  result.above = outside.above;
  result.nan = outside.nan;
  return result;
}

}  // namespace detail

// The collectives of one histogram / bincount call of `bins` bins (collective_plan.hpp): one
// allreduce of the 64-bit counts of every bin and of the samples below, above and NaN.
inline CollectivePlan histogram_plan(index_t bins) {
  return {{Collective::allreduce, static_cast<double>(kernels::histogram_slots(bins)) * sizeof(index_t)}};
}

// Of one histogram_distributed call: a reduce-scatter of the bins' counts, and an allgather of each
// rank's counts below, above and NaN.
inline CollectivePlan histogram_distributed_plan(index_t bins) {
  return {{Collective::reduce_scatter, static_cast<double>(bins) * sizeof(index_t)},
          {Collective::allgather, static_cast<double>(sizeof(detail::OutsideCounts))}};
}

namespace detail {
template <class T>
constexpr void require_histogram_samples() {
  static_assert(kernels::detail::is_precompiled_type<T>,
                "histograms are precompiled for int32, int64, float and double samples only: transform the array "
                "to one of them first (tessera::transform)");
}
}  // namespace detail

template <class T>
Histogram histogram(const DistArray<T>& array, const EvenBins& bins, PhaseTimes* times = nullptr) {
  detail::require_histogram_samples<T>();
  kernels::check_even_bins(bins, std::is_same_v<T, float>);
  return detail::histogram_allreduce(array, {detail::HistogramBins::Kind::even, bins, nullptr, bins.count}, times);
}

// edges: bins + 1 strictly increasing values (kernels::check_edges), host memory, the same on every rank.
template <class T>
Histogram histogram(const DistArray<T>& array, std::span<const double> edges, PhaseTimes* times = nullptr) {
  detail::require_histogram_samples<T>();
  const detail::EdgesOnBackend on_backend(array.context(), edges);
  const auto bins = static_cast<index_t>(edges.size()) - 1;
  return detail::histogram_allreduce(array, {detail::HistogramBins::Kind::edges, {}, on_backend.data(), bins}, times);
}

template <class T>
Histogram bincount(const DistArray<T>& array, index_t bins, PhaseTimes* times = nullptr) {
  static_assert(std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>,
                "bincount is precompiled for int32 and int64 samples only");
  kernels::check_even_bins(EvenBins{0, 1, bins});
  return detail::histogram_allreduce(array, {detail::HistogramBins::Kind::bincount, {}, nullptr, bins}, times);
}

template <class T>
DistributedHistogram histogram_distributed(const DistArray<T>& array, const EvenBins& bins, PhaseTimes* times = nullptr) {
  detail::require_histogram_samples<T>();
  kernels::check_even_bins(bins, std::is_same_v<T, float>);
  return detail::histogram_reduce_scatter(array, {detail::HistogramBins::Kind::even, bins, nullptr, bins.count}, times);
}

template <class T>
DistributedHistogram histogram_distributed(const DistArray<T>& array, std::span<const double> edges,
                                           PhaseTimes* times = nullptr) {
  detail::require_histogram_samples<T>();
  const detail::EdgesOnBackend on_backend(array.context(), edges);
  const auto bins = static_cast<index_t>(edges.size()) - 1;
  return detail::histogram_reduce_scatter(array, {detail::HistogramBins::Kind::edges, {}, on_backend.data(), bins}, times);
}

// ---- histograms with a binner of the caller's --------------------------------------------------------
//
//   histogram(a, binner, bins)            counts of a binning of the caller's
//   histogram(a, binner, bins, weights)   the weights (any arithmetic type) summed per bin
//
// binner: a TESSERA_HOST_DEVICE callable, sample -> integer bin, on samples of any trivially
// copyable type (a struct binned by one of its fields); it returns a bin in [0, bins), or
// kernels::kBinBelow / kernels::kBinAbove for a sample below or above them. The local pass is the
// precompiled histograms' (kernels/histogram_by.hpp: the same device pass, privatised counting).
// Global phase: one allreduce of the bins, the samples below and above, and one word that says
// whether some rank's binner threw (cpu) or answered outside [0, bins) and the two constants: then
// every rank throws (the rank whose binner threw, its own exception; otherwise a UsageError naming
// the count of such answers). Histogram::nan is 0: the binner says where a NaN goes.

// The weights' sums of a weighted histogram, the same on every rank: S is
// kernels::histogram_weight_t of the weights' type (double, int64 or uint64).
template <class S>
struct WeightedHistogram {
  std::vector<S> sums;  // per bin
  S below{};            // the weights of the samples below the first bin
  S above{};            // ... and above the last
};

// The collectives of one histogram(a, binner, bins) call: one allreduce of the counts of every bin,
// of the samples below and above, of the invalid answers and of the ranks whose binner threw.
inline CollectivePlan histogram_by_plan(index_t bins) {
  return {{Collective::allreduce, static_cast<double>(kernels::histogram_slots(bins) + 1) * sizeof(index_t)}};
}
// Of one weighted call: the same in the sums' type.
template <class W>
CollectivePlan weighted_histogram_plan(index_t bins) {
  return {{Collective::allreduce,
           static_cast<double>(kernels::histogram_slots(bins) + 1) * sizeof(kernels::histogram_weight_t<W>)}};
}

namespace detail {

// Binners are any callables but the library's own bin descriptions.
template <class Binner>
inline constexpr bool is_user_binner =
    !std::is_convertible_v<Binner, EvenBins> && !std::is_convertible_v<Binner, std::span<const double>>;

// local(slots) writes this rank's histogram_slots(bins) sums into backend memory; one more slot, on
// the host's word, says whether it threw. One allreduce of all of them; every rank throws where a
// binner threw or answered outside the bins (the NaN slot); otherwise the sums, on the host.
template <class Acc, class Local>
std::vector<Acc> user_histogram(const Context& ctx, index_t bins, PhaseTimes* times, Local&& local) {
  const index_t slots = kernels::histogram_slots(bins) + 1;
  const kernels::Queue& q = ctx.queue();
  Stopwatch setup;
  kernels::ScratchBuffer buffer(q, static_cast<std::size_t>(slots) * sizeof(Acc));
  auto* sums = buffer.as<Acc>();
  const DeviceComm device_comm(ctx);
  if (times) times->host += setup.seconds();
  return three_phases(
      ctx, times,
      // Local: this block's sums; where the binner threw, none, and the flag.
      [&] {
        LocalOutcome<int> outcome = try_local([&] {
          local(sums);
          return 0;
        });
        std::vector<Acc> flag(outcome.error ? static_cast<std::size_t>(slots) : 1, Acc(0));
        flag.back() = outcome.error ? Acc(1) : Acc(0);
        kernels::copy_from_host(q, sums + (slots - static_cast<index_t>(flag.size())), flag.data(), flag.size() * sizeof(Acc));
        return outcome.error;
      },
      // Global: the sums over the ranks, in place.
      [&](std::exception_ptr error) {
        device_comm.allreduce(sums, slots, plus{});
        return error;
      },
      // To the host; refused on every rank where some rank's binner threw or answered out of range.
      [&](std::exception_ptr error) {
        std::vector<Acc> all(static_cast<std::size_t>(slots));
        kernels::copy_to_host(q, all.data(), sums, all.size() * sizeof(Acc));
        if (all.back() != Acc(0)) {
          if (error) std::rethrow_exception(error);
          throw UsageError("histogram: the binner failed on another rank (it threw there); this rank stopped too");
        }
        const Acc invalid = all[static_cast<std::size_t>(bins) + static_cast<std::size_t>(kernels::HistogramSlot::nan)];
        if (invalid != Acc(0))
          throw UsageError("histogram: the binner answered " + std::to_string(static_cast<long long>(invalid)) +
                           " sample(s) with a bin outside [0, " + std::to_string(bins) +
                           ") that is neither kBinBelow nor kBinAbove");
        all.pop_back();
        return all;
      });
}

}  // namespace detail

template <class T, class Binner>
  requires detail::is_user_binner<Binner>
Histogram histogram(const DistArray<T>& array, Binner binner, index_t bins, PhaseTimes* times = nullptr) {
  kernels::check_histogram_bins(bins);
  const kernels::Queue& q = array.context().queue();
  std::vector<index_t> all = detail::user_histogram<index_t>(array.context(), bins, times, [&](index_t* counts) {
    kernels::histogram_by(q, array.local_data(), array.local_size(), binner, bins, counts);
  });
  Histogram h;
  h.below = all[static_cast<std::size_t>(bins)];
  h.above = all[static_cast<std::size_t>(bins) + 1];
  all.resize(static_cast<std::size_t>(bins));
  h.counts = std::move(all);
  return h;
}

// weights: one per sample, with the samples' context and partition (UsageError otherwise).
template <class T, class Binner, class W>
  requires detail::is_user_binner<Binner>
WeightedHistogram<kernels::histogram_weight_t<W>> histogram(const DistArray<T>& array, Binner binner, index_t bins,
                                                            const DistArray<W>& weights, PhaseTimes* times = nullptr) {
  using S = kernels::histogram_weight_t<W>;
  kernels::check_histogram_bins(bins);
  detail::require_same_layout(array.context(), array.partition(), weights.context(), weights.partition(), "histogram");
  const kernels::Queue& q = array.context().queue();
  std::vector<S> all = detail::user_histogram<S>(array.context(), bins, times, [&](S* sums) {
    kernels::histogram_weighted_by(q, array.local_data(), weights.local_data(), array.local_size(), binner, bins, sums);
  });
  WeightedHistogram<S> h;
  h.below = all[static_cast<std::size_t>(bins)];
  h.above = all[static_cast<std::size_t>(bins) + 1];
  all.resize(static_cast<std::size_t>(bins));
  h.sums = std::move(all);
  return h;
}

// The collectives of one sample_range call: one allgather of each rank's range.
template <class T>
CollectivePlan sample_range_plan() {
  return {{Collective::allgather, static_cast<double>(sizeof(SampleRange<T>))}};
}

// The smallest and largest sample of the whole array, NaN skipped (count: the samples that are not
// NaN; min and max mean something only where it is > 0). One local reduction, one allgather.
template <class T>
SampleRange<T> sample_range(const DistArray<T>& array, PhaseTimes* times = nullptr) {
  detail::require_histogram_samples<T>();
  const Context& ctx = array.context();
  return detail::three_phases(
      ctx, times,
      [&] {
        return detail::result_on_host<SampleRange<T>>(ctx, [&](SampleRange<T>* out) {
          kernels::sample_range(ctx.queue(), array.local_data(), array.local_size(), out);
        });
      },
      [&](const SampleRange<T>& mine) {
        SampleRange<T> all = mine;
        all.count = 0;
        for (const SampleRange<T>& r : ctx.comm().allgather(mine)) {
          if (r.count == 0) continue;
          if (all.count == 0 || r.min < all.min) all.min = r.min;
          if (all.count == 0 || r.max > all.max) all.max = r.max;
          all.count += r.count;
        }
        return all;
      },
      detail::no_fixup);
}

// Precompiled in the framework library.
#define TESSERA_EXTERN_HISTOGRAM(T)                                                                              \
  extern template Histogram histogram<T>(const DistArray<T>&, const EvenBins&, PhaseTimes*);                     \
  extern template Histogram histogram<T>(const DistArray<T>&, std::span<const double>, PhaseTimes*);             \
  extern template DistributedHistogram histogram_distributed<T>(const DistArray<T>&, const EvenBins&, PhaseTimes*); \
  extern template DistributedHistogram histogram_distributed<T>(const DistArray<T>&, std::span<const double>,    \
                                                                PhaseTimes*);                                    \
  extern template SampleRange<T> sample_range<T>(const DistArray<T>&, PhaseTimes*);
TESSERA_EXTERN_HISTOGRAM(std::int32_t)
TESSERA_EXTERN_HISTOGRAM(std::int64_t)
TESSERA_EXTERN_HISTOGRAM(float)
TESSERA_EXTERN_HISTOGRAM(double)
#undef TESSERA_EXTERN_HISTOGRAM
extern template Histogram bincount<std::int32_t>(const DistArray<std::int32_t>&, index_t, PhaseTimes*);
extern template Histogram bincount<std::int64_t>(const DistArray<std::int64_t>&, index_t, PhaseTimes*);

}  // namespace tessera
