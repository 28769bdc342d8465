// The CUDA histograms against the CPU backend on the same samples: equal bins from 1 to 2^20 + 1
// (every counter layout of the device pass: 32-bit copies, 16-bit pairs, bin-range passes, global
// atomics), arbitrary edges (in shared and in global memory, infinite outer edges), bincount and
// the sample range; uniform samples with values on the edges, NaN and infinities mixed in, skewed
// ones and all in one bin (warp aggregation, 16-bit counters that wrap), unaligned starts. Counts
// must match exactly, and nothing outside the counts may be written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "gpu_test_support.hpp"
#include "tessera/kernels/histogram.hpp"

namespace tessera::gpu_test {
namespace {

using kernels::EvenBins;

template <class T>
class HistogramGpu : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(HistogramGpu, ElementTypes);

std::vector<index_t> histogram_sizes() {
  std::vector<index_t> sizes = {0, 1, 31, 33, 1023, 4097, 40009};
  if (!small_mode()) sizes.push_back(1000003);
  return sizes;
}

std::vector<index_t> bin_counts() {
  std::vector<index_t> bins = {1, 2, 3, 16, 100, 256, 1024, 4096, 16384, 65536, 65537};
  if (!small_mode()) {
    bins.push_back((index_t(1) << 18) + 3);  // 16-bit counters in passes
    bins.push_back((index_t(1) << 20) + 1);  // global atomics
  }
  return bins;
}

// Uniform samples over a range a little wider than [lo, hi], with the range's own edges (as T) and
// NaN / infinities mixed in.
template <class T>
std::vector<T> samples_around(index_t n, double lo, double hi, const std::vector<double>& edges, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<T> v(static_cast<std::size_t>(n));
  const double width = hi - lo;
  std::uniform_real_distribution<double> dist(lo - 0.05 * width, hi + 0.05 * width);
  std::uniform_int_distribution<std::size_t> pick_edge(0, edges.size() - 1);
  for (auto& x : v) {
    const unsigned kind = static_cast<unsigned>(gen() % 16);
    if (kind == 0) {
      x = static_cast<T>(edges[pick_edge(gen)]);
    } else if (kind == 1 && std::is_floating_point_v<T>) {
      const unsigned special = static_cast<unsigned>(gen() % 3);
      x = special == 0 ? std::numeric_limits<T>::quiet_NaN()
                       : special == 1 ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
    } else {
      const double d = dist(gen);
      x = std::is_integral_v<T> ? static_cast<T>(std::floor(d)) : static_cast<T>(d);
    }
  }
  return v;
}

template <class T>
std::vector<index_t> device_counts(const std::vector<T>& host, index_t offset, index_t bins,
                                   const std::function<void(const T*, index_t*)>& run) {
  const auto n = static_cast<index_t>(host.size());
  DeviceArray<T> in(n, offset);
  in.upload(host);
  DeviceArray<index_t> counts(kernels::histogram_slots(bins));
  counts.poison();
  run(in.data(), counts.data());
  EXPECT_TRUE(counts.untouched_outside(kernels::histogram_slots(bins)));
  return counts.download();
}

template <class T>
void expect_same_counts(const std::vector<index_t>& got, const std::vector<index_t>& want, index_t n,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  index_t total = 0, differ = 0, first = -1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    total += want[i];
    if (got[i] != want[i]) {
      if (first < 0) first = static_cast<index_t>(i);
      ++differ;
    }
  }
  EXPECT_EQ(total, n) << what << ": the CPU backend's counts do not add up to n";
  EXPECT_EQ(differ, 0) << what << ": " << differ << " slots differ, the first " << first << " (of "
                       << got.size() << "): got " << (first >= 0 ? got[static_cast<std::size_t>(first)] : 0)
                       << ", want " << (first >= 0 ? want[static_cast<std::size_t>(first)] : 0);
}

template <class T>
void check_even(const std::vector<T>& host, const EvenBins& bins, index_t offset, const std::string& what) {
  const auto n = static_cast<index_t>(host.size());
  std::vector<index_t> want(static_cast<std::size_t>(kernels::histogram_slots(bins.count)));
  kernels::histogram_even(cpu_queue(), host.data(), n, bins, want.data());
  const auto got = device_counts<T>(host, offset, bins.count, [&](const T* in, index_t* counts) {
    kernels::histogram_even(cuda_queue(), in, n, bins, counts);
  });
  expect_same_counts<T>(got, want, n, what + " bins=" + std::to_string(bins.count) + " offset=" + std::to_string(offset));
}

template <class T>
void check_edges(const std::vector<T>& host, const std::vector<double>& edges, index_t offset, const std::string& what) {
  const auto n = static_cast<index_t>(host.size());
  const auto bins = static_cast<index_t>(edges.size()) - 1;
  std::vector<index_t> want(static_cast<std::size_t>(kernels::histogram_slots(bins)));
  kernels::histogram_edges(cpu_queue(), host.data(), n, edges.data(), bins, want.data());
  DeviceArray<double> device_edges(bins + 1);
  device_edges.upload(edges);
  const auto got = device_counts<T>(host, offset, bins, [&](const T* in, index_t* counts) {
    kernels::histogram_edges(cuda_queue(), in, n, device_edges.data(), bins, counts);
  });
  expect_same_counts<T>(got, want, n, what + " edges, bins=" + std::to_string(bins) + " offset=" + std::to_string(offset));
}

TYPED_TEST(HistogramGpu, EvenBinsMatchTheCpuBackend) {
  using T = TypeParam;
  const double lo = std::is_integral_v<T> ? -900.5 : -1.0;
  const double hi = std::is_integral_v<T> ? 1000.0 : 1.0;
  for (index_t bins : bin_counts()) {
    const EvenBins range{lo, hi, bins};
    const std::vector<double> edges = kernels::even_bin_edges(range);
    for (index_t n : histogram_sizes()) {
      const std::uint64_t seed = test_seed() + static_cast<std::uint64_t>(n * 131 + bins);
      const auto host = samples_around<T>(n, lo, hi, edges, seed);
      check_even(host, range, n % 4, where(n, "even"));
    }
  }
}

// A range that is not a power of two wide, off zero, in float: edges that round, estimates that
// need the correction (and a margin that sends every sample through it).
TYPED_TEST(HistogramGpu, EvenBinsOnAwkwardRanges) {
  using T = TypeParam;
  const index_t n = small_mode() ? 20011 : 400009;
  const std::vector<EvenBins> ranges = {{0.1, 0.7, 3}, {-3.3, 1e3 / 3, 977}, {1000.0, 1001.0, 4096}, {-1e-3, 2e-3, 65536}};
  for (const EvenBins& range : ranges) {
    const auto edges = kernels::even_bin_edges(range);
    const auto host = samples_around<T>(n, range.lower, range.upper, edges, test_seed() + static_cast<std::uint64_t>(range.count));
    check_even(host, range, 1, where(n, "awkward range"));
  }
}

// 90% in one bin, and everything in one bin (also a tail slot): one address under every lane, runs of
// one slot added at once, and 16-bit counters that wrap many times per thread block (in an even slot
// and in an odd one).
TYPED_TEST(HistogramGpu, SkewedAndSingleBin) {
  using T = TypeParam;
  const index_t n = small_mode() ? 50021 : (index_t(1) << 24) + 3;
  for (index_t bins : {index_t(16), index_t(4096), index_t(65536)}) {
    const EvenBins range{0.0, static_cast<double>(bins), bins};
    for (index_t hot : {bins / 3 * 2, bins / 3 * 2 + 1}) {
      std::mt19937_64 gen(test_seed() + static_cast<std::uint64_t>(hot));
      std::vector<T> skewed(static_cast<std::size_t>(n)), single(static_cast<std::size_t>(n));
      for (index_t i = 0; i < n; ++i) {
        const auto r = gen();
        const T hot_value = static_cast<T>(static_cast<double>(hot) + 0.25);
        skewed[static_cast<std::size_t>(i)] = r % 10 != 0 ? hot_value : static_cast<T>(static_cast<double>((r >> 8) % static_cast<std::uint64_t>(bins)));
        single[static_cast<std::size_t>(i)] = hot_value;
      }
      check_even(skewed, range, 0, where(n, "skewed") + " hot bin " + std::to_string(hot));
      check_even(single, range, 3, where(n, "single bin") + " " + std::to_string(hot));
    }
    std::vector<T> outside(static_cast<std::size_t>(n), static_cast<T>(-1));
    if constexpr (std::is_floating_point_v<T>) {
      for (index_t i = 0; i < n; i += 2) outside[static_cast<std::size_t>(i)] = std::numeric_limits<T>::quiet_NaN();
    }
    check_even(outside, range, 2, where(n, "below and NaN"));
  }
}

TYPED_TEST(HistogramGpu, GivenEdgesMatchTheCpuBackend) {
  using T = TypeParam;
  std::vector<index_t> edge_counts = {1, 7, 256, 4097, 40000};
  if (!small_mode()) edge_counts.push_back(100001);
  for (index_t bins : edge_counts) {
    std::mt19937_64 gen(test_seed() + static_cast<std::uint64_t>(bins));
    // Strictly increasing edges in about [-1000, 1000] (integers: non-integral edges too), not float values.
    std::vector<double> edges(static_cast<std::size_t>(bins) + 1);
    double x = -1000.0;
    const double mean_step = 2000.0 / static_cast<double>(bins);
    std::uniform_real_distribution<double> step(0.2 * mean_step, 1.8 * mean_step);
    for (auto& e : edges) {
      e = x + 1e-9;
      x += step(gen);
    }
    for (bool infinite : {false, true}) {
      std::vector<double> given = edges;
      if (infinite) {
        given.front() = -std::numeric_limits<double>::infinity();
        if (bins > 1) given.back() = std::numeric_limits<double>::infinity();
      }
      for (index_t n : {index_t(0), index_t(33), index_t(40009), small_mode() ? index_t(4099) : index_t(1000003)}) {
        const auto host = samples_around<T>(n, -1000.0, edges.back(), edges, test_seed() + static_cast<std::uint64_t>(n + bins));
        check_edges(host, given, n % 3, where(n, infinite ? "infinite outer edges," : "finite edges,"));
      }
    }
  }
}

TEST(HistogramGpuBincount, MatchesTheCpuBackend) {
  for (index_t bins : {index_t(1), index_t(10), index_t(2001), index_t(65536)}) {
    for (index_t n : histogram_sizes()) {
      std::mt19937_64 gen(test_seed() + static_cast<std::uint64_t>(n + bins));
      std::vector<std::int32_t> a(static_cast<std::size_t>(n));
      std::vector<std::int64_t> b(static_cast<std::size_t>(n));
      for (index_t i = 0; i < n; ++i) {
        const auto v = static_cast<std::int64_t>(gen() % 3000) - 500;
        a[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
        b[static_cast<std::size_t>(i)] = i % 7 == 0 ? v * (std::int64_t(1) << 40) : v;
      }
      auto check = [&](const auto& host, const char* type) {
        using T = typename std::decay_t<decltype(host)>::value_type;
        std::vector<index_t> want(static_cast<std::size_t>(kernels::histogram_slots(bins)));
        kernels::bincount(cpu_queue(), host.data(), n, bins, want.data());
        const auto got = device_counts<T>(host, 1, bins, [&](const T* in, index_t* counts) {
          kernels::bincount(cuda_queue(), in, n, bins, counts);
        });
        expect_same_counts<T>(got, want, n, where(n, type) + " bincount bins=" + std::to_string(bins));
      };
      check(a, "int32");
      check(b, "int64");
    }
  }
}

TYPED_TEST(HistogramGpu, SampleRangeMatchesTheCpuBackend) {
  using T = TypeParam;
  for (index_t n : histogram_sizes()) {
    auto host = samples_around<T>(n, -5.0, 5.0, {0.0}, test_seed() + static_cast<std::uint64_t>(n));
    kernels::SampleRange<T> want{};
    kernels::sample_range(cpu_queue(), host.data(), n, &want);
    DeviceArray<T> in(n, 2);
    in.upload(host);
    DeviceArray<kernels::SampleRange<T>> out(1);
    out.poison();
    kernels::sample_range(cuda_queue(), in.data(), n, out.data());
    ASSERT_TRUE(out.untouched_outside(1));
    const auto got = out.download()[0];
    EXPECT_EQ(got.count, want.count) << where(n, "sample_range");
    if (want.count > 0) {
      EXPECT_EQ(got.min, want.min) << where(n, "sample_range");
      EXPECT_EQ(got.max, want.max) << where(n, "sample_range");
    }
  }
}

}  // namespace
}  // namespace tessera::gpu_test
