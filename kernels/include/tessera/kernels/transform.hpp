// Element-wise local operations with the caller's functors:
//
//   transform(queue, in, n, out, f)         out[i] = f(in[i])
//   transform(queue, a, b, n, out, f)       out[i] = f(a[i], b[i])
//   transform_index(queue, first, n, out, f)  out[i] = f(first + i)   (generate from a global index)
//   for_each_index(queue, first, n, f)      f(first + i) for every i, in no particular order
//   fill_any(queue, out, n, value)          out[i] = value, for any trivially copyable T
//
// Arrays are backend memory; `out` may be `in` (or a or b) for an in-place transform, otherwise the
// arrays do not overlap. Stream-ordered under cuda. The functors must be callable where the backend
// runs them (see detail/dispatch.hpp); for_each_index's f is typically a lambda that captures a
// pointer and writes through it.
#pragma once

#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/queue.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/algorithms.cuh"
#endif

namespace tessera::kernels {

template <class In, class Out, class F>
void transform(const Queue& queue, const In* in, index_t n, Out* out, F f) {
  static_assert(detail::invocable_with<F, const In&>, "transform: f cannot take the input's element type");
  detail::check_count(n, "transform");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<F>) {
      cpu::transform(in, n, out, f);
    } else {
      detail::throw_device_only_functor_on_cpu("transform");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<F>()) {
      cuda::transform(queue, in, n, out, f);
    }
#else
    detail::throw_needs_cuda_compiler("transform");
#endif
  }
}

template <class A, class B, class Out, class F>
void transform(const Queue& queue, const A* a, const B* b, index_t n, Out* out, F f) {
  static_assert(detail::invocable_with<F, const A&, const B&>, "transform: f cannot take the inputs' element types");
  detail::check_count(n, "transform");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<F>) {
      cpu::transform(a, b, n, out, f);
    } else {
      detail::throw_device_only_functor_on_cpu("transform");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<F>()) {
      cuda::transform(queue, a, b, n, out, f);
    }
#else
    detail::throw_needs_cuda_compiler("transform");
#endif
  }
}

template <class Out, class F>
void transform_index(const Queue& queue, index_t first, index_t n, Out* out, F f) {
  detail::check_count(n, "transform_index");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<F>) {
      cpu::transform_index(first, n, out, f);
    } else {
      detail::throw_device_only_functor_on_cpu("transform_index");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<F>()) {
      cuda::transform_index(queue, first, n, out, f);
    }
#else
    detail::throw_needs_cuda_compiler("transform_index");
#endif
  }
}

template <class F>
void for_each_index(const Queue& queue, index_t first, index_t n, F f) {
  detail::check_count(n, "for_each_index");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<F>) {
      cpu::for_each_index(first, n, f);
    } else {
      detail::throw_device_only_functor_on_cpu("for_each_index");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<F>()) {
      cuda::for_each_index(queue, first, n, f);
    }
#else
    detail::throw_needs_cuda_compiler("for_each_index");
#endif
  }
}

namespace detail {
template <class T>
struct Constant {
  T value;
  TESSERA_HOST_DEVICE T operator()(index_t) const { return value; }
};

// out[i] = the element_bytes bytes at `value`, for i in [0, n), by copies only (no kernel of this
// translation unit): reaches any element type from any translation unit. Stream-ordered.
void fill_bytes(const Queue& queue, void* out, index_t n, std::size_t element_bytes, const void* value);
}  // namespace detail

template <class T>
void fill_any(const Queue& queue, T* out, index_t n, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>, "fill: the element type must be trivially copyable");
  detail::check_count(n, "fill");
  if (queue.backend == Backend::cpu) {
    cpu::parallel_for(n, [&](index_t i) { out[i] = value; });
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    cuda::transform_index(queue, 0, n, out, detail::Constant<T>{value});
#else
    detail::fill_bytes(queue, out, n, sizeof(T), &value);
#endif
  }
}

}  // namespace tessera::kernels
