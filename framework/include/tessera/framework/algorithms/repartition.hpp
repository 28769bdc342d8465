// repartition(a, partition): the same global sequence in another partition of the same size (that
// of another array, to line two arrays up for transform(a, b, f), transform_reduce(a, b, ...) or
// dot). As rebalance (which is repartition to the block partition): both partitions are known on
// every rank, so the host works out, per peer, where "what I hold" meets "what the peer will hold",
// and one all-to-all exchange (DeviceComm::alltoallv) moves the bytes straight into the new block.
// Any element type; a different global size or part count is a UsageError on every rank.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/timer.hpp"

namespace tessera {

// The collectives of one repartition of an array in `from` on `rank` (collective_plan.hpp): one
// all-to-all in which the rank sends every element it holds (the part it keeps to itself).
template <class T>
CollectivePlan repartition_plan(const Partition& from, int rank) {
  return {{Collective::alltoallv, static_cast<double>(from.local_size(rank)) * static_cast<double>(sizeof(T))}};
}

template <class T>
DistArray<T> repartition(const DistArray<T>& array, const Partition& to, PhaseTimes* times = nullptr) {
  const Context& ctx = array.context();
  const Partition& from = array.partition();
  if (to.global_size() != from.global_size() || to.parts() != from.parts())
    throw UsageError("repartition: a partition of " + std::to_string(to.global_size()) + " elements over " +
                     std::to_string(to.parts()) + " parts for an array of " + std::to_string(from.global_size()) +
                     " over " + std::to_string(from.parts()));
  PhaseClock clock(ctx.queue(), times != nullptr);
  DistArray<T> out(ctx, to);
  const int ranks = ctx.size();
  const int me = ctx.rank();
  std::vector<std::size_t> send_bytes(ranks), send_offsets(ranks), recv_bytes(ranks), recv_offsets(ranks);
  const index_t mine_from0 = from.offset(me), mine_from1 = mine_from0 + from.local_size(me);
  const index_t mine_to0 = to.offset(me), mine_to1 = mine_to0 + to.local_size(me);
  for (int p = 0; p < ranks; ++p) {
    const auto i = static_cast<std::size_t>(p);
    const index_t s0 = std::max(mine_from0, to.offset(p)), s1 = std::min(mine_from1, to.offset(p) + to.local_size(p));
    send_bytes[i] = s1 > s0 ? static_cast<std::size_t>(s1 - s0) * sizeof(T) : 0;
    send_offsets[i] = s1 > s0 ? static_cast<std::size_t>(s0 - mine_from0) * sizeof(T) : 0;
    const index_t r0 = std::max(mine_to0, from.offset(p)), r1 = std::min(mine_to1, from.offset(p) + from.local_size(p));
    recv_bytes[i] = r1 > r0 ? static_cast<std::size_t>(r1 - r0) * sizeof(T) : 0;
    recv_offsets[i] = r1 > r0 ? static_cast<std::size_t>(r0 - mine_to0) * sizeof(T) : 0;
  }
  const DeviceComm device_comm(ctx);
  clock.end_phase(times ? &times->host : nullptr);
  device_comm.alltoallv(array.local_data(), send_bytes, send_offsets, out.local_data(), recv_bytes, recv_offsets);
  clock.end_phase(times ? &times->communication : nullptr);
  clock.finish();
  return out;
}

}  // namespace tessera
