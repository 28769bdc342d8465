// The three reductions the apps name on the command line (sum, min, max): an enum, its identity and
// its combination rule. The same operations as the function objects plus, minimum and maximum of
// functional.hpp, for code that chooses one at run time.
#pragma once

#include <limits>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/functional.hpp"

namespace tessera {

enum class ReduceOp { sum, min, max };

inline const char* to_string(ReduceOp op) {
  return op == ReduceOp::sum ? "sum" : op == ReduceOp::min ? "min" : "max";
}

// The identity of each operation, so that an empty block contributes nothing.
template <class T>
TESSERA_HOST_DEVICE constexpr T reduce_identity(ReduceOp op) {
  if (op == ReduceOp::sum) return T(0);
  if constexpr (std::numeric_limits<T>::has_infinity) {
    return op == ReduceOp::min ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
  } else {
    return op == ReduceOp::min ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
  }
}

// Combines two partial results. Integer sums wrap modulo 2^bits (computed in the unsigned type, so
// that overflow is defined); min and max follow std::min / std::max, except that a NaN operand
// propagates, as IEEE 754-2019 minimum/maximum do, so that the result does not depend on the order
// in which partials meet.
template <class T>
TESSERA_HOST_DEVICE constexpr T reduce_combine(ReduceOp op, T a, T b) {
  if (op == ReduceOp::sum) return plus{}(a, b);
  if (op == ReduceOp::min) return minimum{}(a, b);
  return maximum{}(a, b);
}

// Calls f(op_object) with the function object ReduceOp names (plus, minimum or maximum), so that code
// choosing the operation at run time is written once for the three.
template <class F>
decltype(auto) with_reduce_op(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::sum: return f(plus{});
    case ReduceOp::min: return f(minimum{});
    case ReduceOp::max: break;
  }
  return f(maximum{});
}

}  // namespace tessera
