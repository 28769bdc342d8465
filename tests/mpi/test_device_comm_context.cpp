// What DeviceComm's choice of path reads from the context: whether ranks of the job share GPUs,
// which the world context carries from Runtime::start, checked here against the job's own count of
// distinct (host, device UUID) pairs; and the contexts made from the world (first, split, another
// queue, a process grid's) carry it on and choose the same path; and the ranks agree on a path, or
// all refuse it together.
#include <gtest/gtest.h>
#include <mpi.h>

#include <set>
#include <string>
#include <vector>

#include "algo_test_util.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera {
namespace {

// Whether two ranks of ctx drive one GPU: one record per rank, the processor name and the UUID.
bool ranks_share_gpus_counted(const Context& ctx) {
  if (ctx.backend() != Backend::cuda) return false;
  constexpr int kName = MPI_MAX_PROCESSOR_NAME;
  constexpr int kRecord = kName + 16;
  std::vector<char> mine(kRecord, '\0');
  int length = 0;
  MPI_Get_processor_name(mine.data(), &length);
  const auto uuid = kernels::device_uuid(ctx.queue());
  std::copy(uuid.begin(), uuid.end(), mine.begin() + kName);
  std::vector<char> all(static_cast<std::size_t>(kRecord) * static_cast<std::size_t>(ctx.size()));
  MPI_Allgather(mine.data(), kRecord, MPI_CHAR, all.data(), kRecord, MPI_CHAR, ctx.comm().get());
  std::set<std::string> distinct;
  for (int r = 0; r < ctx.size(); ++r) distinct.emplace(all.data() + static_cast<std::size_t>(r) * kRecord, kRecord);
  return static_cast<int>(distinct.size()) < ctx.size();
}

void expect_same_facts(const Context& made, const Context& world, const std::string& what) {
  EXPECT_EQ(made.ranks_share_gpus(), world.ranks_share_gpus()) << what;
  EXPECT_EQ(device_comm_path(made), device_comm_path(world)) << what;
  EXPECT_EQ(DeviceComm(made).path(), device_comm_path(world)) << what;
}

TEST(DeviceCommContext, WorldSaysWhetherRanksShareGpus) {
  const Context& world = test::world();
  // The runtime fixes the fact for the whole launch at its start, and a pass on fewer ranks of the
  // launch (mpi_gtest_main) keeps it: counted over the pass only where the pass is the launch.
  const bool shared = world.size() == test::launch().size() ? ranks_share_gpus_counted(world)
                                                            : test::launch().ranks_share_gpus();
  EXPECT_EQ(world.ranks_share_gpus(), shared);
  EXPECT_EQ(DeviceComm(world).path(), device_comm_path(world));
  if (world.backend() == Backend::cpu) {
    EXPECT_EQ(device_comm_path(world), DeviceCommPath::mpi_host);
  }
  if (shared) {
    EXPECT_NE(device_comm_path(world), DeviceCommPath::nccl) << "NCCL needs one GPU per rank";
  }
}

TEST(DeviceCommContext, ContextsMadeFromTheWorldKeepItsFacts) {
  const Context& world = test::world();
  const Context head = world.first(1);
  if (!head.is_null()) expect_same_facts(head, world, "first(1)");
  expect_same_facts(world.split(world.rank() % 2, world.rank()), world, "split(rank % 2)");
  expect_same_facts(world.with_queue(world.queue()), world, "with_queue");
  const ProcessGrid grid = ProcessGrid::create(world);
  expect_same_facts(grid.context(), world, "process grid");
  expect_same_facts(grid.row(), world, "process row");
  expect_same_facts(grid.column(), world, "process column");
}

// agree_device_comm_path, with facts made up here (the cpu backend's own facts always give
// mpi-host): where the facts give no path, or not the same path, every rank gets the UsageError and
// none is left waiting in a collective (a hang would end at ctest's timeout).
std::string agreement_error(const Context& ctx, const detail::DeviceCommFacts& facts) {
  try {
    const DeviceCommPath path = detail::agree_device_comm_path(ctx, facts);
    return std::string("no error; path ") + to_string(path);
  } catch (const UsageError& e) {
    return e.what();
  }
}

TEST(DeviceCommContext, AgreedPathOrTheSameErrorOnEveryRank) {
  const Context& world = test::world();
  const int last = world.size() - 1;
  using detail::DeviceCommFacts;
  const DeviceCommFacts staged{.backend = Backend::cuda, .requested = "staged"};
  EXPECT_EQ(detail::agree_device_comm_path(world, staged), DeviceCommPath::staged);
  const DeviceCommFacts host{.backend = Backend::cpu, .requested = "nccl", .ranks_share_gpus = true};
  EXPECT_EQ(detail::agree_device_comm_path(world, host), DeviceCommPath::mpi_host);

  // Every rank refused.
  const DeviceCommFacts shared{.backend = Backend::cuda, .requested = "nccl", .built_with_nccl = true, .ranks_share_gpus = true};
  EXPECT_EQ(agreement_error(world, shared),
            "TESSERA_DEVICE_COMM=nccl, but ranks share GPUs (more ranks than devices); NCCL needs one GPU per rank");

  // Only the last rank refused: every rank reports its message.
  DeviceCommFacts one = staged;
  if (world.rank() == last) one.requested = "bogus";
  EXPECT_EQ(agreement_error(world, one), "TESSERA_DEVICE_COMM='bogus': expected auto, cuda-aware-mpi, nccl or staged");

  // Rank 0 would stage, the others use NCCL.
  DeviceCommFacts split{.backend = Backend::cuda, .requested = "auto", .built_with_nccl = true};
  if (world.rank() == 0) split.requested = "staged";
  if (world.size() == 1) {
    EXPECT_EQ(agreement_error(world, split), "no error; path staged");
  } else {
    EXPECT_EQ(agreement_error(world, split),
              "TESSERA_DEVICE_COMM: the ranks would take different paths (nccl and staged); set it alike on every rank");
  }
}

}  // namespace
}  // namespace tessera
