// The local step of a distributed FFT: a batched transform of a row-major [A, N..., S] block along
// its N axes (one, or up to three trailing axes where S is 1), on one backend (fftw_local.cpp,
// cufft_local.cu).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::fft::detail {

enum class LocalKind { forward, inverse, r2c, c2r };

// The block's shape: A batches of S interleaved transforms over the `rank` axes n[0..rank) (the
// logical lengths: the last is the real length for r2c and c2r, whose complex side is n/2 + 1
// long). rank > 1 only with s == 1.
struct LocalShape {
  index_t a = 1;
  int rank = 1;
  index_t n[3] = {1, 1, 1};
  index_t s = 1;
  // rank 1 and s 1 only: elements between the starts of consecutive batches' inputs, where they
  // are not contiguous (0: contiguous). An r2c input may be shorter than n (overlapping batches,
  // read only: overlap-save's segments).
  index_t in_distance = 0;
  // rank 1 and a 1, c2c only (cpu): where > 0, the S interleaved batches are [swapped_outer, s /
  // swapped_outer] and one side of the block is swapped: [N, S] on the natural side, [swapped_outer,
  // N, s / swapped_outer] on the other. forward reads the natural side and writes the swapped one,
  // inverse the other way round (Order::swapped's axis-0 step, reading an exchange's straight
  // receives).
  index_t swapped_outer = 0;
  // Elements of one batch on the complex side and on the input / output sides.
  index_t complex_elements() const {
    index_t e = s;
    for (int d = 0; d < rank; ++d) e *= d == rank - 1 ? n[d] / 2 + 1 : n[d];
    return e;
  }
  index_t full_elements() const {
    index_t e = s;
    for (int d = 0; d < rank; ++d) e *= n[d];
    return e;
  }
};

// Seconds of the best of three runs of `run` (measured planning's choices between two ways).
template <class Run>
double best_of_three(Run&& run) {
  double best = 1e300;
  for (int k = 0; k < 3; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

class LocalFft {
 public:
  virtual ~LocalFft() = default;
  // in -> out, backend memory: the same buffer where the plan was made in place (plan_in ==
  // plan_out), buffers that do not overlap otherwise. c2r may overwrite `in`.
  virtual void execute(const void* in, void* out) = 0;
  // Scratch memory the transform needs (cuFFT's work area), which the caller gives once through
  // set_work_area, shared by all the local plans of one distributed plan (they never run at once).
  virtual std::size_t work_bytes() const { return 0; }
  virtual void set_work_area(void* /*area*/) {}
};

// FFTW (cpu). plan_in and plan_out: buffers of the sizes the transform reads and writes, aligned as
// kernels::allocate aligns them; planning may overwrite them (FFTW_MEASURE). One buffer for both
// makes the plan in place (c2c only, the same layout on both sides): its execute() then takes one
// buffer for both, as FFTW requires; otherwise two that do not overlap. execute() takes other
// buffers than the planning ones, of the same alignment. Interleaved transforms run through
// transposes (FftwTransposed) read each batch whole into scratch before writing it, so in place too.
template <class Real>
std::unique_ptr<LocalFft> make_fftw(LocalKind kind, LocalShape shape, void* plan_in, void* plan_out, bool measure);
// FFTW's transposition in place of a rows x cols array of elements of element_reals reals each (a
// plan of rank 0), planned on `buffer` (overwritten where measure); null where FFTW has no in-place
// plan for the shape. Its execute() takes one buffer for both sides.
template <class Real>
std::unique_ptr<LocalFft> make_fftw_transposition(index_t rows, index_t cols, index_t element_reals, void* buffer,
                                                  bool measure);
// Whether FFTW may run a plan made on kernels::allocate's buffers on this address.
bool fftw_aligned(const void* p);

// cuFFT (cuda): the same contract on the queue's stream.
template <class Real>
std::unique_ptr<LocalFft> make_cufft(const kernels::Queue& queue, LocalKind kind, LocalShape shape);
// data[i] *= factor for i < count (count Real values), on the queue's stream.
template <class Real>
void scale_cuda(const kernels::Queue& queue, Real* data, index_t count, Real factor);
// spectra[b * length + k] *= factors[k] for b < batches, k < length (interleaved complex values),
// on the queue's stream.
template <class Real>
void multiply_spectra_cuda(const kernels::Queue& queue, Real* spectra, index_t batches, index_t length,
                           const Real* factors);
// The device's peak rates from its properties: FP32 fused multiply-adds per second (SMs x FP32
// lanes of the architecture x clock) and DRAM bytes per second (2 x memory clock x bus width).
struct DeviceRates {
  double fma_per_second = 0;
  double bytes_per_second = 0;
  double single_to_double = 2;  // FP32 over FP64 rate (cudaDevAttrSingleToDoublePrecisionPerfRatio)
};
DeviceRates device_rates(const kernels::Queue& queue);
bool have_cufft();

}  // namespace tessera::fft::detail
