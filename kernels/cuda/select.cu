// select and count_if with the run-time Predicate<T>: the generic passes (stream compaction,
// device_select.cuh; a counting reduction, device_reduce.cuh), instantiated with the predicate's kind
// fixed at compile time so that the inner loops compare with one instruction instead of a switch.
#include <cstdint>

#include "cuda_backend.hpp"
#include "tessera/kernels/cuda/algorithms.cuh"
#include "tessera/kernels/cuda/predicate_dispatch.cuh"

namespace tessera::kernels::cuda {

template <class T>
void select(const Queue& queue, const T* in, index_t n, Predicate<T> pred, T* out, index_t* kept_count) {
  detail::with_fixed_predicate(pred,
                               [&](auto fixed) { detail::device_select(queue, in, n, fixed, out, kept_count); });
}

template <class T>
void count_if(const Queue& queue, const T* in, index_t n, Predicate<T> pred, index_t* count) {
  detail::with_fixed_predicate(pred, [&](auto fixed) {
    detail::device_reduce(queue, in, n, detail::KeptAsCount<decltype(fixed)>{fixed}, tessera::plus{}, index_t(0), count);
  });
}

#define TESSERA_INSTANTIATE_SELECT(T)                                                    \
  template void select<T>(const Queue&, const T*, index_t, Predicate<T>, T*, index_t*);  \
  template void count_if<T>(const Queue&, const T*, index_t, Predicate<T>, index_t*);

TESSERA_INSTANTIATE_SELECT(std::int32_t)
TESSERA_INSTANTIATE_SELECT(std::int64_t)
TESSERA_INSTANTIATE_SELECT(float)
TESSERA_INSTANTIATE_SELECT(double)

}  // namespace tessera::kernels::cuda
