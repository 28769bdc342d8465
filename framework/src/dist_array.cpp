// The precompiled DistArray of the apps' element types (the template: dist_array.hpp).
#include "tessera/framework/dist_array.hpp"

#include <cstdint>

namespace tessera {

template class DistArray<std::int32_t>;
template class DistArray<std::int64_t>;
template class DistArray<float>;
template class DistArray<double>;

}  // namespace tessera
