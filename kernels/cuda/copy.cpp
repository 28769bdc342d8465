// Copies of the cuda backend: the copy engines, ordered on the queue's stream.
#include <cuda_runtime.h>

#include "../src/memory_backends.hpp"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda {
namespace {

cudaStream_t cuda_stream(const Queue& q) { return reinterpret_cast<cudaStream_t>(q.stream); }

}  // namespace

void copy_to_host_async(const Queue& q, void* host_dst, const void* src, std::size_t bytes) {
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, cuda_stream(q)));
}

void copy_from_host_async(const Queue& q, void* dst, const void* host_src, std::size_t bytes) {
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, cuda_stream(q)));
}

void copy_within_async(const Queue& q, void* dst, const void* src, std::size_t bytes) {
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda_stream(q)));
}

// The copy engine walks the pitches itself: one call, no kernel.
void copy_2d_async(const Queue& q, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                   std::size_t row_bytes, std::size_t rows) {
  TESSERA_CUDA_CHECK(
      cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, cudaMemcpyDeviceToDevice, cuda_stream(q)));
}

}  // namespace tessera::kernels::cuda
