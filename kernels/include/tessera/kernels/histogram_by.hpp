// Local histograms with the caller's binning: the same passes as histogram.hpp's precompiled ones
// (cuda/device_histogram.cuh's privatised counting, cpu/histogram.hpp's per-thread counts), with a
// binner of the caller's in place of numpy's.
//
//   histogram_by(queue, in, n, binner, bins, counts)                    counts per bin
//   histogram_weighted_by(queue, in, weights, n, binner, bins, sums)    weights summed per bin
//
// binner: a callable sample -> integer bin, TESSERA_HOST_DEVICE (a struct, or an nvcc extended
// lambda), taking the sample type, which may be any trivially copyable type (a struct binned by one
// of its fields). A bin in [0, bins) counts there; kBinBelow (-1) and kBinAbove (-2) count below
// and above (HistogramSlot); any other value is an invalid answer, counted in the NaN slot (as a
// number of samples, also for weights), which the framework's histogram refuses. counts / sums:
// backend memory of histogram_slots(bins) values, overwritten. Under cuda these run only from a
// translation unit compiled by nvcc (UsageError otherwise), as every user functor does.
//
// Weights: any arithmetic type W, summed in histogram_weight_t<W>: double for floating-point
// weights, int64 for signed integers and bool, uint64 for unsigned ones (integer sums wrap modulo
// 2^64). Floating-point sums depend on the order of the additions (atomics under cuda).
#pragma once

#include <cstdint>
#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/histogram.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/detail/histogram_bins.hpp"
#include "tessera/kernels/histogram.hpp"
#include "tessera/kernels/queue.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/device_histogram.cuh"
#endif

namespace tessera::kernels {

// numpy's binning of equal bins, as the precompiled histogram(x, EvenBins) bins (float samples in
// float, the others in double, with numpy's correction at the edges), as a binner: a sample's bin,
// kBinBelow below the range, kBinAbove above it and for NaN (numpy counts a NaN in no bin). For
// binning samples of another type by a field with numpy's edges:
//   const kernels::EvenBinner<float> even(kernels::EvenBins{0.0, 1.0, 64});
//   histogram_by(queue, particles, n, [even] __host__ __device__ (const Particle& p) { return even(p.x); }, 64, counts);
// T: int32, int64, float or double. The bins are checked when it is made (check_even_bins).
template <class T>
class EvenBinner {
  static_assert(std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> ||
                    std::is_same_v<T, double>,
                "EvenBinner: samples of int32, int64, float or double");

 public:
  explicit EvenBinner(const EvenBins& bins)
      : binning_((check_even_bins(bins, std::is_same_v<T, float>),
                  detail::make_even_binning<T>(bins.lower, bins.upper, bins.count, bins.width))) {}
  TESSERA_HOST_DEVICE int operator()(const T& sample) const {
    return binning_.bin_or(sample, kBinBelow, kBinAbove, kBinAbove);
  }
  index_t bins() const { return binning_.bins; }

 private:
  detail::EvenBinning<T> binning_;
};

template <class W>
using histogram_weight_t =
    std::conditional_t<std::is_floating_point_v<W>, double,
                       std::conditional_t<std::is_unsigned_v<W> && !std::is_same_v<W, bool>, std::uint64_t, std::int64_t>>;

template <class T, class Binner>
void histogram_by(const Queue& queue, const T* in, index_t n, Binner binner, index_t bins, index_t* counts) {
  static_assert(std::is_trivially_copyable_v<T>, "histogram: the sample type must be trivially copyable");
  static_assert(detail::invocable_with<Binner, const T&>, "histogram: the binner cannot take the sample type");
  detail::check_count(n, "histogram");
  check_histogram_bins(bins);
  const detail::UserBinning<Binner> binning{binner, static_cast<int>(bins)};
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<Binner>) {
      cpu::histogram(in, n, binning, bins, counts);
    } else {
      detail::throw_device_only_functor_on_cpu("histogram");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    cuda::detail::device_histogram(in, n, cuda::detail::DeviceUserBinning<Binner>{binning}, static_cast<int>(bins),
                                   counts, queue.stream);
#else
    detail::throw_needs_cuda_compiler("histogram");
#endif
  }
}

template <class T, class W, class Binner>
void histogram_weighted_by(const Queue& queue, const T* in, const W* weights, index_t n, Binner binner, index_t bins,
                           histogram_weight_t<W>* sums) {
  static_assert(std::is_trivially_copyable_v<T>, "histogram: the sample type must be trivially copyable");
  static_assert(std::is_arithmetic_v<W>, "histogram: the weights must be of an arithmetic type");
  static_assert(detail::invocable_with<Binner, const T&>, "histogram: the binner cannot take the sample type");
  using Acc = histogram_weight_t<W>;
  detail::check_count(n, "histogram");
  check_histogram_bins(bins);
  const detail::UserBinning<Binner> binning{binner, static_cast<int>(bins)};
  if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<Binner>) {
      cpu::weighted_histogram<T, W, Acc>(in, weights, n, binning, bins, sums);
    } else {
      detail::throw_device_only_functor_on_cpu("histogram");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    cuda::detail::device_weighted_histogram<T, W, Acc>(in, weights, n, cuda::detail::DeviceUserBinning<Binner>{binning},
                                                       static_cast<int>(bins), sums, queue.stream);
#else
    detail::throw_needs_cuda_compiler("histogram");
#endif
  }
}

}  // namespace tessera::kernels
