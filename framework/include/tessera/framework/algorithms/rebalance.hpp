// rebalance: the same global sequence in the balanced block partition. Every element's old and new
// owner follow from the two partitions, which every rank knows, so there is no local counting
// phase and no fix-up: the host works out, per peer, the overlap of "what I hold" with "what the
// peer will hold" (and the reverse), and one all-to-all exchange moves the bytes straight into the
// new block. The exchange is the device path's (device_comm.hpp): chunked point-to-point below
// 2^31 bytes per message on MPI, grouped send/recv on NCCL, so any size works.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/timer.hpp"

namespace tessera {

// The collectives of one rebalance (collective_plan.hpp), on `rank` of an array in partition `from`:
// one all-to-all in which the rank sends every element it holds (the part it keeps to itself).
template <class T>
CollectivePlan rebalance_plan(const Partition& from, int rank) {
  return {{Collective::alltoallv, static_cast<double>(from.local_size(rank)) * static_cast<double>(sizeof(T))}};
}

// The same global sequence in the balanced block partition, moved with one all-to-all exchange.
// Correct when a rank sends or receives more than 2^31 bytes. Any element type.
template <class T>
DistArray<T> rebalance(const DistArray<T>& array, PhaseTimes* times = nullptr) {
  const Context& ctx = array.context();
  PhaseClock clock(ctx.queue(), times != nullptr);
  const Partition& from = array.partition();
  DistArray<T> out(ctx, from.global_size());
  const Partition& to = out.partition();

  // Host: byte counts and offsets of each peer's share, from the overlaps of the two partitions.
  const int ranks = ctx.size();
  const int me = ctx.rank();
  std::vector<std::size_t> send_bytes(ranks), send_offsets(ranks), recv_bytes(ranks), recv_offsets(ranks);
  auto overlap = [](index_t a0, index_t a1, index_t b0, index_t b1) {
    return std::pair<index_t, index_t>{std::max(a0, b0), std::min(a1, b1)};
  };
  const index_t mine_from0 = from.offset(me), mine_from1 = from.offset(me) + from.local_size(me);
  const index_t mine_to0 = to.offset(me), mine_to1 = to.offset(me) + to.local_size(me);
  for (int p = 0; p < ranks; ++p) {
    const auto i = static_cast<std::size_t>(p);
    const auto [s0, s1] = overlap(mine_from0, mine_from1, to.offset(p), to.offset(p) + to.local_size(p));
    send_bytes[i] = s1 > s0 ? static_cast<std::size_t>(s1 - s0) * sizeof(T) : 0;
    send_offsets[i] = s1 > s0 ? static_cast<std::size_t>(s0 - mine_from0) * sizeof(T) : 0;
    const auto [r0, r1] = overlap(mine_to0, mine_to1, from.offset(p), from.offset(p) + from.local_size(p));
    recv_bytes[i] = r1 > r0 ? static_cast<std::size_t>(r1 - r0) * sizeof(T) : 0;
    recv_offsets[i] = r1 > r0 ? static_cast<std::size_t>(r0 - mine_to0) * sizeof(T) : 0;
  }
  const DeviceComm device_comm(ctx);
  clock.end_phase(times ? &times->host : nullptr);

  // Global: the one exchange.
  device_comm.alltoallv(array.local_data(), send_bytes, send_offsets, out.local_data(), recv_bytes, recv_offsets);
  clock.end_phase(times ? &times->communication : nullptr);
  clock.finish();
  return out;
}

// The same for an array the caller gives up: where its partition already is the balanced block
// partition (always on one rank, and after a filter that kept the balance), its storage is the
// result, and nothing moves; otherwise, or where the array views memory it does not own
// (DistArray::view_local), as above.
template <class T>
DistArray<T> rebalance(DistArray<T>&& array, PhaseTimes* times = nullptr) {
  const Partition block = Partition::block(array.global_size(), array.context().size());
  if (array.is_view() || array.partition().counts() != block.counts())
    return rebalance(static_cast<const DistArray<T>&>(array), times);
  Stopwatch host;
  const Context ctx = array.context();
  const index_t capacity = array.local_capacity();
  T* data = array.release_storage();
  DistArray<T> out = DistArray<T>::adopt_local(ctx, block, data, capacity);
  if (times) times->host += host.seconds();
  return out;
}

// Precompiled in the framework library.
extern template DistArray<std::int32_t> rebalance<std::int32_t>(const DistArray<std::int32_t>&, PhaseTimes*);
extern template DistArray<std::int64_t> rebalance<std::int64_t>(const DistArray<std::int64_t>&, PhaseTimes*);
extern template DistArray<float> rebalance<float>(const DistArray<float>&, PhaseTimes*);
extern template DistArray<double> rebalance<double>(const DistArray<double>&, PhaseTimes*);

}  // namespace tessera
