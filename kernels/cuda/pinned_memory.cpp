// Page-locked host memory of the cuda backend: staging buffers the copy engines reach directly.
#include <cuda_runtime.h>

#include "../src/memory_backends.hpp"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda {

void* allocate_pinned_host(std::size_t bytes) {
  void* p = nullptr;
  TESSERA_CUDA_CHECK(cudaMallocHost(&p, bytes));
  return p;
}

void deallocate_pinned_host(void* ptr) { TESSERA_CUDA_CHECK(cudaFreeHost(ptr)); }

}  // namespace tessera::kernels::cuda
