// The precompiled rebalance of the apps' element types (the template: algorithms/rebalance.hpp).
#include <cstdint>

#include "tessera/framework/algorithms/rebalance.hpp"

namespace tessera {

template DistArray<std::int32_t> rebalance<std::int32_t>(const DistArray<std::int32_t>&, PhaseTimes*);
template DistArray<std::int64_t> rebalance<std::int64_t>(const DistArray<std::int64_t>&, PhaseTimes*);
template DistArray<float> rebalance<float>(const DistArray<float>&, PhaseTimes*);
template DistArray<double> rebalance<double>(const DistArray<double>&, PhaseTimes*);

}  // namespace tessera
