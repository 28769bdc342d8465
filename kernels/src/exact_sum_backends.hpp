// The backend halves of kernels::exact_sum_partial (kernels/cpu/exact_sum.cpp and
// kernels/cuda/exact_sum.cu), kept beside the dispatch instead of in the shared backend headers.
#pragma once

#include "tessera/kernels/exact_sum.hpp"

namespace tessera::kernels {

namespace cpu {
template <class T>
void exact_sum_partial(const T* in, index_t n, ExactAccumulator<T>* acc_out);
}  // namespace cpu

#if TESSERA_HAVE_CUDA
namespace cuda {
template <class T>
void exact_sum_partial(const Queue& queue, const T* in, index_t n, ExactAccumulator<T>* acc_out);
}  // namespace cuda
#endif

}  // namespace tessera::kernels
