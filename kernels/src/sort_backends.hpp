// The backend halves of the precompiled local sorts (kernels/cpu/sort.cpp and kernels/cuda/sort.cu),
// kept beside their dispatch (sort_dispatch.cpp) instead of in the shared backend headers. Keys as
// their radix width (Bits: uint32_t or uint64_t) with the RadixTwiddle of their type; values as
// RadixNoValue (keys only), uint32_t or uint64_t.
#pragma once

#include <cstdint>

#include "tessera/kernels/cpu/sort.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/kernels/sort_order.hpp"

namespace tessera::kernels {

#define TESSERA_SORT_INSTANCES(X)     \
  X(std::uint32_t, RadixNoValue)      \
  X(std::uint32_t, std::uint32_t)     \
  X(std::uint32_t, std::uint64_t)     \
  X(std::uint64_t, RadixNoValue)      \
  X(std::uint64_t, std::uint32_t)     \
  X(std::uint64_t, std::uint64_t)

namespace cpu {
#define TESSERA_CPU_SORT_EXTERN(Bits, Word)                                                                \
  extern template void radix_sort<Bits, Word>(RadixTwiddle<Bits>, const Bits*, Bits*, const Word*, Word*, \
                                              index_t, int, int);
TESSERA_SORT_INSTANCES(TESSERA_CPU_SORT_EXTERN)
#undef TESSERA_CPU_SORT_EXTERN
extern template void sorted_search<std::uint32_t>(RadixTwiddle<std::uint32_t>, const std::uint32_t*, index_t,
                                                  const std::uint32_t*, index_t, bool, index_t*);
extern template void sorted_search<std::uint64_t>(RadixTwiddle<std::uint64_t>, const std::uint64_t*, index_t,
                                                  const std::uint64_t*, index_t, bool, index_t*);
}  // namespace cpu

#if TESSERA_HAVE_CUDA
namespace cuda {
template <class Bits, class Word>
void radix_sort(const Queue& queue, RadixTwiddle<Bits> twiddle, const Bits* keys_in, Bits* keys_out,
                const Word* values_in, Word* values_out, index_t n, int begin_bit, int end_bit);
template <class Bits>
void sorted_search(const Queue& queue, RadixTwiddle<Bits> twiddle, const Bits* sorted, index_t n, const Bits* needles,
                   index_t m, bool upper, index_t* positions);
}  // namespace cuda
#endif

}  // namespace tessera::kernels
