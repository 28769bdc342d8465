// The local step on the cpu backend: FFTW's guru64 interface, one plan per step, made once.
#include <fftw3.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "local_fft.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/transpose.hpp"

namespace tessera::fft::detail {
namespace {

template <class Real>
struct Fftw;

template <>
struct Fftw<double> {
  using plan = fftw_plan;
  using complex = fftw_complex;
  static plan dft(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* h, complex* in, complex* out, int sign,
                  unsigned flags) {
    return fftw_plan_guru64_dft(r, d, hr, h, in, out, sign, flags);
  }
  static plan r2c(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* h, double* in, complex* out,
                  unsigned flags) {
    return fftw_plan_guru64_dft_r2c(r, d, hr, h, in, out, flags);
  }
  static plan c2r(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* h, complex* in, double* out,
                  unsigned flags) {
    return fftw_plan_guru64_dft_c2r(r, d, hr, h, in, out, flags);
  }
  static void exec_dft(plan p, void* in, void* out) {
    fftw_execute_dft(p, static_cast<complex*>(in), static_cast<complex*>(out));
  }
  static void exec_r2c(plan p, void* in, void* out) {
    fftw_execute_dft_r2c(p, static_cast<double*>(in), static_cast<complex*>(out));
  }
  static void exec_c2r(plan p, void* in, void* out) {
    fftw_execute_dft_c2r(p, static_cast<complex*>(in), static_cast<double*>(out));
  }
  static plan r2r(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* h, double* in, double* out, unsigned flags) {
    return fftw_plan_guru64_r2r(r, d, hr, h, in, out, nullptr, flags);
  }
  static void exec_r2r(plan p, void* in, void* out) { fftw_execute_r2r(p, static_cast<double*>(in), static_cast<double*>(out)); }
  static void destroy(plan p) { fftw_destroy_plan(p); }
};

template <>
struct Fftw<float> {
  using plan = fftwf_plan;
  using complex = fftwf_complex;
  static plan dft(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* h, complex* in, complex* out, int sign,
                  unsigned flags) {
    return fftwf_plan_guru64_dft(r, d, hr, h, in, out, sign, flags);
  }
  static plan r2c(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* h, float* in, complex* out,
                  unsigned flags) {
    return fftwf_plan_guru64_dft_r2c(r, d, hr, h, in, out, flags);
  }
  static plan c2r(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* h, complex* in, float* out,
                  unsigned flags) {
    return fftwf_plan_guru64_dft_c2r(r, d, hr, h, in, out, flags);
  }
  static void exec_dft(plan p, void* in, void* out) {
    fftwf_execute_dft(p, static_cast<complex*>(in), static_cast<complex*>(out));
  }
  static void exec_r2c(plan p, void* in, void* out) {
    fftwf_execute_dft_r2c(p, static_cast<float*>(in), static_cast<complex*>(out));
  }
  static void exec_c2r(plan p, void* in, void* out) {
    fftwf_execute_dft_c2r(p, static_cast<complex*>(in), static_cast<float*>(out));
  }
  static plan r2r(int r, const fftw_iodim64* d, int hr, const fftw_iodim64* h, float* in, float* out, unsigned flags) {
    return fftwf_plan_guru64_r2r(r, d, hr, h, in, out, nullptr, flags);
  }
  static void exec_r2r(plan p, void* in, void* out) { fftwf_execute_r2r(p, static_cast<float*>(in), static_cast<float*>(out)); }
  static void destroy(plan p) { fftwf_destroy_plan(p); }
};

template <class Real>
class FftwLocal final : public LocalFft {
 public:
  FftwLocal(LocalKind kind, LocalShape shape, void* plan_in, void* plan_out, bool measure) : kind_(kind) {
    using F = Fftw<Real>;
    // Lengths of the complex and real sides along the transformed axis.
    // The transformed axes, row-major: strides on the input and output sides (r2c and c2r halve
    // the last axis on their complex side).
    fftw_iodim64 dims[3];
    index_t in_stride = shape.s, out_stride = shape.s;
    for (int d = shape.rank - 1; d >= 0; --d) {
      const index_t n = shape.n[d];
      const index_t half = d == shape.rank - 1 ? n / 2 + 1 : n;
      dims[d] = {n, in_stride, out_stride};
      in_stride *= (kind == LocalKind::c2r ? half : n);
      out_stride *= (kind == LocalKind::r2c ? half : n);
    }
    fftw_iodim64 many[2];
    int howmany = 0;
    if (shape.swapped_outer > 0) {
      // [N, outer, inner] on the natural side, [outer, N, inner] on the swapped one.
      TESSERA_ASSERT(shape.rank == 1 && shape.a == 1 && (kind == LocalKind::forward || kind == LocalKind::inverse),
                     "fft: a swapped local step is one c2c axis without outer batches");
      const index_t n = shape.n[0], outer = shape.swapped_outer, inner = shape.s / outer;
      const bool natural_in = kind == LocalKind::forward;
      dims[0] = {n, natural_in ? shape.s : inner, natural_in ? inner : shape.s};
      if (outer > 1) many[howmany++] = {outer, natural_in ? inner : n * inner, natural_in ? n * inner : inner};
      if (inner > 1) many[howmany++] = {inner, 1, 1};
    } else {
      if (shape.in_distance > 0) in_stride = shape.in_distance;
      if (shape.a > 1) many[howmany++] = {shape.a, in_stride, out_stride};
      if (shape.s > 1) many[howmany++] = {shape.s, 1, 1};
    }
    const unsigned flags = (measure ? FFTW_MEASURE : FFTW_ESTIMATE);
    auto* cin = static_cast<typename F::complex*>(plan_in);
    auto* cout = static_cast<typename F::complex*>(plan_out);
    switch (kind) {
      case LocalKind::forward: plan_ = F::dft(shape.rank, dims, howmany, many, cin, cout, FFTW_FORWARD, flags); break;
      case LocalKind::inverse: plan_ = F::dft(shape.rank, dims, howmany, many, cin, cout, FFTW_BACKWARD, flags); break;
      case LocalKind::r2c: plan_ = F::r2c(shape.rank, dims, howmany, many, static_cast<Real*>(plan_in), cout, flags); break;
      case LocalKind::c2r: plan_ = F::c2r(shape.rank, dims, howmany, many, cin, static_cast<Real*>(plan_out), flags); break;
    }
    if (plan_ == nullptr)
      throw UsageError("fft: FFTW could not plan a transform of " + std::to_string(shape.rank) + " axes (" +
                       std::to_string(shape.n[0]) + " ...) in " + std::to_string(shape.a) + " x " +
                       std::to_string(shape.s) + " batches");
  }
  ~FftwLocal() override { Fftw<Real>::destroy(plan_); }
  FftwLocal(const FftwLocal&) = delete;
  FftwLocal& operator=(const FftwLocal&) = delete;

  void execute(const void* in, void* out) override {
    using F = Fftw<Real>;
    void* src = const_cast<void*>(in);  // FFTW reads only (c2r excepted, which the contract allows)
    switch (kind_) {
      case LocalKind::forward:
      case LocalKind::inverse: F::exec_dft(plan_, src, out); break;
      case LocalKind::r2c: F::exec_r2c(plan_, src, out); break;
      case LocalKind::c2r: F::exec_c2r(plan_, src, out); break;
    }
  }

 private:
  LocalKind kind_;
  typename Fftw<Real>::plan plan_ = nullptr;
};

// One axis of S > 1 interleaved transforms ([A, N, S] along N), through contiguous ones: per batch
// of A, the [N, S] block transposed to [S, N] (kernels::transpose_bytes, tiled), S contiguous
// transforms, the result transposed back. Two more passes over the batch, but no transform strides
// through memory S elements at a time, which thrashes the cache where S elements span a multiple
// of its set size (S a power of two: 1024 x 1024 at 2 ranks ran at 0.3-0.5x FFTW-MPI strided).
template <class Real>
class FftwTransposed final : public LocalFft {
 public:
  FftwTransposed(LocalKind kind, LocalShape shape, bool measure) : shape_(shape) {
    in_n_ = kind == LocalKind::c2r ? shape.n[0] / 2 + 1 : shape.n[0];
    out_n_ = kind == LocalKind::r2c ? shape.n[0] / 2 + 1 : shape.n[0];
    in_elem_ = kind == LocalKind::r2c ? sizeof(Real) : 2 * sizeof(Real);
    out_elem_ = kind == LocalKind::c2r ? sizeof(Real) : 2 * sizeof(Real);
    tmp_in_ = fftw_malloc(static_cast<std::size_t>(in_n_ * shape.s) * in_elem_);
    tmp_out_ = fftw_malloc(static_cast<std::size_t>(out_n_ * shape.s) * out_elem_);
    if (!tmp_in_ || !tmp_out_) throw std::bad_alloc();
    LocalShape rows;  // S contiguous transforms of one batch
    rows.a = shape.s;
    rows.n[0] = shape.n[0];
    plan_ = std::make_unique<FftwLocal<Real>>(kind, rows, tmp_in_, tmp_out_, measure);
  }
  ~FftwTransposed() override {
    fftw_free(tmp_in_);
    fftw_free(tmp_out_);
  }
  FftwTransposed(const FftwTransposed&) = delete;
  FftwTransposed& operator=(const FftwTransposed&) = delete;

  void execute(const void* in, void* out) override {
    const kernels::Queue cpu{};
    for (index_t a = 0; a < shape_.a; ++a) {
      const char* src = static_cast<const char*>(in) + static_cast<std::size_t>(a * in_n_ * shape_.s) * in_elem_;
      char* dst = static_cast<char*>(out) + static_cast<std::size_t>(a * out_n_ * shape_.s) * out_elem_;
      kernels::transpose_bytes(cpu, src, in_n_, shape_.s, shape_.s, tmp_in_, in_n_, in_elem_);
      plan_->execute(tmp_in_, tmp_out_);
      kernels::transpose_bytes(cpu, tmp_out_, shape_.s, out_n_, out_n_, dst, shape_.s, out_elem_);
    }
  }

 private:
  LocalShape shape_;
  index_t in_n_ = 0, out_n_ = 0;
  std::size_t in_elem_ = 0, out_elem_ = 0;
  void* tmp_in_ = nullptr;
  void* tmp_out_ = nullptr;
  std::unique_ptr<FftwLocal<Real>> plan_;
};

// A transposition in place: FFTW's plan of rank 0 over the reals (its in-place square and
// non-square transpositions, as FFTW-MPI's own one-rank schedule runs them).
template <class Real>
class FftwTransposition final : public LocalFft {
 public:
  explicit FftwTransposition(typename Fftw<Real>::plan plan) : plan_(plan) {}
  ~FftwTransposition() override { Fftw<Real>::destroy(plan_); }
  FftwTransposition(const FftwTransposition&) = delete;
  FftwTransposition& operator=(const FftwTransposition&) = delete;

  void execute(const void* in, void* out) override {
    TESSERA_ASSERT(in == out, "fft: an in-place transposition ran out of place");
    Fftw<Real>::exec_r2r(plan_, out, out);
  }

 private:
  typename Fftw<Real>::plan plan_;
};

// Seconds of one run of `fft` on the planning buffers (the best of three).
double time_once(LocalFft& fft, void* in, void* out) {
  return best_of_three([&] { fft.execute(in, out); });
}

}  // namespace

template <class Real>
std::unique_ptr<LocalFft> make_fftw(LocalKind kind, LocalShape shape, void* plan_in, void* plan_out, bool measure) {
  auto strided = std::make_unique<FftwLocal<Real>>(kind, shape, plan_in, plan_out, measure);
  if (shape.rank != 1 || shape.s == 1 || shape.swapped_outer > 0) return strided;
  // Interleaved transforms: strided, or through transposes, whichever measures faster (measure);
  // with estimate, through transposes where S elements span a multiple of 1 KiB.
  auto transposed = std::make_unique<FftwTransposed<Real>>(kind, shape, measure);
  const std::size_t elem = kind == LocalKind::r2c ? sizeof(Real) : 2 * sizeof(Real);
  if (!measure) {
    if ((static_cast<std::size_t>(shape.s) * elem) % 1024 == 0) return transposed;
    return strided;
  }
  // On zeros in the planning buffers (which hold nothing of the caller's; c2r overwrites its input).
  const index_t in_n = kind == LocalKind::c2r ? shape.n[0] / 2 + 1 : shape.n[0];
  const index_t out_n = kind == LocalKind::r2c ? shape.n[0] / 2 + 1 : shape.n[0];
  const std::size_t out_elem = kind == LocalKind::c2r ? sizeof(Real) : 2 * sizeof(Real);
  std::memset(plan_in, 0, static_cast<std::size_t>(shape.a * in_n * shape.s) * elem);
  std::memset(plan_out, 0, static_cast<std::size_t>(shape.a * out_n * shape.s) * out_elem);
  const double t_strided = time_once(*strided, plan_in, plan_out);
  const double t_transposed = time_once(*transposed, plan_in, plan_out);
  if (t_transposed < t_strided) return transposed;
  return strided;
}
template <class Real>
std::unique_ptr<LocalFft> make_fftw_transposition(index_t rows, index_t cols, index_t element_reals, void* buffer,
                                                  bool measure) {
  // [rows][cols] elements of E reals in, [cols][rows] out, in place.
  const index_t e = element_reals;
  const fftw_iodim64 dims[3] = {{rows, cols * e, e}, {cols, e, rows * e}, {e, 1, 1}};
  auto* p = static_cast<Real*>(buffer);
  const auto plan = Fftw<Real>::r2r(0, nullptr, e > 1 ? 3 : 2, dims, p, p, measure ? FFTW_MEASURE : FFTW_ESTIMATE);
  if (plan == nullptr) return nullptr;
  return std::make_unique<FftwTransposition<Real>>(plan);
}
template std::unique_ptr<LocalFft> make_fftw_transposition<float>(index_t, index_t, index_t, void*, bool);
template std::unique_ptr<LocalFft> make_fftw_transposition<double>(index_t, index_t, index_t, void*, bool);

template std::unique_ptr<LocalFft> make_fftw<float>(LocalKind, LocalShape, void*, void*, bool);
template std::unique_ptr<LocalFft> make_fftw<double>(LocalKind, LocalShape, void*, void*, bool);

bool fftw_aligned(const void* p) {
  // FFTW's own test (its SIMD alignment), for both precisions; the work buffers are 64-byte aligned.
  auto* d = static_cast<double*>(const_cast<void*>(p));
  auto* f = static_cast<float*>(const_cast<void*>(p));
  return fftw_alignment_of(d) == 0 && fftwf_alignment_of(f) == 0;
}

}  // namespace tessera::fft::detail
