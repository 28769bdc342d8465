// The public local operations: each one hands the work to the backend named by the queue.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <string>

#include "../cpu/cpu_backend.hpp"
#include "backend_dispatch.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/kernels.hpp"
#include "tessera/kernels/transform.hpp"
#if TESSERA_HAVE_CUDA
#include "../cuda/cuda_backend.hpp"
#endif

namespace tessera::kernels {

namespace detail {

void throw_device_only_functor_on_cpu(const char* operation) {
  throw UsageError(std::string(operation) +
                   ": the functor is a __device__-only lambda, which cannot run on the cpu backend; "
                   "mark it __host__ __device__ (TESSERA_HOST_DEVICE)");
}

void throw_needs_cuda_compiler(const char* operation) {
  throw UsageError(std::string(operation) +
                   ": this functor and element type run on the cuda backend only from a translation unit "
                   "compiled by nvcc (this one was compiled without CUDA); compile it as CUDA, or use the "
                   "cpu backend");
}

void throw_no_cuda_backend(const char* operation) {
  throw UsageError(std::string(operation) + ": the cuda backend was requested, but this build of Tessera has no "
                   "CUDA support");
}

void check_count(index_t n, const char* operation) {
  if (n < 0) TESSERA_FATAL(operation, "negative element count");
}

void fill_bytes(const Queue& q, void* out, index_t n, std::size_t element_bytes, const void* value) {
  check_count(n, "fill");
  if (n == 0) return;
  auto* bytes = static_cast<unsigned char*>(out);
  if (q.backend == Backend::cpu) {
    for (index_t i = 0; i < n; ++i) std::memcpy(bytes + static_cast<std::size_t>(i) * element_bytes, value, element_bytes);
    return;
  }
  // The first element from the host, then doubling copies within the array: log2(n) copies that
  // move about 2n elements of traffic in all.
  copy_from_host_async(q, out, value, element_bytes);
  q.synchronize();  // `value` may not outlive the call
  for (index_t done = 1; done < n; done *= 2) {
    const index_t count = std::min(done, n - done);
    copy_within_async(q, bytes + static_cast<std::size_t>(done) * element_bytes, out,
                      static_cast<std::size_t>(count) * element_bytes);
  }
}

}  // namespace detail

#define TESSERA_DEFINE_REDUCE(T, Op)                                              \
  void reduce(const Queue& q, const T* in, index_t n, Op op, T* out) {            \
    TESSERA_ASSERT(n >= 0, "reduce: negative element count");                      \
    TESSERA_DISPATCH(q, cpu::reduce(in, n, op, out), cuda::reduce(q, in, n, op, out)); \
  }
#define TESSERA_DEFINE_REDUCES(T)         \
  TESSERA_DEFINE_REDUCE(T, plus)          \
  TESSERA_DEFINE_REDUCE(T, minimum)       \
  TESSERA_DEFINE_REDUCE(T, maximum)
TESSERA_DEFINE_REDUCES(std::int32_t)
TESSERA_DEFINE_REDUCES(std::int64_t)
TESSERA_DEFINE_REDUCES(float)
TESSERA_DEFINE_REDUCES(double)
#undef TESSERA_DEFINE_REDUCES
#undef TESSERA_DEFINE_REDUCE

template <class T>
index_t reduce_sum_depth(const Queue& q, index_t n) {
  TESSERA_ASSERT(n >= 0, "reduce_sum_depth: negative element count");
  index_t depth = 0;
  TESSERA_DISPATCH(q, depth = cpu::reduce_sum_depth<T>(n), depth = cuda::reduce_sum_depth<T>(n));
  return depth;
}

template <class T>
ScanRounding scan_rounding(const Queue& q) {
  ScanRounding rounding;
  TESSERA_DISPATCH(q, rounding = cpu::scan_rounding<T>(), rounding = cuda::scan_rounding<T>());
  return rounding;
}

template index_t reduce_sum_depth<float>(const Queue&, index_t);
template index_t reduce_sum_depth<double>(const Queue&, index_t);
template ScanRounding scan_rounding<float>(const Queue&);
template ScanRounding scan_rounding<double>(const Queue&);

template <class T>
void scan(const Queue& q, const T* in, T* out, index_t n, ScanKind kind, T carry_in) {
  TESSERA_ASSERT(n >= 0, "scan: negative element count");
  TESSERA_DISPATCH(q, cpu::scan(in, out, n, kind, carry_in), cuda::scan(q, in, out, n, kind, carry_in));
}

template <class T>
index_t scan_segment_count(const Queue& q, index_t n) {
  TESSERA_ASSERT(n >= 0, "scan_segment_count: negative element count");
  index_t segments = 0;
  TESSERA_DISPATCH(q, segments = cpu::scan_segment_count<T>(n), segments = cuda::scan_segment_count<T>(n));
  return segments;
}

template <class T>
void scan_totals(const Queue& q, const T* in, index_t n, T* segment_prefix, T* total) {
  TESSERA_ASSERT(n >= 0, "scan_totals: negative element count");
  TESSERA_DISPATCH(q, cpu::scan_totals(in, n, segment_prefix, total),
                   cuda::scan_totals(q, in, n, segment_prefix, total));
}

template <class T>
void scan_from_totals(const Queue& q, const T* in, T* out, index_t n, ScanKind kind, T carry_in,
                      const T* segment_prefix) {
  TESSERA_ASSERT(n >= 0, "scan_from_totals: negative element count");
  TESSERA_DISPATCH(q, cpu::scan_from_totals(in, out, n, kind, carry_in, segment_prefix),
                   cuda::scan_from_totals(q, in, out, n, kind, carry_in, segment_prefix));
}

#define TESSERA_DEFINE_SELECT_ONE(T, P)                                                                \
  void select(const Queue& q, const T* in, index_t n, P pred, T* out, index_t* kept_count) {            \
    TESSERA_ASSERT(n >= 0, "select: negative element count");                                           \
    TESSERA_DISPATCH(q, cpu::select(in, n, pred, out, kept_count), cuda::select(q, in, n, pred, out, kept_count)); \
  }                                                                                                     \
  void count_if(const Queue& q, const T* in, index_t n, P pred, index_t* count) {                        \
    TESSERA_ASSERT(n >= 0, "count_if: negative element count");                                         \
    TESSERA_DISPATCH(q, cpu::count_if(in, n, pred, count), cuda::count_if(q, in, n, pred, count));      \
  }
TESSERA_FOR_EACH_PREDICATE(TESSERA_DEFINE_SELECT_ONE, std::int32_t)
TESSERA_FOR_EACH_PREDICATE(TESSERA_DEFINE_SELECT_ONE, std::int64_t)
TESSERA_FOR_EACH_PREDICATE(TESSERA_DEFINE_SELECT_ONE, float)
TESSERA_FOR_EACH_PREDICATE(TESSERA_DEFINE_SELECT_ONE, double)
#undef TESSERA_DEFINE_SELECT_ONE

const char* vendor_gemm_library(Backend backend) {
  if (backend == Backend::cuda) return TESSERA_HAVE_CUDA ? "cublas" : nullptr;
#if TESSERA_HAVE_OPENBLAS
  return "openblas";
#else
  return nullptr;
#endif
}

template <class T>
void gemm(const Queue& q, GemmEngine engine, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda,
          const T* b, index_t ldb, T beta, T* c, index_t ldc) {
  TESSERA_ASSERT(m >= 0 && n >= 0 && k >= 0, "gemm: negative dimension");
  TESSERA_ASSERT(lda >= k && ldb >= n && ldc >= n, "gemm: leading dimension smaller than the row length");
  TESSERA_DISPATCH(q, cpu::gemm(engine, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc),
                   cuda::gemm(q, engine, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

template <class T>
void fill(const Queue& q, T* out, index_t n, T value) {
  TESSERA_DISPATCH(q, cpu::fill(out, n, value), cuda::fill(q, out, n, value));
}

template <class T>
void iota(const Queue& q, T* out, index_t n, T start) {
  TESSERA_DISPATCH(q, cpu::iota(out, n, start), cuda::iota(q, out, n, start));
}

template <class T>
void generate(const Queue& q, T* out, index_t n, std::uint64_t seed, index_t global_offset) {
  TESSERA_DISPATCH(q, cpu::generate(out, n, seed, global_offset),
                   cuda::generate(q, out, n, seed, global_offset));
}

#define TESSERA_INSTANTIATE(T)                                                                           \
  template void scan<T>(const Queue&, const T*, T*, index_t, ScanKind, T);                              \
  template index_t scan_segment_count<T>(const Queue&, index_t);                                        \
  template void scan_totals<T>(const Queue&, const T*, index_t, T*, T*);                                \
  template void scan_from_totals<T>(const Queue&, const T*, T*, index_t, ScanKind, T, const T*);

TESSERA_INSTANTIATE(std::int32_t)
TESSERA_INSTANTIATE(std::int64_t)
TESSERA_INSTANTIATE(float)
TESSERA_INSTANTIATE(double)

#define TESSERA_INSTANTIATE_GENERATE(T)                                                                  \
  template void fill<T>(const Queue&, T*, index_t, T);                                                  \
  template void iota<T>(const Queue&, T*, index_t, T);                                                  \
  template void generate<T>(const Queue&, T*, index_t, std::uint64_t, index_t);

TESSERA_INSTANTIATE_GENERATE(std::int8_t)
TESSERA_INSTANTIATE_GENERATE(std::int16_t)
TESSERA_INSTANTIATE_GENERATE(std::int32_t)
TESSERA_INSTANTIATE_GENERATE(std::int64_t)
TESSERA_INSTANTIATE_GENERATE(std::uint8_t)
TESSERA_INSTANTIATE_GENERATE(std::uint16_t)
TESSERA_INSTANTIATE_GENERATE(std::uint32_t)
TESSERA_INSTANTIATE_GENERATE(std::uint64_t)
TESSERA_INSTANTIATE_GENERATE(float)
TESSERA_INSTANTIATE_GENERATE(double)

#define TESSERA_INSTANTIATE_GEMM(T)                                                                       \
  template void gemm<T>(const Queue&, GemmEngine, index_t, index_t, index_t, T, const T*, index_t, const T*, index_t, \
                        T, T*, index_t);
TESSERA_FOR_EACH_GEMM_TYPE(TESSERA_INSTANTIATE_GEMM)
#undef TESSERA_INSTANTIATE_GEMM

}  // namespace tessera::kernels
