// A scan over computed items with a visitor: the building block of the local operations whose output
// is not one element per input element (reduce_by_key, unique: by_key.hpp) or whose items are not
// one array (the (head, value) pairs of scan_by_key).
//
//   scan_indexed(queue, n, item, op, seed, visit, total)
//     for every i in [0, n):  visit(i, prefix_i, item(i)),  prefix_i = seed op item(0) op ... op item(i-1)
//     and where total is not null:  *total = seed op item(0) op ... op item(n-1)   (seed where n == 0)
//
// item(index_t) -> T; op: associative (it need not commute and needs no identity: every combination
// keeps index order, lower indices on the left); visit(index_t i, const T& prefix, const T& item)
// writes what it wants through pointers it holds. item may be called more than once for an index,
// visit exactly once, in no particular order. T: trivially copyable, default constructible. total:
// backend memory (under cuda also pinned host memory). Stream-ordered under cuda, one pass (tiles
// linked by a decoupled look-back, as the scan); on the cpu two passes over chunks of [0, n).
#pragma once

#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/scan_indexed.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/queue.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/device_scan_indexed.cuh"
#include "tessera/kernels/cuda/device_guard.hpp"
#endif

namespace tessera::kernels {

template <class T, class Item, class Op, class Visit>
void scan_indexed(const Queue& queue, index_t n, Item item, Op op, T seed, Visit visit, T* total) {
  static_assert(std::is_trivially_copyable_v<T>, "scan_indexed: the item type must be trivially copyable");
  detail::check_count(n, "scan_indexed");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<Item, Op, Visit>) {
      cpu::scan_indexed(n, item, op, seed, visit, total);
    } else {
      detail::throw_device_only_functor_on_cpu("scan_indexed");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<Item, Op, Visit>()) {
      const cuda::detail::ScopedDevice on_queue_device(queue.device);
      cuda::detail::device_scan_indexed(queue, n, item, op, seed, visit, total);
    }
#else
    detail::throw_needs_cuda_compiler("scan_indexed");
#endif
  }
}

}  // namespace tessera::kernels
