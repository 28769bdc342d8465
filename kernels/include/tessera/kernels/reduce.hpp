// Local reductions: one value from one rank's block.
//
//   reduce(queue, in, n, ReduceOp, out)                    the apps' sum / min / max (precompiled)
//   transform_reduce(queue, in, n, f, op, identity, out)   identity op f(in[0]) op ... op f(in[n-1])
//   transform_reduce_index(queue, first, n, f, op, identity, out)
//                                                          identity op f(first) op ... op f(first+n-1)
// and the same returning the value (these wait for the queue).
//
// `op` is associative with `identity` as its identity (functional.hpp); it is applied in index order
// unless it declares itself commutative, so it need not commute. f, op: any callables that the
// backend can run (TESSERA_HOST_DEVICE structs or nvcc extended lambdas; see detail/dispatch.hpp for
// which translation units can run what). In and Acc: trivially copyable (Acc also default
// constructible). `in` and `out` are backend memory (device memory under cuda), or for `out` under
// cuda also pinned host memory; stream-ordered under cuda: *out is ready once the queue is
// synchronized. n == 0 yields the identity.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/kernels/reduce_op.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/algorithms.cuh"
#endif

namespace tessera::kernels {

// The precompiled reductions: in[0, n) folded with plus, minimum or maximum (their identity the
// start) into *out, for int32, int64, float and double. Non-templates, so that they win over the
// generic template below, and reach the library's instances from any translation unit: the
// functor goes down to the backend's pass as it is.
#define TESSERA_DECLARE_REDUCE(T)                                                        \
  void reduce(const Queue& queue, const T* in, index_t n, plus op, T* out);              \
  void reduce(const Queue& queue, const T* in, index_t n, minimum op, T* out);           \
  void reduce(const Queue& queue, const T* in, index_t n, maximum op, T* out);
TESSERA_DECLARE_REDUCE(std::int32_t)
TESSERA_DECLARE_REDUCE(std::int64_t)
TESSERA_DECLARE_REDUCE(float)
TESSERA_DECLARE_REDUCE(double)
#undef TESSERA_DECLARE_REDUCE

// The same with the operation named at run time (the apps' --op): the functor it names, once.
template <class T>
void reduce(const Queue& queue, const T* in, index_t n, ReduceOp op, T* out) {
  with_reduce_op(op, [&](auto fn) { reduce(queue, in, n, fn, out); });
}

// The depth of the summation tree of reduce(queue, in, n, ReduceOp::sum, out) for float and double,
// on the backend and device of `queue`: no element meets more than this many additions (each
// rounding once; the identity's included), so the result lies within gamma_depth * sum|in| of the
// exact sum, gamma_d = d u / (1 - d u) with u the unit roundoff (Higham, "Accuracy and Stability of
// Numerical Algorithms", 2nd ed., section 4.2). Derived from each backend's summation order:
// cpu/algorithms.hpp (fold_parallel_depth) and cuda/device_reduce.cuh (device_reduce_depth).
template <class T>
index_t reduce_sum_depth(const Queue& queue, index_t n);

namespace detail {

template <class T>
inline constexpr bool is_precompiled_type = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> ||
                                            std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class Op>
inline constexpr bool is_reduce_op = std::is_same_v<Op, plus> || std::is_same_v<Op, minimum> ||
                                     std::is_same_v<Op, maximum>;

// The MPI operation of the global phase (the library's MPI_SUM / MPI_MIN / MPI_MAX) by name.
template <class Op>
constexpr ReduceOp reduce_op_of() {
  if constexpr (std::is_same_v<Op, plus>) return ReduceOp::sum;
  else if constexpr (std::is_same_v<Op, minimum>) return ReduceOp::min;
  else return ReduceOp::max;
}

// A plain sum / min / max of an element type the library has precompiled: every translation unit
// reaches it, on either backend.
template <class In, class F, class Op, class Acc>
inline constexpr bool is_precompiled_reduce =
    std::is_same_v<F, identity_fn> && is_reduce_op<Op> && std::is_same_v<In, Acc> && is_precompiled_type<In>;

}  // namespace detail

template <class In, class F, class Op, class Acc>
void transform_reduce(const Queue& queue, const In* in, index_t n, F f, Op op, Acc identity, Acc* out) {
  static_assert(std::is_trivially_copyable_v<Acc>, "transform_reduce: the accumulator type must be trivially copyable");
  static_assert(detail::invocable_with<F, const In&>, "transform_reduce: f cannot take the input's element type");
  detail::check_count(n, "transform_reduce");
  if constexpr (detail::is_precompiled_reduce<In, F, Op, Acc>) {
    (void)f;
    (void)identity;
    reduce(queue, in, n, op, out);
  } else if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<F, Op>) {
      *out = cpu::transform_reduce(in, n, f, op, identity);
    } else {
      detail::throw_device_only_functor_on_cpu("transform_reduce");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<F, Op>()) {
      cuda::transform_reduce(queue, in, n, f, op, identity, out);
    }
#else
    detail::throw_needs_cuda_compiler("transform_reduce");
#endif
  }
}

template <class F, class Op, class Acc>
void transform_reduce_index(const Queue& queue, index_t first, index_t n, F f, Op op, Acc identity, Acc* out) {
  static_assert(std::is_trivially_copyable_v<Acc>,
                "transform_reduce_index: the accumulator type must be trivially copyable");
  detail::check_count(n, "transform_reduce_index");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<F, Op>) {
      *out = cpu::transform_reduce_index(first, n, f, op, identity);
    } else {
      detail::throw_device_only_functor_on_cpu("transform_reduce_index");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<F, Op>()) {
      cuda::transform_reduce_index(queue, first, n, f, op, identity, out);
    }
#else
    detail::throw_needs_cuda_compiler("transform_reduce_index");
#endif
  }
}

// The same, returning the value on the host (waits for the queue).
template <class In, class F, class Op, class Acc>
Acc transform_reduce(const Queue& queue, const In* in, index_t n, F f, Op op, Acc identity) {
  if (queue.backend == Backend::cpu) {
    Acc result = identity;
    transform_reduce(queue, in, n, f, op, identity, &result);
    return result;
  }
  ScratchBuffer scratch(queue, sizeof(Acc));
  transform_reduce(queue, in, n, f, op, identity, scratch.as<Acc>());
  Acc result = identity;
  copy_to_host(queue, &result, scratch.data(), sizeof(Acc));
  return result;
}

template <class F, class Op, class Acc>
Acc transform_reduce_index(const Queue& queue, index_t first, index_t n, F f, Op op, Acc identity) {
  if (queue.backend == Backend::cpu) {
    Acc result = identity;
    transform_reduce_index(queue, first, n, f, op, identity, &result);
    return result;
  }
  ScratchBuffer scratch(queue, sizeof(Acc));
  transform_reduce_index(queue, first, n, f, op, identity, scratch.as<Acc>());
  Acc result = identity;
  copy_to_host(queue, &result, scratch.data(), sizeof(Acc));
  return result;
}

template <class T, class Op>
T reduce(const Queue& queue, const T* in, index_t n, Op op, T identity) {
  return transform_reduce(queue, in, n, identity_fn{}, op, identity);
}

}  // namespace tessera::kernels
