// The open algorithms on every arithmetic element type (int8 .. uint64, float, double): sum, min,
// max and the inclusive sum scan against serial references, in the block and in a ragged partition.
// Compiled by nvcc where the build has CUDA, so that TESSERA_TEST_BACKEND=cuda runs the same tests on
// the device backend.
#include "generic_test_util.hpp"

namespace tessera {
namespace {

using test::layouts;

template <class T>
class GenericArithmetic : public ::testing::Test {};
using AllArithmetic = ::testing::Types<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t,
                                       std::uint16_t, std::uint32_t, std::uint64_t, float, double>;
TYPED_TEST_SUITE(GenericArithmetic, AllArithmetic);

template <class T>
std::vector<T> random_values(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(gen));
    } else {
      x = static_cast<T>(gen());  // the whole range: sums wrap, and must wrap alike
    }
  }
  return v;
}

TYPED_TEST(GenericArithmetic, SumMinMaxAndScanOfEveryArithmeticType) {
  using T = TypeParam;
  for (index_t n : {index_t(0), index_t(1), index_t(33), index_t(4097), index_t(100003)}) {
    const std::uint64_t s = test::seed() * 11 + static_cast<std::uint64_t>(n);
    const auto global = random_values<T>(n, s);
    for (const auto& array : layouts(global, s)) {
      if constexpr (std::is_integral_v<T>) {
        T sum = 0, lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
        for (T x : global) {
          sum = static_cast<T>(static_cast<std::uint64_t>(sum) + static_cast<std::uint64_t>(x));
          lo = std::min(lo, x);
          hi = std::max(hi, x);
        }
        EXPECT_EQ(reduce(array, plus{}), sum) << test::where(n, s);
        EXPECT_EQ(reduce(array, minimum{}), lo) << test::where(n, s);
        EXPECT_EQ(reduce(array, maximum{}), hi) << test::where(n, s);
        // The inclusive sum scan wraps like the serial one.
        const std::vector<T> got = inclusive_scan(array, plus{}, T(0)).gather(0);
        if (test::world().rank() == 0) {
          T running = 0;
          for (std::size_t i = 0; i < global.size(); ++i) {
            running = static_cast<T>(static_cast<std::uint64_t>(running) + static_cast<std::uint64_t>(global[i]));
            ASSERT_EQ(got[i], running) << test::where(n, s) << " i=" << i;
          }
        }
      } else {
        long double sum = 0, sum_abs = 0;
        for (T x : global) {
          sum += x;
          sum_abs += std::fabs(x);
        }
        const long double tol = (n + 8.0L) * std::numeric_limits<T>::epsilon() * sum_abs;
        EXPECT_LE(std::fabs(reduce(array, plus{}) - sum), tol) << test::where(n, s);
        if (n > 0) {
          EXPECT_EQ(reduce(array, minimum{}), *std::min_element(global.begin(), global.end()));
          EXPECT_EQ(reduce(array, maximum{}), *std::max_element(global.begin(), global.end()));
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessera
