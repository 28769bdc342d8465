// DistArray and Communicator on 1..4 ranks: partition, fill/iota/generate, gather, scalar
// collectives, sub-contexts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/framework/framework.hpp"
#include "tessera/kernels/counter_rng.hpp"

namespace tessera {
namespace {

using test::where;
using test::world;

template <class T>
class DistArrayTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(DistArrayTest, ElementTypes);

std::vector<index_t> mpi_sizes() {
  const int p = world().size();
  std::vector<index_t> s = {0, 1, p - 1 > 0 ? p - 1 : 2, p, 31, 33, 1021, 65537};
  return s;
}

TYPED_TEST(DistArrayTest, BlocksFollowThePartition) {
  using T = TypeParam;
  for (index_t n : mpi_sizes()) {
    DistArray<T> a(world(), n);
    const Partition expected = Partition::block(n, world().size());
    EXPECT_EQ(a.partition(), expected);
    EXPECT_EQ(a.local_size(), expected.local_size(world().rank())) << where(n);
    EXPECT_EQ(a.global_offset(), expected.offset(world().rank())) << where(n);
    const index_t total = world().comm().allreduce(a.local_size(), ReduceOp::sum);
    EXPECT_EQ(total, n);
  }
}

TYPED_TEST(DistArrayTest, IotaAndGatherGiveTheGlobalSequence) {
  using T = TypeParam;
  for (index_t n : mpi_sizes()) {
    DistArray<T> a(world(), n);
    a.iota(T(7));
    const std::vector<T> all = a.gather(0);
    if (world().is_root()) {
      ASSERT_EQ(static_cast<index_t>(all.size()), n);
      for (index_t i = 0; i < n; ++i) ASSERT_EQ(all[static_cast<std::size_t>(i)], static_cast<T>(7 + i)) << where(n);
    } else {
      EXPECT_TRUE(all.empty());
    }
  }
}

TYPED_TEST(DistArrayTest, GenerateIsIndependentOfRankCount) {
  using T = TypeParam;
  const std::uint64_t seed = test::seed();
  for (index_t n : mpi_sizes()) {
    DistArray<T> a(world(), n);
    a.generate(seed);
    const std::vector<T> block = a.local_to_host();
    for (index_t i = 0; i < a.local_size(); ++i)
      ASSERT_EQ(block[static_cast<std::size_t>(i)],
                counter_value<T>(seed, static_cast<std::uint64_t>(a.global_offset() + i)))
          << where(n);
  }
}

TYPED_TEST(DistArrayTest, FromReplicatedRoundTripsThroughGather) {
  using T = TypeParam;
  for (index_t n : mpi_sizes()) {
    const std::vector<T> global = test::random_vector<T>(n, test::seed() + static_cast<std::uint64_t>(n));
    DistArray<T> a = DistArray<T>::from_replicated(world(), global);
    const std::vector<T> back = a.gather(world().size() - 1);
    if (world().rank() == world().size() - 1) {
      EXPECT_EQ(back, global) << where(n);
    }
    a.fill(T(3));
    for (T x : a.local_to_host()) ASSERT_EQ(x, T(3));
  }
}

TYPED_TEST(DistArrayTest, RaggedPartitionsHoldTheirCounts) {
  using T = TypeParam;
  const int p = world().size();
  std::vector<index_t> counts(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) counts[static_cast<std::size_t>(r)] = (r % 2 == 0) ? 3 * r + 1 : 0;
  DistArray<T> a(world(), Partition::from_counts(counts));
  EXPECT_EQ(a.local_size(), counts[static_cast<std::size_t>(world().rank())]);
  a.iota(T(0));
  const std::vector<T> all = a.gather(0);
  if (world().is_root()) {
    for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<T>(i));
  }
}

TEST(Communicator, ScalarCollectivesMatchClosedForms) {
  const Communicator& comm = world().comm();
  const int p = comm.size(), r = comm.rank();
  EXPECT_EQ(comm.allreduce<std::int64_t>(r + 1, ReduceOp::sum), std::int64_t(p) * (p + 1) / 2);
  EXPECT_EQ(comm.allreduce<std::int32_t>(r, ReduceOp::max), p - 1);
  EXPECT_EQ(comm.allreduce<double>(r - 0.5, ReduceOp::min), -0.5);
  EXPECT_EQ(comm.exscan_sum<std::int64_t>(r + 1), std::int64_t(r) * (r + 1) / 2);
  EXPECT_EQ(comm.exscan_sum<double>(1.0), static_cast<double>(r));
  const std::vector<std::int64_t> all = comm.allgather<std::int64_t>(10 * r);
  ASSERT_EQ(static_cast<int>(all.size()), p);
  for (int i = 0; i < p; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)], 10 * i);
  EXPECT_EQ(comm.bcast_value<std::int64_t>(r == p - 1 ? 1234 : -1, p - 1), 1234);
}

TEST(Communicator, NaNPropagatesThroughMinMaxOnAnyRank) {
  const Communicator& comm = world().comm();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double mine = comm.rank() == comm.size() - 1 ? nan : 1.0;
  EXPECT_TRUE(std::isnan(comm.allreduce(mine, ReduceOp::min)));
  EXPECT_TRUE(std::isnan(comm.allreduce(mine, ReduceOp::max)));
}

TEST(Communicator, IntegerSumsWrapInsteadOfOverflowing) {
  const Communicator& comm = world().comm();
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  std::uint32_t expected = 0;
  for (int r = 0; r < comm.size(); ++r) expected += static_cast<std::uint32_t>(big);
  EXPECT_EQ(static_cast<std::uint32_t>(comm.allreduce(big, ReduceOp::sum)), expected);
}

TEST(Context, FirstRanksFormASubContext) {
  for (int k = 1; k <= world().size(); ++k) {
    const Context sub = world().first(k);
    if (world().rank() < k) {
      ASSERT_FALSE(sub.is_null());
      EXPECT_EQ(sub.size(), k);
      EXPECT_EQ(sub.rank(), world().rank());
      DistArray<std::int64_t> a(sub, 100);
      a.iota(1);
      std::int64_t local = 0;
      for (auto x : a.local_to_host()) local += x;
      EXPECT_EQ(sub.comm().allreduce(local, ReduceOp::sum), 5050);
    } else {
      EXPECT_TRUE(sub.is_null());
    }
    world().comm().barrier();
  }
}

}  // namespace
}  // namespace tessera
