// reduce: the public device-wide call for sum, min and max (see device_reduce.cuh for the pass).
#include <cstdint>

#include "cuda_backend.hpp"
#include "tessera/kernels/cuda/device_reduce.cuh"
#include "tessera/kernels/cuda/ops.cuh"

namespace tessera::kernels::cuda {

template <class T>
void reduce(const Queue& queue, const T* in, index_t n, ReduceOp op, T* out) {
  using detail::Combine;
  using detail::Identity;
  const T identity = reduce_identity<T>(op);
  switch (op) {
    case ReduceOp::sum: detail::device_reduce(queue, in, n, Identity{}, Combine<ReduceOp::sum>{}, identity, out); break;
    case ReduceOp::min: detail::device_reduce(queue, in, n, Identity{}, Combine<ReduceOp::min>{}, identity, out); break;
    case ReduceOp::max: detail::device_reduce(queue, in, n, Identity{}, Combine<ReduceOp::max>{}, identity, out); break;
  }
}

template <class T>
index_t reduce_sum_depth(index_t n) {
  return detail::device_reduce_depth<detail::ReduceTuning, T, T, detail::Identity, detail::Combine<ReduceOp::sum>>(n);
}

template index_t reduce_sum_depth<float>(index_t);
template index_t reduce_sum_depth<double>(index_t);

template void reduce<std::int32_t>(const Queue&, const std::int32_t*, index_t, ReduceOp, std::int32_t*);
template void reduce<std::int64_t>(const Queue&, const std::int64_t*, index_t, ReduceOp, std::int64_t*);
template void reduce<float>(const Queue&, const float*, index_t, ReduceOp, float*);
template void reduce<double>(const Queue&, const double*, index_t, ReduceOp, double*);

}  // namespace tessera::kernels::cuda
