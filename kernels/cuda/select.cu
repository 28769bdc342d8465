// select and count_if with the comparison function objects of predicate.hpp: the generic passes
// (cuda/algorithms.cuh: stream compaction, device_select.cuh; a counting reduction,
// device_reduce.cuh) instantiated with each, so that the inner loops compare with one instruction.
#include <cstdint>

#include "cuda_backend.hpp"
#include "tessera/kernels/cuda/algorithms.cuh"

namespace tessera::kernels::cuda {

#define TESSERA_INSTANTIATE_SELECT(T, P)                                              \
  template void select<T, P>(const Queue&, const T*, index_t, P, T*, index_t*);       \
  template void count_if<T, P>(const Queue&, const T*, index_t, P, index_t*);
TESSERA_FOR_EACH_PREDICATE(TESSERA_INSTANTIATE_SELECT, std::int32_t)
TESSERA_FOR_EACH_PREDICATE(TESSERA_INSTANTIATE_SELECT, std::int64_t)
TESSERA_FOR_EACH_PREDICATE(TESSERA_INSTANTIATE_SELECT, float)
TESSERA_FOR_EACH_PREDICATE(TESSERA_INSTANTIATE_SELECT, double)
#undef TESSERA_INSTANTIATE_SELECT

}  // namespace tessera::kernels::cuda
