// CPU select and count_if: the precompiled comparison predicates (predicate.hpp), as instances of
// the generic templates (cpu/algorithms.hpp).
#include <cstdint>

#include "cpu_backend.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"

namespace tessera::kernels::cpu {

template <class T, class Pred>
void count_if(const T* in, index_t n, Pred pred, index_t* count) {
  *count = count_if(in, n, pred);
}

template <class T, class Pred>
void select(const T* in, index_t n, Pred pred, T* out, index_t* kept_count) {
  *kept_count = select(in, n, pred, out);
}

#define TESSERA_CPU_SELECT(T, P)                                  \
  template void select<T, P>(const T*, index_t, P, T*, index_t*); \
  template void count_if<T, P>(const T*, index_t, P, index_t*);
TESSERA_FOR_EACH_PREDICATE(TESSERA_CPU_SELECT, std::int32_t)
TESSERA_FOR_EACH_PREDICATE(TESSERA_CPU_SELECT, std::int64_t)
TESSERA_FOR_EACH_PREDICATE(TESSERA_CPU_SELECT, float)
TESSERA_FOR_EACH_PREDICATE(TESSERA_CPU_SELECT, double)
#undef TESSERA_CPU_SELECT

}  // namespace tessera::kernels::cpu
