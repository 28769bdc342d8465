// CPU reduce: the precompiled sum / min / max, as instances of the generic fold (cpu/algorithms.hpp:
// for these commutative operations, blocks of eight interleaved accumulators combined pairwise per
// thread, chunk results combined in order).
#include <cstdint>

#include "cpu_backend.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"

namespace tessera::kernels::cpu {

template <class T>
void reduce(const T* in, index_t n, ReduceOp op, T* out) {
  *out = with_reduce_op(op, [&](auto fn) { return transform_reduce(in, n, identity_fn{}, fn, reduce_identity<T>(op)); });
}

template <class T>
index_t reduce_sum_depth(index_t n) {
  return fold_parallel_depth(n);
}

template index_t reduce_sum_depth<float>(index_t);
template index_t reduce_sum_depth<double>(index_t);

template void reduce<std::int32_t>(const std::int32_t*, index_t, ReduceOp, std::int32_t*);
template void reduce<std::int64_t>(const std::int64_t*, index_t, ReduceOp, std::int64_t*);
template void reduce<float>(const float*, index_t, ReduceOp, float*);
template void reduce<double>(const double*, index_t, ReduceOp, double*);

}  // namespace tessera::kernels::cpu
