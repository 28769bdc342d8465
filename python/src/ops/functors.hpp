// The functors of the Python package's operations: plain __host__ __device__ structs, so that the
// same code runs on the cpu backend and inside the CUDA kernels.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/detail/rounded.hpp"
#include "tessera/kernels/functional.hpp"

namespace tessera::python::ops {

// The complex element of the kernels: std::complex<F>'s layout (real part, imaginary part), with
// its arithmetic written for host and device alike (libstdc++'s std::complex has no __device__
// operators). The operations view a DistArray<std::complex<F>> as a DistArray<Complex<F>>.
template <class F>
struct Complex {
  F re, im;
  Complex() = default;
  TESSERA_HOST_DEVICE constexpr Complex(F r, F i = F(0)) : re(r), im(i) {}
  template <class G>
  TESSERA_HOST_DEVICE constexpr explicit Complex(const Complex<G>& z) : re(F(z.re)), im(F(z.im)) {}

  friend TESSERA_HOST_DEVICE constexpr Complex operator+(const Complex& a, const Complex& b) {
    return {a.re + b.re, a.im + b.im};
  }
  friend TESSERA_HOST_DEVICE constexpr Complex operator-(const Complex& a, const Complex& b) {
    return {a.re - b.re, a.im - b.im};
  }
  friend TESSERA_HOST_DEVICE constexpr Complex operator-(const Complex& a) { return {-a.re, -a.im}; }
  // numpy's product, (ac - bd) + (ad + bc)i, each operation rounded (no multiply-add, which nvcc
  // would make).
  friend TESSERA_HOST_DEVICE Complex operator*(const Complex& a, const Complex& b) {
    using namespace kernels::detail;
    return {sub_rn(mul_rn(a.re, b.re), mul_rn(a.im, b.im)), add_rn(mul_rn(a.re, b.im), mul_rn(a.im, b.re))};
  }
  // numpy's quotient (Smith's algorithm, no overflow of |b|^2 where the quotient is representable),
  // as numpy/core/src/umath/loops.c.src writes it: a scale 1 / denominator multiplied in, |b|'s parts
  // by fabs (so that -0 counts as 0), a zero divisor's parts dividing by +0.
  friend TESSERA_HOST_DEVICE Complex operator/(const Complex& a, const Complex& b) {
    using namespace kernels::detail;
    const F abs_re = b.re < F(0) ? -b.re : b.re == F(0) ? F(0) : b.re;  // fabs: -0 becomes +0
    const F abs_im = b.im < F(0) ? -b.im : b.im == F(0) ? F(0) : b.im;
    if (abs_re >= abs_im) {
      if (abs_re == F(0) && abs_im == F(0)) return {div_rn(a.re, abs_re), div_rn(a.im, abs_re)};
      const F ratio = div_rn(b.im, b.re), scale = div_rn(F(1), add_rn(b.re, mul_rn(b.im, ratio)));
      return {mul_rn(add_rn(a.re, mul_rn(a.im, ratio)), scale), mul_rn(sub_rn(a.im, mul_rn(a.re, ratio)), scale)};
    }
    const F ratio = div_rn(b.re, b.im), scale = div_rn(F(1), add_rn(b.im, mul_rn(b.re, ratio)));
    return {mul_rn(add_rn(mul_rn(a.re, ratio), a.im), scale), mul_rn(sub_rn(mul_rn(a.im, ratio), a.re), scale)};
  }
};
static_assert(sizeof(Complex<float>) == sizeof(std::complex<float>) &&
              sizeof(Complex<double>) == sizeof(std::complex<double>));

// The element type the kernels compute in: Complex<F> for std::complex<F>, T itself otherwise.
template <class T>
struct device_of {
  using type = T;
};
template <class F>
struct device_of<std::complex<F>> {
  using type = Complex<F>;
};
template <class T>
using device_t = typename device_of<T>::type;

// The array's blocks as elements of device_t<T> (the same memory; no copy).
template <class T>
DistArray<device_t<T>> device_view(const DistArray<T>& a) {
  return DistArray<device_t<T>>::view_local(a.context(), a.partition(),
                                            reinterpret_cast<device_t<T>*>(const_cast<T*>(a.local_data())));
}

template <class T, class D>
T from_device(const D& value) {
  if constexpr (std::is_same_v<T, D>) {
    return value;
  } else {
    return T(value.re, value.im);
  }
}

// The real or the imaginary part.
struct RealPart {
  template <class F>
  TESSERA_HOST_DEVICE F operator()(const Complex<F>& z) const { return z.re; }
};
struct ImagPart {
  template <class F>
  TESSERA_HOST_DEVICE F operator()(const Complex<F>& z) const { return z.im; }
};

// numpy's astype. A float that is NaN or outside the integer's range becomes the integer's smallest
// value (what numpy gives on x86, where C++ leaves the conversion undefined).
template <class To>
struct Convert {
  template <class From>
  TESSERA_HOST_DEVICE To operator()(const From& x) const {
    if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
      // -2^(bits-1) and 2^(bits-1) are exact in every floating-point type.
      constexpr From low = From(std::numeric_limits<To>::min());
      constexpr From high = -low;
      if (!(x >= low && x < high)) return std::numeric_limits<To>::min();
      return static_cast<To>(x);
    } else {
      return static_cast<To>(x);  // Complex<F> from a number, or from another Complex
    }
  }
};

// a - b; integers wrap modulo 2^bits.
struct minus {
  template <class T>
  TESSERA_HOST_DEVICE T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
    } else {
      return a - b;
    }
  }
};

struct divides {
  template <class T>
  TESSERA_HOST_DEVICE T operator()(const T& a, const T& b) const {
    static_assert(!std::is_integral_v<T>, "divides: floats and complex numbers only (numpy's true division)");
    return a / b;
  }
};

// A binary operation with one operand a scalar: a op s, or s op a.
template <class T, class Op>
struct WithScalar {
  Op op;
  T scalar;
  bool scalar_first;
  TESSERA_HOST_DEVICE T operator()(const T& a) const { return scalar_first ? op(scalar, a) : op(a, scalar); }
};

struct negate {
  template <class T>
  TESSERA_HOST_DEVICE T operator()(const T& a) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(a)));
    } else {
      return -a;
    }
  }
};

// |a|; the smallest integer stays itself (numpy's wrap).
struct absolute {
  template <class T>
  TESSERA_HOST_DEVICE T operator()(const T& a) const {
    if constexpr (std::is_integral_v<T>) {
      return a < 0 ? negate{}(a) : a;
    } else {
      return a < T(0) ? -a : (a == T(0) ? T(0) : a);  // -0 -> +0, NaN stays NaN
    }
  }
};

// numpy.arange's values, as numpy computes them: first = T(start), second = T(start + step) (the
// sum in double), and element i >= 2 = first + T(i) * (second - first), every operation rounded
// in T on its own (no fused multiply-add, which nvcc would otherwise contract this into); integers
// in wrapping int64 arithmetic.
template <class T>
struct Arange {
  T first, second;
  std::int64_t first_integer, step_integer;
  TESSERA_HOST_DEVICE T operator()(index_t i) const {
    if constexpr (std::is_integral_v<T>) {
      const auto value = static_cast<std::uint64_t>(first_integer) +
                         static_cast<std::uint64_t>(i) * static_cast<std::uint64_t>(step_integer);
      return static_cast<T>(static_cast<std::int64_t>(value));
    } else {
      if (i == 0) return first;
      if (i == 1) return second;
      return add(first, multiply(static_cast<T>(i), subtract(second, first)));
    }
  }
  static TESSERA_HOST_DEVICE T add(T a, T b) {
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) return __fadd_rn(a, b); else return __dadd_rn(a, b);
#else
    return a + b;
#endif
  }
  static TESSERA_HOST_DEVICE T subtract(T a, T b) {
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) return __fsub_rn(a, b); else return __dsub_rn(a, b);
#else
    return a - b;
#endif
  }
  static TESSERA_HOST_DEVICE T multiply(T a, T b) {
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) return __fmul_rn(a, b); else return __dmul_rn(a, b);
#else
    return a * b;
#endif
  }
};

}  // namespace tessera::python::ops
