// CPU reduce: each thread reduces its chunk with several independent accumulators (so the compiler
// can vectorise and the adds do not wait on each other), then the chunk results combine in order.
#include <cstdint>
#include <vector>

#include "cpu_backend.hpp"
#include "parallel.hpp"

namespace tessera::kernels::cpu {
namespace {

template <class T, ReduceOp Op>
T reduce_range(const T* in, index_t n) {
  constexpr int kLanes = 8;
  T acc[kLanes];
  for (auto& a : acc) a = reduce_identity<T>(Op);
  index_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] = reduce_combine(Op, acc[l], in[i + l]);
  for (; i < n; ++i) acc[0] = reduce_combine(Op, acc[0], in[i]);
  T result = acc[0];
  for (int l = 1; l < kLanes; ++l) result = reduce_combine(Op, result, acc[l]);
  return result;
}

template <class T, ReduceOp Op>
T reduce_parallel(const T* in, index_t n) {
  const int threads = threads_for(n);
  if (threads == 1) return reduce_range<T, Op>(in, n);
  std::vector<T> partial(static_cast<std::size_t>(threads), reduce_identity<T>(Op));
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const Chunk c = chunk_of(n, t, omp_get_num_threads());
    partial[static_cast<std::size_t>(t)] = reduce_range<T, Op>(in + c.begin, c.end - c.begin);
  }
  T result = reduce_identity<T>(Op);
  for (const T& p : partial) result = reduce_combine(Op, result, p);
  return result;
}

}  // namespace

template <class T>
void reduce(const T* in, index_t n, ReduceOp op, T* out) {
  switch (op) {
    case ReduceOp::sum: *out = reduce_parallel<T, ReduceOp::sum>(in, n); break;
    case ReduceOp::min: *out = reduce_parallel<T, ReduceOp::min>(in, n); break;
    case ReduceOp::max: *out = reduce_parallel<T, ReduceOp::max>(in, n); break;
  }
}

template void reduce<std::int32_t>(const std::int32_t*, index_t, ReduceOp, std::int32_t*);
template void reduce<std::int64_t>(const std::int64_t*, index_t, ReduceOp, std::int64_t*);
template void reduce<float>(const float*, index_t, ReduceOp, float*);
template void reduce<double>(const double*, index_t, ReduceOp, double*);

}  // namespace tessera::kernels::cpu
