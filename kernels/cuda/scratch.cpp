// Temporary storage of the cuda backend (ScratchBuffer): the stream-ordered pool of the queue's
// device (cudaMallocAsync allocates from the pool of the stream's device), freed in stream order.
#include <cuda_runtime.h>

#include "../src/memory_backends.hpp"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda {

void* allocate_scratch(const Queue& q, std::size_t bytes, bool leave_empty) {
  const auto stream = reinterpret_cast<cudaStream_t>(q.stream);
  void* p = nullptr;
  cudaError_t status = cudaMallocAsync(&p, bytes, stream);
  if (status == cudaErrorMemoryAllocation) {  // cached array blocks may hold what the pool needs
    (void)cudaGetLastError();
    release_cached_memory();
    status = cudaMallocAsync(&p, bytes, stream);
  }
  if (status == cudaErrorMemoryAllocation && leave_empty) {
    (void)cudaGetLastError();  // not sticky
    return nullptr;
  }
  TESSERA_CUDA_CHECK(status);
  return p;
}

void free_scratch(const Queue& q, void* ptr) {
  TESSERA_CUDA_CHECK(cudaFreeAsync(ptr, reinterpret_cast<cudaStream_t>(q.stream)));
}

}  // namespace tessera::kernels::cuda
