// CPU GEMM, row-major, blocked for the cache (the Goto/BLIS loop order, without hand-written
// assembly): C is first scaled by beta; then for each block of columns of B (kNc) and each slice
// of K (kKc), the B block is packed once into contiguous memory, and the threads share the rows of
// C. The innermost loop runs along a packed row of B and a row of C, both contiguous, so the
// compiler vectorises it; four rows of C at a time reuse each loaded B row four times.
//
// GemmEngine::vendor, where the build found OpenBLAS (TESSERA_HAVE_OPENBLAS), runs cblas_sgemm,
// cblas_dgemm, cblas_cgemm or cblas_zgemm instead, row-major, with as many OpenBLAS threads as
// OpenMP would give this call (omp_get_max_threads(): --threads, OMP_NUM_THREADS; one inside a
// parallel region). Debian's libopenblas-dev links the pthread variant (libopenblas0-pthread),
// whose thread count is set by openblas_set_num_threads before each call where it differs; the
// openmp variant follows OpenMP by itself, and the call is the same. Dimensions or leading
// dimensions past the BLAS's integer (32-bit in Debian's libopenblas) go to the blocked kernel.
//
// Element types: float and double; std::int32_t and std::int64_t, whose products and sums wrap
// modulo 2^32 / 2^64 as NumPy's do (computed in the unsigned type of the same width, where
// wrapping is defined); std::complex<float> and std::complex<double>.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <type_traits>
#include <vector>

#if TESSERA_HAVE_OPENBLAS
#include <cblas.h>
#include <limits>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "cpu_backend.hpp"
#include "tessera/kernels/gemm.hpp"
#include "tessera/kernels/cpu/parallel.hpp"

namespace tessera::kernels::cpu {
namespace {

constexpr index_t kNc = 512;  // columns of B per packed block: 4 rows of C of this width fit L1/L2
constexpr index_t kKc = 256;  // depth per packed block: a kKc x kNc block of doubles is 1 MiB (L2)
constexpr index_t kMr = 4;    // rows of C updated together

// The product of two elements; for complex numbers the textbook formula, as BLAS's cgemm/zgemm
// compute it (std::complex's operator* adds C99's recovery of infinities from NaN parts, a call
// per product that keeps the loop from vectorising).
template <class T>
inline T times(T x, T y) {
  return x * y;
}
template <class F>
inline std::complex<F> times(std::complex<F> x, std::complex<F> y) {
  return {x.real() * y.real() - x.imag() * y.imag(), x.real() * y.imag() + x.imag() * y.real()};
}

template <class T>
void scale_rows(index_t m, index_t n, T beta, T* c, index_t ldc) {
#pragma omp parallel for schedule(static) if (m * n >= kSerialCutoff)
  for (index_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) {
      std::fill(row, row + n, T(0));  // BLAS: beta == 0 means C is not read (NaN does not survive)
    } else if (beta != T(1)) {
      for (index_t j = 0; j < n; ++j) row[j] = times(row[j], beta);
    }
  }
}

// C[rows, 0:nc] += alpha * A[rows, 0:kc] * Bp[0:kc, 0:nc] for `rows` (1..kMr) consecutive rows.
template <class T, int Rows>
void update_rows(index_t kc, index_t nc, T alpha, const T* a, index_t lda, const T* bp, T* c, index_t ldc) {
  for (index_t p = 0; p < kc; ++p) {
    T coef[Rows];
    for (int r = 0; r < Rows; ++r) coef[r] = times(alpha, a[r * lda + p]);
    const T* brow = bp + p * nc;
    for (int r = 0; r < Rows; ++r) {
      T* crow = c + r * ldc;
      const T ar = coef[r];
#pragma omp simd
      for (index_t j = 0; j < nc; ++j) crow[j] += times(ar, brow[j]);
    }
  }
}

template <class T>
void blocked_gemm(index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b, index_t ldb, T beta,
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

#if TESSERA_HAVE_OPENBLAS
// The threads OpenMP would give this call.
int blas_threads() {
#if defined(_OPENMP)
  return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
  return 1;
#endif
}

// True where OpenBLAS computed the product; false where it cannot take these sizes.
template <class T>
bool vendor_gemm(index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b, index_t ldb, T beta,
                 T* c, index_t ldc) {
  constexpr index_t kMax = std::numeric_limits<blasint>::max();
  for (index_t v : {m, n, k, lda, ldb, ldc})
    if (v > kMax) return false;
  const int threads = blas_threads();
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
  const auto bm = static_cast<blasint>(m), bn = static_cast<blasint>(n), bk = static_cast<blasint>(k);
  // BLAS wants leading dimensions >= 1 even where a matrix has no elements.
  const auto la = static_cast<blasint>(std::max<index_t>(lda, 1)), lb = static_cast<blasint>(std::max<index_t>(ldb, 1)),
             lc = static_cast<blasint>(std::max<index_t>(ldc, 1));
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bm, bn, bk, alpha, a, la, b, lb, beta, c, lc);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bm, bn, bk, alpha, a, la, b, lb, beta, c, lc);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    cblas_cgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bm, bn, bk, &alpha, a, la, b, lb, &beta, c, lc);
  } else {
    static_assert(std::is_same_v<T, std::complex<double>>);
    cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bm, bn, bk, &alpha, a, la, b, lb, &beta, c, lc);
  }
  return true;
}
#endif

}  // namespace

template <class T>
void gemm(GemmEngine engine, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b,
          index_t ldb, T beta, T* c, index_t ldc) {
#if TESSERA_HAVE_OPENBLAS
  if constexpr (!std::is_integral_v<T>) {
    if (engine == GemmEngine::vendor) {
      if (m == 0 || n == 0) return;
      // k == 0 or alpha == 0: C = beta C alone, by the blocked path (as under cuda).
      if (k > 0 && alpha != T(0) && vendor_gemm(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
    }
  }
#else
  (void)engine;
#endif
  if constexpr (std::is_integral_v<T>) {
    // Signed and unsigned types of one width may alias each other.
    using U = std::make_unsigned_t<T>;
    blocked_gemm<U>(m, n, k, static_cast<U>(alpha), reinterpret_cast<const U*>(a), lda, reinterpret_cast<const U*>(b),
                    ldb, static_cast<U>(beta), reinterpret_cast<U*>(c), ldc);
  } else {
    blocked_gemm<T>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

#define TESSERA_INSTANTIATE_GEMM(T) \
  template void gemm<T>(GemmEngine, index_t, index_t, index_t, T, const T*, index_t, const T*, index_t, T, T*, index_t);
TESSERA_FOR_EACH_GEMM_TYPE(TESSERA_INSTANTIATE_GEMM)
#undef TESSERA_INSTANTIATE_GEMM

}  // namespace tessera::kernels::cpu
