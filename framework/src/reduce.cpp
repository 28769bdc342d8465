// The precompiled reduce(array, ReduceOp) of the apps' element types: a thin wrapper over the
// template (algorithms/reduce.hpp) with plus, minimum or maximum.
#include <cstdint>

#include "tessera/framework/algorithms/reduce.hpp"

namespace tessera {

template <class T>
T reduce(const DistArray<T>& array, ReduceOp op, PhaseTimes* times) {
  return with_reduce_op(op, [&](auto fn) { return reduce(array, fn, reduce_identity<T>(op), times); });
}

template std::int32_t reduce<std::int32_t>(const DistArray<std::int32_t>&, ReduceOp, PhaseTimes*);
template std::int64_t reduce<std::int64_t>(const DistArray<std::int64_t>&, ReduceOp, PhaseTimes*);
template float reduce<float>(const DistArray<float>&, ReduceOp, PhaseTimes*);
template double reduce<double>(const DistArray<double>&, ReduceOp, PhaseTimes*);

}  // namespace tessera
