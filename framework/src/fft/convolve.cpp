// fft::Convolution (fft_convolve.hpp): overlap-save through the local transforms of local_fft.hpp on
// tessera::convolve's halo exchange (detail::convolve_with).
#include "tessera/framework/fft_convolve.hpp"

#include <fftw3.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "local_fft.hpp"
#include "tessera/kernels/copy_2d.hpp"
#include "tessera/kernels/cpu/parallel.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace tessera::fft {

ConvolveMethod parse_convolve_method(const std::string& text) {
  if (text == "auto") return ConvolveMethod::automatic;
  if (text == "direct") return ConvolveMethod::direct;
  if (text == "fft") return ConvolveMethod::fft;
  throw UsageError("convolution method '" + text + "' (expected auto, direct or fft)");
}

const char* convolve_method_name(ConvolveMethod method) {
  switch (method) {
    case ConvolveMethod::automatic: return "auto";
    case ConvolveMethod::direct: return "direct";
    case ConvolveMethod::fft: return "fft";
  }
  return "auto";
}

namespace {

using detail::LocalFft;
using detail::LocalKind;
using detail::LocalShape;

// The cpu backend's crossovers, floats and doubles: the radius from which overlap-save beats the
// direct loop (kernels/cpu/stencil.cpp), one thread of the 2-core VM, 2^22 elements
// (tessera_bench_convolve --backend cpu, 2026-12-01): floats direct / fft 11.2 / 10.3 ms at r = 40,
// 9.0 / 10.1 at r = 32; doubles 13.1 / 13.0 at r = 24, 17.3 / 13.4 at r = 32.
constexpr index_t kCpuCrossoverRadiusFloat = 40;
constexpr index_t kCpuCrossoverRadiusDouble = 28;
// Under cuda the crossover, in taps (2 r + 1), is a part that the SMs bound and a part that DRAM
// bounds, each in units of one tap of the direct kernel (one fused multiply-add an output):
//   2 r + 1 = kCudaFixedTaps + kCudaTapsPerByteRatio x sizeof(T) x F / B
// with F the fused multiply-adds per second (FP32's over the device's FP32 / FP64 ratio for
// doubles) and B the bytes per second of the device's properties (detail::device_rates). Fitted on
// an H200 and an H100, whose F is the same (132 SMs of 128 FP32 lanes at 1.98 GHz) and whose F / B,
// as device_rates reports it at run time, is 6.94 and 9.98. 2^28 floats,
// tessera_bench_convolve --backend cuda, N 4096: the direct kernel 3.30 / 3.31 ms at r = 128 and
// 4.78 / 4.75 at r = 192 on both (H200 / H100), the FFT path 3.79 -> 3.90 ms on the H200 and
// 4.23 -> 4.34 on the H100 (2026-12-01, 2026-12-02): crossovers at r = 151 and 172, taps 303 and
// 345. Doubles, whose F / B per byte is the floats' on both devices, cross near the same radius:
// r = 150 on the H200 (direct 7.06 / 10.28 ms, FFT 8.11 / 8.31 at r = 128 / 192) and about 167 on
// the H100 (direct 8.68 / 9.68 ms, FFT 9.00 / 9.10 at r = 160 / 180), where the model says 172.
constexpr double kCudaFixedTaps = 207.0;
constexpr double kCudaTapsPerByteRatio = 3.45;
// Batches: cpu segments whose input, spectrum and result take about 1 MiB; cuda about 256 MiB
// (the same runs: N 1024 at r = 64, 256 / 2048 / 16384 segments a batch 20.9-24.7 / 5.1 / 4.0 ms;
// the launches of small batches cost more than their spectra kept in the L2 cache save).
constexpr std::size_t kCpuBatchBytes = std::size_t(1) << 20;
constexpr std::size_t kCudaBatchBytes = std::size_t(256) << 20;

// The default transform length: the smallest power of two >= max(minimum, 8 r). cuda: 4096 (the
// same runs: at r = 64 N 1024 / 2048 / 4096 / 8192 3.96 / 3.68 / 3.62 / 3.93 ms; at r = 256 2048 /
// 4096 / 8192 4.27 / 3.87 / 4.06; at r = 1024 4096 / 8192 / 16384 5.77 / 4.72 / 4.73); cpu 1024
// (r = 16: N 1024 9.8 ms, 4096 11.1).
// The longest transform: FFTW's one-dimensional planner takes an int length.
constexpr index_t kMaxFftLength = index_t(1) << 30;

index_t default_fft_length(index_t radius, bool cuda) {
  const auto want = std::max<std::uint64_t>(cuda ? 4096 : 1024, 8 * static_cast<std::uint64_t>(radius));
  return static_cast<index_t>(std::bit_ceil(want));
}

}  // namespace

template <class T>
struct Convolution<T>::Impl {
  Context ctx;
  std::vector<T> weights;
  Boundary boundary = Boundary::zero;
  ConvolveOptions options;
  index_t radius = 0, n_fft = 0, segment = 0, half = 0, batch = 0, crossover = 0;
  double weight_norm = 0;  // ||w||_1

  // The weights' spectrum / N, interleaved complex in the backend's memory.
  T* spectrum_of_weights = nullptr;
  // Work buffers: cpu [batch][n_fft] inputs (the gather); both [batch][half] complex spectra and
  // [batch][n_fft] results; cuda [n_fft] for the last, partial segment.
  T* inputs = nullptr;
  T* spectra = nullptr;
  T* results = nullptr;
  T* tail = nullptr;
  // cuda: an aligned copy of the inputs, where they do not start on a complex value's alignment
  // (a view's block): cuFFT refuses such pointers.
  T* staged = nullptr;
  index_t staged_capacity = 0;
  void* work_area = nullptr;
  // Plans by batch count: r2c and c2r.
  std::map<index_t, std::pair<std::unique_ptr<LocalFft>, std::unique_ptr<LocalFft>>> plans;
  index_t planned_outputs = -1;  // cuda: the inner size the plans and work area were made for
  index_t cpu_rows = 0;          // cpu: the segments of a batch the buffers and plans were made for
  int cpu_threads = 0;           // cpu: the threads whose buffers there are
  index_t cpu_stride_real = 0, cpu_stride_complex = 0;  // cpu: elements between threads' buffers

  bool cuda() const { return ctx.backend() == Backend::cuda; }
  const kernels::Queue& queue() const { return ctx.queue(); }

  ~Impl() {
    plans.clear();
    const kernels::Queue& q = queue();
    for (void* p : {static_cast<void*>(spectrum_of_weights), static_cast<void*>(inputs), static_cast<void*>(spectra),
                    static_cast<void*>(results), static_cast<void*>(tail), static_cast<void*>(staged), work_area})
      if (p) kernels::deallocate(q, p);
  }

  // Frees *p (stream-ordered) and leaves it null, so that a failed allocation after it leaves nothing
  // to free twice.
  template <class P>
  void release(P*& p) {
    if (p) kernels::deallocate(queue(), p);
    p = nullptr;
  }

  T* allocate(index_t count) {
    return static_cast<T*>(kernels::allocate(queue(), std::max<std::size_t>(static_cast<std::size_t>(count) * sizeof(T), 64)));
  }

  void make_spectrum_of_weights() {
    if (spectrum_of_weights) return;
    // In double on the host: w[k] at k = 0 .. 2 r, zeros beyond, times 1 / N.
    std::vector<double> padded(static_cast<std::size_t>(n_fft), 0.0);
    for (std::size_t k = 0; k < weights.size(); ++k) padded[k] = static_cast<double>(weights[k]) / static_cast<double>(n_fft);
    std::vector<std::complex<double>> out(static_cast<std::size_t>(half));
    fftw_plan p = fftw_plan_dft_r2c_1d(static_cast<int>(n_fft), padded.data(),
                                       reinterpret_cast<fftw_complex*>(out.data()), FFTW_ESTIMATE);
    if (p == nullptr) throw UsageError("fft::Convolution: FFTW could not plan the weights' transform of length " + std::to_string(n_fft));
    fftw_execute(p);
    fftw_destroy_plan(p);
    std::vector<T> host(static_cast<std::size_t>(2 * half));
    for (std::size_t k = 0; k < out.size(); ++k) {
      host[2 * k] = static_cast<T>(out[k].real());
      host[2 * k + 1] = static_cast<T>(out[k].imag());
    }
    spectrum_of_weights = allocate(2 * half);
    kernels::copy_from_host(queue(), spectrum_of_weights, host.data(), host.size() * sizeof(T));
  }

  std::pair<std::unique_ptr<LocalFft>, std::unique_ptr<LocalFft>>& plans_for(index_t rows) {
    auto it = plans.find(rows);
    if (it != plans.end()) return it->second;
    LocalShape forward;
    forward.a = rows;
    forward.n[0] = n_fft;
    LocalShape inverse = forward;
    std::pair<std::unique_ptr<LocalFft>, std::unique_ptr<LocalFft>> made;
    if (cuda()) {
      forward.in_distance = segment;  // straight from the block, segments overlapping by 2 r
      made.first = detail::make_cufft<T>(queue(), LocalKind::r2c, forward);
      made.second = detail::make_cufft<T>(queue(), LocalKind::c2r, inverse);
    } else {
      const bool measure = options.effort == Effort::measure;  // planning overwrites the buffers
      made.first = detail::make_fftw<T>(LocalKind::r2c, forward, inputs, spectra, measure);
      made.second = detail::make_fftw<T>(LocalKind::c2r, inverse, spectra, results, measure);
    }
    return plans.emplace(rows, std::move(made)).first->second;
  }

  // Under cuda: the plans of the batches of `outputs` inner outputs, and one work area for them.
  void plan_cuda(index_t outputs) {
    if (planned_outputs == outputs) return;
    queue().synchronize();
    plans.clear();
    planned_outputs = -1;  // until every plan and buffer below is made
    const index_t full = outputs / segment;
    // The buffers of the largest batch this size takes.
    const index_t rows = std::max<index_t>(1, std::min(batch, full));
    release(spectra);
    release(results);
    spectra = allocate(2 * rows * half);
    results = allocate(rows * n_fft);
    if (!tail) tail = allocate(n_fft);
    std::vector<index_t> counts;
    if (full >= batch) counts.push_back(batch);
    if (full % batch) counts.push_back(full % batch);
    if (outputs % segment) counts.push_back(1);
    std::size_t bytes = 0;
    for (index_t c : counts) {
      auto& p = plans_for(c);
      bytes = std::max({bytes, p.first->work_bytes(), p.second->work_bytes()});
    }
    release(work_area);
    work_area = kernels::allocate(queue(), std::max<std::size_t>(bytes, 64));
    for (auto& [count, p] : plans) {
      p.first->set_work_area(work_area);
      p.second->set_work_area(work_area);
    }
    planned_outputs = outputs;
  }

  void multiply(T* values, index_t rows) {
    if (cuda()) {
      detail::multiply_spectra_cuda<T>(queue(), values, rows, half, spectrum_of_weights);
      return;
    }
    auto* z = reinterpret_cast<std::complex<T>*>(values);
    const auto* w = reinterpret_cast<const std::complex<T>*>(spectrum_of_weights);
    for (index_t b = 0; b < rows; ++b) {
      std::complex<T>* row = z + b * half;
      for (index_t k = 0; k < half; ++k) {
        const T a = row[k].real(), e = row[k].imag(), c = w[k].real(), d = w[k].imag();
        row[k] = {a * c - e * d, a * d + e * c};
      }
    }
  }

  // n outputs from in[-r, n + r) into out, by overlap-save: segment s takes inputs
  // in[s L - r, s L - r + N) and gives outputs [s L, s L + L), the last N - 2 r = L values of its
  // circular convolution.
  void overlap_save(const kernels::Queue& q, const T* in, index_t n, T* out) {
    const T* first = in - radius;
    const index_t inputs_total = n + 2 * radius;
    make_spectrum_of_weights();
    if (cuda()) {
      plan_cuda(n);
      if (reinterpret_cast<std::uintptr_t>(first) % (2 * sizeof(T)) != 0) {
        if (staged_capacity < inputs_total) {
          q.synchronize();
          release(staged);
          staged_capacity = 0;
          staged = allocate(inputs_total);
          staged_capacity = inputs_total;
        }
        kernels::copy_within_async(q, staged, first, static_cast<std::size_t>(inputs_total) * sizeof(T));
        first = staged;
      }
      const index_t full = n / segment;
      for (index_t s0 = 0; s0 < full; s0 += batch) {
        const index_t rows = std::min(batch, full - s0);
        auto& p = plans_for(rows);
        p.first->execute(first + s0 * segment, spectra);
        multiply(spectra, rows);
        p.second->execute(spectra, results);
        kernels::copy_2d(q, out + s0 * segment, segment, results + 2 * radius, n_fft, rows, segment, sizeof(T));
      }
      const index_t done = full * segment;
      if (done < n) {
        // The last segment, partial: its inputs, zero padded, through the plans of one segment.
        const index_t have = inputs_total - done;
        kernels::fill(q, tail, n_fft, T(0));
        kernels::copy_within_async(q, tail, first + done, static_cast<std::size_t>(have) * sizeof(T));
        auto& p = plans_for(1);
        p.first->execute(tail, spectra);
        multiply(spectra, 1);
        p.second->execute(spectra, results);
        kernels::copy_within_async(q, out + done, results + 2 * radius, static_cast<std::size_t>(n - done) * sizeof(T));
      }
      return;
    }
    // cpu: each batch's segments gathered into the aligned input buffer of its thread (the last
    // zero padded); the batches shared among the threads, each with buffers of its own, through
    // the same plans (FFTW's execution on other arrays is thread-safe).
    const index_t segments = (n + segment - 1) / segment;
    prepare_cpu(segments);
    const index_t rows_max = cpu_rows, batches = (segments + rows_max - 1) / rows_max;
    auto& p = plans.at(rows_max);
    LocalFft& forward = *p.first;
    LocalFft& inverse = *p.second;
#if defined(_OPENMP)
#pragma omp parallel for num_threads(cpu_threads) schedule(static)
#endif
    for (index_t b = 0; b < batches; ++b) {
#if defined(_OPENMP)
      const index_t t = omp_get_thread_num();
#else
      const index_t t = 0;
#endif
      T* gathered = inputs + t * cpu_stride_real;
      T* values = spectra + t * cpu_stride_complex;
      T* outputs = results + t * cpu_stride_real;
      const index_t s0 = b * rows_max, rows = std::min(rows_max, segments - s0);
      for (index_t j = 0; j < rows; ++j) {
        const index_t start = (s0 + j) * segment;
        const index_t have = std::min(n_fft, inputs_total - start);
        T* row = gathered + j * n_fft;
        std::memcpy(row, first + start, static_cast<std::size_t>(have) * sizeof(T));
        std::fill(row + have, row + n_fft, T(0));
      }
      forward.execute(gathered, values);
      multiply(values, rows);
      inverse.execute(values, outputs);
      for (index_t j = 0; j < rows; ++j) {
        const index_t start = (s0 + j) * segment;
        std::memcpy(out + start, outputs + j * n_fft + 2 * radius,
                    static_cast<std::size_t>(std::min(segment, n - start)) * sizeof(T));
      }
    }
  }

  // cpu: buffers for each thread of batches of min(batch, segments) segments, and the plans of such
  // a batch, made on the first thread's buffers before any input is gathered there.
  void prepare_cpu(index_t segments) {
    const index_t rows = std::max<index_t>(1, std::min(batch, segments));
    const index_t batches = (segments + rows - 1) / rows;
    const int threads = static_cast<int>(std::max<index_t>(1, std::min<index_t>(kernels::cpu::max_threads(), batches)));
    if (rows == cpu_rows && threads <= cpu_threads) return;
    plans.clear();
    release(inputs);
    release(spectra);
    release(results);
    cpu_rows = 0;
    cpu_threads = 0;
    // Each thread's part on a 64-byte boundary, as the first one's (the plans') is: FFTW runs a plan
    // on new arrays only of the alignment it was made for.
    const index_t line = std::max<index_t>(1, 64 / static_cast<index_t>(sizeof(T)));
    cpu_stride_real = (rows * n_fft + line - 1) / line * line;
    cpu_stride_complex = (2 * rows * half + line - 1) / line * line;
    inputs = allocate(threads * cpu_stride_real);
    spectra = allocate(threads * cpu_stride_complex);
    results = allocate(threads * cpu_stride_real);
    plans_for(rows);
    cpu_rows = rows;
    cpu_threads = threads;
  }
};

template <class T>
Convolution<T>::Convolution(const Context& ctx, std::span<const T> weights, Boundary boundary,
                            const ConvolveOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (weights.size() % 2 == 0)
    throw UsageError("fft::Convolution: " + std::to_string(weights.size()) +
                     " weights; a kernel of radius r has 2 r + 1 weights (an odd count)");
  m.ctx = ctx;
  m.weights.assign(weights.begin(), weights.end());
  m.boundary = boundary;
  m.options = options;
  m.radius = static_cast<index_t>(weights.size() - 1) / 2;
  for (const T w : weights) m.weight_norm += std::fabs(static_cast<double>(w));
  if (options.fft_length < 0 || (options.fft_length > 0 && options.fft_length <= 2 * m.radius))
    throw UsageError("fft::Convolution: an FFT length of " + std::to_string(options.fft_length) +
                     " must exceed 2 radius = " + std::to_string(2 * m.radius));
  if (options.fft_length > kMaxFftLength)
    throw UsageError("fft::Convolution: an FFT length of " + std::to_string(options.fft_length) + " passes 2^30");
  if (options.fft_length > 0 && !std::has_single_bit(static_cast<std::uint64_t>(options.fft_length)))
    throw UsageError("fft::Convolution: an FFT length of " + std::to_string(options.fft_length) +
                     " is not a power of two");
  if (options.batch < 0) throw UsageError("fft::Convolution: a batch of " + std::to_string(options.batch) + " segments");
  m.n_fft = options.fft_length > 0 ? options.fft_length : default_fft_length(m.radius, m.cuda());
  // An even segment keeps each batch's first input on a complex value's alignment (cuFFT needs it)
  // where the block's is.
  m.segment = m.n_fft - 2 * m.radius;
  if (m.segment > 1) m.segment &= ~index_t(1);
  m.half = m.n_fft / 2 + 1;
  const std::size_t row_bytes = static_cast<std::size_t>(m.n_fft) * sizeof(T) * 4;  // input, spectrum, result
  if (options.batch > 0) m.batch = options.batch;
  else m.batch = std::max<index_t>(1, static_cast<index_t>((m.cuda() ? kCudaBatchBytes : kCpuBatchBytes) / row_bytes));
  if (m.cuda()) {
    const detail::DeviceRates rates = detail::device_rates(ctx.queue());
    const double fma = sizeof(T) == 8 ? rates.fma_per_second / rates.single_to_double : rates.fma_per_second;
    const double taps = kCudaFixedTaps + kCudaTapsPerByteRatio * sizeof(T) * fma / rates.bytes_per_second;
    m.crossover = std::max<index_t>(1, static_cast<index_t>(std::ceil((taps - 1) / 2)));
  } else {
    m.crossover = sizeof(T) == 4 ? kCpuCrossoverRadiusFloat : kCpuCrossoverRadiusDouble;
  }
  if (m.n_fft > kMaxFftLength && options.method == ConvolveMethod::fft)
    throw UsageError("fft::Convolution: radius " + std::to_string(m.radius) +
                     " is too wide for the FFT path (its transforms would pass 2^30 points)");
  // The weights' spectrum, the buffers and the plans: at the first call that takes the FFT path.
}

template <class T>
Convolution<T>::~Convolution() = default;

template <class T>
index_t Convolution<T>::radius() const {
  return impl_->radius;
}

template <class T>
index_t Convolution<T>::fft_length() const {
  return impl_->n_fft;
}

template <class T>
index_t Convolution<T>::crossover_radius() const {
  return impl_->crossover;
}

template <class T>
ConvolveMethod Convolution<T>::method_for(index_t local) const {
  const Impl& m = *impl_;
  const index_t inner = local - 2 * m.radius;
  if (m.n_fft > kMaxFftLength) return ConvolveMethod::direct;
  switch (m.options.method) {
    case ConvolveMethod::direct: return ConvolveMethod::direct;
    case ConvolveMethod::fft: return inner > 0 ? ConvolveMethod::fft : ConvolveMethod::direct;
    case ConvolveMethod::automatic: break;
  }
  return m.radius >= m.crossover && inner >= m.segment ? ConvolveMethod::fft : ConvolveMethod::direct;
}

template <class T>
double Convolution<T>::error_bound(double max_abs_input) const {
  const Impl& m = *impl_;
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const double n = static_cast<double>(m.n_fft);
  const double taps = static_cast<double>(2 * m.radius + 1);
  const double fft = (21 * std::log2(n) + 5) * u * m.weight_norm * std::sqrt(n) * max_abs_input;
  const double direct = taps * u / (1 - taps * u) * m.weight_norm * max_abs_input;  // the ends' direct sums
  return std::max(fft, direct);
}

template <class T>
DistArray<T> Convolution<T>::operator()(const DistArray<T>& a, PhaseTimes* times) {
  Impl& m = *impl_;
  const kernels::Queue& qa = a.context().queue();
  const kernels::Queue& qm = m.queue();
  if (qa.backend != qm.backend || qa.device != qm.device || qa.stream != qm.stream)
    throw UsageError("fft::Convolution: the array's queue is not the convolution's (another backend, device or stream)");
  const std::span<const T> w(m.weights);
  if (method_for(a.local_size()) == ConvolveMethod::direct) return tessera::detail::convolve_with<T>(a, w, m.boundary, times, nullptr);
  return tessera::detail::convolve_with<T>(a, w, m.boundary, times,
                                  [&m](const kernels::Queue& q, const T* in, index_t n, T* out) { m.overlap_save(q, in, n, out); });
}

template <class T>
DistArray<T> convolve(const DistArray<T>& a, std::span<const T> weights, Boundary boundary, const ConvolveOptions& options,
                      PhaseTimes* times) {
  Convolution<T> conv(a.context(), weights, boundary, options);
  return conv(a, times);
}

template class Convolution<float>;
template class Convolution<double>;
template DistArray<float> convolve<float>(const DistArray<float>&, std::span<const float>, Boundary, const ConvolveOptions&,
                                          PhaseTimes*);
template DistArray<double> convolve<double>(const DistArray<double>&, std::span<const double>, Boundary,
                                            const ConvolveOptions&, PhaseTimes*);

}  // namespace tessera::fft
