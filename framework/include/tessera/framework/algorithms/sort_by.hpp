// Sorting any trivially copyable type: by a comparator, or by a key projection (as C++20's
// std::ranges::sort(range, comp, proj)). The result, as sort's, holds the globally sorted sequence in
// the balanced block partition, and is stable across ranks (equal elements keep their global order).
//
//   sort(a, comp)                        comp(x, y): true when x goes before y (a strict weak ordering)
//   sort(a, comp, proj)                  ordered by comp(proj(x), proj(y))
//   sort_by_key(keys, values, comp)      keys of any type ordered by comp, each value moved with its key
//   sort_by_key(keys, values, comp, proj)
//
// Two paths, one exchange (the sample sort of sort.hpp):
//   radix       comp is tessera::less and the key (proj(x), or x itself) is a radix key (int32,
//               uint32, int64, uint64, float, double): the projected keys are made once
//               (transform), and the radix sort orders them with the elements as values (floating
//               point in IEEE total order, as sort(a)). Values above 8 bytes are moved once, after
//               a radix sort of the keys with their positions.
//   comparator  any other comp: a stable merge sort of each block (kernels::merge_sort), samples that
//               are the keys themselves, compared on the host with comp and searched for on the
//               backend with comp, and a stable merge sort of the received runs.
// comp and proj run on the backend and, on the comparator path, on the host (the samples): they
// must be __host__ __device__ (TESSERA_HOST_DEVICE). Under cuda the call must be in a translation
// unit nvcc compiles.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/algorithms/sort.hpp"
#include "tessera/framework/algorithms/transform.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/merge_sort.hpp"
#include "tessera/kernels/sort.hpp"
#include "tessera/kernels/transform.hpp"

namespace tessera {

// A key and its value in one element (sort_by_key with a projection sorts these).
template <class Key, class Value>
struct KeyValue {
  Key key;
  Value value;
};

namespace detail {

template <class T, class Proj>
using projected_t = std::remove_cvref_t<std::invoke_result_t<Proj&, const T&>>;

// The radix path: tessera::less on a projection (or the element itself) that is a radix key.
template <class T, class Comp, class Proj>
inline constexpr bool sorts_by_radix = std::is_same_v<Comp, less> && kernels::is_radix_key_v<projected_t<T, Proj>>;

template <class Comp, class Proj>
struct ProjectedLess {
  using wrapped_functor = Comp;
  Comp comp;
  Proj proj;
  template <class T>
  TESSERA_HOST_DEVICE bool operator()(const T& a, const T& b) const {
    return comp(proj(a), proj(b));
  }
};

template <class Proj>
struct ProjectKey {
  using wrapped_functor = Proj;
  Proj proj;
  template <class Key, class Value>
  TESSERA_HOST_DEVICE auto operator()(const KeyValue<Key, Value>& kv) const {
    return proj(kv.key);
  }
};

template <class V, class Position = index_t>
struct GatherAt {
  const V* from;
  const Position* at;
  TESSERA_HOST_DEVICE V operator()(index_t i) const { return from[at[i]]; }
};

template <class Key, class Value>
struct ZipKeyValue {
  TESSERA_HOST_DEVICE KeyValue<Key, Value> operator()(const Key& k, const Value& v) const { return {k, v}; }
};
struct KeyOf {
  template <class Key, class Value>
  TESSERA_HOST_DEVICE Key operator()(const KeyValue<Key, Value>& kv) const {
    return kv.key;
  }
};
struct ValueOf {
  template <class Key, class Value>
  TESSERA_HOST_DEVICE Value operator()(const KeyValue<Key, Value>& kv) const {
    return kv.value;
  }
};

// The comparator's order for the sample sort: host comparisons of samples (copied out: samples
// lie unaligned in the gathered bytes) and searches of a sorted block on the backend.
template <class Key, class Comp>
SortOrder comparator_order(const kernels::Queue& queue, Comp comp) {
  require_host_callable<Comp>();
  SortOrder order;
  order.key_bytes = sizeof(Key);
  order.less = [comp](const void* a, const void* b) {
    Key x, y;
    std::memcpy(&x, a, sizeof(Key));
    std::memcpy(&y, b, sizeof(Key));
    return static_cast<bool>(comp(x, y));
  };
  order.bound = [queue, comp](const void* sorted, index_t n, const void* needles, index_t m, bool upper,
                              index_t* positions) {
    kernels::sorted_bound(queue, static_cast<const Key*>(sorted), n, static_cast<const Key*>(needles), m, comp, upper,
                          positions);
  };
  return order;
}

template <class Key, class Value, class Comp>
LocalSortFunction merge_sort_function(const kernels::Queue& queue, Comp comp) {
  return [queue, comp](const void* keys_in, void* keys_out, const void* values_in, void* values_out, index_t n) {
    if constexpr (std::is_void_v<Value>) {
      kernels::merge_sort(queue, static_cast<const Key*>(keys_in), static_cast<Key*>(keys_out), n, comp);
    } else {
      kernels::merge_sort_pairs(queue, static_cast<const Key*>(keys_in), static_cast<Key*>(keys_out),
                                static_cast<const Value*>(values_in), static_cast<Value*>(values_out), n, comp);
    }
  };
}

// A radix sort of keys with values of any size: values of up to 8 bytes move with their keys
// through every pass; larger ones are gathered once, after a sort of the keys with their positions
// (32-bit where the block has fewer than 2^32 elements). With 4-byte keys and 16-byte values an
// 8-bit sort moves 40 bytes per element and pass the first way, 16 and one gather of 48 (a 32-byte
// sector read per value, and its write) the second.
template <class Key, class Value>
LocalSortFunction radix_pairs_function(const kernels::Queue& queue) {
  if constexpr (sizeof(Value) <= 8) {
    return local_sort_function<Key, Value>(queue);
  } else {
    return [queue](const void* keys_in, void* keys_out, const void* values_in, void* values_out, index_t n) {
      if (n == 0) return;
      const auto by_positions = [&](auto zero) {
        using Position = decltype(zero);
        kernels::ScratchBuffer positions(queue, static_cast<std::size_t>(n) * sizeof(Position));
        kernels::iota(queue, positions.as<Position>(), n, Position(0));
        kernels::sort_pairs(queue, static_cast<const Key*>(keys_in), static_cast<Key*>(keys_out),
                            positions.as<const Position>(), positions.as<Position>(), n);
        const GatherAt<Value, Position> gather{static_cast<const Value*>(values_in), positions.as<const Position>()};
        if (values_out != values_in) {
          kernels::transform_index(queue, 0, n, static_cast<Value*>(values_out), gather);
        } else {
          kernels::ScratchBuffer gathered(queue, static_cast<std::size_t>(n) * sizeof(Value));
          kernels::transform_index(queue, 0, n, gathered.as<Value>(), gather);
          kernels::copy_within_async(queue, values_out, gathered.data(), static_cast<std::size_t>(n) * sizeof(Value));
        }
      };
      if (n < (index_t(1) << 32)) {
        by_positions(std::uint32_t{0});
      } else {
        by_positions(index_t{0});
      }
    };
  }
}

// The elements of `array` sorted by the radix key proj(x): the keys made once, the elements their values.
template <class T, class Proj>
DistArray<T> sort_by_projection(const DistArray<T>& array, Proj proj, PhaseTimes* times, SortPhaseTimes* sort_times) {
  using Key = projected_t<T, Proj>;
  const Context& ctx = array.context();
  PhaseTimes projection;
  const DistArray<Key> keys = tessera::transform(array, proj, times ? &projection : nullptr);
  if (times) times->local += projection.total();
  const SortedBlocks blocks =
      distributed_sort(ctx, array.partition(), radix_order<Key>(), keys.local_data(), sizeof(T), array.local_data(),
                       false, false, radix_pairs_function<Key, T>(ctx.queue()), times, sort_times);
  return adopt_sorted_block<T>(ctx, array.global_size(), blocks.values);
}

}  // namespace detail

// The collectives of one sort(a, comp[, proj]) of an array of Key in `partition` on `rank`
// (Value = void), or of sort_by_key(keys, values, comp[, proj]) (collective_plan.hpp): sort.hpp's
// sort_plan on the radix path (sort_by_key with a projection moves each key with its value as one
// KeyValue), the same four collectives with the keys themselves as samples on the comparator path.
template <class Key, class Comp, class Proj = identity_fn, class Value = void>
CollectivePlan comparator_sort_plan(const Partition& partition, int rank) {
  constexpr std::size_t value_bytes = [] {
    if constexpr (std::is_void_v<Value>) {
      return std::size_t{0};
    } else {
      return sizeof(Value);
    }
  }();
  if constexpr (detail::sorts_by_radix<Key, Comp, Proj>) {
    using Radix = detail::projected_t<Key, Proj>;
    if constexpr (std::is_same_v<Proj, identity_fn>) {
      return sort_plan(partition, rank, sizeof(Radix), value_bytes);
    } else if constexpr (std::is_void_v<Value>) {
      return sort_plan(partition, rank, sizeof(Radix), sizeof(Key));
    } else {
      return sort_plan(partition, rank, sizeof(Radix), sizeof(KeyValue<Key, Value>));
    }
  } else {
    return detail::sample_sort_plan(partition, rank, sizeof(Key), sizeof(Key) + value_bytes);
  }
}

template <class T, class Comp, class Proj>
  requires detail::is_functor_argument<Comp>
DistArray<T> sort(const DistArray<T>& array, Comp comp, Proj proj, PhaseTimes* times = nullptr,
                  SortPhaseTimes* sort_times = nullptr) {
  static_assert(kernels::detail::invocable_with<Proj, const T&>, "sort: the projection cannot take the element type");
  if constexpr (detail::sorts_by_radix<T, Comp, Proj>) {
    if constexpr (std::is_same_v<Proj, identity_fn>) {
      return tessera::sort(array, times, sort_times);
    } else {
      return detail::sort_by_projection(array, proj, times, sort_times);
    }
  } else {
    using Key = detail::projected_t<T, Proj>;
    static_assert(kernels::detail::invocable_r_with<bool, Comp, const Key&, const Key&>,
                  "sort: the comparator must take two (projected) elements and return bool");
    const detail::ProjectedLess<Comp, Proj> order{comp, proj};
    const Context& ctx = array.context();
    const detail::SortedBlocks blocks = detail::distributed_sort(
        ctx, array.partition(), detail::comparator_order<T>(ctx.queue(), order), array.local_data(), 0, nullptr, false,
        true, detail::merge_sort_function<T, void>(ctx.queue(), order), times, sort_times);
    return detail::adopt_sorted_block<T>(ctx, array.global_size(), blocks.keys);
  }
}

template <class T, class Comp>
  requires detail::is_functor_argument<Comp>
DistArray<T> sort(const DistArray<T>& array, Comp comp, PhaseTimes* times = nullptr,
                  SortPhaseTimes* sort_times = nullptr) {
  return tessera::sort(array, comp, identity_fn{}, times, sort_times);
}

// keys and values must have the same context and partition.
template <class Key, class Value, class Comp, class Proj>
  requires detail::is_functor_argument<Comp>
SortedPairs<Key, Value> sort_by_key(const DistArray<Key>& keys, const DistArray<Value>& values, Comp comp, Proj proj,
                                    PhaseTimes* times = nullptr, SortPhaseTimes* sort_times = nullptr) {
  static_assert(kernels::detail::invocable_with<Proj, const Key&>, "sort_by_key: the projection cannot take the key type");
  const Context& ctx = keys.context();
  detail::require_same_layout(ctx, keys.partition(), values.context(), values.partition(), "sort_by_key");
  if constexpr (detail::sorts_by_radix<Key, Comp, Proj> && std::is_same_v<Proj, identity_fn>) {
    const detail::SortedBlocks blocks = detail::distributed_sort(
        ctx, keys.partition(), detail::radix_order<Key>(), keys.local_data(), sizeof(Value), values.local_data(),
        false, true, detail::radix_pairs_function<Key, Value>(ctx.queue()), times, sort_times);
    return {detail::adopt_sorted_block<Key>(ctx, keys.global_size(), blocks.keys),
            detail::adopt_sorted_block<Value>(ctx, keys.global_size(), blocks.values)};
  } else if constexpr (detail::sorts_by_radix<Key, Comp, Proj>) {
    // Each key travels with its value as one element, sorted by the projection of its key.
    DistArray<KeyValue<Key, Value>> pairs(ctx, keys.partition());
    tessera::transform(keys, values, pairs, detail::ZipKeyValue<Key, Value>{});
    const DistArray<KeyValue<Key, Value>> sorted =
        detail::sort_by_projection(pairs, detail::ProjectKey<Proj>{proj}, times, sort_times);
    return {tessera::transform(sorted, detail::KeyOf{}), tessera::transform(sorted, detail::ValueOf{})};
  } else {
    using Projected = detail::projected_t<Key, Proj>;
    static_assert(kernels::detail::invocable_r_with<bool, Comp, const Projected&, const Projected&>,
                  "sort_by_key: the comparator must take two (projected) keys and return bool");
    const detail::ProjectedLess<Comp, Proj> order{comp, proj};
    const detail::SortedBlocks blocks = detail::distributed_sort(
        ctx, keys.partition(), detail::comparator_order<Key>(ctx.queue(), order), keys.local_data(), sizeof(Value),
        values.local_data(), false, true, detail::merge_sort_function<Key, Value>(ctx.queue(), order), times,
        sort_times);
    return {detail::adopt_sorted_block<Key>(ctx, keys.global_size(), blocks.keys),
            detail::adopt_sorted_block<Value>(ctx, keys.global_size(), blocks.values)};
  }
}

template <class Key, class Value, class Comp>
  requires detail::is_functor_argument<Comp>
SortedPairs<Key, Value> sort_by_key(const DistArray<Key>& keys, const DistArray<Value>& values, Comp comp,
                                    PhaseTimes* times = nullptr, SortPhaseTimes* sort_times = nullptr) {
  return tessera::sort_by_key(keys, values, comp, identity_fn{}, times, sort_times);
}

}  // namespace tessera
