// The local step of a distributed FFT: a batched 1-D transform along the middle axis of a row-major
// [A, N, S] block, on one backend (fftw_local.cpp, cufft_local.cu).
#pragma once

#include <cstddef>
#include <memory>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::fft::detail {

enum class LocalKind { forward, inverse, r2c, c2r };

// The block's shape: A batches of S interleaved transforms of length n (the logical length: the
// real length for r2c and c2r, whose complex side is n/2 + 1 long).
struct LocalShape {
  index_t a = 1, n = 1, s = 1;
};

class LocalFft {
 public:
  virtual ~LocalFft() = default;
  // in -> out, not overlapping, backend memory. c2r may overwrite `in`.
  virtual void execute(const void* in, void* out) = 0;
};

// FFTW (cpu). plan_in and plan_out: buffers of the sizes the transform reads and writes, aligned as
// kernels::allocate aligns them; planning may overwrite them (FFTW_MEASURE). execute() takes other
// buffers of the same alignment.
template <class Real>
std::unique_ptr<LocalFft> make_fftw(LocalKind kind, LocalShape shape, void* plan_in, void* plan_out, bool measure);
// Whether FFTW may run a plan made on kernels::allocate's buffers on this address.
bool fftw_aligned(const void* p);

// cuFFT (cuda): the same contract on the queue's stream.
template <class Real>
std::unique_ptr<LocalFft> make_cufft(const kernels::Queue& queue, LocalKind kind, LocalShape shape);
// data[i] *= factor for i < count (count Real values), on the queue's stream.
template <class Real>
void scale_cuda(const kernels::Queue& queue, Real* data, index_t count, Real factor);
bool have_cufft();

}  // namespace tessera::fft::detail
