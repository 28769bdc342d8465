// Histograms with a binner of the caller's on the device (kernels/histogram_by.hpp) against the CPU
// backend: binners that compute numpy's binning (one of the test's, kernels::EvenBinner) against
// the precompiled path, counted exactly,
// at every counter layout the device pass has (32- and 16-bit counters, bin-range passes, global
// atomics: 7 to 2^22 bins); struct samples binned by a field, from inputs off 16-byte boundaries;
// weights of int32, uint16, float and double summed per bin in shared memory (few bins) and in
// global memory (many); a binner's invalid answers (past either end of the slots, answers of int,
// int64 and uint32) counted apart. Guard zones checked.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "generic_gpu_inputs.hpp"
#include "gpu_test_support.hpp"
#include "tessera/kernels/detail/histogram_bins.hpp"
#include "tessera/kernels/histogram.hpp"
#include "tessera/kernels/histogram_by.hpp"

namespace tessera::gpu_test {
namespace {

// numpy's binning of equal bins as a binner of the caller's.
struct NumpyBinner {
  kernels::detail::EvenBinning<float> even;
  __host__ __device__ int operator()(float x) const {
    const int slot = even(x);
    if (slot < even.bins) return slot;
    return slot == even.bins + kernels::detail::kSlotBelow ? kernels::kBinBelow : kernels::kBinAbove;
  }
};

// A 12-byte sample binned by its middle field; a third of the answers invalid where `invalid`
// (bins, bins + 5, -3 and the lowest R: past each end of the layout). Answers of R: int, int64 or
// uint32 (an unsigned binner has no tails: out of range is invalid).
struct Sample12 {
  float a;
  std::int32_t key;
  float c;
};
template <class R>
struct ByKey {
  int bins;
  bool invalid;
  __host__ __device__ R operator()(const Sample12& s) const {
    if constexpr (std::is_unsigned_v<R>) {
      return s.key < 0 ? static_cast<R>(bins + 1) : static_cast<R>(s.key < bins ? s.key : -1);
    } else {
      if (invalid && s.key % 3 == 0) {
        const int pick = (s.key / 3) & 3;
        return pick == 0 ? R(bins) : pick == 1 ? R(bins + 5) : pick == 2 ? R(-3) : std::numeric_limits<R>::min();
      }
      return s.key < 0 ? R(kernels::kBinBelow) : s.key >= bins ? R(kernels::kBinAbove) : R(s.key);
    }
  }
};

TEST(HistogramByGpu, NumpysBinningAsAUserBinnerCountsAsThePrecompiledPath) {
  const std::vector<index_t> bin_counts = small_mode() ? std::vector<index_t>{7, 1000}
                                                       : std::vector<index_t>{7, 1000, 40000, 300000, index_t(1) << 22};
  for (index_t n : odd_sizes()) {
    std::vector<float> host = uniform<float>(n, test_seed() + static_cast<std::uint64_t>(n));
    for (std::size_t i = 0; i < host.size(); i += 11) host[i] *= 3;  // some outside [-1, 1)
    DeviceArray<float> in(n, 1);
    in.upload(host);
    for (index_t bins : bin_counts) {
      const kernels::EvenBins even{-1.0, 1.0, bins};
      DeviceArray<index_t> want(kernels::histogram_slots(bins)), got(kernels::histogram_slots(bins));
      got.poison();
      kernels::histogram_even(cuda_queue(), in.data(), n, even, want.data());
      const NumpyBinner binner{kernels::detail::make_even_binning<float>(even.lower, even.upper, bins)};
      kernels::histogram_by(cuda_queue(), in.data(), n, binner, bins, got.data());
      ASSERT_EQ(got.download(), want.download()) << where(n, "numpy binner") << " bins=" << bins;
      ASSERT_TRUE(got.untouched_outside(kernels::histogram_slots(bins))) << where(n) << " bins=" << bins;
      // The library's own numpy binner (no NaN among these samples: the same counts).
      got.poison();
      kernels::histogram_by(cuda_queue(), in.data(), n, kernels::EvenBinner<float>(even), bins, got.data());
      ASSERT_EQ(got.download(), want.download()) << where(n, "EvenBinner") << " bins=" << bins;
      ASSERT_TRUE(got.untouched_outside(kernels::histogram_slots(bins))) << where(n) << " bins=" << bins;
    }
  }
}

TEST(HistogramByGpu, StructSamplesWithWeightsOfEveryKind) {
  for (index_t n : odd_sizes()) {
    const std::uint64_t s = test_seed() * 3 + static_cast<std::uint64_t>(n);
    const std::vector<std::uint32_t> bits = full_range<std::uint32_t>(n, s);
    for (index_t bins : {index_t(5), index_t(4093), index_t(20000)}) {  // 20000 slots: global atomics
      std::vector<Sample12> samples(static_cast<std::size_t>(n));
      std::vector<std::int32_t> w32(samples.size());
      std::vector<std::uint16_t> w16(samples.size());
      std::vector<float> wf(samples.size());
      std::vector<double> wd(samples.size());
      for (std::size_t i = 0; i < samples.size(); ++i) {
        samples[i] = Sample12{1.0f, static_cast<std::int32_t>(bits[i] % static_cast<std::uint32_t>(bins + 40)) - 20, 2.0f};
        w32[i] = static_cast<std::int32_t>(bits[i] >> 8) - (1 << 23);
        w16[i] = static_cast<std::uint16_t>(bits[i]);
        wf[i] = static_cast<float>(static_cast<int>(bits[i] % 64) - 32) * 0.5f;  // exact sums in any order
        wd[i] = static_cast<double>(static_cast<int>(bits[i] % 1024)) * 0.25;
      }
      DeviceArray<Sample12> in(n, 1);
      in.upload(samples);
      for (bool invalid : {false, true}) {
        const ByKey<int> binner{static_cast<int>(bins), invalid};
        const std::string what = "bins=" + std::to_string(bins) + (invalid ? " with invalid answers" : "");
        auto counted = [&](auto by, const char* answers) {
          std::vector<index_t> want(static_cast<std::size_t>(kernels::histogram_slots(bins)));
          kernels::histogram_by(cpu_queue(), samples.data(), n, by, bins, want.data());
          DeviceArray<index_t> got(kernels::histogram_slots(bins));
          got.poison();
          kernels::histogram_by(cuda_queue(), in.data(), n, by, bins, got.data());
          ASSERT_EQ(got.download(), want) << where(n, what.c_str()) << " answers of " << answers;
          ASSERT_TRUE(got.untouched_outside(kernels::histogram_slots(bins))) << where(n, what.c_str()) << " " << answers;
        };
        counted(binner, "int");
        counted(ByKey<std::int64_t>{static_cast<int>(bins), invalid}, "int64");
        counted(ByKey<std::uint32_t>{static_cast<int>(bins), invalid}, "uint32");
        auto weighted = [&](const auto& weights, const char* kind) {
          using W = typename std::decay_t<decltype(weights)>::value_type;
          using S = kernels::histogram_weight_t<W>;
          std::vector<S> want_sums(static_cast<std::size_t>(kernels::histogram_slots(bins)));
          kernels::histogram_weighted_by(cpu_queue(), samples.data(), weights.data(), n, binner, bins, want_sums.data());
          DeviceArray<W> w(n, 3);
          w.upload(weights);
          DeviceArray<S> sums(kernels::histogram_slots(bins));
          sums.poison();
          kernels::histogram_weighted_by(cuda_queue(), in.data(), w.data(), n, binner, bins, sums.data());
          ASSERT_EQ(sums.download(), want_sums) << where(n, what.c_str()) << " weights " << kind;
          ASSERT_TRUE(sums.untouched_outside(kernels::histogram_slots(bins))) << where(n, what.c_str()) << " " << kind;
        };
        weighted(w32, "int32");
        weighted(w16, "uint16");
        weighted(wf, "float");
        weighted(wd, "double");
      }
    }
  }
}

}  // namespace
}  // namespace tessera::gpu_test
