// The precompiled filter and count_if with the run-time Predicate<T> of the apps' element types
// (the templates: algorithms/filter.hpp).
#include <cstdint>

#include "tessera/framework/algorithms/filter.hpp"

namespace tessera {

#define TESSERA_FILTER_INSTANTIATE(T)                                                          \
  template DistArray<T> filter<T, Predicate<T>>(const DistArray<T>&, Predicate<T>, PhaseTimes*); \
  template index_t count_if<T, Predicate<T>>(const DistArray<T>&, Predicate<T>, PhaseTimes*);

TESSERA_FILTER_INSTANTIATE(std::int32_t)
TESSERA_FILTER_INSTANTIATE(std::int64_t)
TESSERA_FILTER_INSTANTIATE(float)
TESSERA_FILTER_INSTANTIATE(double)

}  // namespace tessera
