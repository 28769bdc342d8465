// Sorting a distributed array: the result holds the globally sorted sequence in the balanced block
// partition (Partition::block, exactly that of a new array of the same size), stable across ranks.
//
//   sort(a)                      the keys in ascending order
//   sort_by_key(keys, values)    keys in ascending order, each value moved with its key
//   argsort(a)                   the global index (int64) of each element of sort(a) in a
//
// Keys: int32, uint32, int64, uint64, float, double, in the order of kernels::sort_keys (floating
// point in IEEE total order: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN). Stable: equal keys
// keep their global input order, across ranks too. Values: any trivially copyable type of 1 to 16
// bytes (4- and 8-byte ones are precompiled; others need nvcc under cuda).
//
// Sample sort with exact splitting, one exchange:
//   local     radix sort of the block (kernels::sort_pairs / sort_keys)
//   splitters regular samples of every sorted block, oversampled (64 per rank per rank, fewer above
//             32 ranks), reach every rank in one allgather. Each element is ordered by (key, global
//             position), so all elements differ, and for each sample every rank can bound its
//             global rank from the samples alone. For each boundary of the block partition the
//             ranks agree on the two nearest samples that bracket it; each rank finds them in its
//             block (a binary search on the device), and one all-to-all of counts tells every rank
//             where its share starts
//   exchange  one all-to-all of the data, on the exchange skeleton (exchange.hpp): each peer's keys
//             and values straight from the sorted block into the exchange's slots, each message
//             from the 16-byte boundary at or before its run where the path prefers it (NCCL):
//             rank q receives the elements between the bracket below its first position and the
//             bracket above its last, which holds its share exactly plus the two brackets' elements
//             (a few percent of extra traffic; the brackets go to the ranks on both sides)
//   merge     a stable radix sort of the received runs, concatenated in source-rank order (which
//             orders equal keys by global position), skipped where the runs arrive in order (each
//             starts at or above the last key of the one before: one run, sorted input, equal
//             keys); the share is the window [offset - start, offset - start + count) of that.
// So the move to the balanced partition is part of the one exchange, and duplicates cannot overload
// a rank: with all keys equal, the global position decides. One rank: the local sort alone.
// Out of memory for the exchange on any rank: every rank throws OutOfMemory (none waits).
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/sort.hpp"

namespace tessera {

// The seconds of each step of a distributed sort on this rank (the PhaseTimes of the call get:
// local = local_sort, communication = splitters + exchange, fixup = merge).
struct SortPhaseTimes {
  double local_sort = 0;  // the local radix sort of the block
  double splitters = 0;   // samples, their allgather, the bracket searches, the counts' all-to-all
  double exchange = 0;    // the all-to-all of the data (packing and unpacking included)
  double merge = 0;       // the sort of the received runs and the copy of the rank's share
  double exchange_bytes = 0;  // not a time: the bytes this rank sent to other ranks plus those it
                              // received from them in the exchange
  SortPhaseTimes& operator+=(const SortPhaseTimes& o) {
    local_sort += o.local_sort;
    splitters += o.splitters;
    exchange += o.exchange;
    merge += o.merge;
    exchange_bytes += o.exchange_bytes;
    return *this;
  }
};

template <class Key, class Value>
struct SortedPairs {
  DistArray<Key> keys;
  DistArray<Value> values;
};

// The collectives a distributed sort of an array in `partition` makes on `rank` (collective_plan.hpp),
// keys of key_bytes and values of value_bytes each (0: keys alone; 8 for argsort and
// sort_with_indices): none on one rank or for an empty array; otherwise one allgather of the
// samples, one all-to-all of the peers' ranges (4 int64 per peer), one allreduce that agrees on the
// exchange's memory, and the exchange of every element of this rank's block. The exchange sends a
// few percent more than the plan says: the elements between the two samples that bracket a
// boundary go to the ranks on both sides of it, and each message to another rank starts up to 15
// bytes before its run.
CollectivePlan sort_plan(const Partition& partition, int rank, std::size_t key_bytes, std::size_t value_bytes = 0);

namespace detail {

// Sorts n keys (and values, where value pointers are not null) from *_in into *_out (in place
// allowed), with the caller's types: the one place the element types matter.
using LocalSortFunction =
    std::function<void(const void* keys_in, void* keys_out, const void* values_in, void* values_out, index_t n)>;

struct SortKeyFormat {
  int bytes = 4;
  std::uint64_t sign_mask = 0;
  std::uint64_t float_mask = 0;
};

template <class Key>
SortKeyFormat sort_key_format() {
  using Traits = kernels::RadixKey<Key>;
  return {static_cast<int>(sizeof(Key)), Traits::kSignMask, Traits::kFloatMask};
}

// How the sample sort orders keys of key_bytes bytes: by their radix bits (radix: the radix keys'
// format), or, where `less` is set, by a comparator (sort_by.hpp): `less` compares two keys in host
// memory, `bound` finds the lower (upper) bounds of m needles in a sorted block (backend memory
// both; positions: backend memory of m index_t).
struct SortOrder {
  std::size_t key_bytes = 0;
  SortKeyFormat radix;
  std::function<bool(const void* a, const void* b)> less;
  std::function<void(const void* sorted, index_t n, const void* needles, index_t m, bool upper, index_t* positions)>
      bound;
};

template <class Key>
SortOrder radix_order() {
  return SortOrder{sizeof(Key), sort_key_format<Key>(), {}, {}};
}

// The collectives of the sample sort: samples of sample_bytes bytes (8: radix bits; a comparator
// sort's keys themselves), elements of element_bytes (key and value) in the exchange.
CollectivePlan sample_sort_plan(const Partition& partition, int rank, std::size_t sample_bytes,
                                std::size_t element_bytes);

// This rank's blocks of the result (kernels::allocate on the context's queue; null where empty or
// not asked for), in the block partition of the input's global size.
struct SortedBlocks {
  void* keys = nullptr;
  void* values = nullptr;
};

// The distributed sort of algorithms/sort.hpp on bytes: keys in `order`, values of value_bytes
// bytes (0: none; index_values: the int64 global index of each key, made here), the result's keys
// only if want_keys.
SortedBlocks distributed_sort(const Context& ctx, const Partition& partition, const SortOrder& order, const void* keys,
                              std::size_t value_bytes, const void* values, bool index_values, bool want_keys,
                              const LocalSortFunction& local_sort, PhaseTimes* times, SortPhaseTimes* sort_times);

template <class Key, class Value>
LocalSortFunction local_sort_function(const kernels::Queue& queue) {
  return [queue](const void* keys_in, void* keys_out, const void* values_in, void* values_out, index_t n) {
    if constexpr (std::is_void_v<Value>) {
      kernels::sort_keys(queue, static_cast<const Key*>(keys_in), static_cast<Key*>(keys_out), n);
    } else {
      kernels::sort_pairs(queue, static_cast<const Key*>(keys_in), static_cast<Key*>(keys_out),
                          static_cast<const Value*>(values_in), static_cast<Value*>(values_out), n);
    }
  };
}

template <class T>
DistArray<T> adopt_sorted_block(const Context& ctx, index_t global_size, void* block) {
  Partition block_partition = Partition::block(global_size, ctx.size());
  const index_t local = block_partition.local_size(ctx.rank());
  return DistArray<T>::adopt_local(ctx, std::move(block_partition), static_cast<T*>(block), local);
}

}  // namespace detail

template <class Key>
DistArray<Key> sort(const DistArray<Key>& keys, PhaseTimes* times = nullptr, SortPhaseTimes* sort_times = nullptr) {
  kernels::detail::require_sort_key<Key>();
  const Context& ctx = keys.context();
  const detail::SortedBlocks blocks = detail::distributed_sort(
      ctx, keys.partition(), detail::radix_order<Key>(), keys.local_data(), 0, nullptr, false, true,
      detail::local_sort_function<Key, void>(ctx.queue()), times, sort_times);
  return detail::adopt_sorted_block<Key>(ctx, keys.global_size(), blocks.keys);
}

// keys and values must have the same context and partition.
template <class Key, class Value>
SortedPairs<Key, Value> sort_by_key(const DistArray<Key>& keys, const DistArray<Value>& values,
                                    PhaseTimes* times = nullptr, SortPhaseTimes* sort_times = nullptr) {
  kernels::detail::require_sort_key<Key>();
  static_assert(sizeof(Value) <= 16, "sort_by_key: values of at most 16 bytes");
  const Context& ctx = keys.context();
  detail::require_same_layout(ctx, keys.partition(), values.context(), values.partition(), "sort_by_key");
  const detail::SortedBlocks blocks = detail::distributed_sort(
      ctx, keys.partition(), detail::radix_order<Key>(), keys.local_data(), sizeof(Value), values.local_data(),
      false, true, detail::local_sort_function<Key, Value>(ctx.queue()), times, sort_times);
  return {detail::adopt_sorted_block<Key>(ctx, keys.global_size(), blocks.keys),
          detail::adopt_sorted_block<Value>(ctx, keys.global_size(), blocks.values)};
}

// The global index (0 .. N-1) of each element of sort(keys) in keys: applying it to another array
// with the same partition orders that array by these keys.
template <class Key>
DistArray<index_t> argsort(const DistArray<Key>& keys, PhaseTimes* times = nullptr,
                           SortPhaseTimes* sort_times = nullptr) {
  kernels::detail::require_sort_key<Key>();
  const Context& ctx = keys.context();
  const detail::SortedBlocks blocks = detail::distributed_sort(
      ctx, keys.partition(), detail::radix_order<Key>(), keys.local_data(), sizeof(index_t), nullptr, true, false,
      detail::local_sort_function<Key, index_t>(ctx.queue()), times, sort_times);
  return detail::adopt_sorted_block<index_t>(ctx, keys.global_size(), blocks.values);
}

// The sorted keys and, for each, its global index in keys (sort and argsort in one sort).
template <class Key>
SortedPairs<Key, index_t> sort_with_indices(const DistArray<Key>& keys, PhaseTimes* times = nullptr,
                                            SortPhaseTimes* sort_times = nullptr) {
  kernels::detail::require_sort_key<Key>();
  const Context& ctx = keys.context();
  const detail::SortedBlocks blocks = detail::distributed_sort(
      ctx, keys.partition(), detail::radix_order<Key>(), keys.local_data(), sizeof(index_t), nullptr, true, true,
      detail::local_sort_function<Key, index_t>(ctx.queue()), times, sort_times);
  return {detail::adopt_sorted_block<Key>(ctx, keys.global_size(), blocks.keys),
          detail::adopt_sorted_block<index_t>(ctx, keys.global_size(), blocks.values)};
}

}  // namespace tessera
