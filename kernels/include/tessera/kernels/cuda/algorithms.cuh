// The CUDA backend of the generic local operations (the public call of each, as cub/device/): which
// device pass runs for which functor. Included by the public headers in translation units that nvcc
// compiles; contracts in reduce.hpp, scan.hpp, select.hpp and transform.hpp. The functors run on the
// device: they must be __device__ or __host__ __device__ callables.
#pragma once

#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/device_guard.hpp"
#include "tessera/kernels/cuda/device_reduce.cuh"
#include "tessera/kernels/cuda/device_reduce_ordered.cuh"
#include "tessera/kernels/cuda/device_scan.cuh"
#include "tessera/kernels/cuda/device_select.cuh"
#include "tessera/kernels/cuda/device_transform.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels::cuda {

// A commutative operation takes the even-share reduction (device_reduce.cuh), any other the one
// that keeps index order (device_reduce_ordered.cuh).
template <class In, class F, class Op, class Acc>
void transform_reduce(const Queue& queue, const In* in, index_t n, F f, Op op, Acc identity, Acc* out) {
  const detail::ScopedDevice on_queue_device(queue.device);
  if constexpr (is_commutative_v<Op>) {
    detail::device_reduce(queue, in, n, f, op, identity, out);
  } else {
    const detail::PointerSource<In, F, Acc, detail::OrderedReduceTuning::kVectorsPerLane> source{
        in, n, f, detail::unaligned_head(in, n), detail::vector_aligned(in)};
    detail::device_reduce_ordered(queue, source, op, identity, out);
  }
}

template <class F, class Op, class Acc>
void transform_reduce_index(const Queue& queue, index_t first, index_t n, F f, Op op, Acc identity, Acc* out) {
  const detail::ScopedDevice on_queue_device(queue.device);
  const detail::IndexSource<F, Acc> source{first, n, f};
  detail::device_reduce_ordered(queue, source, op, identity, out);
}

template <class T, class Op>
void scan(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, Op op, T init) {
  const detail::ScopedDevice on_queue_device(queue.device);
  detail::device_scan(queue, in, out, n, kind, op, init);
}

namespace detail {
template <class Pred>
struct KeptAsCount {
  Pred pred;
  template <class T>
  __device__ __forceinline__ index_t operator()(const T& x) const {
    return pred(x) ? 1 : 0;
  }
};
}  // namespace detail

template <class T, class Pred>
void select(const Queue& queue, const T* in, index_t n, Pred pred, T* out, index_t* kept_count) {
  const detail::ScopedDevice on_queue_device(queue.device);
  detail::device_select(queue, in, n, pred, out, kept_count);
}

template <class T, class Pred>
void count_if(const Queue& queue, const T* in, index_t n, Pred pred, index_t* count) {
  const detail::ScopedDevice on_queue_device(queue.device);
  detail::device_reduce(queue, in, n, detail::KeptAsCount<Pred>{pred}, tessera::plus{}, index_t(0), count);
}

template <class In, class Out, class F>
void transform(const Queue& queue, const In* in, index_t n, Out* out, F f) {
  const detail::ScopedDevice on_queue_device(queue.device);
  detail::device_transform(in, n, out, f, queue.stream);
}

template <class A, class B, class Out, class F>
void transform(const Queue& queue, const A* a, const B* b, index_t n, Out* out, F f) {
  const detail::ScopedDevice on_queue_device(queue.device);
  detail::device_transform(a, b, n, out, f, queue.stream);
}

template <class Out, class F>
void transform_index(const Queue& queue, index_t first, index_t n, Out* out, F f) {
  const detail::ScopedDevice on_queue_device(queue.device);
  detail::device_transform_index(first, n, out, f, queue.stream);
}

template <class F>
void for_each_index(const Queue& queue, index_t first, index_t n, F f) {
  const detail::ScopedDevice on_queue_device(queue.device);
  detail::device_for_each_index(first, n, f, queue.stream);
}

}  // namespace tessera::kernels::cuda
