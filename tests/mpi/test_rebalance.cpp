// rebalance from ragged partitions back to blocks, with the real message limit and with an
// artificially small one, so that the chunking that keeps messages below 2^31 bytes runs here on
// small buffers; and the device communication path the cpu backend reports.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/device_comm.hpp"

namespace tessera {
namespace {

template <class T>
class Rebalance : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(Rebalance, ElementTypes);

// Restores the default limit even when an assertion leaves the test early.
struct MessageLimit {
  std::size_t saved = detail::mpi_message_limit();
  explicit MessageLimit(std::size_t bytes) { detail::set_mpi_message_limit(bytes); }
  ~MessageLimit() { detail::set_mpi_message_limit(saved); }
};

template <class T>
void check_rebalance(const Context& ctx, index_t n, const Partition& from, std::uint64_t s, const std::string& where) {
  const auto global = test::random_vector<T>(n, s);
  const auto array = DistArray<T>::from_replicated(ctx, global, from);
  PhaseTimes times;
  const DistArray<T> out = rebalance(array, &times);
  ASSERT_TRUE(out.partition() == Partition::block(n, ctx.size())) << where;
  // Every rank checks its own block against the global data.
  const std::vector<T> mine = out.local_to_host();
  const std::vector<T> expected(global.begin() + out.global_offset(), global.begin() + out.global_offset() + out.local_size());
  EXPECT_EQ(mine, expected) << where << " rank " << ctx.rank();
}

TYPED_TEST(Rebalance, RaggedToBlock) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t n : test::algorithm_sizes(world.size())) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    check_rebalance<T>(world, n, test::random_partition(n, world.size(), s), s, test::where(n, s));
  }
}

TYPED_TEST(Rebalance, EverythingOnOneRank) {
  using T = TypeParam;
  const Context& world = test::world();
  const index_t n = 1237;
  for (int holder = 0; holder < world.size(); ++holder) {
    std::vector<index_t> counts(static_cast<std::size_t>(world.size()), 0);
    counts[static_cast<std::size_t>(holder)] = n;
    check_rebalance<T>(world, n, Partition::from_counts(counts), test::seed() + 9,
                       test::where(n) + " holder=" + std::to_string(holder));
  }
}

// An array given up (rvalue) that already has the block partition is the result as it stands: the
// same storage, nothing copied (on one rank every array has it). A ragged one is moved as above.
TYPED_TEST(Rebalance, GivenUpArrayInBlocksKeepsItsStorage) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t n : test::algorithm_sizes(world.size())) {
    const std::uint64_t s = test::seed() + 17 + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<T>(n, s);
    auto blocked = DistArray<T>::from_replicated(world, global, Partition::block(n, world.size()));
    const T* storage = blocked.local_data();
    const DistArray<T> same = rebalance(std::move(blocked));
    EXPECT_EQ(same.local_data(), storage) << test::where(n, s);
    EXPECT_TRUE(same.partition() == Partition::block(n, world.size())) << test::where(n, s);
    const std::vector<T> expected(global.begin() + same.global_offset(),
                                  global.begin() + same.global_offset() + same.local_size());
    EXPECT_EQ(same.local_to_host(), expected) << test::where(n, s);

    const Partition ragged = test::random_partition(n, world.size(), s);
    auto moved_in = DistArray<T>::from_replicated(world, global, ragged);
    const DistArray<T> moved = rebalance(std::move(moved_in));
    EXPECT_TRUE(moved.partition() == Partition::block(n, world.size())) << test::where(n, s);
    const std::vector<T> expected_moved(global.begin() + moved.global_offset(),
                                        global.begin() + moved.global_offset() + moved.local_size());
    EXPECT_EQ(moved.local_to_host(), expected_moved) << test::where(n, s);
  }
}

TYPED_TEST(Rebalance, ChunkedMessagesBelowAnArtificialLimit) {
  using T = TypeParam;
  const Context& world = test::world();
  // 7 bytes: chunks that split elements, many per message, and a last chunk shorter than the rest.
  for (std::size_t limit : {std::size_t(7), std::size_t(64)}) {
    const MessageLimit guard(limit);
    for (index_t n : {index_t(1), index_t(33), index_t(4099)}) {
      const std::uint64_t s = test::seed() * 13 + static_cast<std::uint64_t>(n);
      check_rebalance<T>(world, n, test::random_partition(n, world.size(), s), s,
                         test::where(n, s) + " limit=" + std::to_string(limit));
    }
  }
}

TEST(DeviceCommPath, CpuBackendUsesHostMpi) {
  const Context& world = test::world();
  if (world.backend() != Backend::cpu) GTEST_SKIP() << "cpu backend only";
  EXPECT_EQ(DeviceComm(world).path(), DeviceCommPath::mpi_host);
  EXPECT_STREQ(to_string(DeviceComm(world).path()), "mpi-host");
}

TEST(DeviceCommPath, BroadcastAndAllreduceOfBackendBuffers) {
  const Context& world = test::world();
  const DeviceComm comm(world);
  for (std::size_t limit : {std::size_t(1) << 30, std::size_t(5)}) {
    const MessageLimit guard(limit);
    const index_t n = 1001;
    for (int root = 0; root < world.size(); ++root) {
      DistArray<double> buffer(world, Partition::from_counts(std::vector<index_t>(static_cast<std::size_t>(world.size()), n)));
      std::vector<double> mine(static_cast<std::size_t>(n));
      for (index_t i = 0; i < n; ++i) mine[static_cast<std::size_t>(i)] = world.rank() * 10000.0 + static_cast<double>(i);
      buffer.local_from_host(mine);
      comm.bcast(buffer.local_data(), static_cast<std::size_t>(n) * sizeof(double), root);
      const auto got = buffer.local_to_host();
      for (index_t i = 0; i < n; ++i)
        ASSERT_EQ(got[static_cast<std::size_t>(i)], root * 10000.0 + static_cast<double>(i)) << "root " << root << " limit " << limit;
    }
    DistArray<std::int64_t> counts(world, Partition::from_counts(std::vector<index_t>(static_cast<std::size_t>(world.size()), 3)));
    counts.local_from_host(std::vector<std::int64_t>{world.rank() + 1, 2, -1});
    comm.allreduce_sum(counts.local_data(), 3);
    const std::int64_t p = world.size();
    EXPECT_EQ(counts.local_to_host(), (std::vector<std::int64_t>{p * (p + 1) / 2, 2 * p, -p}));
  }
}

}  // namespace
}  // namespace tessera
