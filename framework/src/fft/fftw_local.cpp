// The local step on the cpu backend: FFTW's guru64 interface, one plan per step, made once.
#include <fftw3.h>

#include <cstdint>
#include <string>

#include "local_fft.hpp"
#include "tessera/kernels/error.hpp"

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
    if (shape.a > 1) many[howmany++] = {shape.a, in_stride, out_stride};
    if (shape.s > 1) many[howmany++] = {shape.s, 1, 1};
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

}  // namespace

template <class Real>
std::unique_ptr<LocalFft> make_fftw(LocalKind kind, LocalShape shape, void* plan_in, void* plan_out, bool measure) {
  return std::make_unique<FftwLocal<Real>>(kind, shape, plan_in, plan_out, measure);
}
template std::unique_ptr<LocalFft> make_fftw<float>(LocalKind, LocalShape, void*, void*, bool);
template std::unique_ptr<LocalFft> make_fftw<double>(LocalKind, LocalShape, void*, void*, bool);

bool fftw_aligned(const void* p) {
  // FFTW's own test (its SIMD alignment), for both precisions; the work buffers are 64-byte aligned.
  auto* d = static_cast<double*>(const_cast<void*>(p));
  auto* f = static_cast<float*>(const_cast<void*>(p));
  return fftw_alignment_of(d) == 0 && fftwf_alignment_of(f) == 0;
}

}  // namespace tessera::fft::detail
