// The 1-D convolution of a block-distributed array by the FFT where that is faster than the direct
// sum: scipy.signal.convolve's choice between its direct and FFT methods, on tessera::convolve's
// halo exchange (algorithms/stencil.hpp). Part of tessera_fft (Tessera::fft).
//
//   fft::Convolution<T> conv(ctx, weights, Boundary::zero);   // made once: the plans, the
//   DistArray<T> out = conv(a);                               // weights' spectrum, the buffers
//   DistArray<T> out = fft::convolve(a, weights);             // the same, made for one call
//
// The result is tessera::convolve's (numpy.convolve order, same length, a's partition, zero or
// periodic boundary). Each rank receives the radius elements beyond each end of its block as
// tessera::convolve does and, while they travel, computes the outputs of its block that need no
// halo; the 2 radius outputs at the ends of the block (and every output of a block shorter than 2
// radius) take the direct sum.
//
// The FFT path (overlap-save): the outputs that need no halo are cut into segments of L = N - 2 r
// outputs (rounded down to even); each segment's N inputs go through one real-to-complex transform of length N (cuFFT
// under cuda, FFTW under cpu), the product with the weights' spectrum (computed once, in double,
// with the 1/N of the inverse folded in) and one complex-to-real transform, whose last L values are
// the segment's outputs. The segments go in batches of transforms (ConvolveOptions::batch); under
// cuda each batch's transforms read their inputs straight from the block (overlapping by 2 r); under
// cpu the batches are shared among the rank's OpenMP threads, as the direct loop's outputs are. The
// weights' spectrum, the plans and the buffers are made at the first call that takes the FFT path,
// the plans and buffers again when a block of another size comes (under cuda after waiting for the
// work queued before: that call's FFTs do not overlap its halo exchange).
//
// Methods (ConvolveMethod):
//   direct     tessera::convolve, bit for bit: each tap one fused multiply-add, in the order
//              kernels/stencil.hpp states, the same on every backend, rank count and partition.
//   fft        the FFT path for the outputs that need no halo. Not bitwise reproducible across
//              backends, partitions or FFT lengths (the segments' cuts move); deterministic for
//              one of each. Every output within error_bound() of the exact sum.
//   automatic  the FFT path on a rank where the radius reaches the crossover of the two paths'
//              costs (crossover_radius(): a constant of the cpu backend, a model of the device's
//              FP32 and DRAM rates under cuda) and the block's inner outputs fill a segment; the direct
//              path otherwise.
//
// The error bound of the FFT path: for each output,
//   |out_i - exact_i| <= (21 log2 N + 5) u ||w||_1 sqrt(N) max_j |a_j|
// with u the unit roundoff of T, modelled on Higham's normwise bound for a radix-2 FFT with
// correctly rounded twiddle factors (Accuracy and Stability of Numerical Algorithms, 2nd ed., Thm
// 24.2: log2 N x (u + gamma_4 (sqrt 2 + u)) per transform): the segment's two transforms, the
// weights' spectrum (computed in double: a third transform's error for doubles, one rounding for
// floats) and the product, over a segment of N inputs. FFTW and cuFFT use other radices and the
// real-data transforms; their errors measure far below the bound (below 10^-3 of it: tests/fft,
// bench/results/stencil.json). The outputs at the ends of each block take the direct sum, within
// gamma_(2r+1) ||w||_1 max|a|; error_bound() is the larger of the two.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "tessera/framework/algorithms/stencil.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/fft.hpp"

namespace tessera::fft {

enum class ConvolveMethod { automatic, direct, fft };

// "auto", "direct", "fft" (UsageError naming the text otherwise), and back.
ConvolveMethod parse_convolve_method(const std::string& text);
const char* convolve_method_name(ConvolveMethod method);

struct ConvolveOptions {
  ConvolveMethod method = ConvolveMethod::automatic;
  // The transforms' length N, a power of two > 2 radius (0: the smallest >= 8 radius and >= 4096
  // under cuda, 1024 under cpu: a segment keeps at least 3/4 of its inputs' outputs). A segment
  // has N - 2 radius outputs, one fewer where that is odd.
  index_t fft_length = 0;
  // Segments per batch of transforms (0: chosen for the backend: about 1 MiB of inputs, spectra and
  // results under cpu, to stay in the cache; 256 MiB under cuda, to keep launches few).
  index_t batch = 0;
  // cpu: FFTW's planning effort for the segments' transforms, as fft::Options::effort. measure
  // plans at the first call on a block of each size: on the 2-core VM (2^22 floats, r = 48 / 128 /
  // 1024, tessera_bench_convolve --effort, 2026-12-01) 10-16% faster calls (9.0-9.3 / 10.6-10.8 /
  // 12.5-12.6 ms against 10.1-10.3 / 12.2-12.4 / 14.6-15.0) for about 0.4 s more planning; the
  // default suits fft::convolve's single call.
  Effort effort = Effort::estimate;
};

template <class T>
class Convolution {
 public:
  // weights: 2 r + 1 values in host memory (UsageError for an even count, or for an fft_length
  // not above 2 r or not a power of two). Not collective.
  Convolution(const Context& ctx, std::span<const T> weights, Boundary boundary = Boundary::zero,
              const ConvolveOptions& options = {});
  ~Convolution();
  Convolution(const Convolution&) = delete;
  Convolution& operator=(const Convolution&) = delete;

  // The convolution of `a` (which lives in this convolution's context). Collective. The same
  // preconditions as tessera::convolve (a periodic radius at most the array's length).
  DistArray<T> operator()(const DistArray<T>& a, PhaseTimes* times = nullptr);

  index_t radius() const;
  index_t fft_length() const;
  // The method this rank takes for a block of `local` elements: direct or fft.
  ConvolveMethod method_for(index_t local) const;
  // The radius from which the automatic method takes the FFT path on this backend and device.
  index_t crossover_radius() const;
  // The bound above on |out_i - exact_i| of any output of a call that takes the FFT path, for
  // inputs of magnitude at most max_abs_input.
  double error_bound(double max_abs_input) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Convolution<T>(a.context(), weights, boundary, options)(a, times). Collective.
template <class T>
DistArray<T> convolve(const DistArray<T>& a, std::span<const T> weights, Boundary boundary = Boundary::zero,
                      const ConvolveOptions& options = {}, PhaseTimes* times = nullptr);

}  // namespace tessera::fft
