// CPU GEMM, row-major, blocked for the cache (the Goto/BLIS loop order, without hand-written
// assembly): C is first scaled by beta; then for each block of columns of B (kNc) and each slice
// of K (kKc), the B block is packed once into contiguous memory, and the threads share the rows of
// C. The innermost loop runs along a packed row of B and a row of C, both contiguous, so the
// compiler vectorises it; four rows of C at a time reuse each loaded B row four times.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu_backend.hpp"
#include "tessera/kernels/cpu/parallel.hpp"

namespace tessera::kernels::cpu {
namespace {

constexpr index_t kNc = 512;  // columns of B per packed block: 4 rows of C of this width fit L1/L2
constexpr index_t kKc = 256;  // depth per packed block: a kKc x kNc block of doubles is 1 MiB (L2)
constexpr index_t kMr = 4;    // rows of C updated together

template <class T>
void scale_rows(index_t m, index_t n, T beta, T* c, index_t ldc) {
#pragma omp parallel for schedule(static) if (m * n >= kSerialCutoff)
  for (index_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      std::fill(row, row + n, T(0));  // BLAS: beta == 0 means C is not read (NaN does not survive)
    } else if (beta != T(1)) {
      for (index_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

// C[rows, 0:nc] += alpha * A[rows, 0:kc] * Bp[0:kc, 0:nc] for `rows` (1..kMr) consecutive rows.
template <class T, int Rows>
void update_rows(index_t kc, index_t nc, T alpha, const T* a, index_t lda, const T* bp, T* c, index_t ldc) {
  for (index_t p = 0; p < kc; ++p) {
    T coef[Rows];
    for (int r = 0; r < Rows; ++r) coef[r] = alpha * a[r * lda + p];
    const T* brow = bp + p * nc;
    for (int r = 0; r < Rows; ++r) {
      T* crow = c + r * ldc;
      const T ar = coef[r];
#pragma omp simd
      for (index_t j = 0; j < nc; ++j) crow[j] += ar * brow[j];
    }
  }
}

}  // namespace

template <class T>
void gemm(index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b, index_t ldb, T beta,
          T* c, index_t ldc) {
  if (m == 0 || n == 0) return;
  scale_rows(m, n, beta, c, ldc);
  if (k == 0 || alpha == T(0)) return;

  std::vector<T> packed(static_cast<std::size_t>(std::min(k, kKc) * std::min(n, kNc)));
  const bool parallel = m * n * k >= kSerialCutoff * 8;
  for (index_t jc = 0; jc < n; jc += kNc) {
    const index_t nc = std::min(kNc, n - jc);
    for (index_t pc = 0; pc < k; pc += kKc) {
      const index_t kc = std::min(kKc, k - pc);
      T* bp = packed.data();
#pragma omp parallel if (parallel)
      {
#pragma omp for schedule(static)
        for (index_t p = 0; p < kc; ++p) std::copy_n(b + (pc + p) * ldb + jc, nc, bp + p * nc);
        // Row groups of kMr; the last group may be shorter.
#pragma omp for schedule(static)
        for (index_t i = 0; i < m; i += kMr) {
          const T* ablock = a + i * lda + pc;
          T* cblock = c + i * ldc + jc;
          switch (std::min(kMr, m - i)) {
            case 4: update_rows<T, 4>(kc, nc, alpha, ablock, lda, bp, cblock, ldc); break;
            case 3: update_rows<T, 3>(kc, nc, alpha, ablock, lda, bp, cblock, ldc); break;
            case 2: update_rows<T, 2>(kc, nc, alpha, ablock, lda, bp, cblock, ldc); break;
            default: update_rows<T, 1>(kc, nc, alpha, ablock, lda, bp, cblock, ldc); break;
          }
        }
      }
    }
  }
}

template void gemm<float>(index_t, index_t, index_t, float, const float*, index_t, const float*, index_t, float,
                          float*, index_t);
template void gemm<double>(index_t, index_t, index_t, double, const double*, index_t, const double*, index_t,
                           double, double*, index_t);

}  // namespace tessera::kernels::cpu
