// Local operations on runs of equal keys (consecutive keys k[i-1], k[i] with pred(k[i-1], k[i]) are
// in one run; pred defaults to equal_to and must be an equivalence on neighbours), and unique. Each
// is one pass that takes any functors and trivially copyable types on either backend (under cuda
// from a translation unit nvcc compiles): a scan_indexed pass (scan_indexed.hpp) on the cpu and for
// the scans under cuda; under cuda reduce_by_key has a pass of its own and unique keeps the heads of
// runs in select's pass (cuda/device_by_key.cuh):
//
//   reduce_by_key(queue, keys, values, n, pred, op, keys_out, values_out, runs)
//       one output per run, in order: its first key, and the fold of its values with op (index
//       order; op need not commute and needs no identity); *runs = their number
//   reduce_by_key_total(queue, keys, values, n, pred, op, total)
//       *total = {number of runs, the fold of the last run's values} without writing any output
//   scan_by_key(queue, keys, values, out, n, kind, op, init, pred, carry)
//       the scan of each run's values on its own: inclusive out[i] = v[s] op ... op v[i], exclusive
//       out[i] = init op v[s] op ... op v[i-1] (init at a run's first element), s the first index of
//       i's run. carry (optional): the fold of values before index 0 that belong to index 0's run
//       (a run that began on an earlier rank): it comes first in that run's results
//   unique(queue, in, n, pred, out, kept)           the first element of each run; *kept = their number
//   unique_by_key(queue, keys, values, n, pred, keys_out, values_out, kept)   the same with values
//
// Arrays are backend memory; outputs have room for n elements and do not overlap the inputs, except
// that scan_by_key may write over `values` (out == values). runs, kept and total: backend memory
// (under cuda also pinned host memory). Stream-ordered under cuda.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/detail/run_fold.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/kernels/scan_indexed.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/device_by_key.cuh"
#include "tessera/kernels/cuda/device_guard.hpp"
#endif

namespace tessera {

namespace kernels {
namespace detail {

// Whether index i starts a run: index 0 where first_is_head, otherwise where its key is not in the
// run of the key before it.
template <class K, class Pred>
struct RunHead {
  using wrapped_functor = Pred;
  const K* keys;
  Pred pred;
  bool first_is_head;
  TESSERA_HOST_DEVICE bool operator()(index_t i) const {
    return i == 0 ? first_is_head : !pred(keys[i - 1], keys[i]);
  }
};

template <class K, class V, class Pred, class Count = index_t>
struct RunItem {
  using wrapped_functor = Pred;
  RunHead<K, Pred> head;
  const V* values;
  TESSERA_HOST_DEVICE RunFold<V, Count> operator()(index_t i) const {
    return RunFold<V, Count>{static_cast<Count>(head(i) ? 1 : 0), values[i]};
  }
};

struct NoVisit {
  template <class T>
  TESSERA_HOST_DEVICE void operator()(index_t, const T&, const T&) const {}
};

template <class K, class V, class Pred, class Op, class Count = index_t>
struct ReduceByKeyVisit {
  using wrapped_functor = Op;
  RunHead<K, Pred> head;
  CombineRuns<V, Op, Count> combine;
  const K* keys;
  index_t n;
  K* keys_out;
  V* values_out;
  index_t* runs;
  TESSERA_HOST_DEVICE void operator()(index_t i, const RunFold<V, Count>& prefix, const RunFold<V, Count>& item) const {
    const RunFold<V, Count> inclusive = combine(prefix, item);
    if (item.runs > 0) keys_out[inclusive.runs - 1] = keys[i];
    const bool last = i + 1 == n;
    if (last || head(i + 1)) values_out[inclusive.runs - 1] = inclusive.value;
    if (last) *runs = inclusive.runs;
  }
};

template <class V, class Op, class Count = index_t>
struct ScanByKeyVisit {
  using wrapped_functor = Op;
  Op op;
  V* out;
  V init;
  bool inclusive;
  TESSERA_HOST_DEVICE void operator()(index_t i, const RunFold<V, Count>& prefix, const RunFold<V, Count>& item) const {
    if (inclusive) {
      out[i] = item.runs > 0 ? item.value : op(prefix.value, item.value);
    } else {
      out[i] = item.runs > 0 ? init : op(init, prefix.value);
    }
  }
};

template <class K, class Pred, class Count = index_t>
struct HeadCount {
  using wrapped_functor = Pred;
  RunHead<K, Pred> head;
  TESSERA_HOST_DEVICE Count operator()(index_t i) const { return head(i) ? 1 : 0; }
};

// Counts of runs in 32 bits where they fit (n < 2^31), so that a (count, 4-byte value) item is
// 8 bytes: the look-back's tile status then packs it with its state in one 16-byte word instead
// of keeping it apart behind fences (tile_status.cuh). run(int32 or int64 zero) calls the pass.
template <class Run>
void with_run_count(index_t n, Run&& run) {
  if (n < (index_t(1) << 31)) {
    run(std::int32_t{0});
  } else {
    run(index_t{0});
  }
}

// V = K and values == nullptr: unique without values.
template <class K, class V, class Count = index_t>
struct UniqueVisit {
  const K* keys;
  const V* values;
  index_t n;
  K* keys_out;
  V* values_out;
  index_t* kept;
  TESSERA_HOST_DEVICE void operator()(index_t i, const Count& prefix, const Count& item) const {
    if (item > 0) {
      keys_out[prefix] = keys[i];
      if (values != nullptr) values_out[prefix] = values[i];
    }
    if (i + 1 == n) *kept = prefix + item;
  }
};

template <class Pred, class K>
constexpr void require_key_predicate() {
  static_assert(invocable_r_with<bool, Pred, const K&, const K&>,
                "by key: pred must take two keys (const K&, const K&) and return bool");
}

template <class Op, class V>
constexpr void require_value_op() {
  static_assert(invocable_r_with<V, Op, const V&, const V&>,
                "by key: op must take two values (const V&, const V&) and return a value");
}

}  // namespace detail

template <class K, class V, class Pred, class Op>
void reduce_by_key(const Queue& queue, const K* keys, const V* values, index_t n, Pred pred, Op op, K* keys_out,
                   V* values_out, index_t* runs) {
  detail::require_key_predicate<Pred, K>();
  detail::require_value_op<Op, V>();
  if (n == 0) {
    fill(queue, runs, 1, index_t(0));
    return;
  }
  if (queue.backend == Backend::cuda) {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<Pred, Op>()) {
      const cuda::detail::ScopedDevice on_queue_device(queue.device);
      cuda::detail::device_reduce_by_key(queue, keys, values, n, pred, op, keys_out, values_out, runs);
    }
#else
    detail::throw_needs_cuda_compiler("reduce_by_key");
#endif
    return;
  }
  const detail::RunHead<K, Pred> head{keys, pred, true};
  detail::with_run_count(n, [&](auto zero) {
    using C = decltype(zero);
    const detail::CombineRuns<V, Op, C> combine{op};
    scan_indexed(queue, n, detail::RunItem<K, V, Pred, C>{head, values}, combine, RunFold<V, C>{},
                 detail::ReduceByKeyVisit<K, V, Pred, Op, C>{head, combine, keys, n, keys_out, values_out, runs},
                 static_cast<RunFold<V, C>*>(nullptr));
  });
}

template <class K, class V, class Pred, class Op>
void reduce_by_key_total(const Queue& queue, const K* keys, const V* values, index_t n, Pred pred, Op op,
                         RunFold<V>* total) {
  detail::require_key_predicate<Pred, K>();
  detail::require_value_op<Op, V>();
  const detail::RunHead<K, Pred> head{keys, pred, true};
  scan_indexed(queue, n, detail::RunItem<K, V, Pred>{head, values}, detail::CombineRuns<V, Op>{op}, RunFold<V>{},
               detail::NoVisit{}, total);
}

template <class K, class V, class Op, class Pred>
void scan_by_key(const Queue& queue, const K* keys, const V* values, V* out, index_t n, ScanKind kind, Op op, V init,
                 Pred pred, std::optional<std::type_identity_t<V>> carry = std::nullopt) {
  detail::require_key_predicate<Pred, K>();
  detail::require_value_op<Op, V>();
  if (n == 0) return;
  const detail::RunHead<K, Pred> head{keys, pred, !carry.has_value()};
  detail::with_run_count(n, [&](auto zero) {
    using C = decltype(zero);
    scan_indexed(queue, n, detail::RunItem<K, V, Pred, C>{head, values}, detail::CombineRuns<V, Op, C>{op},
                 RunFold<V, C>{0, carry ? *carry : V{}},
                 detail::ScanByKeyVisit<V, Op, C>{op, out, init, kind == ScanKind::inclusive},
                 static_cast<RunFold<V, C>*>(nullptr));
  });
}

namespace detail {
// unique_by_key, and unique (WithValues false: values and values_out null).
template <bool WithValues, class K, class V, class Pred>
void unique_runs(const Queue& queue, const K* keys, const V* values, index_t n, Pred pred, K* keys_out, V* values_out,
                 index_t* kept) {
  require_key_predicate<Pred, K>();
  if (n == 0) {
    fill(queue, kept, 1, index_t(0));
    return;
  }
  if (queue.backend == Backend::cuda) {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (require_device_callable<Pred>()) {
      const cuda::detail::ScopedDevice on_queue_device(queue.device);
      if constexpr (WithValues) {
        cuda::detail::device_select_kept(queue, keys, n, cuda::detail::KeepRunHeads<Pred>{pred}, keys_out, kept,
                                         values, values_out);
      } else {
        cuda::detail::device_select_kept(queue, keys, n, cuda::detail::KeepRunHeads<Pred>{pred}, keys_out, kept);
      }
    }
#else
    throw_needs_cuda_compiler("unique");
#endif
    return;
  }
  with_run_count(n, [&](auto zero) {
    using C = decltype(zero);
    scan_indexed(queue, n, HeadCount<K, Pred, C>{{keys, pred, true}}, plus{}, C{0},
                 UniqueVisit<K, V, C>{keys, values, n, keys_out, values_out, kept}, static_cast<C*>(nullptr));
  });
}
}  // namespace detail

template <class K, class V, class Pred>
void unique_by_key(const Queue& queue, const K* keys, const V* values, index_t n, Pred pred, K* keys_out,
                   V* values_out, index_t* kept) {
  detail::unique_runs<true>(queue, keys, values, n, pred, keys_out, values_out, kept);
}

template <class T, class Pred>
void unique(const Queue& queue, const T* in, index_t n, Pred pred, T* out, index_t* kept) {
  detail::unique_runs<false>(queue, in, static_cast<const T*>(nullptr), n, pred, out, static_cast<T*>(nullptr), kept);
}

}  // namespace kernels
}  // namespace tessera
