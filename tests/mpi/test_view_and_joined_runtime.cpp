// DistArray::view_local (an array over a block the caller owns) and a Runtime joined to an MPI that
// someone else initialised, over a communicator of theirs (what the Python package does for an
// mpi4py program), on 1..4 ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/framework/framework.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

using test::world;

// Rank r holds r + 1 elements (a ragged partition), the values 1, 2, 3, ... in global order.
std::vector<index_t> ragged_counts(int ranks) {
  std::vector<index_t> counts;
  for (int r = 0; r < ranks; ++r) counts.push_back(r + 1);
  return counts;
}

TEST(ViewLocal, UsesTheCallersBlockInPlaceAndNeverFreesIt) {
  const Context& ctx = world();
  const Partition partition = Partition::from_counts(ragged_counts(ctx.size()));
  const index_t n = partition.local_size(ctx.rank());
  std::vector<double> host(static_cast<std::size_t>(n));
  std::iota(host.begin(), host.end(), static_cast<double>(partition.offset(ctx.rank()) + 1));
  auto* block = static_cast<double*>(kernels::allocate(ctx.queue(), static_cast<std::size_t>(n) * sizeof(double)));
  kernels::copy_from_host(ctx.queue(), block, host.data(), host.size() * sizeof(double));
  const index_t total_count = partition.global_size();
  const double expected = static_cast<double>(total_count) * static_cast<double>(total_count + 1) / 2;
  {
    DistArray<double> view = DistArray<double>::view_local(ctx, partition, block);
    EXPECT_TRUE(view.is_view());
    EXPECT_EQ(view.local_data(), block);
    EXPECT_EQ(view.partition(), partition);
    EXPECT_EQ(reduce(view, ReduceOp::sum), expected);
    // A change to the block is a change to the array.
    std::vector<double> doubled(host);
    for (double& v : doubled) v *= 2;
    kernels::copy_from_host(ctx.queue(), block, doubled.data(), doubled.size() * sizeof(double));
    EXPECT_EQ(reduce(view, ReduceOp::sum), 2 * expected);
    // Giving the view up to rebalance copies (the storage is the caller's), into the block partition.
    DistArray<double> balanced = rebalance(std::move(view));
    EXPECT_FALSE(balanced.is_view());
    EXPECT_NE(balanced.local_data(), block);
    EXPECT_EQ(balanced.partition(), Partition::block(total_count, ctx.size()));
    EXPECT_EQ(reduce(balanced, ReduceOp::sum), 2 * expected);
    // A scan's result owns its storage.
    DistArray<double> prefix = inclusive_scan(DistArray<double>::view_local(ctx, partition, block));
    EXPECT_FALSE(prefix.is_view());
  }
  // The views are gone and the block is still the caller's, whole.
  std::vector<double> back(static_cast<std::size_t>(n));
  kernels::copy_to_host(ctx.queue(), back.data(), block, back.size() * sizeof(double));
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], 2 * host[i]);
  kernels::deallocate(ctx.queue(), block);
}

TEST(JoinedRuntime, RunsOverTheCallersCommunicatorBesideTheWorld) {
  const int rank = world().rank();
  MPI_Comm half = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split(world().comm().get(), rank % 2, rank, &half), MPI_SUCCESS);
  int half_size = 0;
  MPI_Comm_size(half, &half_size);
  {
    Runtime joined(half);
    const Context ctx = joined.start(BackendChoice::cpu);
    EXPECT_EQ(joined.world_size(), half_size);
    EXPECT_EQ(ctx.size(), half_size);
    DistArray<std::int64_t> a(ctx, 1001);
    a.iota(0);
    EXPECT_EQ(reduce(a, ReduceOp::sum), 500500);
    // A second runtime, over another communicator, at the same time.
    MPI_Comm everyone = MPI_COMM_NULL;
    ASSERT_EQ(MPI_Comm_dup(world().comm().get(), &everyone), MPI_SUCCESS);
    {
      Runtime second(everyone);
      const Context all = second.start(BackendChoice::cpu);
      DistArray<std::int64_t> b(all, 100);
      b.fill(1);
      EXPECT_EQ(reduce(b, ReduceOp::sum), 100);
      EXPECT_EQ(reduce(a, ReduceOp::sum), 500500);
    }
    MPI_Comm_free(&everyone);
    if (!built_with_cuda()) {
      Runtime third(half);
      EXPECT_THROW(third.start(BackendChoice::cuda), UsageError);
    }
  }
  // The joined runtimes neither finalised MPI nor freed the caller's communicator.
  int finalized = 1;
  MPI_Finalized(&finalized);
  EXPECT_EQ(finalized, 0);
  int still = 0;
  EXPECT_EQ(MPI_Comm_size(half, &still), MPI_SUCCESS);
  EXPECT_EQ(still, half_size);
  MPI_Comm_free(&half);
}

}  // namespace
}  // namespace tessera
