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
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/histogram.hpp"
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
