// rebalance: the same global sequence in the balanced block partition, on the exchange skeleton
// (exchange.hpp). Every element's old and new owner follow from the two partitions, which every
// rank knows, so the plan is arithmetic on the host: per peer, the overlap of "what I hold" with
// "what the peer will hold" (and the reverse); nothing is packed, and one all-to-all moves the
// bytes straight from the old block into the new one (from the 16-byte boundary before each run
// where the path prefers it). The exchange is the device path's (device_comm.hpp): chunked
// point-to-point below 2^31 bytes per message on MPI, grouped send/recv on NCCL, so any size works.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/timer.hpp"

namespace tessera {

// The collectives of one rebalance (collective_plan.hpp), on `rank` of an array in partition `from`:
// one all-to-all in which the rank sends every element it holds (the part it keeps to itself).
template <class T>
CollectivePlan rebalance_plan(const Partition& from, int rank) {
  return {{Collective::alltoallv, static_cast<double>(from.local_size(rank)) * static_cast<double>(sizeof(T))}};
}

namespace detail {
// The exchange of rebalance on bytes: this rank's block of `from` (elements of element_bytes bytes
// at `in`) -> its block of the balanced partition, in new storage (kernels::allocate on the
// context's queue; null where the block is empty).
void* rebalance_bytes(const Context& ctx, const Partition& from, std::size_t element_bytes, const void* in,
                      PhaseTimes* times);
}  // namespace detail

// The same global sequence in the balanced block partition, moved with one all-to-all exchange
// (algorithms/exchange.hpp). Correct when a rank sends or receives more than 2^31 bytes. Any
// trivially copyable element type: the elements move as bytes, nothing is instantiated per type.
template <class T>
DistArray<T> rebalance(const DistArray<T>& array, PhaseTimes* times = nullptr) {
  static_assert(std::is_trivially_copyable_v<T>, "rebalance: the element type must be trivially copyable");
  const Context& ctx = array.context();
  Partition block = Partition::block(array.global_size(), ctx.size());
  const index_t local = block.local_size(ctx.rank());
  void* storage = detail::rebalance_bytes(ctx, array.partition(), sizeof(T), array.local_data(), times);
  return DistArray<T>::adopt_local(ctx, std::move(block), static_cast<T*>(storage), local);
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

}  // namespace tessera
