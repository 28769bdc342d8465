// Local matrix product, row-major: C = alpha * A * B + beta * C, with A m x k, B k x n, C m x n and
// leading dimensions (elements between the starts of consecutive rows) lda >= k, ldb >= n, ldc >= n.
#pragma once

#include <complex>
#include <cstdint>

#include "tessera/kernels/queue.hpp"

// The element types gemm (and the distributed matmul) are compiled for: X(T) for each.
#define TESSERA_FOR_EACH_GEMM_TYPE(X) \
  X(float) X(double) X(std::int32_t) X(std::int64_t) X(std::complex<float>) X(std::complex<double>)

namespace tessera {

// Which implementation computes a local product: ours (tiled, register-blocked), or the vendor
// library: cuBLAS under cuda, OpenBLAS under cpu where the build found it (Tessera_HAVE_OPENBLAS in
// the CMake package; the blocked kernel otherwise). The integer types have no vendor routine: both
// engines run ours.
enum class GemmEngine { tiled, vendor };

inline const char* to_string(GemmEngine e) { return e == GemmEngine::tiled ? "tiled" : "vendor"; }

namespace kernels {

// The library GemmEngine::vendor calls for float, double and the complex types on `backend` in this
// build: "cublas", "openblas", or nullptr where that engine runs the blocked kernel.
const char* vendor_gemm_library(Backend backend);

// Any m, n, k >= 0. When beta == 0, C is only written (NaN or garbage in C does not propagate), as
// in BLAS. k == 0 scales C by beta. A, B and C are backend memory; C does not overlap A or B.
// Stream-ordered under cuda.
template <class T>
void gemm(const Queue& queue, GemmEngine engine, index_t m, index_t n, index_t k, T alpha, const T* a,
          index_t lda, const T* b, index_t ldb, T beta, T* c, index_t ldc);

}  // namespace kernels
}  // namespace tessera
