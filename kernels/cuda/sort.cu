// The precompiled CUDA radix sorts and searches: 32- and 64-bit radix keys (every key type of that
// width shares one kernel through its RadixTwiddle), alone or with 4- or 8-byte values. The
// kernels: tessera/kernels/cuda/device_radix_sort.cuh.
#include "../src/sort_backends.hpp"
#include "tessera/kernels/cuda/device_radix_sort.cuh"

namespace tessera::kernels::cuda {

template <class Bits, class Word>
void radix_sort(const Queue& queue, RadixTwiddle<Bits> twiddle, const Bits* keys_in, Bits* keys_out,
                const Word* values_in, Word* values_out, index_t n, int begin_bit, int end_bit) {
  detail::device_radix_sort(queue, twiddle, keys_in, keys_out, values_in, values_out, n, begin_bit, end_bit);
}

template <class Bits>
void sorted_search(const Queue& queue, RadixTwiddle<Bits> twiddle, const Bits* sorted, index_t n, const Bits* needles,
                   index_t m, bool upper, index_t* positions) {
  detail::device_sorted_search(queue, twiddle, sorted, n, needles, m, upper, positions);
}

#define TESSERA_CUDA_SORT_INSTANCE(Bits, Word)                                                                 \
  template void radix_sort<Bits, Word>(const Queue&, RadixTwiddle<Bits>, const Bits*, Bits*, const Word*, Word*, \
                                       index_t, int, int);
TESSERA_SORT_INSTANCES(TESSERA_CUDA_SORT_INSTANCE)
#undef TESSERA_CUDA_SORT_INSTANCE

template void sorted_search<std::uint32_t>(const Queue&, RadixTwiddle<std::uint32_t>, const std::uint32_t*, index_t,
                                           const std::uint32_t*, index_t, bool, index_t*);
template void sorted_search<std::uint64_t>(const Queue&, RadixTwiddle<std::uint64_t>, const std::uint64_t*, index_t,
                                           const std::uint64_t*, index_t, bool, index_t*);

}  // namespace tessera::kernels::cuda
