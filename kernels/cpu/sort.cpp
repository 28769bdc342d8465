// The precompiled CPU radix sorts and searches (the templates: tessera/kernels/cpu/sort.hpp).
#include "../src/sort_backends.hpp"

namespace tessera::kernels::cpu {

#define TESSERA_CPU_SORT_INSTANCE(Bits, Word) \
  template void radix_sort<Bits, Word>(RadixTwiddle<Bits>, const Bits*, Bits*, const Word*, Word*, index_t, int, int);
TESSERA_SORT_INSTANCES(TESSERA_CPU_SORT_INSTANCE)
#undef TESSERA_CPU_SORT_INSTANCE

template void sorted_search<std::uint32_t>(RadixTwiddle<std::uint32_t>, const std::uint32_t*, index_t,
                                           const std::uint32_t*, index_t, bool, index_t*);
template void sorted_search<std::uint64_t>(RadixTwiddle<std::uint64_t>, const std::uint64_t*, index_t,
                                           const std::uint64_t*, index_t, bool, index_t*);

}  // namespace tessera::kernels::cpu
