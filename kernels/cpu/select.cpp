// CPU select: each thread counts the kept elements of its chunk, the counts become write offsets,
// then each thread copies its kept elements from its offset. Stable: chunks are in input order.
#include <cstdint>
#include <vector>

#include "cpu_backend.hpp"
#include "parallel.hpp"

namespace tessera::kernels::cpu {
namespace {

template <class T>
index_t count_range(const T* in, index_t n, const Predicate<T>& pred) {
  index_t kept = 0;
  for (index_t i = 0; i < n; ++i) kept += pred(in[i]) ? 1 : 0;
  return kept;
}

template <class T>
index_t copy_kept(const T* in, index_t n, const Predicate<T>& pred, T* out) {
  index_t kept = 0;
  for (index_t i = 0; i < n; ++i) {
    const T x = in[i];
    out[kept] = x;  // written always, advanced only when kept: no branch in the loop body
    kept += pred(x) ? 1 : 0;
  }
  return kept;
}

}  // namespace

template <class T>
void count_if(const T* in, index_t n, Predicate<T> pred, index_t* count) {
  const int threads = threads_for(n);
  index_t total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
  {
    const Chunk c = chunk_of(n, omp_get_thread_num(), omp_get_num_threads());
    total += count_range(in + c.begin, c.end - c.begin, pred);
  }
  *count = total;
}

template <class T>
void select(const T* in, index_t n, Predicate<T> pred, T* out, index_t* kept_count) {
  const int threads = threads_for(n);
  if (threads == 1) {
    // copy_kept may write one element past the last kept one; out has room for n elements, and the
    // stray write lands inside that room or is the kept element itself.
    *kept_count = copy_kept(in, n, pred, out);
    return;
  }
  std::vector<index_t> offset(static_cast<std::size_t>(threads) + 1, 0);
  int team_size = threads;  // the team OpenMP actually gave us (fewer threads under OMP_DYNAMIC)
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int team = omp_get_num_threads();
    const Chunk c = chunk_of(n, t, team);
    offset[static_cast<std::size_t>(t) + 1] = count_range(in + c.begin, c.end - c.begin, pred);
#pragma omp barrier
#pragma omp single
    {
      team_size = team;
      for (int i = 1; i <= team; ++i) offset[i] += offset[i - 1];
    }
    // Threads write to disjoint ranges, so the branch-free stray write of copy_kept could land in
    // the next thread's range: keep the branch here.
    T* dst = out + offset[static_cast<std::size_t>(t)];
    for (index_t i = c.begin; i < c.end; ++i)
      if (pred(in[i])) *dst++ = in[i];
  }
  *kept_count = offset[static_cast<std::size_t>(team_size)];
}

#define TESSERA_CPU_SELECT(T)                                                         \
  template void select<T>(const T*, index_t, Predicate<T>, T*, index_t*);             \
  template void count_if<T>(const T*, index_t, Predicate<T>, index_t*);

TESSERA_CPU_SELECT(std::int32_t)
TESSERA_CPU_SELECT(std::int64_t)
TESSERA_CPU_SELECT(float)
TESSERA_CPU_SELECT(double)

}  // namespace tessera::kernels::cpu
