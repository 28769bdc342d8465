// The binary operations the device code folds with, as small functors so that warp, block and
// device layers can be written once for any of them.
#pragma once

#include <type_traits>

#include "tessera/kernels/reduce.hpp"

namespace tessera::kernels::cuda::detail {

// Addition with the wrap-around the contract asks of integer sums (done in the unsigned type, so
// that overflow is defined behaviour rather than something the optimiser may exploit).
struct Sum {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};

// min / max / sum as the public reduce_combine defines them (NaN-propagating min and max), with
// the operation fixed at compile time so that the inner loop carries no switch.
template <ReduceOp Op>
struct Combine {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    if constexpr (Op == ReduceOp::sum) {
      return Sum{}(a, b);
    } else {
      return reduce_combine(Op, a, b);
    }
  }
};

}  // namespace tessera::kernels::cuda::detail
