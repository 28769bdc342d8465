// CPU select and count_if: the precompiled run-time predicates, as instances of the generic
// templates (cpu/algorithms.hpp).
#include <cstdint>

#include "cpu_backend.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"

namespace tessera::kernels::cpu {

template <class T>
void count_if(const T* in, index_t n, Predicate<T> pred, index_t* count) {
  *count = count_if(in, n, pred);
}

template <class T>
void select(const T* in, index_t n, Predicate<T> pred, T* out, index_t* kept_count) {
  *kept_count = select(in, n, pred, out);
}

#define TESSERA_CPU_SELECT(T)                                                         \
  template void select<T>(const T*, index_t, Predicate<T>, T*, index_t*);             \
  template void count_if<T>(const T*, index_t, Predicate<T>, index_t*);

TESSERA_CPU_SELECT(std::int32_t)
TESSERA_CPU_SELECT(std::int64_t)
TESSERA_CPU_SELECT(float)
TESSERA_CPU_SELECT(double)

}  // namespace tessera::kernels::cpu
