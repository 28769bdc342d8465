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

}  // namespace tessera::apps::scaling_study
