// The CPU backend of the comparator sorts (merge_sort.hpp): std::stable_sort of contiguous chunks on
// host threads, then rounds of std::merge of neighbouring chunks (both stable: equal elements keep
// their order), and binary searches.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/parallel.hpp"

namespace tessera::kernels::cpu {

// Sorts data[0, n) stably with less.
template <class T, class Less>
void parallel_stable_sort(T* data, index_t n, Less less) {
  const int chunks = threads_for(n);
  if (chunks <= 1) {
    std::stable_sort(data, data + n, less);
    return;
  }
  parallel_for_chunks(n, chunks, [&](int, Chunk c) { std::stable_sort(data + c.begin, data + c.end, less); });
  std::vector<T> buffer(static_cast<std::size_t>(n));
  T* from = data;
  T* to = buffer.data();
  auto begin = [&](int c) { return c >= chunks ? n : chunk_of(n, c, chunks).begin; };
  for (int width = 1; width < chunks; width *= 2) {
    const int pairs = (chunks + 2 * width - 1) / (2 * width);
    parallel_for_chunks(pairs, pairs, [&](int p, Chunk) {
      const int c = p * 2 * width;
      const index_t lo = begin(c), mid = begin(c + width), hi = begin(c + 2 * width);
      std::merge(from + lo, from + mid, from + mid, from + hi, to + lo, less);
    });
    std::swap(from, to);
  }
  if (from != data) std::copy(from, from + n, data);
}

template <class K, class Comp>
void merge_sort(const K* keys_in, K* keys_out, index_t n, Comp comp) {
  if (keys_in != keys_out) std::copy(keys_in, keys_in + n, keys_out);
  parallel_stable_sort(keys_out, n, [&](const K& a, const K& b) { return static_cast<bool>(comp(a, b)); });
}

template <class K, class V, class Comp>
void merge_sort_pairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out, index_t n, Comp comp) {
  struct Pair {
    K key;
    V value;
  };
  std::vector<Pair> pairs(static_cast<std::size_t>(n));
  parallel_for(n, [&](index_t i) { pairs[static_cast<std::size_t>(i)] = Pair{keys_in[i], values_in[i]}; });
  parallel_stable_sort(pairs.data(), n, [&](const Pair& a, const Pair& b) { return static_cast<bool>(comp(a.key, b.key)); });
  parallel_for(n, [&](index_t i) {
    keys_out[i] = pairs[static_cast<std::size_t>(i)].key;
    values_out[i] = pairs[static_cast<std::size_t>(i)].value;
  });
}

// positions[j] = the number of elements of sorted[0, n) ordered before needles[j] (lower bound: those
// with comp(element, needle)), or not after it (upper bound: those without comp(needle, element)).
template <class K, class Comp>
void sorted_bound(const K* sorted, index_t n, const K* needles, index_t m, Comp comp, bool upper, index_t* positions) {
  parallel_for(m, [&](index_t j) {
    const K& needle = needles[j];
    positions[j] = upper ? std::upper_bound(sorted, sorted + n, needle,
                                            [&](const K& a, const K& b) { return static_cast<bool>(comp(a, b)); }) -
                               sorted
                         : std::lower_bound(sorted, sorted + n, needle,
                                            [&](const K& a, const K& b) { return static_cast<bool>(comp(a, b)); }) -
                               sorted;
  });
}

}  // namespace tessera::kernels::cpu
