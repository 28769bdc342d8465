// The OpenMP threads per rank that the runtime leaves for the CPU backend, observed in a parallel
// region after Runtime::start, against a reference computed here: OMP_NUM_THREADS where it is set,
// else this rank's share of its node, max(1, min(cores in its affinity mask, cores in the union of
// the masks of the node's ranks / ranks on the node)).
#include <gtest/gtest.h>
#include <mpi.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "support/test_support.hpp"

namespace {

int threads_of_a_parallel_region() {
  int threads = 0;
#pragma omp parallel
  {
#pragma omp single
    threads = omp_get_num_threads();
  }
  return threads;
}

TEST(RuntimeThreads, ParallelRegionsGetTheRanksShareOfItsNode) {
  // The runtime chose the threads at its start, for every rank of the launch: checked in the pass
  // over all of them.
  const tessera::Context& launch = tessera::test::launch();
  if (tessera::test::world().size() != launch.size())
    GTEST_SKIP() << "the runtime's threads are a fact of the whole launch (" << launch.size() << " ranks)";
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  MPI_Comm node = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split_type(launch.comm().get(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), MPI_SUCCESS);
  int ranks_on_node = 0;
  ASSERT_EQ(MPI_Comm_size(node, &ranks_on_node), MPI_SUCCESS);
  cpu_set_t node_cores;
  CPU_ZERO(&node_cores);
  ASSERT_EQ(MPI_Allreduce(&mine, &node_cores, static_cast<int>(sizeof(cpu_set_t)), MPI_BYTE, MPI_BOR, node),
            MPI_SUCCESS);
  ASSERT_EQ(MPI_Comm_free(&node), MPI_SUCCESS);

  const char* env = std::getenv("OMP_NUM_THREADS");
  const bool from_env = env && *env;
  const int expected = from_env ? std::atoi(env)
                                : std::max(1, std::min(CPU_COUNT(&mine), CPU_COUNT(&node_cores) / ranks_on_node));
  EXPECT_EQ(threads_of_a_parallel_region(), expected)
      << "OMP_NUM_THREADS=" << (from_env ? env : "(unset)") << ", " << CPU_COUNT(&mine) << " cores in this rank's mask, "
      << CPU_COUNT(&node_cores) << " on the node, " << ranks_on_node << " ranks on the node";
}

}  // namespace
