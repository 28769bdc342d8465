// Element-wise algorithms: local only, each rank on its own block; stream-ordered (they return before
// the device work ends, unless times are asked for). Not collective: a functor that throws does so
// on its own rank only.
//
//   transform(a, f) -> b                 b[i] = f(a[i]), b with a's partition (element type: f's result)
//   transform(a, out, f)                 into out (same context and partition; may be a)
//   transform(a, b, out, f)              out[i] = f(a[i], b[i]) (a, b, out: same context and partition)
//   for_each(a, f)                       f(a[i]) for every element (f may take T& and change it)
//   fill(a, value)                       a[i] = value
//   generate(a, f)                       a[i] = f(i), i the global index: the same array whatever the
//                                        number of ranks (a seed, if any, is the functor's own)
#pragma once

#include <type_traits>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/transform.hpp"

namespace tessera {

namespace detail {

template <class T, class F>
struct ApplyToElement {
  using wrapped_functor = F;
  T* data;
  index_t first;
  F f;
  TESSERA_HOST_DEVICE void operator()(index_t i) const { f(data[i - first]); }
};

}  // namespace detail

template <class In, class Out, class F>
void transform(const DistArray<In>& in, DistArray<Out>& out, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, const In&>, "transform: f cannot take the array's element type");
  detail::require_same_layout(in.context(), in.partition(), out.context(), out.partition(), "transform");
  const Context& ctx = in.context();
  detail::local_phase(ctx, times,
                      [&] { kernels::transform(ctx.queue(), in.local_data(), in.local_size(), out.local_data(), f); });
}

template <class In, class F>
auto transform(const DistArray<In>& in, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, const In&>, "transform: f cannot take the array's element type");
  using Out = std::remove_cvref_t<std::invoke_result_t<F&, const In&>>;
  Stopwatch allocation;
  DistArray<Out> out(in.context(), in.partition());
  if (times) times->host += allocation.seconds();
  tessera::transform(in, out, f, times);
  return out;
}

template <class A, class B, class Out, class F>
void transform(const DistArray<A>& a, const DistArray<B>& b, DistArray<Out>& out, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, const A&, const B&>, "transform: f cannot take the arrays' element types");
  detail::require_same_layout(a.context(), a.partition(), b.context(), b.partition(), "transform");
  detail::require_same_layout(a.context(), a.partition(), out.context(), out.partition(), "transform");
  const Context& ctx = a.context();
  detail::local_phase(ctx, times, [&] {
    kernels::transform(ctx.queue(), a.local_data(), b.local_data(), a.local_size(), out.local_data(), f);
  });
}

template <class T, class F>
void for_each(DistArray<T>& array, F f, PhaseTimes* times = nullptr) {
  const Context& ctx = array.context();
  detail::local_phase(ctx, times, [&] {
    kernels::for_each_index(ctx.queue(), 0, array.local_size(), detail::ApplyToElement<T, F>{array.local_data(), 0, f});
  });
}

template <class T, class F>
void for_each(const DistArray<T>& array, F f, PhaseTimes* times = nullptr) {
  const Context& ctx = array.context();
  detail::local_phase(ctx, times, [&] {
    kernels::for_each_index(ctx.queue(), 0, array.local_size(),
                            detail::ApplyToElement<const T, F>{array.local_data(), 0, f});
  });
}

template <class T>
void fill(DistArray<T>& array, const T& value) {
  array.fill(value);
}

template <class T, class F>
void generate(DistArray<T>& array, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, index_t>, "generate: f must take the global index (index_t)");
  const Context& ctx = array.context();
  detail::local_phase(ctx, times, [&] {
    kernels::transform_index(ctx.queue(), array.global_offset(), array.local_size(), array.local_data(), f);
  });
}

}  // namespace tessera
