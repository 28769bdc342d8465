// reduce: the precompiled device-wide sum, min and max, each with its function object (see
// device_reduce.cuh for the pass).
#include <cstdint>

#include "cuda_backend.hpp"
#include "tessera/kernels/cuda/device_reduce.cuh"
#include "tessera/kernels/cuda/ops.cuh"

namespace tessera::kernels::cuda {

template <class T, class Op>
void reduce(const Queue& queue, const T* in, index_t n, Op op, T* out) {
  detail::device_reduce(queue, in, n, detail::Identity{}, op, identity_element<Op, T>(), out);
}

template <class T>
index_t reduce_sum_depth(index_t n) {
  return detail::device_reduce_depth<detail::ReduceTuning, T, T, detail::Identity, detail::Combine<ReduceOp::sum>>(n);
}

template index_t reduce_sum_depth<float>(index_t);
template index_t reduce_sum_depth<double>(index_t);

#define TESSERA_CUDA_REDUCE(T)                                                          \
  template void reduce<T, plus>(const Queue&, const T*, index_t, plus, T*);             \
  template void reduce<T, minimum>(const Queue&, const T*, index_t, minimum, T*);       \
  template void reduce<T, maximum>(const Queue&, const T*, index_t, maximum, T*);
TESSERA_CUDA_REDUCE(std::int32_t)
TESSERA_CUDA_REDUCE(std::int64_t)
TESSERA_CUDA_REDUCE(float)
TESSERA_CUDA_REDUCE(double)
#undef TESSERA_CUDA_REDUCE

}  // namespace tessera::kernels::cuda
