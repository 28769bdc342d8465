// Local reduce: one value from one rank's block.
#pragma once

#include <limits>
#include <type_traits>

#include "tessera/kernels/queue.hpp"

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
  if (op == ReduceOp::sum) {
    if constexpr (std::numeric_limits<T>::is_integer) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
  if constexpr (!std::numeric_limits<T>::is_integer) {
    if (a != a) return a;
    if (b != b) return b;
  }
  if (op == ReduceOp::min) return b < a ? b : a;
  return a < b ? b : a;
}

namespace kernels {

// Reduces in[0, n) with op into *out. `in` and `out` are backend memory (device memory under
// cuda: the result stays on the device for the MPI phase). n == 0 yields the identity.
// Stream-ordered under cuda: *out is ready once the queue is synchronized.
template <class T>
void reduce(const Queue& queue, const T* in, index_t n, ReduceOp op, T* out);

}  // namespace kernels
}  // namespace tessera
