// Builds without CUDA: the cuda backend's local step does not exist (PlanImpl refuses the backend).
#include "local_fft.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::fft::detail {

bool have_cufft() { return false; }

template <class Real>
std::unique_ptr<LocalFft> make_cufft(const kernels::Queue&, LocalKind, LocalShape) {
  throw UsageError("fft: this build has no cuFFT");
}
template std::unique_ptr<LocalFft> make_cufft<float>(const kernels::Queue&, LocalKind, LocalShape);
template std::unique_ptr<LocalFft> make_cufft<double>(const kernels::Queue&, LocalKind, LocalShape);

template <class Real>
void scale_cuda(const kernels::Queue&, Real*, index_t, Real) {
  throw UsageError("fft: this build has no cuFFT");
}
template void scale_cuda<float>(const kernels::Queue&, float*, index_t, float);
template void scale_cuda<double>(const kernels::Queue&, double*, index_t, double);

template <class Real>
void multiply_spectra_cuda(const kernels::Queue&, Real*, index_t, index_t, const Real*) {
  throw UsageError("fft: this build has no cuFFT");
}
template void multiply_spectra_cuda<float>(const kernels::Queue&, float*, index_t, index_t, const float*);
template void multiply_spectra_cuda<double>(const kernels::Queue&, double*, index_t, index_t, const double*);

DeviceRates device_rates(const kernels::Queue&) { throw UsageError("fft: this build has no cuFFT"); }

}  // namespace tessera::fft::detail
