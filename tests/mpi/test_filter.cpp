// filter and count_if across ranks: the kept elements in global order, each rank's piece where the
// ragged partition says, against std::copy_if on the host; then rebalance back to blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"

namespace tessera {
namespace {

template <class T>
class Filter : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(Filter, ElementTypes);

template <class T>
std::vector<Predicate<T>> predicates() {
  if constexpr (std::is_integral_v<T>) {
    return {greater_than<T>(0), in_range<T>(-500, 250), less_than<T>(-2000), Predicate<T>{PredicateKind::ne, 3, 0}};
  } else {
    return {greater_than<T>(0), in_range<T>(T(-0.5), T(0.25)), less_than<T>(T(-2)), Predicate<T>{PredicateKind::ge, T(-1), 0}};
  }
}

template <class T>
void check_filter(const DistArray<T>& array, const std::vector<T>& global, Predicate<T> pred, const std::string& where) {
  const Context& ctx = array.context();
  std::vector<T> expected;
  std::copy_if(global.begin(), global.end(), std::back_inserter(expected), pred);

  PhaseTimes times;
  const DistArray<T> kept = filter(array, pred, &times);
  EXPECT_EQ(kept.global_size(), static_cast<index_t>(expected.size())) << where;
  // Each rank keeps its own kept elements: its part is the count within its input block.
  for (int r = 0; r < ctx.size(); ++r) {
    const auto first = global.begin() + array.partition().offset(r);
    const auto last = first + array.partition().local_size(r);
    EXPECT_EQ(kept.partition().local_size(r), std::count_if(first, last, pred)) << where << " rank " << r;
  }
  EXPECT_EQ(count_if(array, pred), static_cast<index_t>(expected.size())) << where;

  const std::vector<T> got = kept.gather(0);
  if (ctx.rank() == 0) {
    EXPECT_EQ(got, expected) << where;
  }
  // The result keeps the selected block's storage unless less than a third of it is used.
  EXPECT_GE(kept.local_capacity(), kept.local_size()) << where;
  if (kept.local_size() * 3 < array.local_size()) EXPECT_EQ(kept.local_capacity(), kept.local_size()) << where;
  else EXPECT_EQ(kept.local_capacity(), array.local_size()) << where;
  DistArray<T> shrunk = filter(array, pred);
  shrunk.shrink_to_fit();
  EXPECT_EQ(shrunk.local_capacity(), shrunk.local_size()) << where;
  const std::vector<T> got_shrunk = shrunk.gather(0);
  if (ctx.rank() == 0) {
    EXPECT_EQ(got_shrunk, expected) << where << " after shrink_to_fit";
  }

  const DistArray<T> balanced = rebalance(kept);
  EXPECT_TRUE(balanced.partition() == Partition::block(kept.global_size(), ctx.size())) << where;
  const std::vector<T> got_balanced = balanced.gather(0);
  if (ctx.rank() == 0) {
    EXPECT_EQ(got_balanced, expected) << where << " after rebalance";
  }
}

TYPED_TEST(Filter, KeepsWhatTheHostKeepsInGlobalOrder) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t n : test::algorithm_sizes(world.size())) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<T>(n, s);
    const auto array = DistArray<T>::from_replicated(world, global);
    for (const auto& pred : predicates<T>()) check_filter(array, global, pred, test::where(n, s));
  }
}

TYPED_TEST(Filter, RaggedInputAndSubgroups) {
  using T = TypeParam;
  const Context& world = test::world();
  for (int ranks = 1; ranks <= world.size(); ++ranks) {
    const Context ctx = world.first(ranks);
    if (ctx.is_null()) continue;
    const index_t n = 777;
    const std::uint64_t s = test::seed() * 5 + static_cast<std::uint64_t>(ranks);
    const auto global = test::random_vector<T>(n, s);
    const auto array = DistArray<T>::from_replicated(ctx, global, test::random_partition(n, ranks, s));
    check_filter(array, global, greater_than<T>(T(0)), test::where(n, s) + " ranks=" + std::to_string(ranks));
  }
}

}  // namespace
}  // namespace tessera
