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
// the operation fixed at compile time so that the inner loop carries no switch. The floating-point
// min and max are written without branches: reduce_combine's two early returns compiled to a
// branch per element (plus register copies), which held the float and double min/max at 87% of
// the DRAM rate where the sum reached 91% (ncu, H200). Only which NaN comes out may differ from
// reduce_combine; min and max of +0 and -0 may return either zero, as IEEE minimum/maximum allow.
template <ReduceOp Op>
struct Combine {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    if constexpr (Op == ReduceOp::sum) {
      return Sum{}(a, b);
    } else if constexpr (std::is_integral_v<T>) {
      return Op == ReduceOp::min ? (b < a ? b : a) : (a < b ? b : a);
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      if constexpr (std::is_same_v<T, float>) {
        float r;  // one FMNMX.NAN: min/max that return a NaN when either operand is one
        if constexpr (Op == ReduceOp::min) {
          asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
        } else {
          asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
        }
        return r;
      }
#endif
      // Doubles (no min.NaN.f64): a when it wins or is a NaN, else b (then b may be the NaN). Two
      // compares and a 64-bit select, 4 instructions; fmin/fmax plus an unordered test and a + b
      // for the NaN took 7 (3 of them FP64) and held double min/max at 0.97-0.98x CUB on an H100.
      const bool a_wins = Op == ReduceOp::min ? a < b : a > b;
      return (a_wins || a != a) ? a : b;
    }
  }
};

}  // namespace tessera::kernels::cuda::detail
