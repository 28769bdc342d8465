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
//   transform(a, b, f) -> c              c[i] = f(a[i], b[i]), c with a's partition (element type: f's result)
//   transform_index(a, f) -> b           b[i] = f(i, a[i]), i the global index
//   transform_index(a, out, f)           into out (same context and partition; may be a)
//   for_each_index(a, f)                 f(i, a[i]) for every element, i the global index (f may take T&)
// Two arrays of one call must have the same context and partition (UsageError otherwise, on every
// rank): repartition(b, a.partition()) (algorithms/repartition.hpp) aligns them.
#pragma once

#include <type_traits>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/transform.hpp"

namespace tessera {

namespace detail {

template <class T, class F>
struct ApplyWithIndex {
  using wrapped_functor = F;
  T* data;
  index_t global_offset;
  F f;
  TESSERA_HOST_DEVICE void operator()(index_t i) const { f(global_offset + i, data[i]); }
};

template <class T, class F>
struct ValueWithIndex {
  using wrapped_functor = F;
  const T* data;
  index_t global_offset;
  F f;
  TESSERA_HOST_DEVICE auto operator()(index_t i) const { return f(global_offset + i, data[i]); }
};

template <class T, class F>
struct ApplyToElement {
  using wrapped_functor = F;
  T* data;
  index_t first;
  F f;
  TESSERA_HOST_DEVICE void operator()(index_t i) const { f(data[i - first]); }
};

}  // namespace detail

namespace detail {
// transform(a, b, f) with an f of two elements, rather than transform(in, out, f) with an f of one.
// (A __device__-only lambda shows the host neither: it is taken as transform(in, out, f); write
// transform(a, b, out, f) for two inputs.)
template <class F, class A, class B>
inline constexpr bool takes_two = std::is_invocable_v<F&, const A&, const B&> && !std::is_invocable_v<F&, const A&>;
}  // namespace detail

template <class In, class Out, class F>
  requires(!detail::takes_two<F, In, Out>)
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

template <class A, class B, class F>
  requires detail::takes_two<F, A, B>
auto transform(const DistArray<A>& a, const DistArray<B>& b, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, const A&, const B&>,
                "transform: f cannot take the arrays' element types (const A&, const B&)");
  using Out = std::remove_cvref_t<std::invoke_result_t<F&, const A&, const B&>>;
  detail::require_same_layout(a.context(), a.partition(), b.context(), b.partition(), "transform");
  Stopwatch allocation;
  DistArray<Out> out(a.context(), a.partition());
  if (times) times->host += allocation.seconds();
  tessera::transform(a, b, out, f, times);
  return out;
}

template <class In, class Out, class F>
void transform_index(const DistArray<In>& in, DistArray<Out>& out, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, index_t, const In&>,
                "transform_index: f must take the global index and an element (index_t, const T&)");
  detail::require_same_layout(in.context(), in.partition(), out.context(), out.partition(), "transform_index");
  const Context& ctx = in.context();
  detail::local_phase(ctx, times, [&] {
    kernels::transform_index(ctx.queue(), 0, in.local_size(), out.local_data(),
                             detail::ValueWithIndex<In, F>{in.local_data(), in.global_offset(), f});
  });
}

template <class In, class F>
auto transform_index(const DistArray<In>& in, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, index_t, const In&>,
                "transform_index: f must take the global index and an element (index_t, const T&)");
  using Out = std::remove_cvref_t<std::invoke_result_t<F&, index_t, const In&>>;
  Stopwatch allocation;
  DistArray<Out> out(in.context(), in.partition());
  if (times) times->host += allocation.seconds();
  tessera::transform_index(in, out, f, times);
  return out;
}

template <class T, class F>
void for_each_index(DistArray<T>& array, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, index_t, T&>,
                "for_each_index: f must take the global index and an element (index_t, T& or const T&)");
  const Context& ctx = array.context();
  detail::local_phase(ctx, times, [&] {
    kernels::for_each_index(ctx.queue(), 0, array.local_size(),
                            detail::ApplyWithIndex<T, F>{array.local_data(), array.global_offset(), f});
  });
}

template <class T, class F>
void for_each_index(const DistArray<T>& array, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, index_t, const T&>,
                "for_each_index: f must take the global index and an element (index_t, const T&)");
  const Context& ctx = array.context();
  detail::local_phase(ctx, times, [&] {
    kernels::for_each_index(ctx.queue(), 0, array.local_size(),
                            detail::ApplyWithIndex<const T, F>{array.local_data(), array.global_offset(), f});
  });
}

template <class T, class F>
void for_each(DistArray<T>& array, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, T&>, "for_each: f cannot take the array's element type (T&)");
  const Context& ctx = array.context();
  detail::local_phase(ctx, times, [&] {
    kernels::for_each_index(ctx.queue(), 0, array.local_size(), detail::ApplyToElement<T, F>{array.local_data(), 0, f});
  });
}

template <class T, class F>
void for_each(const DistArray<T>& array, F f, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, const T&>,
                "for_each: f cannot take the array's element type (const T&)");
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
