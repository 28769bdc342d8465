// The CPU backend of the histograms (contract: histogram.hpp): each thread counts its contiguous
// chunk of the samples into its own int64 counts, and the threads' counts are summed slot by slot
// (also on threads). Fewer threads where the bins outnumber the samples a thread would count, so
// that clearing and summing private counts never costs more than the counting. Host memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"
#include "tessera/kernels/cpu/parallel.hpp"
#include "tessera/kernels/detail/histogram_bins.hpp"
#include "tessera/kernels/histogram.hpp"

namespace tessera::kernels::cpu {

// counts[0, histogram_slots(bins)) = the histogram of in[0, n) under `binning` (sample -> slot).
template <class T, class Binning>
void histogram(const T* in, index_t n, Binning binning, index_t bins, index_t* counts) {
  const index_t slots = histogram_slots(bins);
  auto count_range = [&](index_t begin, index_t end, index_t* out) {
    for (index_t i = begin; i < end; ++i) ++out[binning(in[i])];
  };
  const int chunks = static_cast<int>(std::min<index_t>(threads_for(n), std::max<index_t>(1, n / slots)));
  if (chunks == 1) {
    std::fill(counts, counts + slots, index_t(0));
    count_range(0, n, counts);
    return;
  }
  std::vector<index_t> partial(static_cast<std::size_t>(chunks) * static_cast<std::size_t>(slots), 0);
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    count_range(chunk.begin, chunk.end, partial.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(slots));
  });
  parallel_for(slots, [&](index_t s) {
    index_t total = 0;
    for (int c = 0; c < chunks; ++c) total += partial[static_cast<std::size_t>(c) * static_cast<std::size_t>(slots) + static_cast<std::size_t>(s)];
    counts[s] = total;
  });
}

// sums[0, histogram_slots(bins)) = the weights of in[0, n) summed per slot of `binning`, in Acc; the
// NaN slot counts its samples instead.
template <class T, class W, class Acc, class Binning>
void weighted_histogram(const T* in, const W* weights, index_t n, Binning binning, index_t bins, Acc* sums) {
  const index_t slots = histogram_slots(bins);
  auto sum_range = [&](index_t begin, index_t end, Acc* out) {
    for (index_t i = begin; i < end; ++i) {
      const int at = binning(in[i]);
      // The NaN slot counts samples (the invalid answers of a binner), not weights.
      const Acc weight = at == bins + kernels::detail::kSlotNaN ? Acc(1) : static_cast<Acc>(weights[i]);
      Acc& slot = out[at];
      if constexpr (std::is_integral_v<Acc>) {
        slot = static_cast<Acc>(static_cast<std::uint64_t>(slot) + static_cast<std::uint64_t>(weight));
      } else {
        slot += weight;
      }
    }
  };
  const int chunks = static_cast<int>(std::min<index_t>(threads_for(n), std::max<index_t>(1, n / slots)));
  if (chunks == 1) {
    std::fill(sums, sums + slots, Acc(0));
    sum_range(0, n, sums);
    return;
  }
  std::vector<Acc> partial(static_cast<std::size_t>(chunks) * static_cast<std::size_t>(slots), Acc(0));
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    sum_range(chunk.begin, chunk.end, partial.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(slots));
  });
  parallel_for(slots, [&](index_t s) {
    Acc total = 0;
    for (int c = 0; c < chunks; ++c) {
      const Acc part = partial[static_cast<std::size_t>(c) * static_cast<std::size_t>(slots) + static_cast<std::size_t>(s)];
      if constexpr (std::is_integral_v<Acc>) total = static_cast<Acc>(static_cast<std::uint64_t>(total) + static_cast<std::uint64_t>(part));
      else total += part;
    }
    sums[s] = total;
  });
}

template <class T>
void histogram_even(const T* in, index_t n, const EvenBins& bins, index_t* counts) {
  histogram(in, n, kernels::detail::make_even_binning<T>(bins.lower, bins.upper, bins.count, bins.width), bins.count, counts);
}

// edges: host memory, bins + 1 values that check_edges accepts. The keys and the cells' lookup
// table of kernels::detail::edges_bin, made once per call.
template <class T>
void histogram_edges(const T* in, index_t n, const double* edges, index_t bins, index_t* counts) {
  using Key = kernels::detail::EdgeKey<T>;
  const int bin_count = static_cast<int>(bins);
  std::vector<Key> keys(static_cast<std::size_t>(bins));
  for (index_t i = 0; i < bins; ++i) keys[static_cast<std::size_t>(i)] = kernels::detail::lower_edge_key<T>(edges[i]);
  const Key first = keys[0];
  const Key last = kernels::detail::upper_edge_key<T>(edges[bins]);
  const Key* key = keys.data();
  auto key_at = [key](int i) { return key[i]; };
  const kernels::detail::EdgeCells cells = kernels::detail::edge_cells<T>(first, last, bin_count);
  std::vector<int> table(static_cast<std::size_t>(cells.cells) + 1, 0);
  for (int j = 0; j <= cells.cells && cells.cells > 0; ++j)
    table[static_cast<std::size_t>(j)] = kernels::detail::edge_table_entry<T>(key_at, bin_count, cells, last, j);
  const int* entry = table.data();
  histogram(
      in, n,
      [=](T x) { return kernels::detail::edges_bin(x, key_at, bin_count, first, last, cells, [entry](int j) { return entry[j]; }); },
      bins, counts);
}

template <class T>
void bincount(const T* in, index_t n, index_t bins, index_t* counts) {
  histogram(in, n, kernels::detail::BincountBinning<T>{static_cast<int>(bins)}, bins, counts);
}

template <class T>
void sample_range(const T* in, index_t n, SampleRange<T>* range) {
  *range = transform_reduce(in, n, kernels::detail::SampleRangeOf<T>{}, kernels::detail::CombineSampleRanges<T>{},
                            kernels::detail::SampleRangeOf<T>::empty());
}

}  // namespace tessera::kernels::cpu
