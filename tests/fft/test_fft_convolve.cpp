// fft::Convolution (fft_convolve.hpp) against the exact sum: every output of the FFT path within the
// documented bound of sum_k w_k a_(i+r-k) taken in long double on the host, and the direct path bit
// for bit tessera::convolve, on random data of sizes around the segments (0, 1, primes, 2^k +- 1,
// more ranks than elements), block and ragged partitions, zero and periodic boundaries, FFT lengths
// that cut the blocks into many segments with a partial last one, batches of 1, 3 and the default.
// Runs on the world's backend: the cpu in fft_tests, cuFFT in gpu_fft_tests.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "mpi/algo_test_util.hpp"
#include "support/exact_cases.hpp"
#include "support/test_support.hpp"
#include "tessera/framework/fft_convolve.hpp"

namespace tessera {
namespace {

template <class T>
std::vector<long double> exact_convolution(const std::vector<T>& a, const std::vector<T>& w, Boundary boundary) {
  const auto n = static_cast<index_t>(a.size());
  const auto taps = static_cast<index_t>(w.size());
  const index_t r = (taps - 1) / 2;
  std::vector<long double> out(a.size());
  for (index_t i = 0; i < n; ++i) {
    long double acc = 0;
    for (index_t k = 0; k < taps; ++k) {
      index_t j = i + r - k;
      if (j < 0 || j >= n) {
        if (boundary == Boundary::zero) continue;
        j = ((j % n) + n) % n;
      }
      acc += static_cast<long double>(w[static_cast<std::size_t>(k)]) * static_cast<long double>(a[static_cast<std::size_t>(j)]);
    }
    out[static_cast<std::size_t>(i)] = acc;
  }
  return out;
}

struct Setting {
  fft::ConvolveOptions options;
  std::string name;
};

template <class T>
class FftConvolveTest : public ::testing::Test {};
using Reals = ::testing::Types<float, double>;
TYPED_TEST_SUITE(FftConvolveTest, Reals);

TYPED_TEST(FftConvolveTest, WithinTheBoundOfTheExactSumAndDirectBitForBit) {
  using T = TypeParam;
  const Context& world = test::world();
  const int p = world.size();
  std::vector<Setting> settings;
  for (fft::ConvolveMethod method : {fft::ConvolveMethod::fft, fft::ConvolveMethod::direct, fft::ConvolveMethod::automatic}) {
    Setting s;
    s.options.method = method;
    s.name = fft::convolve_method_name(method);
    settings.push_back(s);
  }
  {
    Setting s;  // many short segments, one a batch
    s.options.method = fft::ConvolveMethod::fft;
    s.options.batch = 1;
    s.name = "fft batch 1";
    settings.push_back(s);
    s.options.batch = 3;
    s.name = "fft batch 3, short segments";
    settings.push_back(s);
  }
  index_t checked_fft = 0;
  for (index_t radius : {index_t(0), index_t(1), index_t(5), index_t(40), index_t(100)}) {
    for (index_t n : {index_t(0), index_t(1), index_t(p) + 1, index_t(31), index_t(33), index_t(97), index_t(257),
                      index_t(1023), index_t(4099), index_t(65537)}) {
      if (n == 65537 && radius != 40 && radius != 100) continue;
      const auto seed = static_cast<std::uint64_t>(n * 131 + radius * 7 + (sizeof(T) == 8 ? 1 : 0));
      std::vector<T> data(static_cast<std::size_t>(n)), weights(static_cast<std::size_t>(2 * radius + 1));
      std::mt19937_64 rng(seed);
      std::uniform_real_distribution<double> value(-1, 1);
      for (T& v : data) v = static_cast<T>(value(rng));
      for (T& v : weights) v = static_cast<T>(value(rng));
      double max_abs = 0;
      for (const T v : data) max_abs = std::max(max_abs, std::fabs(static_cast<double>(v)));
      for (Boundary boundary : {Boundary::zero, Boundary::periodic}) {
        if (boundary == Boundary::periodic && radius > n) continue;
        const std::vector<long double> exact = exact_convolution(data, weights, boundary);
        for (bool ragged : {false, true}) {
          const Partition part = ragged ? test::random_partition(n, p, seed + 2) : Partition::block(n, p);
          const auto a = DistArray<T>::from_replicated(world, data, part);
          const std::vector<T> direct = convolve(a, std::span<const T>(weights), boundary).gather(0);
          for (Setting s : settings) {
            if (s.name == "fft batch 3, short segments")
              s.options.fft_length = static_cast<index_t>(std::bit_ceil(static_cast<std::uint64_t>(2 * radius + 2)));
            fft::Convolution<T> conv(world, std::span<const T>(weights), boundary, s.options);
            const DistArray<T> out = conv(a);
            EXPECT_EQ(out.partition(), part);
            const bool fft_here = conv.method_for(a.local_size()) == fft::ConvolveMethod::fft;
            const bool fft_somewhere = world.comm().allreduce(fft_here ? 1 : 0, ReduceOp::max) == 1;
            const std::vector<T> got = out.gather(0);
            if (world.rank() != 0) continue;
            const std::string where = "n=" + std::to_string(n) + " radius=" + std::to_string(radius) + " " +
                                      to_string(boundary) + (ragged ? " ragged " : " block ") + s.name +
                                      " N=" + std::to_string(conv.fft_length());
            ASSERT_EQ(got.size(), data.size()) << where;
            if (!fft_somewhere) {
              std::size_t i = 0;
              while (i < got.size() && test::same_bits(got[i], direct[i])) ++i;
              EXPECT_EQ(i, got.size()) << where << ": the direct path differs from tessera::convolve at " << i;
              continue;
            }
            ++checked_fft;
            const double bound = conv.error_bound(max_abs);
            double worst = 0;
            std::size_t worst_at = 0;
            for (std::size_t i = 0; i < got.size(); ++i) {
              const double e = static_cast<double>(std::fabs(static_cast<long double>(got[i]) - exact[i]));
              if (!(e <= worst)) {
                worst = e;
                worst_at = i;
              }
            }
            EXPECT_LE(worst, bound) << where << ": out[" << worst_at << "] = " << got[worst_at] << ", exact "
                                    << static_cast<double>(exact[worst_at]);
          }
        }
      }
    }
  }
  if (world.rank() == 0) {
    EXPECT_GT(checked_fft, 100);
  }
}

// A view's blocks start anywhere (rank 0's one element into its allocation): under cuda the
// inputs are staged where they are off a complex value's alignment.
TYPED_TEST(FftConvolveTest, ViewsOfBlocksOffTheirAlignment) {
  using T = TypeParam;
  const Context& world = test::world();
  const index_t n = 20011, radius = 45;
  std::vector<T> data(static_cast<std::size_t>(n)), weights(static_cast<std::size_t>(2 * radius + 1));
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> value(-1, 1);
  for (T& v : data) v = static_cast<T>(value(rng));
  for (T& v : weights) v = static_cast<T>(value(rng));
  const auto a = DistArray<T>::from_replicated(world, data, Partition::block(n, world.size()));
  for (index_t first : {index_t(1), index_t(3)}) {
    const std::vector<T> sub(data.begin() + first, data.end() - 1);
    const std::vector<long double> exact = exact_convolution(sub, weights, Boundary::zero);
    for (index_t length : {index_t(0), index_t(128)}) {
      fft::ConvolveOptions o;
      o.method = fft::ConvolveMethod::fft;
      o.fft_length = length;
      o.batch = 5;
      fft::Convolution<T> conv(world, std::span<const T>(weights), Boundary::zero, o);
      const DistArray<T> v = a.view(first, n - 1);
      const std::vector<T> got = conv(v).gather(0);
      if (world.rank() != 0) continue;
      ASSERT_EQ(got.size(), sub.size());
      const double bound = conv.error_bound(1.0);
      double worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i)
        worst = std::max(worst, static_cast<double>(std::fabs(static_cast<long double>(got[i]) - exact[i])));
      EXPECT_LE(worst, bound) << "view from " << first << ", N " << conv.fft_length();
    }
  }
}

// One convolution applied to arrays of other sizes in turn (new plans and buffers each time the
// block's size changes, under cuda a larger staged copy for a wider view), each within its bound.
TYPED_TEST(FftConvolveTest, ReusedOnArraysOfOtherSizes) {
  using T = TypeParam;
  const Context& world = test::world();
  const index_t radius = 30;
  std::vector<T> weights(static_cast<std::size_t>(2 * radius + 1));
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> value(-1, 1);
  for (T& v : weights) v = static_cast<T>(value(rng));
  fft::ConvolveOptions o;
  o.method = fft::ConvolveMethod::fft;
  o.fft_length = 256;
  o.batch = 7;
  o.effort = fft::Effort::measure;  // cpu: FFTW plans by measuring, on the buffers, before any input is there
  fft::Convolution<T> conv(world, std::span<const T>(weights), Boundary::periodic, o);
  for (index_t n : {index_t(5003), index_t(40009), index_t(1999), index_t(40009), index_t(70001)}) {
    std::vector<T> data(static_cast<std::size_t>(n));
    for (T& v : data) v = static_cast<T>(value(rng));
    const auto a = DistArray<T>::from_replicated(world, data, Partition::block(n, world.size()));
    const bool view = n == 70001;  // rank 0's block one element into its allocation
    const std::vector<T> sub = view ? std::vector<T>(data.begin() + 1, data.end()) : data;
    const std::vector<T> got = (view ? conv(a.view(1, n)) : conv(a)).gather(0);
    if (world.rank() != 0) continue;
    const std::vector<long double> exact = exact_convolution(sub, weights, Boundary::periodic);
    ASSERT_EQ(got.size(), sub.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, static_cast<double>(std::fabs(static_cast<long double>(got[i]) - exact[i])));
    EXPECT_LE(worst, conv.error_bound(1.0)) << "n " << n;
  }
}

TEST(FftConvolve, AutomaticTakesTheFftFromTheCrossover) {
  const Context& world = test::world();
  const std::vector<double> small(3, 1.0);
  fft::Convolution<double> probe(world, std::span<const double>(small));
  const index_t r = probe.crossover_radius();
  ASSERT_GT(r, 0);
  const std::vector<double> at(static_cast<std::size_t>(2 * r + 1), 0.5), below(static_cast<std::size_t>(2 * r - 1), 0.5);
  fft::Convolution<double> wide(world, std::span<const double>(at)), narrow(world, std::span<const double>(below));
  // A block whose inner outputs fill a segment takes the FFT at the crossover, not below it; a
  // block without a whole segment keeps the direct sum.
  const index_t big = 2 * r + wide.fft_length();
  EXPECT_EQ(wide.method_for(big), fft::ConvolveMethod::fft);
  EXPECT_EQ(wide.method_for(2 * r + wide.fft_length() - 2 * r - 1), fft::ConvolveMethod::direct);
  EXPECT_EQ(narrow.method_for(big), fft::ConvolveMethod::direct);
  fft::ConvolveOptions forced;
  forced.method = fft::ConvolveMethod::fft;
  fft::Convolution<double> f(world, std::span<const double>(small), Boundary::zero, forced);
  EXPECT_EQ(f.method_for(3), fft::ConvolveMethod::fft);
  EXPECT_EQ(f.method_for(2), fft::ConvolveMethod::direct);  // no output without a halo
}

TEST(FftConvolve, RefusesBadInput) {
  const Context& world = test::world();
  const std::vector<float> even = {1, 2}, five(5, 1.0f);
  EXPECT_THROW(fft::Convolution<float>(world, std::span<const float>(even)), UsageError);
  fft::ConvolveOptions o;
  o.fft_length = 4;  // not above 2 radius = 4
  try {
    fft::Convolution<float> c(world, std::span<const float>(five), Boundary::zero, o);
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("FFT length of 4"), std::string::npos) << e.what();
  }
  o.fft_length = 24;  // above 2 radius, not a power of two
  EXPECT_THROW(fft::Convolution<float>(world, std::span<const float>(five), Boundary::zero, o), UsageError);
  o.fft_length = 0;
  o.batch = -1;
  EXPECT_THROW(fft::Convolution<float>(world, std::span<const float>(five), Boundary::zero, o), UsageError);
  EXPECT_THROW((void)fft::parse_convolve_method("fast"), UsageError);
  EXPECT_EQ(fft::parse_convolve_method("auto"), fft::ConvolveMethod::automatic);
  const DistArray<float> a(world, 3);
  const std::vector<float> wide(9, 1.0f);  // radius 4 > 3 elements, periodic
  EXPECT_THROW((void)fft::convolve(a, std::span<const float>(wide), Boundary::periodic), UsageError);
}

}  // namespace
}  // namespace tessera
