// The precompiled reduce(array, ReduceOp) of the apps' element types: a thin wrapper over the
// template (algorithms/reduce.hpp) with plus, minimum or maximum.
#include <cstdint>

#include "tessera/framework/algorithms/reduce.hpp"

namespace tessera::detail {

template <class T>
T reduce_precompiled(const DistArray<T>& array, ReduceOp op, PhaseTimes* times) {
  return with_reduce_op(op, [&](auto fn) { return reduce(array, fn, reduce_identity<T>(op), times); });
}

template std::int32_t reduce_precompiled<std::int32_t>(const DistArray<std::int32_t>&, ReduceOp, PhaseTimes*);
template std::int64_t reduce_precompiled<std::int64_t>(const DistArray<std::int64_t>&, ReduceOp, PhaseTimes*);
template float reduce_precompiled<float>(const DistArray<float>&, ReduceOp, PhaseTimes*);
template double reduce_precompiled<double>(const DistArray<double>&, ReduceOp, PhaseTimes*);

}  // namespace tessera::detail
