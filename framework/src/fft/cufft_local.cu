// The local step on the cuda backend: cuFFT plans (cufftMakePlanMany64), one per step, made once and
// run on the queue's stream with one work area shared by the steps, and the normalisation kernel.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <string>
#include <vector>

#include "local_fft.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::fft::detail {
namespace {

void check(cufftResult r, const char* what) {
  if (r != CUFFT_SUCCESS) throw std::runtime_error(std::string("fft: ") + what + " failed (cufftResult " + std::to_string(static_cast<int>(r)) + ")");
}

template <class Real>
cufftType type_of(LocalKind kind) {
  const bool f = sizeof(Real) == 4;
  switch (kind) {
    case LocalKind::forward:
    case LocalKind::inverse: return f ? CUFFT_C2C : CUFFT_Z2Z;
    case LocalKind::r2c: return f ? CUFFT_R2C : CUFFT_D2Z;
    case LocalKind::c2r: return f ? CUFFT_C2R : CUFFT_Z2D;
  }
  return CUFFT_C2C;
}

// [A, N..., S] along the N axes: where S is 1, one plan of A contiguous transforms over 1 to 3
// axes; otherwise (one axis) one plan of S interleaved transforms, run once per batch of A.
template <class Real>
class CufftLocal final : public LocalFft {
 public:
  CufftLocal(const kernels::Queue& queue, LocalKind kind, LocalShape shape) : queue_(queue), kind_(kind), shape_(shape) {
    TESSERA_CUDA_CHECK(cudaSetDevice(queue.device));
    const index_t complex_side = shape.complex_elements(), full = shape.full_elements();
    in_step_ = kind == LocalKind::c2r ? complex_side : full;
    out_step_ = kind == LocalKind::r2c ? complex_side : full;
    check(cufftCreate(&plan_), "cufftCreate");
    // Scratch comes from the distributed plan's one shared area (set_work_area).
    check(cufftSetAutoAllocation(plan_, 0), "cufftSetAutoAllocation");
    long long n[3] = {shape.n[0], shape.n[1], shape.n[2]};
    if (shape.in_distance > 0) {
      // One axis, batches whose inputs start in_distance elements apart (the advanced layout).
      per_batch_ = 1;
      in_step_ = shape.in_distance;
      long long inembed = kind == LocalKind::c2r ? shape.n[0] / 2 + 1 : shape.n[0];
      long long onembed = kind == LocalKind::r2c ? shape.n[0] / 2 + 1 : shape.n[0];
      check(cufftMakePlanMany64(plan_, 1, n, &inembed, 1, in_step_, &onembed, 1, out_step_, type_of<Real>(kind),
                                shape.a, &work_),
            "cufftMakePlanMany64");
    } else if (shape.s == 1) {
      // Contiguous batches: one plan of all A, over 1 to 3 axes (the basic layout).
      per_batch_ = 1;
      check(cufftMakePlanMany64(plan_, shape.rank, n, nullptr, 1, in_step_, nullptr, 1, out_step_, type_of<Real>(kind),
                                shape.a, &work_),
            "cufftMakePlanMany64");
    } else {
      // One axis, S interleaved transforms (stride S, distance 1) per batch of A.
      long long inembed = kind == LocalKind::c2r ? shape.n[0] / 2 + 1 : shape.n[0];
      long long onembed = kind == LocalKind::r2c ? shape.n[0] / 2 + 1 : shape.n[0];
      per_batch_ = shape.a;
      check(cufftMakePlanMany64(plan_, 1, n, &inembed, shape.s, 1, &onembed, shape.s, 1, type_of<Real>(kind), shape.s,
                                &work_),
            "cufftMakePlanMany64");
    }
    check(cufftSetStream(plan_, reinterpret_cast<cudaStream_t>(queue.stream)), "cufftSetStream");
  }
  std::size_t work_bytes() const override { return work_; }
  void set_work_area(void* area) override { check(cufftSetWorkArea(plan_, area), "cufftSetWorkArea"); }
  ~CufftLocal() override { cufftDestroy(plan_); }
  CufftLocal(const CufftLocal&) = delete;
  CufftLocal& operator=(const CufftLocal&) = delete;

  void execute(const void* in, void* out) override {
    const std::size_t rb = sizeof(Real);
    const std::size_t in_elem = kind_ == LocalKind::r2c ? rb : 2 * rb;
    const std::size_t out_elem = kind_ == LocalKind::c2r ? rb : 2 * rb;
    for (index_t b = 0; b < per_batch_; ++b) {
      void* src = const_cast<char*>(static_cast<const char*>(in)) + static_cast<std::size_t>(b * in_step_) * in_elem;
      void* dst = static_cast<char*>(out) + static_cast<std::size_t>(b * out_step_) * out_elem;
      run(src, dst);
    }
  }

 private:
  void run(void* src, void* dst) {
    if constexpr (sizeof(Real) == 4) {
      switch (kind_) {
        case LocalKind::forward:
          check(cufftExecC2C(plan_, static_cast<cufftComplex*>(src), static_cast<cufftComplex*>(dst), CUFFT_FORWARD), "cufftExecC2C");
          break;
        case LocalKind::inverse:
          check(cufftExecC2C(plan_, static_cast<cufftComplex*>(src), static_cast<cufftComplex*>(dst), CUFFT_INVERSE), "cufftExecC2C");
          break;
        case LocalKind::r2c:
          check(cufftExecR2C(plan_, static_cast<cufftReal*>(src), static_cast<cufftComplex*>(dst)), "cufftExecR2C");
          break;
        case LocalKind::c2r:
          check(cufftExecC2R(plan_, static_cast<cufftComplex*>(src), static_cast<cufftReal*>(dst)), "cufftExecC2R");
          break;
      }
    } else {
      switch (kind_) {
        case LocalKind::forward:
          check(cufftExecZ2Z(plan_, static_cast<cufftDoubleComplex*>(src), static_cast<cufftDoubleComplex*>(dst), CUFFT_FORWARD), "cufftExecZ2Z");
          break;
        case LocalKind::inverse:
          check(cufftExecZ2Z(plan_, static_cast<cufftDoubleComplex*>(src), static_cast<cufftDoubleComplex*>(dst), CUFFT_INVERSE), "cufftExecZ2Z");
          break;
        case LocalKind::r2c:
          check(cufftExecD2Z(plan_, static_cast<cufftDoubleReal*>(src), static_cast<cufftDoubleComplex*>(dst)), "cufftExecD2Z");
          break;
        case LocalKind::c2r:
          check(cufftExecZ2D(plan_, static_cast<cufftDoubleComplex*>(src), static_cast<cufftDoubleReal*>(dst)), "cufftExecZ2D");
          break;
      }
    }
  }

  kernels::Queue queue_;
  LocalKind kind_;
  LocalShape shape_;
  cufftHandle plan_ = 0;
  index_t per_batch_ = 1, in_step_ = 0, out_step_ = 0;
  std::size_t work_ = 0;
};

template <class Real>
__global__ void scale_kernel(Real* data, index_t count, Real factor) {
  for (index_t i = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<index_t>(gridDim.x) * blockDim.x)
    data[i] *= factor;
}

// A thread takes one frequency k of every batch b = blockIdx.y, blockIdx.y + gridDim.y, ...
template <class Real>
__global__ void multiply_spectra_kernel(Real* spectra, index_t batches, index_t length, const Real* factors) {
  const index_t k = blockIdx.x * static_cast<index_t>(blockDim.x) + threadIdx.x;
  if (k >= length) return;
  const Real c = factors[2 * k], d = factors[2 * k + 1];
  for (index_t b = blockIdx.y; b < batches; b += gridDim.y) {
    Real* z = spectra + 2 * (b * length + k);
    const Real a = z[0], e = z[1];
    z[0] = a * c - e * d;
    z[1] = a * d + e * c;
  }
}

}  // namespace

bool have_cufft() { return true; }

template <class Real>
void multiply_spectra_cuda(const kernels::Queue& queue, Real* spectra, index_t batches, index_t length,
                           const Real* factors) {
  const index_t count = batches * length;
  if (count <= 0) return;
  TESSERA_CUDA_CHECK(cudaSetDevice(queue.device));
  const int threads = 256;
  const dim3 grid(static_cast<unsigned>((length + threads - 1) / threads),
                  static_cast<unsigned>(std::min<index_t>(batches, 4096)));
  multiply_spectra_kernel<Real><<<grid, threads, 0, reinterpret_cast<cudaStream_t>(queue.stream)>>>(
      spectra, batches, length, factors);
  TESSERA_CUDA_CHECK_LAUNCH();
}
template void multiply_spectra_cuda<float>(const kernels::Queue&, float*, index_t, index_t, const float*);
template void multiply_spectra_cuda<double>(const kernels::Queue&, double*, index_t, index_t, const double*);

DeviceRates device_rates(const kernels::Queue& queue) {
  int sms = 0, clock_khz = 0, memory_khz = 0, bus_bits = 0, major = 0, minor = 0;
  TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, queue.device));
  TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, queue.device));
  TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, queue.device));
  TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, queue.device));
  TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, queue.device));
  TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, queue.device));
  // FP32 lanes per SM (the CUDA C++ Programming Guide's table of arithmetic throughput): 64 on
  // sm_60 and sm_70 to sm_80, 128 on sm_61, sm_86 to sm_89, sm_90 and later.
  const int cc = 10 * major + minor;
  const int lanes = (cc == 60 || (cc >= 70 && cc <= 80)) ? 64 : 128;
  DeviceRates rates;
  rates.fma_per_second = static_cast<double>(sms) * lanes * clock_khz * 1e3;
  rates.bytes_per_second = 2.0 * memory_khz * 1e3 * (bus_bits / 8.0);
  int ratio = 0;
  TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&ratio, cudaDevAttrSingleToDoublePrecisionPerfRatio, queue.device));
  rates.single_to_double = ratio > 0 ? ratio : 2;
  return rates;
}

template <class Real>
std::unique_ptr<LocalFft> make_cufft(const kernels::Queue& queue, LocalKind kind, LocalShape shape) {
  return std::make_unique<CufftLocal<Real>>(queue, kind, shape);
}
template std::unique_ptr<LocalFft> make_cufft<float>(const kernels::Queue&, LocalKind, LocalShape);
template std::unique_ptr<LocalFft> make_cufft<double>(const kernels::Queue&, LocalKind, LocalShape);

template <class Real>
void scale_cuda(const kernels::Queue& queue, Real* data, index_t count, Real factor) {
  if (count <= 0) return;
  TESSERA_CUDA_CHECK(cudaSetDevice(queue.device));
  const int threads = 256;
  const index_t blocks = std::min<index_t>((count + threads - 1) / threads, 65535 * 8);
  scale_kernel<Real><<<static_cast<unsigned>(blocks), threads, 0, reinterpret_cast<cudaStream_t>(queue.stream)>>>(data, count, factor);
  TESSERA_CUDA_CHECK_LAUNCH();
}
template void scale_cuda<float>(const kernels::Queue&, float*, index_t, float);
template void scale_cuda<double>(const kernels::Queue&, double*, index_t, double);

}  // namespace tessera::fft::detail
