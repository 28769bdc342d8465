// Function objects for the algorithms, and the traits the algorithms read from an operation.
//
// Every algorithm takes any callable: a struct with a `__host__ __device__` operator() (write
// TESSERA_HOST_DEVICE, which is that under nvcc and nothing elsewhere) or an extended lambda
// (`[] __host__ __device__ (float x) { ... }`, nvcc --extended-lambda). The ones here are ordinary
// callables among many; ReduceOp::sum, min and max name plus, minimum and maximum.
//
// What an algorithm needs to know about a binary operation `op`:
//   - it is associative (always required: op(op(a, b), c) == op(a, op(b, c)), up to rounding);
//   - whether it is commutative (op(a, b) == op(b, a)). Commutative operations may be combined in
//     any order, which the fastest reduction uses; any other operation is combined strictly in index
//     order (thread order, block order, rank order), so that 2x2 matrix products or compositions of
//     affine maps come out right. An operation says it commutes with a member
//     `static constexpr bool commutative = true`, or by wrapping it: `tessera::commutative(op)`.
//   - its identity, where the algorithm asks for one (reductions): op(e, x) == op(x, e) == x.
//     identity_element<Op, T>() gives it for the operations below.
#pragma once

#include <limits>
#include <type_traits>
#include <utility>

#include "tessera/kernels/config.hpp"

namespace tessera {

namespace detail {

// Integer arithmetic that wraps modulo 2^bits instead of overflowing (undefined for signed types):
// done in the unsigned type of at least int's width, so that narrow types are not promoted to int.
template <class T>
using wrap_unsigned_t = std::make_unsigned_t<decltype(std::declval<T>() + std::declval<T>())>;

template <class T>
TESSERA_HOST_DEVICE constexpr bool is_nan(const T& x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

}  // namespace detail

// a + b; integers wrap modulo 2^bits (bool: logical or is not meant: use logical_or).
struct plus {
  static constexpr bool commutative = true;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      using U = detail::wrap_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};

// a * b; integers wrap modulo 2^bits.
struct multiplies {
  static constexpr bool commutative = true;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      using U = detail::wrap_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  }
};

// The smaller (larger) of a and b. A NaN operand wins, as IEEE 754-2019 minimum/maximum say, so
// that the result does not depend on the order in which values meet. Only which NaN comes out, and
// which zero for +0 and -0, may differ between host and device (IEEE allows either zero).
//
// On the device the floating-point forms avoid branches: the two early returns compiled to a branch
// per element (plus register copies), which held float and double min/max reductions at 87% of the
// DRAM rate where the sum reached 91% (ncu, H200). float: one FMNMX.NAN (min.NaN.f32, sm_80+);
// double (no min.NaN.f64): a when it wins or is a NaN, else b, 4 instructions where fmin/fmax plus
// an unordered test took 7 and held double min/max at 0.97-0.98x CUB on an H100.
struct minimum {
  static constexpr bool commutative = true;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& a, const T& b) const {
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_floating_point_v<T>) {
#if __CUDA_ARCH__ >= 800
      if constexpr (std::is_same_v<T, float>) {
        float r;
        asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
        return r;
      }
#endif
      return (a < b || a != a) ? a : b;
    }
#endif
    if (detail::is_nan(a)) return a;
    if (detail::is_nan(b)) return b;
    return b < a ? b : a;
  }
};

struct maximum {
  static constexpr bool commutative = true;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& a, const T& b) const {
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_floating_point_v<T>) {
#if __CUDA_ARCH__ >= 800
      if constexpr (std::is_same_v<T, float>) {
        float r;
        asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
        return r;
      }
#endif
      return (a > b || a != a) ? a : b;
    }
#endif
    if (detail::is_nan(a)) return a;
    if (detail::is_nan(b)) return b;
    return a < b ? b : a;
  }
};

struct logical_and {
  static constexpr bool commutative = true;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a && b); }
};

struct logical_or {
  static constexpr bool commutative = true;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a || b); }
};

struct bit_and {
  static constexpr bool commutative = true;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a & b); }
};

struct bit_or {
  static constexpr bool commutative = true;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a | b); }
};

struct bit_xor {
  static constexpr bool commutative = true;
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& a, const T& b) const { return static_cast<T>(a ^ b); }
};

// Comparisons (for is_sorted, min_element, ...).
struct less {
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr bool operator()(const T& a, const T& b) const { return a < b; }
};

struct greater {
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr bool operator()(const T& a, const T& b) const { return b < a; }
};

struct equal_to {
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr bool operator()(const T& a, const T& b) const { return a == b; }
};

// The unary operation that returns its argument (transform_reduce with it is a plain reduce).
struct identity_fn {
  template <class T>
  TESSERA_HOST_DEVICE_INLINE constexpr T operator()(const T& x) const { return x; }
};

// ---- traits ----------------------------------------------------------------------------------------

// True when Op declares `static constexpr bool commutative = true`, or is wrapped by commutative().
// Specialise it for an operation you cannot change.
template <class Op, class = void>
struct is_commutative : std::false_type {};
template <class Op>
struct is_commutative<Op, std::enable_if_t<Op::commutative>> : std::true_type {};
template <class Op>
inline constexpr bool is_commutative_v = is_commutative<std::remove_cvref_t<Op>>::value;

// An operation that the caller declares commutative (as MPI_Op_create's `commute` argument does).
template <class Op>
struct Commutative {
  static constexpr bool commutative = true;
  using wrapped_functor = Op;
  Op op;
  template <class A, class B>
  TESSERA_HOST_DEVICE constexpr auto operator()(const A& a, const B& b) const {
    return op(a, b);
  }
};
template <class Op>
constexpr Commutative<Op> commutative(Op op) {
  return Commutative<Op>{op};
}

// The identity of the operations above for arithmetic T (a compile error for others: pass the
// identity explicitly).
template <class Op, class T>
TESSERA_HOST_DEVICE constexpr T identity_element() {
  static_assert(std::is_arithmetic_v<T>, "identity_element: pass the identity explicitly for this type");
  using O = std::remove_cvref_t<Op>;
  if constexpr (std::is_same_v<O, plus> || std::is_same_v<O, logical_or> || std::is_same_v<O, bit_or> ||
                std::is_same_v<O, bit_xor>) {
    return T(0);
  } else if constexpr (std::is_same_v<O, multiplies> || std::is_same_v<O, logical_and>) {
    return T(1);
  } else if constexpr (std::is_same_v<O, bit_and>) {
    return static_cast<T>(~T(0));
  } else if constexpr (std::is_same_v<O, minimum>) {
    if constexpr (std::numeric_limits<T>::has_infinity) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  } else if constexpr (std::is_same_v<O, maximum>) {
    if constexpr (std::numeric_limits<T>::has_infinity) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  } else {
    static_assert(sizeof(O) == 0, "identity_element: unknown operation; pass the identity explicitly");
    return T{};
  }
}

template <class Op, class T, class = void>
struct has_identity_element : std::false_type {};
template <class Op, class T>
struct has_identity_element<Op, T, std::enable_if_t<std::is_arithmetic_v<T> && (
    std::is_same_v<std::remove_cvref_t<Op>, plus> || std::is_same_v<std::remove_cvref_t<Op>, multiplies> ||
    std::is_same_v<std::remove_cvref_t<Op>, minimum> || std::is_same_v<std::remove_cvref_t<Op>, maximum> ||
    std::is_same_v<std::remove_cvref_t<Op>, logical_and> || std::is_same_v<std::remove_cvref_t<Op>, logical_or> ||
    std::is_same_v<std::remove_cvref_t<Op>, bit_and> || std::is_same_v<std::remove_cvref_t<Op>, bit_or> ||
    std::is_same_v<std::remove_cvref_t<Op>, bit_xor>)>> : std::true_type {};

// A value paired with its global index: what min_element and max_element return.
template <class T>
struct ValueIndex {
  T value{};
  index_t index = -1;  // -1: no element (an empty array)
};

}  // namespace tessera
