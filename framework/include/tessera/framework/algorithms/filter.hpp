// Filters and counts with a predicate (any callable taking an element, returning a bool; the
// run-time Predicate<T> of predicate.hpp is one of them).
//
//   filter(a, pred) / copy_if(a, pred)   the elements that satisfy pred, in global order
//   remove_if(a, pred)                   the elements that do not
//   count_if(a, pred)                    how many satisfy pred (on every rank)
//   all_of / any_of / none_of(a, pred)
//
// filter: local select (kept elements written contiguously, and counted) -> one MPI_Allgather of the
// counts, which gives every rank the ragged partition (each rank's global offset is the exclusive
// scan of the counts, the total their sum) -> fix-up: the selected block becomes the result's.
// The select writes straight into storage of the input block's size, which the result adopts (no
// copy of the kept elements, which would cost 2 x kept x sizeof(T) bytes of traffic, 40% of select
// plus copy when half is kept); where fewer than a third are kept, the result moves to an exact-size
// block instead, so that a result never holds more than three times its own size
// (DistArray::local_capacity; shrink_to_fit() releases the rest). rebalance() restores the block
// partition.
//
// count_if: local count -> MPI_Allreduce of one count (the comparisons of predicate.hpp, IsGreater<T>
// and the others, or the run-time Predicate<T>), or an MPI_Allgather of the counts (any other
// predicate, so that a predicate that throws on one rank stops every rank).
//
//   find_if(a, pred) / find(a, value)    the lowest global index of a hit, N where none
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/predicate.hpp"
#include "tessera/kernels/reduce.hpp"
#include "tessera/kernels/select.hpp"

namespace tessera {

namespace detail {

template <class Pred>
struct Not {
  using wrapped_functor = Pred;
  Pred pred;
  template <class T>
  TESSERA_HOST_DEVICE bool operator()(const T& x) const {
    return !pred(x);
  }
};

// The library's comparisons (predicate.hpp): they cannot throw, so that their counts may be summed
// with one allreduce.
template <class T, class Pred>
inline constexpr bool is_runtime_predicate = is_builtin_predicate<T, Pred>;

}  // namespace detail

// The collectives of one filter / copy_if / remove_if call (collective_plan.hpp): one allgather of
// the kept counts.
template <class T>
CollectivePlan filter_plan() {
  return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<index_t>))}};
}

// Of one count_if / all_of / any_of / none_of call: one allreduce of the count (the comparisons of
// predicate.hpp, or Predicate<T>), or one allgather of the counts (any other predicate).
template <class T, class Pred>
CollectivePlan count_if_plan() {
  if constexpr (detail::is_runtime_predicate<T, Pred>) {
    return {{Collective::allreduce, static_cast<double>(sizeof(index_t))}};
  } else {
    return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<index_t>))}};
  }
}

template <class T, class Pred>
DistArray<T> filter(const DistArray<T>& array, Pred pred, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_r_with<bool, Pred, const T&>, "filter: the predicate cannot take the array's element type");
  const Context& ctx = array.context();
  const index_t n = array.local_size();
  Stopwatch setup;
  struct Storage {  // owned here until the result adopts it (or an exception unwinds)
    const kernels::Queue& queue;
    T* data;
    ~Storage() { kernels::deallocate(queue, data); }
  } storage{ctx.queue(), static_cast<T*>(kernels::allocate(ctx.queue(), static_cast<std::size_t>(n) * sizeof(T)))};
  if (times) times->host += setup.seconds();

  return detail::three_phases(
      ctx, times,
      // Local: select and count (the count to the host). An empty block keeps nothing and launches nothing.
      [&] {
        return detail::try_local([&]() -> index_t {
          if (n == 0) return 0;
          return detail::result_on_host<index_t>(
              ctx, [&](index_t* kept) { kernels::select(ctx.queue(), array.local_data(), n, pred, storage.data, kept); });
        });
      },
      // Global: the counts of all ranks -> the ragged partition (offsets and total on every rank).
      [&](detail::LocalOutcome<index_t>&& kept) {
        const std::vector<index_t> counts = detail::gather_values(ctx.comm(), kept, "filter");
        return Partition::from_counts(counts);
      },
      // Fix-up: the result takes the selected block (or an exact-size copy of it, see above).
      [&](Partition partition) {
        const index_t kept = partition.local_size(ctx.rank());
        DistArray<T> out = DistArray<T>::adopt_local(ctx, std::move(partition), std::exchange(storage.data, nullptr), n);
        if (kept * 3 < n) out.shrink_to_fit();
        return out;
      });
}

template <class T, class Pred>
DistArray<T> copy_if(const DistArray<T>& array, Pred pred, PhaseTimes* times = nullptr) {
  return tessera::filter(array, pred, times);
}

template <class T, class Pred>
DistArray<T> remove_if(const DistArray<T>& array, Pred pred, PhaseTimes* times = nullptr) {
  return tessera::filter(array, detail::Not<Pred>{pred}, times);
}

template <class T, class Pred>
index_t count_if(const DistArray<T>& array, Pred pred, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_r_with<bool, Pred, const T&>,
                "count_if: the predicate cannot take the array's element type");
  const Context& ctx = array.context();
  return detail::three_phases(
      ctx, times,
      // Local: this block's count (to the host).
      [&] {
        return detail::try_local([&] {
          return detail::result_on_host<index_t>(ctx, [&](index_t* out) {
            kernels::count_if(ctx.queue(), array.local_data(), array.local_size(), pred, out);
          });
        });
      },
      // Global: the total on every rank.
      [&](detail::LocalOutcome<index_t>&& local_count) -> index_t {
        if constexpr (detail::is_runtime_predicate<T, Pred>) {
          return ctx.comm().allreduce(detail::value_or_rethrow(std::move(local_count)), ReduceOp::sum);
        } else {
          index_t total = 0;
          for (index_t c : detail::gather_values(ctx.comm(), local_count, "count_if")) total += c;
          return total;
        }
      },
      detail::no_fixup);
}

namespace detail {

// f(i) = i where pred(data[i]), else `none`: the first hit is the minimum.
template <class T, class Pred>
struct HitAt {
  using wrapped_functor = Pred;
  const T* data;
  Pred pred;
  index_t none;
  TESSERA_HOST_DEVICE index_t operator()(index_t i) const { return pred(data[i]) ? i : none; }
};

template <class T>
struct EqualTo {
  T value;
  TESSERA_HOST_DEVICE bool operator()(const T& x) const { return x == value; }
};

}  // namespace detail

// The collectives of one find_if / find call (collective_plan.hpp): one allgather of each rank's
// first hit.
template <class T>
CollectivePlan find_if_plan() {
  return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<index_t>))}};
}

// The lowest global index i with pred(a[i]), or N (the global size) when there is none. Collective:
// each rank's first hit in its block (a min-reduction of hit indices), then one allgather; the
// first rank in rank order that has one gives the answer, the same on every rank.
template <class T, class Pred>
index_t find_if(const DistArray<T>& array, Pred pred, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_r_with<bool, Pred, const T&>,
                "find_if: the predicate cannot take the array's element type (const T&)");
  const Context& ctx = array.context();
  const index_t n = array.local_size();
  return detail::three_phases(
      ctx, times,
      // Local: this block's first hit (n where none).
      [&] {
        return detail::try_local([&] {
          return detail::result_on_host<index_t>(ctx, [&](index_t* out) {
            kernels::transform_reduce_index(ctx.queue(), 0, n, detail::HitAt<T, Pred>{array.local_data(), pred, n},
                                            minimum{}, n, out);
          });
        });
      },
      // Global: every rank's first hit; the lowest rank with one has the lowest global index.
      [&](detail::LocalOutcome<index_t>&& mine) {
        const std::vector<index_t> hits = detail::gather_values(ctx.comm(), mine, "find_if");
        const Partition& part = array.partition();
        for (int r = 0; r < ctx.size(); ++r)
          if (hits[static_cast<std::size_t>(r)] < part.local_size(r)) return part.offset(r) + hits[static_cast<std::size_t>(r)];
        return array.global_size();
      },
      detail::no_fixup);
}

// The lowest global index i with a[i] == value, or N.
template <class T>
index_t find(const DistArray<T>& array, const T& value, PhaseTimes* times = nullptr) {
  return find_if(array, detail::EqualTo<T>{value}, times);
}

template <class T, class Pred>
bool any_of(const DistArray<T>& array, Pred pred, PhaseTimes* times = nullptr) {
  return tessera::count_if(array, pred, times) > 0;
}

template <class T, class Pred>
bool all_of(const DistArray<T>& array, Pred pred, PhaseTimes* times = nullptr) {
  return tessera::count_if(array, detail::Not<Pred>{pred}, times) == 0;
}

template <class T, class Pred>
bool none_of(const DistArray<T>& array, Pred pred, PhaseTimes* times = nullptr) {
  return tessera::count_if(array, pred, times) == 0;
}

// Precompiled in the framework library.
#define TESSERA_EXTERN_FILTER(T)                                                                        \
  extern template DistArray<T> filter<T, Predicate<T>>(const DistArray<T>&, Predicate<T>, PhaseTimes*); \
  extern template index_t count_if<T, Predicate<T>>(const DistArray<T>&, Predicate<T>, PhaseTimes*);
TESSERA_EXTERN_FILTER(std::int32_t)
TESSERA_EXTERN_FILTER(std::int64_t)
TESSERA_EXTERN_FILTER(float)
TESSERA_EXTERN_FILTER(double)
#undef TESSERA_EXTERN_FILTER

}  // namespace tessera
