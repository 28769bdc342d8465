// Local select (stream compaction) and counting: the elements that satisfy a predicate, in input order.
//
// pred: any callable taking an element and returning something convertible to bool, that the backend
// can run (see detail/dispatch.hpp). The comparison function objects of predicate.hpp (and the
// run-time Predicate<T>), with int32, int64, float or double elements, take the precompiled path
// from any translation unit. `in`, `out` and
// the count are backend memory (the count under cuda may also be pinned host memory);
// stream-ordered under cuda.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/predicate.hpp"
#include "tessera/kernels/queue.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/algorithms.cuh"
#endif

namespace tessera::kernels {

// The precompiled instances: the eight comparison function objects of predicate.hpp on int32,
// int64, float and double (non-templates, so that they win over the templates below), and the
// run-time Predicate<T>, which names one of them once and runs it.
#define TESSERA_DECLARE_SELECT_ONE(T, P)                                                            \
  void select(const Queue& queue, const T* in, index_t n, P pred, T* out, index_t* kept_count);     \
  void count_if(const Queue& queue, const T* in, index_t n, P pred, index_t* count);
#define TESSERA_DECLARE_SELECT(T)                                                                   \
  TESSERA_FOR_EACH_PREDICATE(TESSERA_DECLARE_SELECT_ONE, T)                                         \
  inline void select(const Queue& queue, const T* in, index_t n, Predicate<T> pred, T* out, index_t* kept_count) { \
    with_predicate(pred, [&](auto fn) { select(queue, in, n, fn, out, kept_count); });              \
  }                                                                                                 \
  inline void count_if(const Queue& queue, const T* in, index_t n, Predicate<T> pred, index_t* count) { \
    with_predicate(pred, [&](auto fn) { count_if(queue, in, n, fn, count); });                      \
  }
TESSERA_DECLARE_SELECT(std::int32_t)
TESSERA_DECLARE_SELECT(std::int64_t)
TESSERA_DECLARE_SELECT(float)
TESSERA_DECLARE_SELECT(double)
#undef TESSERA_DECLARE_SELECT
#undef TESSERA_DECLARE_SELECT_ONE

// Writes the kept elements of in[0, n) to out[0, *kept_count), in input order (stable), and their
// number to *kept_count. `out` has room for n elements and does not overlap `in`.
template <class T, class Pred>
void select(const Queue& queue, const T* in, index_t n, Pred pred, T* out, index_t* kept_count) {
  static_assert(std::is_trivially_copyable_v<T>, "select: the element type must be trivially copyable");
  static_assert(detail::invocable_with<Pred, const T&>, "select: the predicate cannot take the element type");
  detail::check_count(n, "select");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<Pred>) {
      *kept_count = cpu::select(in, n, pred, out);
    } else {
      detail::throw_device_only_functor_on_cpu("select");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<Pred>()) {
      cuda::select(queue, in, n, pred, out, kept_count);
    }
#else
    detail::throw_needs_cuda_compiler("select");
#endif
  }
}

// Counts the elements of in[0, n) that satisfy pred into *count.
template <class T, class Pred>
void count_if(const Queue& queue, const T* in, index_t n, Pred pred, index_t* count) {
  static_assert(detail::invocable_with<Pred, const T&>, "count_if: the predicate cannot take the element type");
  detail::check_count(n, "count_if");
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<Pred>) {
      *count = cpu::count_if(in, n, pred);
    } else {
      detail::throw_device_only_functor_on_cpu("count_if");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<Pred>()) {
      cuda::count_if(queue, in, n, pred, count);
    }
#else
    detail::throw_needs_cuda_compiler("count_if");
#endif
  }
}

}  // namespace tessera::kernels
