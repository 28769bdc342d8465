// Local sorts by a comparator, for keys of any trivially copyable type, and searches of the sorted
// keys by the same comparator:
//
//   merge_sort(queue, keys_in, keys_out, n, comp)
//   merge_sort_pairs(queue, keys_in, keys_out, values_in, values_out, n, comp)
//   sorted_bound(queue, sorted, n, needles, m, comp, upper, positions)
//
// comp(a, b): a strict weak ordering, true when a goes before b (tessera::less, or any callable of
// the caller's). Stable: elements that compare equal keep their order. Arrays are backend memory;
// keys_out may be keys_in (and values_out values_in): in place; otherwise they do not overlap.
// cuda: a merge sort (cuda/device_merge_sort.cuh), temporary storage of n keys and values from the
// queue's pool; cpu: std::stable_sort of chunks on host threads and merges. Keys of the radix types
// with tessera::less order as the radix sort does only where they hold no NaN: sort.hpp's
// sort_keys is the faster path for them.
#pragma once

#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/merge_sort.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/kernels/transform.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/device_guard.hpp"
#include "tessera/kernels/cuda/device_merge_sort.cuh"
#endif

namespace tessera::kernels {

namespace detail {

template <class Comp, class K>
constexpr void require_comparator() {
  static_assert(invocable_r_with<bool, Comp, const K&, const K&>,
                "sort: the comparator must take two keys (const K&, const K&) and return bool");
}

// positions[j] for one needle: a binary search of the sorted keys.
template <class K, class Comp>
struct BoundOf {
  using wrapped_functor = Comp;
  const K* sorted;
  index_t n;
  const K* needles;
  Comp comp;
  bool upper;
  TESSERA_HOST_DEVICE index_t operator()(index_t j) const {
    const K& needle = needles[j];
    index_t lo = 0, hi = n;
    while (lo < hi) {
      const index_t mid = lo + (hi - lo) / 2;
      const bool before = upper ? !comp(needle, sorted[mid]) : static_cast<bool>(comp(sorted[mid], needle));
      if (before) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
};

}  // namespace detail

template <class K, class Comp>
void merge_sort(const Queue& queue, const K* keys_in, K* keys_out, index_t n, Comp comp) {
  static_assert(std::is_trivially_copyable_v<K>, "sort: the key type must be trivially copyable");
  detail::require_comparator<Comp, K>();
  detail::check_count(n, "merge_sort");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<Comp>) {
      cpu::merge_sort(keys_in, keys_out, n, comp);
    } else {
      detail::throw_device_only_functor_on_cpu("merge_sort");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<Comp>()) {
      const cuda::detail::ScopedDevice on_queue_device(queue.device);
      cuda::detail::device_merge_sort(queue, keys_in, keys_out, static_cast<const cuda::detail::NoSortValue*>(nullptr),
                                      static_cast<cuda::detail::NoSortValue*>(nullptr), n, comp);
    }
#else
    detail::throw_needs_cuda_compiler("merge_sort");
#endif
  }
}

template <class K, class V, class Comp>
void merge_sort_pairs(const Queue& queue, const K* keys_in, K* keys_out, const V* values_in, V* values_out, index_t n,
                      Comp comp) {
  static_assert(std::is_trivially_copyable_v<K>, "sort: the key type must be trivially copyable");
  static_assert(std::is_trivially_copyable_v<V>, "sort: the value type must be trivially copyable");
  detail::require_comparator<Comp, K>();
  detail::check_count(n, "merge_sort_pairs");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<Comp>) {
      cpu::merge_sort_pairs(keys_in, keys_out, values_in, values_out, n, comp);
    } else {
      detail::throw_device_only_functor_on_cpu("merge_sort_pairs");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<Comp>()) {
      const cuda::detail::ScopedDevice on_queue_device(queue.device);
      cuda::detail::device_merge_sort(queue, keys_in, keys_out, values_in, values_out, n, comp);
    }
#else
    detail::throw_needs_cuda_compiler("merge_sort_pairs");
#endif
  }
}

// positions[j] = the number of elements of sorted[0, n) that go before needles[j] (lower bound: those
// with comp(element, needle)) or not after it (upper bound: those without comp(needle, element)).
// `sorted` is sorted by comp. Stream-ordered.
template <class K, class Comp>
void sorted_bound(const Queue& queue, const K* sorted, index_t n, const K* needles, index_t m, Comp comp, bool upper,
                  index_t* positions) {
  detail::require_comparator<Comp, K>();
  transform_index(queue, 0, m, positions, detail::BoundOf<K, Comp>{sorted, n, needles, comp, upper});
}

}  // namespace tessera::kernels
