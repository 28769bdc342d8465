// The pings that give the network models their latency and bandwidth on one communicator, on the
// two paths data takes (docs/SCALING.md):
//   host MPI   an allreduce (Communicator::allreduce) of one 8-byte value (200 calls, latency-bound)
//              and of ping_bytes (5 calls): the path of the scalar collectives of sum, scan and filter;
//   DeviceComm a broadcast of 8 bytes (100 calls) and of ping_bytes (5 calls) of backend memory from
//              rank 0: the path of SUMMA's panels (NCCL, CUDA-aware MPI or staged under cuda; host
//              MPI under cpu).
// Per call, the slowest rank's time. The calls go through the framework's communicators, so they are
// counted and are fault-injection sites like every other collective.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/context.hpp"
#include "model/scaling.hpp"

namespace tessera::apps::scaling_study {

// Which pings to run; the sample keeps 0 seconds for those not run (its byte counts are set alike).
struct Pings {
  bool small = true;  // the 8-byte allreduce and broadcast (latency)
  bool large = true;  // those of ping_bytes (bandwidth)
};

// Collective over ctx. ping_bytes is capped at 2^28 doubles (2 GiB): a buffer, not a data set.
scaling::CollectiveSample ping(const Context& ctx, std::int64_t ping_bytes, Pings which = {});

// Each collective of `plan` (Communicator, host MPI) at its bytes on ctx: 2 untimed calls, then
// `batches` batches of `calls` calls each, a barrier before each batch; per batch the slowest
// rank's mean per call; seconds = the median batch. alltoallv, reduce_scatter and neighbor_exchange
// are not timed (charged by their formula). Collective over ctx.
std::vector<scaling::CollectiveTiming> time_plan(const Context& ctx, const CollectivePlan& plan, int batches = 5,
                                                 int calls = 40);

// The node-sharing probe: on the first k ranks of `world` for k = 1 .. ranks_on_node (node 0 under
// block placement), each rank sums a backend buffer of bytes_per_rank (reduce, the sum's own
// kernel; device memory under cuda) `repeats` times after one untimed call, all k at once; per
// repetition the slowest rank's time. The ranks outside wait asleep. Collective over world; the
// result is complete on world rank 0 (its `seconds` are the medians, `repetitions` every repetition).
struct SharingProbe {
  scaling::NodeSharing sharing;
  std::vector<std::vector<double>> repetitions;  // per k
};
SharingProbe probe_node_sharing(const Context& world, int ranks_on_node, std::int64_t bytes_per_rank, int repeats = 5);

}  // namespace tessera::apps::scaling_study
