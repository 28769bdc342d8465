// The binary operations the precompiled device code folds with: the public function objects of
// functional.hpp (whose device forms are the tuned ones), named by ReduceOp.
#pragma once

#include <type_traits>

#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/reduce_op.hpp"

namespace tessera::kernels::cuda::detail {

using Sum = tessera::plus;

template <ReduceOp Op>
using Combine = std::conditional_t<Op == ReduceOp::sum, tessera::plus,
                                   std::conditional_t<Op == ReduceOp::min, tessera::minimum, tessera::maximum>>;

}  // namespace tessera::kernels::cuda::detail
