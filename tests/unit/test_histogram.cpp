// The CPU backend of the histograms against a serial reference (numpy's edges and a binary search
// over them), with 1 and 3 OpenMP threads on sizes across the serial cutoff, so that the threads'
// private counts and their sum are exercised; numpy's edges for equal bins; and the argument checks.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/detail/histogram_bins.hpp"
#include "tessera/kernels/histogram.hpp"
#include "tessera/kernels/histogram_by.hpp"

namespace tessera {
namespace {

const kernels::Queue kCpu{};

template <class T>
class CpuHistogram : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(CpuHistogram, ElementTypes);

template <class T>
using Compare = std::conditional_t<std::is_same_v<T, float>, float, double>;

template <class T, class C>
std::vector<index_t> reference(const std::vector<T>& samples, const std::vector<C>& edges) {
  const std::size_t bins = edges.size() - 1;
  std::vector<index_t> counts(bins + 3, 0);
  for (const T s : samples) {
    const C x = static_cast<C>(s);
    if (x != x) ++counts[bins + 2];
    else if (x < edges.front()) ++counts[bins];
    else if (x > edges.back()) ++counts[bins + 1];
    else if (x == edges.back()) ++counts[bins - 1];
    else ++counts[static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), x) - edges.begin()) - 1];
  }
  return counts;
}

template <class T>
std::vector<T> samples(index_t n, const std::vector<double>& edges, std::uint64_t s) {
  std::vector<T> v = test::random_vector<T>(n, s);
  std::mt19937_64 gen(s + 1);
  for (auto& x : v) {
    const auto r = gen();
    if (r % 5 == 0) x = static_cast<T>(edges[(r >> 8) % edges.size()]);
    if constexpr (std::is_floating_point_v<T>) {
      if (r % 5 == 1) x = std::nextafter(x, std::numeric_limits<T>::infinity());
      if (r % 101 == 2) x = std::numeric_limits<T>::quiet_NaN();
      if (r % 101 == 3) x = -std::numeric_limits<T>::infinity();
    }
  }
  return v;
}

TYPED_TEST(CpuHistogram, EvenBinsAndEdgesMatchTheSerialReference) {
  using T = TypeParam;
  const double lo = std::is_integral_v<T> ? -999.5 : -0.75, hi = std::is_integral_v<T> ? 800.0 : 0.5;
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    for (index_t bins : {index_t(1), index_t(3), index_t(640)}) {
      const std::vector<double> edges = kernels::even_bin_edges({lo, hi, bins});
      std::vector<Compare<T>> rounded(edges.begin(), edges.end());
      for (index_t n : {index_t(0), index_t(1), index_t(4099), index_t(100003)}) {
        const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n + bins);
        const auto x = samples<T>(n, edges, s);
        std::vector<index_t> got(static_cast<std::size_t>(bins) + 3, -1);
        kernels::histogram_even(kCpu, x.data(), n, {lo, hi, bins}, got.data());
        EXPECT_EQ(got, (reference<T, Compare<T>>(x, rounded))) << test::where(n, s) << " bins=" << bins << " threads=" << threads;
        // The same edges given: compared in double, as numpy's searchsorted does.
        kernels::histogram_edges(kCpu, x.data(), n, edges.data(), bins, got.data());
        EXPECT_EQ(got, (reference<T, double>(x, edges))) << test::where(n, s) << " edges, bins=" << bins << " threads=" << threads;
      }
    }
  }
  omp_set_num_threads(1);
}

// numpy's binning as a binner of the caller's (EvenBinner through histogram_by) against the serial
// reference: the same bins, below and above; a NaN counted above (numpy counts it in no bin), the
// NaN slot empty. Bad bins are refused when the binner is made.
TYPED_TEST(CpuHistogram, EvenBinnerCountsAsTheSerialReference) {
  using T = TypeParam;
  const double lo = std::is_integral_v<T> ? -999.5 : -0.75, hi = std::is_integral_v<T> ? 800.0 : 0.5;
  for (index_t bins : {index_t(1), index_t(3), index_t(640)}) {
    const std::vector<double> edges = kernels::even_bin_edges({lo, hi, bins});
    std::vector<Compare<T>> rounded(edges.begin(), edges.end());
    const kernels::EvenBinner<T> even(kernels::EvenBins{lo, hi, bins});
    EXPECT_EQ(even.bins(), bins);
    for (index_t n : {index_t(0), index_t(1), index_t(4099), index_t(100003)}) {
      const std::uint64_t s = test::seed() * 3 + static_cast<std::uint64_t>(n + bins);
      const auto x = samples<T>(n, edges, s);
      std::vector<index_t> want = reference<T, Compare<T>>(x, rounded);
      want[static_cast<std::size_t>(bins) + 1] += want[static_cast<std::size_t>(bins) + 2];
      want[static_cast<std::size_t>(bins) + 2] = 0;
      std::vector<index_t> got(static_cast<std::size_t>(bins) + 3, -1);
      kernels::histogram_by(kCpu, x.data(), n, even, bins, got.data());
      EXPECT_EQ(got, want) << test::where(n, s) << " bins=" << bins;
    }
  }
  EXPECT_THROW(kernels::EvenBinner<T>(kernels::EvenBins{1.0, 1.0, 4}), UsageError);
  EXPECT_THROW(kernels::EvenBinner<T>(kernels::EvenBins{0.0, 1.0, 0}), UsageError);
}

// Edges bunched in a small part of the range (cells of the lookup table holding many bins, most
// cells none), edges closer than a float apart (float keys that coincide), and samples on the
// cells' boundaries and next to every edge.
TYPED_TEST(CpuHistogram, UnevenEdgesMatchTheSerialReference) {
  using T = TypeParam;
  std::vector<double> edges = {-1000.0};
  for (int i = 0; i < 3000; ++i) edges.push_back(1.0 + i * 1e-3);
  edges.push_back(10.0);
  edges.push_back(10.0 + 1e-12);
  edges.push_back(10.0 + 2e-12);
  edges.push_back(1000.0);
  const auto bins = static_cast<index_t>(edges.size()) - 1;
  std::vector<T> x;
  for (int j = 0; j <= 4096; ++j) x.push_back(static_cast<T>(-1000.0 + 2000.0 * j / 4096));
  for (const double e : edges) {
    x.push_back(static_cast<T>(e));
    if constexpr (std::is_floating_point_v<T>) {
      x.push_back(std::nextafter(static_cast<T>(e), std::numeric_limits<T>::infinity()));
      x.push_back(std::nextafter(static_cast<T>(e), -std::numeric_limits<T>::infinity()));
    } else {
      x.push_back(static_cast<T>(std::floor(e)) + 1);
    }
  }
  const auto n = static_cast<index_t>(x.size());
  std::vector<index_t> got(static_cast<std::size_t>(bins) + 3, -1);
  kernels::histogram_edges(kCpu, x.data(), n, edges.data(), bins, got.data());
  EXPECT_EQ(got, (reference<T, double>(x, edges)));
}

TEST(CpuHistogramBincount, CountsEachValueWithThreads) {
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    const index_t n = 70001, bins = 700;
    const auto x = test::random_vector<std::int64_t>(n, test::seed());
    std::vector<index_t> want(bins + 3, 0), got(bins + 3, -1);
    for (auto v : x) ++want[static_cast<std::size_t>(v < 0 ? bins : v >= bins ? bins + 1 : v)];
    kernels::bincount(kCpu, x.data(), n, bins, got.data());
    EXPECT_EQ(got, want) << "threads=" << threads;
  }
  omp_set_num_threads(1);
}

// A binner's answer as a slot: [0, bins) its bin, kBinBelow and kBinAbove the slots below and
// above, every other value (negative or not, of any integer width) the NaN slot that the
// histogram refuses.
template <class B>
struct Answer {
  B value;
  B operator()(int) const { return value; }
};
template <class B>
int slot_of(B answer, int bins) {
  return kernels::detail::UserBinning<Answer<B>>{Answer<B>{answer}, bins}(0);
}
TEST(CpuHistogramUserBinning, MapsEveryAnswerToItsSlot) {
  for (int bins : {1, 7, 1000}) {
    const int below = bins + 0, above = bins + 1, nan = bins + 2;  // HistogramSlot's order
    for (int b = 0; b < bins; b += 1 + bins / 10) {
      EXPECT_EQ(slot_of<int>(b, bins), b);
      EXPECT_EQ(slot_of<std::int64_t>(b, bins), b);
      EXPECT_EQ(slot_of<std::int16_t>(static_cast<std::int16_t>(b), bins), b);
      EXPECT_EQ(slot_of<std::uint32_t>(static_cast<std::uint32_t>(b), bins), b);
    }
    EXPECT_EQ(slot_of<int>(kernels::kBinBelow, bins), below);
    EXPECT_EQ(slot_of<int>(kernels::kBinAbove, bins), above);
    EXPECT_EQ(slot_of<std::int64_t>(kernels::kBinBelow, bins), below);
    EXPECT_EQ(slot_of<std::int64_t>(kernels::kBinAbove, bins), above);
    EXPECT_EQ(slot_of<signed char>(-1, bins), below);
    EXPECT_EQ(slot_of<signed char>(-2, bins), above);
    for (int bad : {bins, bins + 1, bins + 2, -3, -4, -1000, std::numeric_limits<int>::max(), std::numeric_limits<int>::min()})
      EXPECT_EQ(slot_of<int>(bad, bins), nan) << "answer " << bad << ", bins " << bins;
    for (std::int64_t bad : {std::int64_t(bins), std::int64_t(1) << 32, (std::int64_t(1) << 32) - 1, -(std::int64_t(1) << 32) - 1,
                             -(std::int64_t(1) << 32) - 2, std::int64_t(-3), std::numeric_limits<std::int64_t>::min()})
      EXPECT_EQ(slot_of<std::int64_t>(bad, bins), nan) << "answer " << bad << ", bins " << bins;
    for (std::uint64_t bad : {std::uint64_t(bins), std::uint64_t(1) << 32, ~std::uint64_t(0), ~std::uint64_t(1)})
      EXPECT_EQ(slot_of<std::uint64_t>(bad, bins), nan) << "answer " << bad << ", bins " << bins;
  }
}

// numpy.linspace(lo, hi, bins + 1) for these ranges (printed by numpy 1.24 with repr).
TEST(CpuHistogramEdges, AreNumpysLinspace) {
  const auto a = kernels::even_bin_edges({0.1, 0.7, 3});
  EXPECT_EQ(a, (std::vector<double>{0.1, 0.3, 0.5, 0.7}));
  const auto b = kernels::even_bin_edges({-3.3, 1e3 / 3, 4});
  EXPECT_EQ(b, (std::vector<double>{-3.3, 80.85833333333333, 165.01666666666665, 249.17499999999998, 333.3333333333333}));
}

TEST(CpuHistogramChecks, RefuseBadBinsAndEdges) {
  EXPECT_NO_THROW(kernels::check_even_bins({0, 1, 1}));
  EXPECT_THROW(kernels::check_even_bins({0, 1, 0}), UsageError);
  EXPECT_THROW(kernels::check_even_bins({0, 1, kernels::kMaxHistogramBins + 1}), UsageError);
  EXPECT_THROW(kernels::check_even_bins({1, 1, 5}), UsageError);
  EXPECT_THROW(kernels::check_even_bins({1, -1, 5}), UsageError);
  EXPECT_THROW(kernels::check_even_bins({-INFINITY, 1, 5}), UsageError);
  EXPECT_THROW(kernels::check_even_bins({0, NAN, 5}), UsageError);
  EXPECT_THROW(kernels::check_even_bins({-1e308, 1e308, 5}), UsageError);  // the width overflows
  // float32 samples bin in float: numpy's norm bins / (upper - lower) must be a finite float, and
  // the bounds floats.
  EXPECT_NO_THROW(kernels::check_even_bins({0, 1e-38, 3}, true));
  EXPECT_NO_THROW(kernels::check_even_bins({0, 1e-43, 64}));          // double samples: fine
  EXPECT_THROW(kernels::check_even_bins({0, 1e-43, 64}, true), UsageError);
  EXPECT_THROW(kernels::check_even_bins({0, 2.8e-45, 3}, true), UsageError);
  EXPECT_THROW(kernels::check_even_bins({0, 1e39, 3}, true), UsageError);
  EXPECT_NO_THROW(kernels::check_edges(std::vector<double>{-INFINITY, 0, INFINITY}));
  EXPECT_THROW(kernels::check_edges(std::vector<double>{1}), UsageError);
  EXPECT_THROW(kernels::check_edges(std::vector<double>{0, 1, 1}), UsageError);
  EXPECT_THROW(kernels::check_edges(std::vector<double>{0, NAN, 1}), UsageError);
  try {
    kernels::check_edges(std::vector<double>{0, 2, 1});
    ADD_FAILURE() << "decreasing edges accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("edge 2"), std::string::npos) << e.what();
  }
  float x = 1;
  std::vector<index_t> counts(13);
  EXPECT_THROW(kernels::histogram_even(kCpu, &x, 1, {0, 1e39, 10}, counts.data()), UsageError);  // beyond float
  EXPECT_NO_THROW(kernels::histogram_even(kCpu, &x, 1, {0, 1e38, 10}, counts.data()));
}

}  // namespace
}  // namespace tessera
