// Communicator::split_node against MPI_Comm_split_type called directly: the same ranks, in the
// order of the key.
#include <gtest/gtest.h>
#include <mpi.h>

#include "support/test_support.hpp"
#include "tessera/framework/comm.hpp"

namespace tessera {
namespace {

TEST(CommunicatorNode, HoldsTheRanksThatShareThisNodeOrderedByKey) {
  const Communicator& comm = test::world().comm();
  MPI_Comm reference = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &reference), MPI_SUCCESS);
  int size = 0, rank = 0;
  MPI_Comm_size(reference, &size);
  MPI_Comm_rank(reference, &rank);
  MPI_Comm_free(&reference);

  const Communicator node = comm.split_node(comm.rank());
  ASSERT_FALSE(node.is_null());
  EXPECT_EQ(node.size(), size);
  EXPECT_EQ(node.rank(), rank);
  // A key that reverses the order reverses the ranks.
  const Communicator reversed = comm.split_node(comm.size() - comm.rank());
  EXPECT_EQ(reversed.size(), size);
  EXPECT_EQ(reversed.rank(), size - 1 - rank);
  // The node's ranks agree on who they are: the sum of their world ranks, both ways.
  EXPECT_EQ(node.allreduce(comm.rank(), ReduceOp::sum), reversed.allreduce(comm.rank(), ReduceOp::sum));
}

}  // namespace
}  // namespace tessera
