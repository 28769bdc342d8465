// gemm: the device-wide dispatch of the local matrix product. engine == tiled runs our kernels
// (SIMT SGEMM for float, FP64 tensor-core DGEMM for double); engine == vendor runs cuBLAS in its
// default math mode (no TF32), with the row-major product expressed as the column-major C^T = B^T A^T.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "agent_gemm_dmma.cuh"
#include "agent_gemm_simt.cuh"
#include "cuda_backend.hpp"
#include "device_info.cuh"
#include "tessera/kernels/cuda_check.hpp"

#define TESSERA_CUBLAS_CHECK(call)                                                                          \
  do {                                                                                                      \
    const cublasStatus_t tessera_cublas_status_ = (call);                                                   \
    if (tessera_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                    \
      ::tessera::fatal(__FILE__, __LINE__, #call, cublasGetStatusString(tessera_cublas_status_));          \
  } while (0)

namespace tessera::kernels::cuda {
namespace detail {

// C = beta * C over an m x n block (k == 0 or alpha == 0: A and B are not read, as in BLAS).
template <class T>
__global__ void scale_matrix_kernel(index_t m, index_t n, T beta, T* c, index_t ldc) {
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t e = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < m * n; e += stride) {
    T* p = c + (e / n) * ldc + e % n;
    *p = beta == T(0) ? T(0) : beta * *p;
  }
}

template <class T>
void scale_matrix(index_t m, index_t n, T beta, T* c, index_t ldc, StreamHandle stream) {
  const int grid = static_cast<int>(std::min<index_t>(ceil_div<index_t>(m * n, 256), 4 * current_device_info().sm_count));
  scale_matrix_kernel<<<grid, 256, 0, to_cuda(stream)>>>(m, n, beta, c, ldc);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// One cuBLAS handle per (host thread, device), created on first use; the stream is set per call.
cublasHandle_t cublas_handle() {
  thread_local std::array<cublasHandle_t, 64> handles{};
  const int device = current_device_info().ordinal;
  if (!handles[device]) {
    TESSERA_CUBLAS_CHECK(cublasCreate(&handles[device]));
    TESSERA_CUBLAS_CHECK(cublasSetMathMode(handles[device], CUBLAS_DEFAULT_MATH));
  }
  return handles[device];
}

template <class T>
void vendor_gemm(index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b, index_t ldb, T beta,
                 T* c, index_t ldc, StreamHandle stream) {
  cublasHandle_t handle = cublas_handle();
  TESSERA_CUBLAS_CHECK(cublasSetStream(handle, to_cuda(stream)));
  if constexpr (std::is_same_v<T, float>) {
    TESSERA_CUBLAS_CHECK(cublasSgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
  } else {
    TESSERA_CUBLAS_CHECK(cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
  }
}

template <class T>
bool rows_aligned(const T* p, index_t ld) {
  constexpr index_t kPerVector = 16 / sizeof(T);
  return is_aligned(p, 16) && ld % kPerVector == 0;
}

// Picks the kernel instance for the alignment of the three matrices (8 instances per type).
template <template <bool, bool, bool> class KernelOf>
auto pick_aligned_kernel(bool va, bool vb, bool vc) {
  using K = decltype(KernelOf<true, true, true>::value);
  K table[8] = {KernelOf<false, false, false>::value, KernelOf<false, false, true>::value,
                KernelOf<false, true, false>::value,  KernelOf<false, true, true>::value,
                KernelOf<true, false, false>::value,  KernelOf<true, false, true>::value,
                KernelOf<true, true, false>::value,   KernelOf<true, true, true>::value};
  return table[(va ? 4 : 0) + (vb ? 2 : 0) + (vc ? 1 : 0)];
}

template <bool VA, bool VB, bool VC>
struct SgemmKernel {
  static constexpr auto value = sgemm_simt_kernel<VA, VB, VC>;
};
template <bool VA, bool VB, bool VC>
struct DgemmKernel {
  static constexpr auto value = dgemm_dmma_kernel<DgemmTuning, VA, VB, VC>;
};

dim3 gemm_grid(index_t m, index_t n, int block_m, int block_n) {
  const index_t tiles_m = ceil_div<index_t>(m, block_m);
  const index_t tiles_n = ceil_div<index_t>(n, block_n);
  if (tiles_m > 65535 || tiles_n > 0x7fffffff)
    throw UsageError("gemm: matrix of " + std::to_string(m) + " x " + std::to_string(n) +
                     " exceeds the tile grid of the tiled engine (at most 65535 x 128 rows)");
  return dim3(static_cast<unsigned>(tiles_n), static_cast<unsigned>(tiles_m));
}

void tiled_gemm(index_t m, index_t n, index_t k, float alpha, const float* a, index_t lda, const float* b,
                index_t ldb, float beta, float* c, index_t ldc, StreamHandle stream) {
  const auto kernel = pick_aligned_kernel<SgemmKernel>(rows_aligned(a, lda), rows_aligned(b, ldb), rows_aligned(c, ldc));
  kernel<<<gemm_grid(m, n, SgemmTuning::kBlockM, SgemmTuning::kBlockN), SgemmTuning::kThreads, 0, to_cuda(stream)>>>(
      m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  TESSERA_CUDA_CHECK_LAUNCH();
}

void tiled_gemm(index_t m, index_t n, index_t k, double alpha, const double* a, index_t lda, const double* b,
                index_t ldb, double beta, double* c, index_t ldc, StreamHandle stream) {
  using Tu = DgemmTuning;
  const DeviceInfo& device = current_device_info();
  if (device.cc_major < 8)
    throw UsageError("gemm: the tiled double engine needs FP64 tensor cores (compute capability 8.0 or newer)");
  const auto kernel = pick_aligned_kernel<DgemmKernel>(rows_aligned(a, lda), rows_aligned(b, ldb), rows_aligned(c, ldc));
  // Opt in to more than 48 KiB of shared memory, once per device for all 8 instances.
  static std::array<std::atomic<bool>, 64> opted_in{};
  if (!opted_in[device.ordinal].load()) {
    TESSERA_ASSERT(static_cast<std::size_t>(device.max_smem_optin) >= Tu::kSharedBytes,
                   "gemm: the device offers too little shared memory for the DGEMM tile");
    for (int i = 0; i < 8; ++i) {
      const auto instance = pick_aligned_kernel<DgemmKernel>(i & 4, i & 2, i & 1);
      TESSERA_CUDA_CHECK(cudaFuncSetAttribute(instance, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(Tu::kSharedBytes)));
    }
    opted_in[device.ordinal].store(true);
  }
  // One-dimensional grid: the kernel maps block indices to tiles in groups of rows (L2 reuse).
  const index_t tiles = ceil_div<index_t>(m, Tu::kBlockM) * ceil_div<index_t>(n, Tu::kBlockN);
  if (tiles > 0x7fffffff)
    throw UsageError("gemm: matrix of " + std::to_string(m) + " x " + std::to_string(n) +
                     " exceeds the tile grid of the tiled engine (at most 2^31 - 1 tiles of 128 x " +
                     std::to_string(Tu::kBlockN) + ")");
  kernel<<<static_cast<unsigned>(tiles), Tu::kThreads, Tu::kSharedBytes, to_cuda(stream)>>>(m, n, k, alpha, a, lda, b,
                                                                                            ldb, beta, c, ldc);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace detail

template <class T>
void gemm(GemmEngine engine, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b,
          index_t ldb, T beta, T* c, index_t ldc, Stream stream) {
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == T(0)) {
    detail::scale_matrix(m, n, beta, c, ldc, stream);
    return;
  }
  if (engine == GemmEngine::vendor) {
    detail::vendor_gemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, stream);
  } else {
    detail::tiled_gemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, stream);
  }
}

template void gemm<float>(GemmEngine, index_t, index_t, index_t, float, const float*, index_t, const float*, index_t,
                          float, float*, index_t, Stream);
template void gemm<double>(GemmEngine, index_t, index_t, index_t, double, const double*, index_t, const double*,
                           index_t, double, double*, index_t, Stream);

}  // namespace tessera::kernels::cuda
