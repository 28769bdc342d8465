// Conversions, element-wise arithmetic and arange (compiled by nvcc where the build has CUDA).
#include <string>
#include <type_traits>

#include "../ops.hpp"
#include "functors.hpp"
#include "tessera/framework/algorithms.hpp"

namespace tessera::python::ops {

template <class To, class From>
void astype(const DistArray<From>& a, DistArray<To>& out) {
  if constexpr (is_complex_v<From> && !is_complex_v<To>) {
    throw UsageError(std::string("astype: a complex array is not converted to ") + DtypeInfo<To>::name +
                     " (take the real part explicitly)");
  } else {
    auto view = device_view(out);
    transform(device_view(a), view, Convert<device_t<To>>{});
  }
}

namespace {

// Calls f(op) with the functor of `op`; divide only for floats (the binding converts integers first).
template <class T, class F>
void with_binary(Binary op, F&& f) {
  if constexpr (is_complex_v<T>) {
    switch (op) {
      case Binary::add: return f(plus{});
      case Binary::subtract: return f(minus{});
      case Binary::multiply: return f(multiplies{});
      case Binary::divide: return f(divides{});
      case Binary::minimum:
      case Binary::maximum: break;
    }
    throw UsageError("minimum and maximum: complex numbers have no order");
  } else {
  switch (op) {
    case Binary::add: return f(plus{});
    case Binary::subtract: return f(minus{});
    case Binary::multiply: return f(multiplies{});
    case Binary::minimum: return f(minimum{});
    case Binary::maximum: return f(maximum{});
    case Binary::divide: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    f(divides{});
  } else {
    throw UsageError("divide: integer arrays are converted to float64 first");
  }
  }
}

}  // namespace

template <class T>
void binary(const DistArray<T>& a, const DistArray<T>& b, DistArray<T>& out, Binary op) {
  auto view = device_view(out);
  with_binary<T>(op, [&](auto functor) { transform(device_view(a), device_view(b), view, functor); });
}

template <class T>
void binary_scalar(const DistArray<T>& a, T s, DistArray<T>& out, Binary op, bool scalar_first) {
  using D = device_t<T>;
  const D scalar = [&] {
    if constexpr (is_complex_v<T>) {
      return D(s.real(), s.imag());
    } else {
      return s;
    }
  }();
  auto view = device_view(out);
  with_binary<T>(op, [&](auto functor) {
    transform(device_view(a), view, WithScalar<D, decltype(functor)>{functor, scalar, scalar_first});
  });
}

template <class T>
void unary(const DistArray<T>& a, DistArray<T>& out, Unary op) {
  if (op == Unary::negative) {
    auto view = device_view(out);
    transform(device_view(a), view, negate{});
  } else if constexpr (is_complex_v<T>) {
    throw UsageError("absolute: the magnitude of a complex array is not supported");
  } else {
    transform(a, out, absolute{});
  }
}

template <class T>
void arange(DistArray<T>& out, T first, T second, std::int64_t first_integer, std::int64_t step_integer) {
  if constexpr (is_complex_v<T>) {
    throw UsageError("arange: complex dtypes are not supported");
  } else {
    generate(out, Arange<T>{first, second, first_integer, step_integer});
  }
}

#define TESSERA_PYTHON_ASTYPE(To, From) template void astype<To, From>(const DistArray<From>&, DistArray<To>&);
#define TESSERA_PYTHON_ELEMENTWISE(T)                                                              \
  TESSERA_PYTHON_FOR_EACH_DTYPE_WITH(TESSERA_PYTHON_ASTYPE, T)                                      \
  template void binary<T>(const DistArray<T>&, const DistArray<T>&, DistArray<T>&, Binary);        \
  template void binary_scalar<T>(const DistArray<T>&, T, DistArray<T>&, Binary, bool);             \
  template void unary<T>(const DistArray<T>&, DistArray<T>&, Unary);                               \
  template void arange<T>(DistArray<T>&, T, T, std::int64_t, std::int64_t);
TESSERA_PYTHON_FOR_EACH_DTYPE(TESSERA_PYTHON_ELEMENTWISE)

}  // namespace tessera::python::ops
