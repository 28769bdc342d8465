#include "tessera/kernels/copy_2d.hpp"

#include <cstring>

#include "tessera/kernels/error.hpp"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels/cuda_check.hpp"
#endif

namespace tessera::kernels {

void copy_2d(const Queue& q, void* dst, index_t dst_ld, const void* src, index_t src_ld, index_t rows, index_t cols,
             std::size_t element_bytes) {
  TESSERA_ASSERT(rows >= 0 && cols >= 0 && dst_ld >= cols && src_ld >= cols, "copy_2d: bad shape");
  if (rows == 0 || cols == 0) return;
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * element_bytes;
  const std::size_t dst_pitch = static_cast<std::size_t>(dst_ld) * element_bytes;
  const std::size_t src_pitch = static_cast<std::size_t>(src_ld) * element_bytes;
  if (q.backend == Backend::cuda) {
#if TESSERA_HAVE_CUDA
    // The copy engine walks the pitches itself: one call, no kernel.
    TESSERA_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, static_cast<std::size_t>(rows),
                                         cudaMemcpyDeviceToDevice, reinterpret_cast<cudaStream_t>(q.stream)));
    return;
#else
    throw UsageError("the cuda backend was requested, but this build of Tessera has no CUDA support");
#endif
  }
  for (index_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(dst) + static_cast<std::size_t>(r) * dst_pitch,
                static_cast<const char*>(src) + static_cast<std::size_t>(r) * src_pitch, row_bytes);
}

}  // namespace tessera::kernels
