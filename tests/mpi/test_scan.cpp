// inclusive_scan / exclusive_scan across ranks against serial prefix sums on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera {
namespace {

template <class T>
class Scan : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(Scan, ElementTypes);

template <class T>
void check_scan(const DistArray<T>& array, const std::vector<T>& global, ScanKind kind, const std::string& where) {
  using W = test::Wide<T>;
  PhaseTimes times;
  const DistArray<T> out = scan(array, kind, &times);
  EXPECT_TRUE(out.partition() == array.partition()) << where;
  const std::vector<T> got = out.gather(0);
  if (array.context().rank() != 0) return;
  ASSERT_EQ(got.size(), global.size()) << where;
  W running = 0, running_abs = 0;
  for (std::size_t i = 0; i < global.size(); ++i) {
    if (kind == ScanKind::inclusive) {
      running += static_cast<W>(global[i]);
      running_abs += static_cast<W>(std::abs(global[i]));
    }
    if constexpr (std::is_integral_v<T>) {
      ASSERT_EQ(got[i], static_cast<T>(running)) << where << " i=" << i << " " << to_string(kind);
    } else {
      // Each output is a sum of at most i + 1 terms plus a carry-in from at most P blocks.
      const long double tolerance = (static_cast<long double>(i) + 2 + array.context().size()) *
                                    std::numeric_limits<T>::epsilon() * running_abs;
      ASSERT_LE(std::fabs(static_cast<long double>(got[i]) - running), tolerance)
          << where << " i=" << i << " " << to_string(kind);
    }
    if (kind == ScanKind::exclusive) {
      running += static_cast<W>(global[i]);
      running_abs += static_cast<W>(std::abs(global[i]));
    }
  }
}

TYPED_TEST(Scan, InclusiveAndExclusiveMatchSerialPrefixSums) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t n : test::algorithm_sizes(world.size())) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<T>(n, s);
    const auto array = DistArray<T>::from_replicated(world, global);
    check_scan(array, global, ScanKind::inclusive, test::where(n, s));
    check_scan(array, global, ScanKind::exclusive, test::where(n, s));
  }
}

TYPED_TEST(Scan, RaggedPartitionsKeepTheirShape) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t n : {index_t(0), index_t(1), index_t(3), index_t(2049)}) {
    const std::uint64_t s = test::seed() * 7 + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<T>(n, s);
    const auto array = DistArray<T>::from_replicated(world, global, test::random_partition(n, world.size(), s));
    check_scan(array, global, ScanKind::inclusive, test::where(n, s) + " ragged");
    check_scan(array, global, ScanKind::exclusive, test::where(n, s) + " ragged");
  }
}

TEST(Scan, IntoAnExistingArrayAndInPlace) {
  const Context& world = test::world();
  const index_t n = 1009;
  const auto global = test::random_vector<std::int64_t>(n, test::seed() + 1);
  const auto input = DistArray<std::int64_t>::from_replicated(world, global);
  DistArray<std::int64_t> out(world, n);
  scan(input, out, ScanKind::exclusive);
  auto in_place = DistArray<std::int64_t>::from_replicated(world, global);
  scan(in_place, in_place, ScanKind::inclusive);
  DistArray<std::int64_t> wrong_shape(world, n + 1);
  EXPECT_THROW(scan(input, wrong_shape, ScanKind::inclusive), UsageError);
  const auto exclusive = out.gather(0), inclusive = in_place.gather(0);
  if (world.rank() != 0) return;
  std::int64_t running = 0;
  for (index_t i = 0; i < n; ++i) {
    EXPECT_EQ(exclusive[static_cast<std::size_t>(i)], running) << test::where(n) << " i=" << i;
    running += global[static_cast<std::size_t>(i)];
    EXPECT_EQ(inclusive[static_cast<std::size_t>(i)], running) << test::where(n) << " i=" << i;
  }
}

TEST(Scan, IntegerSumsWrapLikeTheLocalKernel) {
  const Context& world = test::world();
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  const std::vector<std::int32_t> global = {big, big, 1, big, -5};
  const auto out = inclusive_scan(DistArray<std::int32_t>::from_replicated(world, global)).gather(0);
  if (world.rank() != 0) return;
  std::uint32_t running = 0;
  for (std::size_t i = 0; i < global.size(); ++i) {
    running += static_cast<std::uint32_t>(global[i]);
    EXPECT_EQ(out[i], static_cast<std::int32_t>(running)) << "i=" << i;
  }
}

}  // namespace
}  // namespace tessera
