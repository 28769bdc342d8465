// select and count_if with the comparison function objects of predicate.hpp: the generic passes
// (stream compaction, device_select.cuh; a counting reduction, device_reduce.cuh) instantiated
// with each, so that the inner loops compare with one instruction.
#include <cstdint>

#include "cuda_backend.hpp"
#include "tessera/kernels/cuda/algorithms.cuh"

namespace tessera::kernels::cuda {

template <class T, class Pred>
void select(const Queue& queue, const T* in, index_t n, Pred pred, T* out, index_t* kept_count) {
  detail::device_select(queue, in, n, pred, out, kept_count);
}

template <class T, class Pred>
void count_if(const Queue& queue, const T* in, index_t n, Pred pred, index_t* count) {
  detail::device_reduce(queue, in, n, detail::KeptAsCount<Pred>{pred}, tessera::plus{}, index_t(0), count);
}

#define TESSERA_INSTANTIATE_SELECT(T, P)                                              \
  template void select<T, P>(const Queue&, const T*, index_t, P, T*, index_t*);       \
  template void count_if<T, P>(const Queue&, const T*, index_t, P, index_t*);
TESSERA_FOR_EACH_PREDICATE(TESSERA_INSTANTIATE_SELECT, std::int32_t)
TESSERA_FOR_EACH_PREDICATE(TESSERA_INSTANTIATE_SELECT, std::int64_t)
TESSERA_FOR_EACH_PREDICATE(TESSERA_INSTANTIATE_SELECT, float)
TESSERA_FOR_EACH_PREDICATE(TESSERA_INSTANTIATE_SELECT, double)
#undef TESSERA_INSTANTIATE_SELECT

}  // namespace tessera::kernels::cuda
