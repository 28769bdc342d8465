// Algorithms about the order of elements, correct across rank borders (the pair that straddles two
// ranks is checked, empty ranks in between skipped):
//
//   is_sorted(a, comp)         no i with comp(a[i+1], a[i])
//   is_sorted_until(a, comp)   the global index of the first a[i] with comp(a[i], a[i-1]); N if none
//   adjacent_find(a, pred)     the global index i of the first pair with pred(a[i], a[i+1]); N if none
//   min_element(a, comp)       {value, global index} of the smallest element, the lowest index among
//   max_element(a, comp)       equals; {T{}, -1} for an empty array
//
// local: the first hit inside the block (or this block's best element) -> global: one MPI_Allgather
// of each rank's first and last element and its local result, read in rank order on every rank.
// comp must be a strict weak ordering (with floating-point NaNs, less is not one) and, like pred,
// callable on the host (the border pairs are checked there) and on the backend.
#pragma once

#include <type_traits>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/reduce.hpp"

namespace tessera {

namespace detail {

// f(i) = the local index + 1 of the second element of a pair that hits, or `none`.
template <class T, class Pred>
struct PairHit {
  using wrapped_functor = Pred;
  const T* data;
  Pred pred;
  bool swap;  // pred(data[i+1], data[i]) instead of pred(data[i], data[i+1])
  index_t none;
  TESSERA_HOST_DEVICE index_t operator()(index_t i) const {
    const bool hit = swap ? pred(data[i + 1], data[i]) : pred(data[i], data[i + 1]);
    return hit ? i + 1 : none;
  }
};

// What each rank tells the others about the order of its block.
template <class T>
struct BorderRecord {
  T first{};
  T last{};
  index_t local_hit = -1;  // the block's own first hit (local index of the pair's second element)
  std::int32_t has = 0;
};

// The global index of the second element of the first pair (in global order) that hits, or -1.
template <class T, class Pred>
index_t first_pair(const DistArray<T>& array, Pred pred, bool swap, const char* algorithm, PhaseTimes* times) {
  static_assert(kernels::detail::invocable_r_with<bool, Pred, const T&, const T&>,
                "is_sorted / adjacent_find: the comparison must take two elements (const T&, const T&) and return bool");
  require_host_callable<Pred>();
  const Context& ctx = array.context();
  const index_t n = array.local_size();
  return three_phases(
      {algorithm, array.global_size()}, ctx, times,
      // Local: the first hit inside the block, and the block's first and last element.
      [&] {
        return try_local([&] {
          BorderRecord<T> record;
          if (n == 0) return record;
          record.has = 1;
          if (n > 1) {
            const index_t hit = result_on_host<index_t>(ctx, [&](index_t* out) {
              kernels::transform_reduce_index(ctx.queue(), 0, n - 1, PairHit<T, Pred>{array.local_data(), pred, swap, n},
                                              minimum{}, n, out);
            });
            record.local_hit = hit < n ? hit : -1;
          }
          kernels::copy_to_host(ctx.queue(), &record.first, array.local_data(), sizeof(T));
          kernels::copy_to_host(ctx.queue(), &record.last, array.local_data() + (n - 1), sizeof(T));
          return record;
        });
      },
      // Global: every rank's record; the first hit in rank order, border pairs between blocks first.
      [&](LocalOutcome<BorderRecord<T>>&& mine) -> index_t {
        const std::vector<BorderRecord<T>> all = gather_values(ctx.comm(), mine, algorithm);
        const Partition& part = array.partition();
        bool have_previous = false;
        T previous_last{};
        for (int r = 0; r < ctx.size(); ++r) {
          const BorderRecord<T>& rec = all[static_cast<std::size_t>(r)];
          if (!rec.has) continue;
          if (have_previous && (swap ? pred(rec.first, previous_last) : pred(previous_last, rec.first)))
            return part.offset(r);
          if (rec.local_hit >= 0) return part.offset(r) + rec.local_hit;
          have_previous = true;
          previous_last = rec.last;
        }
        return -1;
      },
      no_fixup);
}

// The better of two candidates: comp decides, the lower index wins among equals, index -1 is none.
template <class T, class Comp>
struct BetterOf {
  static constexpr bool commutative = true;
  using wrapped_functor = Comp;
  Comp comp;
  bool want_max;
  TESSERA_HOST_DEVICE ValueIndex<T> operator()(const ValueIndex<T>& a, const ValueIndex<T>& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool b_better = want_max ? comp(a.value, b.value) : comp(b.value, a.value);
    const bool a_better = want_max ? comp(b.value, a.value) : comp(a.value, b.value);
    if (b_better) return b;
    if (a_better) return a;
    return a.index < b.index ? a : b;
  }
};

template <class T>
struct ElementAt {
  const T* data;
  index_t global_offset;
  TESSERA_HOST_DEVICE ValueIndex<T> operator()(index_t i) const { return ValueIndex<T>{data[i], global_offset + i}; }
};

template <class T, class Comp>
ValueIndex<T> best_element(const DistArray<T>& array, Comp comp, bool want_max, const char* algorithm,
                           PhaseTimes* times) {
  static_assert(kernels::detail::invocable_r_with<bool, Comp, const T&, const T&>,
                "min_element / max_element: the comparison must take two elements (const T&, const T&) and return bool");
  require_host_callable<Comp>();
  const Context& ctx = array.context();
  const BetterOf<T, Comp> better{comp, want_max};
  const ValueIndex<T> none{};
  return three_phases(
      {algorithm, array.global_size()}, ctx, times,
      // Local: this block's best element with its global index.
      [&] {
        return try_local([&] {
          return result_on_host<ValueIndex<T>>(ctx, [&](ValueIndex<T>* out) {
            kernels::transform_reduce_index(ctx.queue(), 0, array.local_size(),
                                            ElementAt<T>{array.local_data(), array.global_offset()}, better, none, out);
          });
        });
      },
      // Global: every rank's candidate, folded in rank order.
      [&](LocalOutcome<ValueIndex<T>>&& mine) {
        ValueIndex<T> result = none;
        for (const ValueIndex<T>& c : gather_values(ctx.comm(), mine, algorithm)) result = better(result, c);
        return result;
      },
      no_fixup);
}

}  // namespace detail

// The collectives of one is_sorted / is_sorted_until / adjacent_find call (collective_plan.hpp): one
// allgather of each rank's border elements and first hit.
template <class T>
CollectivePlan border_pairs_plan() {
  return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<detail::BorderRecord<T>>))}};
}

// Of one min_element / max_element call: one allgather of each rank's best element and its index.
template <class T>
CollectivePlan best_element_plan() {
  return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<ValueIndex<T>>))}};
}

template <class T, class Comp = less>
bool is_sorted(const DistArray<T>& array, Comp comp = {}, PhaseTimes* times = nullptr) {
  return detail::first_pair(array, comp, /*swap=*/true, "is_sorted", times) < 0;
}

template <class T, class Comp = less>
index_t is_sorted_until(const DistArray<T>& array, Comp comp = {}, PhaseTimes* times = nullptr) {
  const index_t hit = detail::first_pair(array, comp, /*swap=*/true, "is_sorted_until", times);
  return hit < 0 ? array.global_size() : hit;
}

template <class T, class Pred = equal_to>
index_t adjacent_find(const DistArray<T>& array, Pred pred = {}, PhaseTimes* times = nullptr) {
  const index_t hit = detail::first_pair(array, pred, /*swap=*/false, "adjacent_find", times);
  return hit < 0 ? array.global_size() : hit - 1;
}

template <class T, class Comp = less>
ValueIndex<T> min_element(const DistArray<T>& array, Comp comp = {}, PhaseTimes* times = nullptr) {
  return detail::best_element(array, comp, /*want_max=*/false, "min_element", times);
}

template <class T, class Comp = less>
ValueIndex<T> max_element(const DistArray<T>& array, Comp comp = {}, PhaseTimes* times = nullptr) {
  return detail::best_element(array, comp, /*want_max=*/true, "max_element", times);
}

}  // namespace tessera
