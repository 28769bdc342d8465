// Reductions with numpy's accumulators (compiled by nvcc where the build has CUDA: see ops.hpp).
#include <type_traits>

#include "../ops.hpp"
#include "functors.hpp"
#include "tessera/framework/algorithms.hpp"

namespace tessera::python::ops {

template <class T>
Accumulator<T> sum(const DistArray<T>& a) {
  if constexpr (is_complex_v<T>) {
    using D = device_t<T>;
    return from_device<T>(reduce(device_view(a), plus{}, D(0)));
  } else if constexpr (std::is_same_v<Accumulator<T>, T>) {
    return reduce(a, ReduceOp::sum);
  } else {
    return transform_reduce(a, Convert<Accumulator<T>>{}, plus{}, Accumulator<T>(0));
  }
}

template <class T>
Accumulator<T> prod(const DistArray<T>& a) {
  if constexpr (is_complex_v<T>) {
    using D = device_t<T>;
    return from_device<T>(reduce(device_view(a), multiplies{}, D(1)));
  } else if constexpr (std::is_same_v<Accumulator<T>, T>) {
    return reduce(a, multiplies{}, T(1));
  } else {
    return transform_reduce(a, Convert<Accumulator<T>>{}, multiplies{}, Accumulator<T>(1));
  }
}

template <class T>
Accumulator<T> exact_sum(const DistArray<T>& a) {
  if constexpr (is_complex_v<T>) {
    // The real and the imaginary parts, each correctly rounded.
    using F = real_t<T>;
    const auto view = device_view(a);
    DistArray<F> part(a.context(), a.partition());
    transform(view, part, RealPart{});
    const F re = reproducible_sum(part);
    transform(view, part, ImagPart{});
    return T(re, reproducible_sum(part));
  } else if constexpr (std::is_floating_point_v<T>) {
    return reproducible_sum(a);
  } else {
    return sum(a);
  }
}

template <class T>
double float64_sum(const DistArray<T>& a) {
  static_assert(std::is_integral_v<T>, "float64_sum: integer arrays");
  return transform_reduce(a, Convert<double>{}, plus{}, 0.0);
}

template <class T>
T min(const DistArray<T>& a) {
  return reduce(a, ReduceOp::min);
}

template <class T>
T max(const DistArray<T>& a) {
  return reduce(a, ReduceOp::max);
}

#define TESSERA_PYTHON_REDUCE(T)                                 \
  template Accumulator<T> sum<T>(const DistArray<T>&);           \
  template Accumulator<T> prod<T>(const DistArray<T>&);          \
  template Accumulator<T> exact_sum<T>(const DistArray<T>&);
#define TESSERA_PYTHON_EXTREMES(T)                               \
  template T min<T>(const DistArray<T>&);                        \
  template T max<T>(const DistArray<T>&);
TESSERA_PYTHON_FOR_EACH_DTYPE(TESSERA_PYTHON_REDUCE)
template double float64_sum<std::int32_t>(const DistArray<std::int32_t>&);
template double float64_sum<std::int64_t>(const DistArray<std::int64_t>&);
TESSERA_PYTHON_FOR_EACH_ORDERED_DTYPE(TESSERA_PYTHON_EXTREMES)

}  // namespace tessera::python::ops
