// CPU reduce: the precompiled sum / min / max, as instances of the generic fold (cpu/algorithms.hpp:
// for these commutative operations, blocks of eight interleaved accumulators combined pairwise per
// thread, chunk results combined in order), with the function object itself.
#include <cstdint>

#include "cpu_backend.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"
#include "tessera/kernels/functional.hpp"

namespace tessera::kernels::cpu {

template <class T, class Op>
void reduce(const T* in, index_t n, Op op, T* out) {
  *out = transform_reduce(in, n, identity_fn{}, op, identity_element<Op, T>());
}

template <class T>
index_t reduce_sum_depth(index_t n) {
  return fold_parallel_depth(n);
}

template index_t reduce_sum_depth<float>(index_t);
template index_t reduce_sum_depth<double>(index_t);

#define TESSERA_CPU_REDUCE(T)                                           \
  template void reduce<T, plus>(const T*, index_t, plus, T*);           \
  template void reduce<T, minimum>(const T*, index_t, minimum, T*);     \
  template void reduce<T, maximum>(const T*, index_t, maximum, T*);
TESSERA_CPU_REDUCE(std::int32_t)
TESSERA_CPU_REDUCE(std::int64_t)
TESSERA_CPU_REDUCE(float)
TESSERA_CPU_REDUCE(double)
#undef TESSERA_CPU_REDUCE

}  // namespace tessera::kernels::cpu
