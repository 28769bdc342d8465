// --verify of the sort app: checks that scale with the run (no rank holds more than its own blocks):
// the same count, the same multiset of keys (two 64-bit hash sums, before and after, combined with
// integer MPI sums), and the order within every rank and across every border (is_sorted). With the
// indices of an argsort, the multiset is that of (key, original index) pairs and the order is that of
// (key, index): every index is its key's original position, and equal keys kept their order.
//
// Collective; the same Verdict on every rank. The functors run on the arrays' backend (a translation
// unit that nvcc compiles for the cuda backend).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "app.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/sort_order.hpp"

namespace tessera::apps::verify {

// Two independent 64-bit hashes of a key's bits (or of a key and its index), summed modulo 2^64
// over the whole array: equal for any order of the same multiset, and different for a changed
// one except with probability about 2^-128.
struct HashPair {
  std::uint64_t a = 0, b = 0;
};
struct AddHashes {
  static constexpr bool commutative = true;
  TESSERA_HOST_DEVICE HashPair operator()(const HashPair& x, const HashPair& y) const { return {x.a + y.a, x.b + y.b}; }
};
TESSERA_HOST_DEVICE inline HashPair hash_bits(std::uint64_t bits, std::uint64_t index) {
  return {mix64(mix64(bits ^ 0x243f6a8885a308d3ull) + index),
          mix64(mix64(bits + 0x13198a2e03707344ull) ^ (index * 0xa4093822299f31d0ull))};
}

template <class T>
struct HashKey {
  TESSERA_HOST_DEVICE HashPair operator()(const T& key) const { return hash_bits(kernels::radix_bits(key), 0); }
};

template <class T>
struct KeyIndex {
  T key;
  index_t index;
};
template <class T>
struct MakeKeyIndex {
  TESSERA_HOST_DEVICE KeyIndex<T> operator()(const T& key, const index_t& index) const { return {key, index}; }
};
template <class T>
struct HashKeyIndex {
  TESSERA_HOST_DEVICE HashPair operator()(const KeyIndex<T>& p) const {
    return hash_bits(kernels::radix_bits(p.key), static_cast<std::uint64_t>(p.index) + 1);
  }
};
// (key, index) in the sorts' order, the index deciding among equal keys: sorted and stable.
template <class T>
struct KeyThenIndex {
  TESSERA_HOST_DEVICE bool operator()(const KeyIndex<T>& x, const KeyIndex<T>& y) const {
    const auto bx = kernels::radix_bits(x.key), by = kernels::radix_bits(y.key);
    return bx < by || (bx == by && x.index < y.index);
  }
};

inline std::string hex(std::uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// `sorted` (and `indices`, the argsort, or null) against `input`: see the top of this file.
template <class T>
Verdict check_sort(const DistArray<T>& input, const DistArray<T>& sorted, const DistArray<index_t>* indices) {
  Verdict v;
  if (sorted.global_size() != input.global_size() ||
      !(sorted.partition() == Partition::block(input.global_size(), input.context().size()))) {
    v.ok = false;
    v.detail = "the result holds " + std::to_string(sorted.global_size()) + " keys in a partition other than the " +
               "block partition of the " + std::to_string(input.global_size()) + " inputs";
    return v;
  }
  const index_t n = input.global_size();
  HashPair before, after;
  bool in_order = false;
  if (!indices) {
    before = transform_reduce(input, HashKey<T>{}, AddHashes{}, HashPair{});
    after = transform_reduce(sorted, HashKey<T>{}, AddHashes{}, HashPair{});
    in_order = is_sorted(sorted, kernels::radix_less{});
  } else {
    DistArray<index_t> positions(input.context(), input.partition());
    positions.iota();
    DistArray<KeyIndex<T>> pairs_before(input.context(), input.partition());
    transform(input, positions, pairs_before, MakeKeyIndex<T>{});
    before = transform_reduce(pairs_before, HashKeyIndex<T>{}, AddHashes{}, HashPair{});
    DistArray<KeyIndex<T>> pairs_after(sorted.context(), sorted.partition());
    transform(sorted, *indices, pairs_after, MakeKeyIndex<T>{});
    after = transform_reduce(pairs_after, HashKeyIndex<T>{}, AddHashes{}, HashPair{});
    in_order = is_sorted(pairs_after, KeyThenIndex<T>{});
  }
  const bool same = before.a == after.a && before.b == after.b;
  v.ok = same && in_order;
  const std::string what = indices ? "(key, index) pairs" : "keys";
  v.detail = std::to_string(n) + " " + what + (in_order ? " in order" : " NOT in order") +
             (indices ? " (sorted and stable)" : "") + " within and across ranks; multiset checksum " +
             (same ? hex(after.a) + hex(after.b) + " unchanged"
                   : hex(before.a) + hex(before.b) + " before, " + hex(after.a) + hex(after.b) + " after");
  return v;
}

}  // namespace tessera::apps::verify
