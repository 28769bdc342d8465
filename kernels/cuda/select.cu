// select and count_if: stream compaction (device_select.cuh) and a counting reduction
// (device_reduce.cuh with the predicate as the transform).
#include <cstdint>

#include "cuda_backend.hpp"
#include "device_reduce.cuh"
#include "device_select.cuh"
#include "ops.cuh"
#include "predicate_dispatch.cuh"

namespace tessera::kernels::cuda {
namespace detail {

template <class Pred>
struct KeptAsCount {
  Pred pred;
  template <class T>
  __device__ __forceinline__ index_t operator()(T x) const { return pred(x) ? 1 : 0; }
};

}  // namespace detail

template <class T>
void select(const T* in, index_t n, Predicate<T> pred, T* out, index_t* kept_count, Stream stream) {
  detail::with_fixed_predicate(pred, [&](auto fixed) { detail::device_select(in, n, fixed, out, kept_count, stream); });
}

template <class T>
void count_if(const T* in, index_t n, Predicate<T> pred, index_t* count, Stream stream) {
  detail::with_fixed_predicate(pred, [&](auto fixed) {
    detail::device_reduce(in, n, detail::KeptAsCount<decltype(fixed)>{fixed}, detail::Sum{}, index_t(0), count, stream);
  });
}

#define TESSERA_INSTANTIATE_SELECT(T)                                                    \
  template void select<T>(const T*, index_t, Predicate<T>, T*, index_t*, Stream);        \
  template void count_if<T>(const T*, index_t, Predicate<T>, index_t*, Stream);

TESSERA_INSTANTIATE_SELECT(std::int32_t)
TESSERA_INSTANTIATE_SELECT(std::int64_t)
TESSERA_INSTANTIATE_SELECT(float)
TESSERA_INSTANTIATE_SELECT(double)

}  // namespace tessera::kernels::cuda
