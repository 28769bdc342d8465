// Runs of equal keys, across rank borders: keys k[i-1], k[i] with pred(k[i-1], k[i]) are in one run
// (pred: equal_to by default; an equivalence of neighbours), wherever the rank border falls. The
// input is typically sorted, so that each key forms one run, but need not be (as std::unique and
// thrust::reduce_by_key, consecutive equal keys only).
//
//   unique(a, pred)                         the first element of each run, in order
//   unique_by_key(keys, values, pred)       the first key of each run and its value
//   reduce_by_key(keys, values, op, pred)   the first key of each run and the fold of its values
//   inclusive_scan_by_key(keys, values, op, pred)     out[i] = v[s] op ... op v[i], s the first index of i's run
//   exclusive_scan_by_key(keys, values, op, pred, init)   out[i] = init op v[s] op ... op v[i-1]
//
// op: associative (it need not commute and needs no identity: values fold in index order, ranks in
// rank order). The outputs of unique, unique_by_key and reduce_by_key are ragged (as filter's: each
// rank keeps the runs that start in its block; rebalance() restores the block partition); the scans'
// outputs have the values' partition. keys and values: same context and partition.
//
// local   the block's runs (kernels/by_key.hpp: one scan_indexed pass); the block's first and last
//         key, and (reduce_by_key, scans) the folds of its first and last runs
// global  one allgather of those border records: every rank sees where runs cross borders
// fix-up  a run that began on an earlier rank is that rank's: its first output is dropped here
//         (the kept ones move down by one, an exact-size copy), and the rank where a run begins
//         folds in the continuing ranks' parts (reduce_by_key); the scans run seeded with the fold
//         of the run's values on earlier ranks
// pred and op run on the backend and on the host (the border records): __host__ __device__.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/by_key.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/transform.hpp"

namespace tessera {

// Keys and their values, each a DistArray (unique_by_key, reduce_by_key).
template <class K, class V>
struct KeyedArrays {
  DistArray<K> keys;
  DistArray<V> values;
};

namespace detail {

template <class Pred, class K>
constexpr void require_key_predicate(const char* = nullptr) {
  static_assert(kernels::detail::invocable_r_with<bool, Pred, const K&, const K&>,
                "by key / unique: pred must take two keys (const K&, const K&) and return bool");
}

// Backend storage of `n` elements, freed unless adopted.
template <class T>
struct LocalStorage {
  const kernels::Queue& queue;
  T* data;
  LocalStorage(const kernels::Queue& q, index_t n)
      : queue(q), data(static_cast<T*>(kernels::allocate(q, kernels::array_bytes(n, sizeof(T), "a block")))) {}
  ~LocalStorage() {
    if (data) kernels::deallocate(queue, data);
  }
  LocalStorage(const LocalStorage&) = delete;
  LocalStorage& operator=(const LocalStorage&) = delete;
};

// The block `storage` (room for `capacity` elements) holding `count` kept elements from index
// `first` (0 or 1) becomes this rank's part of an array in `partition`: adopted as it is where
// first == 0 (moved to exact-size storage where fewer than a third of it is used, as filter does),
// copied down by one into exact-size storage otherwise.
template <class T>
DistArray<T> adopt_kept(const Context& ctx, Partition partition, LocalStorage<T>& storage, index_t capacity,
                        index_t first) {
  const index_t kept = partition.local_size(ctx.rank());
  if (first == 0) {
    DistArray<T> out = DistArray<T>::adopt_local(ctx, std::move(partition), std::exchange(storage.data, nullptr), capacity);
    if (kept * 3 < capacity) out.shrink_to_fit();
    return out;
  }
  DistArray<T> out(ctx, std::move(partition));
  if (kept > 0)
    kernels::copy_within_async(ctx.queue(), out.local_data(), storage.data + first,
                               static_cast<std::size_t>(kept) * sizeof(T));
  return out;
}

// Where each rank's first run began: on an earlier rank (the last non-empty rank before it ends
// in the run: pred(its last key, this first key)) or here. first/last keys of every rank; has[r]:
// rank r holds elements.
template <class K, class Pred>
std::vector<bool> continues_from_before(const std::vector<K>& first, const std::vector<K>& last,
                                        const std::vector<bool>& has, Pred& pred) {
  std::vector<bool> continues(first.size(), false);
  const K* previous_last = nullptr;
  for (std::size_t r = 0; r < first.size(); ++r) {
    if (!has[r]) continue;
    continues[r] = previous_last != nullptr && pred(*previous_last, first[r]);
    previous_last = &last[r];
  }
  return continues;
}

template <class K>
struct UniqueBorder {
  K first{};
  K last{};
  index_t kept = 0;
  std::int32_t has = 0;
};

template <class K, class V>
struct RunBorder {
  K first{};
  K last{};
  V first_run{};  // the fold of the block's first run (reduce_by_key)
  V last_run{};   // the fold of the block's last run
  index_t runs = 0;
  std::int32_t has = 0;
};

// The border of a block of n > 0 keys, made on the backend after the runs' kernel left their count
// at *count (in queue order): its first and last key, and (RunBorder) the folds of its first and
// last run, at 0 and *count - 1 of the folds. One launch in place of a copy per field.
template <class K>
struct UniqueBorderOf {
  const K* keys;
  index_t n;
  const index_t* count;
  TESSERA_HOST_DEVICE UniqueBorder<K> operator()(index_t) const { return {keys[0], keys[n - 1], *count, 1}; }
};
template <class K, class V>
struct RunBorderOf {
  const K* keys;
  index_t n;
  const V* folds;
  const index_t* count;
  TESSERA_HOST_DEVICE RunBorder<K, V> operator()(index_t) const {
    return {keys[0], keys[n - 1], folds[0], folds[*count - 1], *count, 1};
  }
};

// unique (WithValues false, values null) and unique_by_key.
template <bool WithValues, class K, class V, class Pred>
std::pair<DistArray<K>, DistArray<V>> unique_blocks(const DistArray<K>& keys, const DistArray<V>* values, Pred pred,
                                                    const char* algorithm, PhaseTimes* times) {
  require_host_callable<Pred>();
  const Context& ctx = keys.context();
  const index_t n = keys.local_size();
  Stopwatch setup;
  LocalStorage<K> kept_keys(ctx.queue(), n);
  std::optional<LocalStorage<V>> kept_values;
  if (values) kept_values.emplace(ctx.queue(), n);
  if (times) times->host += setup.seconds();
  return three_phases(
      {"unique", keys.global_size()}, ctx, times,
      // Local: the runs' first elements, and the block's first and last key.
      [&] {
        return try_local([&] {
          if (n == 0) return UniqueBorder<K>{};
          // The count and (where other ranks need them) the block's first and last key, read back
          // with one wait.
          return result_on_host<UniqueBorder<K>>(ctx, [&](UniqueBorder<K>* border) {
            border->has = 1;
            if constexpr (WithValues) {
              kernels::unique_by_key(ctx.queue(), keys.local_data(), values->local_data(), n, pred, kept_keys.data,
                                     kept_values->data, &border->kept);
            } else {
              kernels::unique(ctx.queue(), keys.local_data(), n, pred, kept_keys.data, &border->kept);
            }
            if (ctx.size() == 1) return;  // no borders to tell
            kernels::transform_index(ctx.queue(), 0, 1, border, UniqueBorderOf<K>{keys.local_data(), n, &border->kept});
          });
        });
      },
      // Global: every rank's border; a first run that began before is not this rank's.
      [&](LocalOutcome<UniqueBorder<K>>&& mine) {
        const std::vector<UniqueBorder<K>> all = gather_values(ctx.comm(), mine, algorithm);
        std::vector<K> first, last;
        std::vector<bool> has;
        for (const auto& b : all) {
          first.push_back(b.first);
          last.push_back(b.last);
          has.push_back(b.has != 0);
        }
        const std::vector<bool> continues = continues_from_before(first, last, has, pred);
        std::vector<index_t> counts;
        for (std::size_t r = 0; r < all.size(); ++r) counts.push_back(all[r].kept - (continues[r] ? 1 : 0));
        return std::pair<Partition, index_t>{Partition::from_counts(counts), continues[static_cast<std::size_t>(ctx.rank())] ? 1 : 0};
      },
      // Fix-up: the kept elements become this rank's part.
      [&](std::pair<Partition, index_t> agreed) {
        DistArray<K> out_keys = adopt_kept(ctx, agreed.first, kept_keys, n, agreed.second);
        DistArray<V> out_values;
        if (values) out_values = adopt_kept(ctx, agreed.first, *kept_values, n, agreed.second);
        return std::pair<DistArray<K>, DistArray<V>>{std::move(out_keys), std::move(out_values)};
      });
}

}  // namespace detail

// The collectives of one unique / unique_by_key call on keys of K (collective_plan.hpp): one
// allgather of each rank's first and last key and kept count.
template <class K>
CollectivePlan unique_plan() {
  return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<detail::UniqueBorder<K>>))}};
}

// Of one reduce_by_key, inclusive_scan_by_key or exclusive_scan_by_key call: one allgather of each
// rank's first and last key, the folds of its first and last run and its run count.
template <class K, class V>
CollectivePlan by_key_plan() {
  return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<detail::RunBorder<K, V>>))}};
}

template <class T, class Pred = equal_to>
DistArray<T> unique(const DistArray<T>& array, Pred pred = {}, PhaseTimes* times = nullptr) {
  detail::require_key_predicate<Pred, T>();
  return detail::unique_blocks<false>(array, static_cast<const DistArray<T>*>(nullptr), pred, "unique", times).first;
}

template <class K, class V, class Pred = equal_to>
KeyedArrays<K, V> unique_by_key(const DistArray<K>& keys, const DistArray<V>& values, Pred pred = {},
                                PhaseTimes* times = nullptr) {
  detail::require_key_predicate<Pred, K>();
  detail::require_same_layout(keys.context(), keys.partition(), values.context(), values.partition(), "unique_by_key");
  auto blocks = detail::unique_blocks<true>(keys, &values, pred, "unique_by_key", times);
  return {std::move(blocks.first), std::move(blocks.second)};
}

template <class K, class V, class Op = plus, class Pred = equal_to>
KeyedArrays<K, V> reduce_by_key(const DistArray<K>& keys, const DistArray<V>& values, Op op = {}, Pred pred = {},
                                PhaseTimes* times = nullptr) {
  detail::require_key_predicate<Pred, K>();
  static_assert(kernels::detail::invocable_r_with<V, Op, const V&, const V&>,
                "reduce_by_key: op must take two values (const V&, const V&) and return a value");
  detail::require_host_callable<Op>();
  detail::require_host_callable<Pred>();
  detail::require_same_layout(keys.context(), keys.partition(), values.context(), values.partition(), "reduce_by_key");
  const Context& ctx = keys.context();
  const index_t n = keys.local_size();
  Stopwatch setup;
  detail::LocalStorage<K> run_keys(ctx.queue(), n);
  detail::LocalStorage<V> run_values(ctx.queue(), n);
  if (times) times->host += setup.seconds();
  struct Agreed {
    Partition partition;
    index_t first = 0;                // 1: this rank's first run began on an earlier rank
    std::optional<V> last_run_total;  // the fold of this rank's last run with its continuation
  };
  return detail::three_phases(
      {"reduce_by_key", keys.global_size()}, ctx, times,
      // Local: the block's runs, and its border: first and last key, first and last run's folds.
      [&] {
        return detail::try_local([&] {
          if (n == 0) return detail::RunBorder<K, V>{};
          // The run count and (where other ranks need them) the block's first and last key and the
          // folds of its first and last run, read back with one wait.
          return detail::result_on_host<detail::RunBorder<K, V>>(ctx, [&](detail::RunBorder<K, V>* b) {
            b->has = 1;
            kernels::reduce_by_key(ctx.queue(), keys.local_data(), values.local_data(), n, pred, op, run_keys.data,
                                   run_values.data, &b->runs);
            if (ctx.size() == 1) return;  // no borders to tell
            kernels::transform_index(ctx.queue(), 0, 1, b,
                                     detail::RunBorderOf<K, V>{keys.local_data(), n, run_values.data, &b->runs});
          });
        });
      },
      // Global: every rank's border. A run that crosses borders belongs to the rank where it
      // begins, which folds in the first runs of the ranks it continues into.
      [&](detail::LocalOutcome<detail::RunBorder<K, V>>&& mine) {
        const std::vector<detail::RunBorder<K, V>> all = detail::gather_values(ctx.comm(), mine, "reduce_by_key");
        std::vector<K> first, last;
        std::vector<bool> has;
        for (const auto& b : all) {
          first.push_back(b.first);
          last.push_back(b.last);
          has.push_back(b.has != 0);
        }
        const std::vector<bool> continues = detail::continues_from_before(first, last, has, pred);
        std::vector<index_t> counts;
        for (std::size_t r = 0; r < all.size(); ++r) counts.push_back(all[r].runs - (continues[r] ? 1 : 0));
        Agreed agreed;
        const auto me = static_cast<std::size_t>(ctx.rank());
        agreed.first = continues[me] ? 1 : 0;
        // This rank's last run is its own unless it is its only run and began before.
        if (all[me].has && !(continues[me] && all[me].runs == 1)) {
          V total = all[me].last_run;
          bool extended = false;
          for (std::size_t r = me + 1; r < all.size(); ++r) {
            if (!has[r]) continue;
            if (!continues[r]) break;
            total = op(total, all[r].first_run);
            extended = true;
            if (all[r].runs > 1) break;  // the run ends inside rank r
          }
          if (extended) agreed.last_run_total = total;
        }
        agreed.partition = Partition::from_counts(counts);
        return agreed;
      },
      // Fix-up: the last run's total where it continued, then this rank's part of the outputs.
      [&](Agreed agreed) {
        if (agreed.last_run_total) {
          const index_t runs = agreed.partition.local_size(ctx.rank()) + agreed.first;
          kernels::copy_from_host(ctx.queue(), run_values.data + (runs - 1), &*agreed.last_run_total, sizeof(V));
        }
        DistArray<K> out_keys = detail::adopt_kept(ctx, agreed.partition, run_keys, n, agreed.first);
        DistArray<V> out_values = detail::adopt_kept(ctx, agreed.partition, run_values, n, agreed.first);
        return KeyedArrays<K, V>{std::move(out_keys), std::move(out_values)};
      });
}

namespace detail {

template <class K, class V, class Op, class Pred>
void scan_by_key(const DistArray<K>& keys, const DistArray<V>& values, DistArray<V>& out, ScanKind kind, Op op,
                 Pred pred, const V& init, const char* algorithm, PhaseTimes* times) {
  require_key_predicate<Pred, K>();
  static_assert(kernels::detail::invocable_r_with<V, Op, const V&, const V&>,
                "scan_by_key: op must take two values (const V&, const V&) and return a value");
  require_host_callable<Op>();
  require_host_callable<Pred>();
  require_same_layout(keys.context(), keys.partition(), values.context(), values.partition(), algorithm);
  require_same_layout(keys.context(), keys.partition(), out.context(), out.partition(), algorithm);
  const Context& ctx = keys.context();
  const index_t n = keys.local_size();
  three_phases(
      {"scan_by_key", keys.global_size()}, ctx, times,
      // Local: the block's run count and the fold of its last run; its first and last key.
      [&] {
        return try_local([&] {
          RunBorder<K, V> border;
          if (n == 0) return border;
          border.has = 1;
          const RunFold<V> tail = result_on_host<RunFold<V>>(ctx, [&](RunFold<V>* total) {
            kernels::reduce_by_key_total(ctx.queue(), keys.local_data(), values.local_data(), n, pred, op, total);
          });
          border.runs = tail.runs;
          border.last_run = tail.value;
          kernels::copy_to_host(ctx.queue(), &border.first, keys.local_data(), sizeof(K));
          kernels::copy_to_host(ctx.queue(), &border.last, keys.local_data() + (n - 1), sizeof(K));
          return border;
        });
      },
      // Global: the fold of the values, on earlier ranks, of the run this block begins in.
      [&](LocalOutcome<RunBorder<K, V>>&& mine) {
        const std::vector<RunBorder<K, V>> all = gather_values(ctx.comm(), mine, algorithm);
        std::optional<V> carry;  // of the rank being swept: the fold before it of its first run
        std::optional<V> carry_of_me;
        const RunBorder<K, V>* previous = nullptr;
        std::optional<V> carry_of_previous;
        for (int r = 0; r < ctx.size(); ++r) {
          const RunBorder<K, V>& b = all[static_cast<std::size_t>(r)];
          if (!b.has) continue;
          carry.reset();
          if (previous && pred(previous->last, b.first)) {
            // The previous block's last run continues here; where that block is one run, what
            // came before it continues too.
            carry = previous->runs == 1 && carry_of_previous ? op(*carry_of_previous, previous->last_run)
                                                              : previous->last_run;
          }
          if (r == ctx.rank()) carry_of_me = carry;
          previous = &b;
          carry_of_previous = carry;
        }
        return carry_of_me;
      },
      // Fix-up: the scan of each run, seeded with the carry for the first.
      [&](std::optional<V> carry) {
        kernels::scan_by_key(ctx.queue(), keys.local_data(), values.local_data(), out.local_data(), n, kind, op, init,
                             pred, carry);
      });
}

}  // namespace detail

template <class K, class V, class Op = plus, class Pred = equal_to>
  requires detail::is_functor_argument<Op>
DistArray<V> inclusive_scan_by_key(const DistArray<K>& keys, const DistArray<V>& values, Op op = {}, Pred pred = {},
                                   PhaseTimes* times = nullptr) {
  DistArray<V> out(values.context(), values.partition());
  detail::scan_by_key(keys, values, out, ScanKind::inclusive, op, pred, V{}, "inclusive_scan_by_key", times);
  return out;
}

template <class K, class V, class Op, class Pred>
  requires detail::is_functor_argument<Op>
DistArray<V> exclusive_scan_by_key(const DistArray<K>& keys, const DistArray<V>& values, Op op, Pred pred,
                                   std::type_identity_t<V> init, PhaseTimes* times = nullptr) {
  DistArray<V> out(values.context(), values.partition());
  detail::scan_by_key(keys, values, out, ScanKind::exclusive, op, pred, init, "exclusive_scan_by_key", times);
  return out;
}

template <class K, class V, class Op>
  requires detail::is_functor_argument<Op>
DistArray<V> exclusive_scan_by_key(const DistArray<K>& keys, const DistArray<V>& values, Op op,
                                   std::type_identity_t<V> init, PhaseTimes* times = nullptr) {
  return tessera::exclusive_scan_by_key(keys, values, op, equal_to{}, init, times);
}

}  // namespace tessera
