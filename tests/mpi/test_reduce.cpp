// reduce (sum, min, max) across ranks against a serial reference on the host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"

namespace tessera {
namespace {

template <class T>
class Reduce : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(Reduce, ElementTypes);

template <class T>
void check_reduce(const DistArray<T>& array, const std::vector<T>& global, const std::string& where) {
  using W = test::Wide<T>;
  W sum = 0, sum_abs = 0;
  T lo = reduce_identity<T>(ReduceOp::min), hi = reduce_identity<T>(ReduceOp::max);
  for (T x : global) {
    sum += static_cast<W>(x);
    sum_abs += static_cast<W>(x < 0 ? -x : x);
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  PhaseTimes times;
  const T got_sum = reduce(array, ReduceOp::sum, &times);
  if constexpr (std::is_integral_v<T>) {
    EXPECT_EQ(got_sum, static_cast<T>(sum)) << where;
  } else {
    const long double tolerance =
        (static_cast<long double>(global.size()) + 1) * std::numeric_limits<T>::epsilon() * sum_abs;
    EXPECT_LE(std::fabs(static_cast<long double>(got_sum) - sum), tolerance) << where;
  }
  EXPECT_GE(times.local, 0.0);
  EXPECT_EQ(reduce(array, ReduceOp::min), lo) << where;
  EXPECT_EQ(reduce(array, ReduceOp::max), hi) << where;
  // Every rank holds the same value (bitwise for floats: compare the extremes over ranks).
  const auto& comm = array.context().comm();
  EXPECT_EQ(comm.allreduce(got_sum, ReduceOp::min), comm.allreduce(got_sum, ReduceOp::max)) << where;
}

TYPED_TEST(Reduce, MatchesSerialReferenceOnBlockPartitions) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t n : test::algorithm_sizes(world.size())) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<T>(n, s);
    const auto array = DistArray<T>::from_replicated(world, global);
    check_reduce(array, global, test::where(n, s));
  }
}

TYPED_TEST(Reduce, MatchesSerialReferenceOnRaggedPartitionsAndSubgroups) {
  using T = TypeParam;
  const Context& world = test::world();
  for (int ranks = 1; ranks <= world.size(); ++ranks) {
    const Context ctx = world.first(ranks);
    if (ctx.is_null()) continue;
    for (index_t n : {index_t(0), index_t(1), index_t(5), index_t(1001)}) {
      const std::uint64_t s = test::seed() * 3 + static_cast<std::uint64_t>(n);
      const auto global = test::random_vector<T>(n, s);
      const auto array = DistArray<T>::from_replicated(ctx, global, test::random_partition(n, ranks, s));
      check_reduce(array, global, test::where(n, s) + " ranks=" + std::to_string(ranks));
    }
  }
}

TEST(Reduce, NaNPropagatesThroughMinAndMax) {
  const Context& world = test::world();
  std::vector<double> global(7, 1.0);
  global[5] = std::numeric_limits<double>::quiet_NaN();
  const auto array = DistArray<double>::from_replicated(world, global);
  EXPECT_TRUE(std::isnan(reduce(array, ReduceOp::min)));
  EXPECT_TRUE(std::isnan(reduce(array, ReduceOp::max)));
  EXPECT_TRUE(std::isnan(reduce(array, ReduceOp::sum)));
}

}  // namespace
}  // namespace tessera
