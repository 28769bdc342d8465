// The backend halves of kernels::transpose_bytes (kernels/cpu/transpose.cpp and
// kernels/cuda/transpose.cu), kept beside the dispatch instead of in the shared backend headers.
#pragma once

#include <cstddef>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

namespace cpu {
void transpose_bytes(const void* in, index_t rows, index_t cols, index_t ld_in, void* out, index_t ld_out,
                     std::size_t element_bytes);
}  // namespace cpu

#if TESSERA_HAVE_CUDA
namespace cuda {
void transpose_bytes(const Queue& queue, const void* in, index_t rows, index_t cols, index_t ld_in, void* out,
                     index_t ld_out, std::size_t element_bytes);
}  // namespace cuda
#endif

}  // namespace tessera::kernels
