// Moving elements by index, with the indices distributed too (numpy's take and put, Thrust's gather
// and scatter):
//
//   gather(values, indices) -> out         out[j] = values[indices[j]]; out has the indices' partition
//   scatter(values, indices, out)          out[indices[j]] = values[j]; values and indices: one partition,
//                                          out any partition; elements of out no index names are kept
//
// Indices are global indices (int64, or any integer type) into values (gather) or out (scatter); an
// index outside [0, N) is a UsageError on every rank, found before anything moves. scatter with
// two equal indices writes one of their values (which one is unspecified, as thrust::scatter's).
// Any trivially copyable T; values and out may have any partitions (ragged ones too).
//
//   plan      each index's owner (a binary search of the partition's offsets on the backend), the
//             indices ordered by owner (a radix sort of the owners with their positions: stable), and
//             the count for each owner; one all-to-all of the counts (which also carries a bad index)
//   exchange  scatter: one all-to-all of the indices and values, each owner's straight from the
//             ordered arrays. gather: one all-to-all of the requested indices, then one of the
//             replies (a value's owner cannot know who needs it before the requests arrive)
//   unpack    scatter: each owner writes what it received into its block. gather: each owner looks
//             up the values asked of it; the replies land in owner order and go to their positions
// One rank: the local pass alone (no collective): gather checks the indices as it reads them;
// scatter checks them in a pass of their own first, so that a bad index leaves `out` untouched.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/reduce.hpp"
#include "tessera/kernels/sort.hpp"
#include "tessera/kernels/transform.hpp"

namespace tessera {

namespace detail {

// The part (rank) that owns global index i of a partition whose P + 1 offsets lie at `offsets`
// (backend memory); P where i is outside [0, N). Empty parts own nothing.
template <class I>
struct OwnerOf {
  const I* indices;
  const index_t* offsets;
  int parts;
  TESSERA_HOST_DEVICE std::int32_t operator()(index_t j) const {
    const auto i = static_cast<index_t>(indices[j]);
    if (i < 0 || i >= offsets[parts]) return parts;
    int lo = 0, hi = parts - 1;  // the last part whose offset is <= i
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (offsets[mid] <= i) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return lo;
  }
};

template <class T, class I>
struct TakeAt {  // out[j] = values[indices[j] - first]
  const T* values;
  const I* indices;
  index_t first;
  TESSERA_HOST_DEVICE T operator()(index_t j) const { return values[static_cast<index_t>(indices[j]) - first]; }
};

template <class T, class I>
struct TakeOrdered {  // out[k] = values[at[k]] (the k-th element in owner order)
  const T* values;
  const index_t* at;
  TESSERA_HOST_DEVICE T operator()(index_t k) const { return values[at[k]]; }
};

template <class I>
struct IndexOrdered {  // out[k] = indices[at[k]] as int64
  const I* indices;
  const index_t* at;
  TESSERA_HOST_DEVICE index_t operator()(index_t k) const { return static_cast<index_t>(indices[at[k]]); }
};

template <class T>
struct PutAt {  // out[at[k]] = from[k]
  T* out;
  const T* from;
  const index_t* at;
  TESSERA_HOST_DEVICE void operator()(index_t k) const { out[at[k]] = from[k]; }
};

template <class T, class I>
struct PutGlobal {  // out[index[k] - first] = from[k]
  T* out;
  const T* from;
  const I* index;
  index_t first;
  TESSERA_HOST_DEVICE void operator()(index_t k) const { out[static_cast<index_t>(index[k]) - first] = from[k]; }
};

// values[index], or T{} where the index lies outside [0, size), which raises *bad (every such
// thread stores the same 1: no order needed). A transform of the indices, so that they are read as
// whole vectors.
template <class T, class I>
struct TakeChecked {
  const T* values;
  index_t size;
  int* bad;
  TESSERA_HOST_DEVICE T operator()(const I& index) const {
    const auto i = static_cast<index_t>(index);
    if (i < 0 || i >= size) {
#if defined(__CUDA_ARCH__)
      *bad = 1;
#else
      std::atomic_ref<int>(*bad).store(1, std::memory_order_relaxed);
#endif
      return T{};
    }
    return values[i];
  }
};

template <class I>
struct OutOfRange {
  const I* indices;
  index_t size;
  TESSERA_HOST_DEVICE index_t operator()(index_t j) const {
    const auto i = static_cast<index_t>(indices[j]);
    return i < 0 || i >= size ? 1 : 0;
  }
};

// Where this rank's indices go: their positions in owner order, and the count for each owner.
struct ByOwner {
  kernels::ScratchBuffer positions;  // n positions (int64), ordered by owner, stable
  std::vector<index_t> counts;       // per owner; counts[P]: indices outside the array
  ByOwner(const kernels::Queue& queue, index_t n) : positions(queue, static_cast<std::size_t>(n) * sizeof(index_t)) {}
};

template <class I>
void order_by_owner(const Context& ctx, const I* indices, index_t n, const Partition& target, ByOwner& order) {
  const kernels::Queue& queue = ctx.queue();
  const int parts = ctx.size();
  std::vector<index_t> offsets(static_cast<std::size_t>(parts) + 1);
  for (int p = 0; p <= parts; ++p) offsets[static_cast<std::size_t>(p)] = p < parts ? target.offset(p) : target.global_size();
  kernels::ScratchBuffer device_offsets(queue, offsets.size() * sizeof(index_t));
  kernels::copy_from_host(queue, device_offsets.data(), offsets.data(), offsets.size() * sizeof(index_t));
  kernels::ScratchBuffer owners(queue, static_cast<std::size_t>(n) * sizeof(std::int32_t));
  kernels::transform_index(queue, 0, n, owners.as<std::int32_t>(),
                           OwnerOf<I>{indices, device_offsets.as<const index_t>(), parts});
  kernels::iota(queue, order.positions.as<index_t>(), n, index_t(0));
  int bits = 1;
  while ((1 << bits) <= parts) ++bits;  // owners 0 .. parts
  kernels::sort_pairs(queue, owners.as<const std::int32_t>(), owners.as<std::int32_t>(),
                      order.positions.as<const index_t>(), order.positions.as<index_t>(), n, 0, bits);
  // Where each owner's run starts in the ordered owners: counts by difference.
  std::vector<std::int32_t> ranks(static_cast<std::size_t>(parts) + 2);
  for (std::size_t r = 0; r < ranks.size(); ++r) ranks[r] = static_cast<std::int32_t>(r);
  kernels::ScratchBuffer needles(queue, ranks.size() * sizeof(std::int32_t));
  kernels::ScratchBuffer starts(queue, ranks.size() * sizeof(index_t));
  kernels::copy_from_host(queue, needles.data(), ranks.data(), ranks.size() * sizeof(std::int32_t));
  kernels::sorted_lower_bound(queue, owners.as<const std::int32_t>(), n, needles.as<const std::int32_t>(),
                              static_cast<index_t>(ranks.size()), starts.as<index_t>());
  std::vector<index_t> start(ranks.size());
  kernels::copy_to_host(queue, start.data(), starts.data(), start.size() * sizeof(index_t));
  order.counts.resize(static_cast<std::size_t>(parts) + 1);
  for (int p = 0; p <= parts; ++p)
    order.counts[static_cast<std::size_t>(p)] = start[static_cast<std::size_t>(p) + 1] - start[static_cast<std::size_t>(p)];
}

// The all-to-all of the counts; a rank with an index outside the array sends -1 to every rank, so
// that every rank throws the same UsageError before any data moves.
inline std::vector<index_t> exchange_counts(const Context& ctx, const std::vector<index_t>& counts,
                                            const char* algorithm, index_t size) {
  const int parts = ctx.size();
  const bool bad = counts[static_cast<std::size_t>(parts)] > 0;
  std::vector<index_t> send(static_cast<std::size_t>(parts)), recv(static_cast<std::size_t>(parts));
  for (int p = 0; p < parts; ++p) send[static_cast<std::size_t>(p)] = bad ? -1 : counts[static_cast<std::size_t>(p)];
  ctx.comm().alltoall(send.data(), 1, recv.data());
  for (int p = 0; p < parts; ++p)
    if (recv[static_cast<std::size_t>(p)] < 0)
      throw UsageError(std::string(algorithm) + ": an index on rank " + std::to_string(p) + " lies outside [0, " +
                       std::to_string(size) + ")");
  return recv;
}

}  // namespace detail

// The collectives of one gather on `rank` (collective_plan.hpp): none on one rank; otherwise one
// all-to-all of counts (one int64 per rank), one of the rank's indices (int64 each), and one of
// the values the others asked of it (`requests` of them: the indices, on all ranks, that this rank
// owns).
template <class T>
CollectivePlan gather_plan(const Partition& indices, int rank, index_t requests) {
  if (indices.parts() == 1) return {};
  return {{Collective::alltoallv, static_cast<double>(indices.parts()) * sizeof(index_t)},
          {Collective::alltoallv, static_cast<double>(indices.local_size(rank)) * sizeof(index_t)},
          {Collective::alltoallv, static_cast<double>(requests) * sizeof(T)}};
}

// Of one scatter: none on one rank; otherwise the counts, and one all-to-all of the rank's indices
// (int64) with their values.
template <class T>
CollectivePlan scatter_plan(const Partition& values, int rank) {
  if (values.parts() == 1) return {};
  return {{Collective::alltoallv, static_cast<double>(values.parts()) * sizeof(index_t)},
          {Collective::alltoallv, static_cast<double>(values.local_size(rank)) * static_cast<double>(sizeof(index_t) + sizeof(T))}};
}

template <class T, class I>
DistArray<T> gather(const DistArray<T>& values, const DistArray<I>& indices, PhaseTimes* times = nullptr) {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "gather: indices must be of an integer type");
  const Context& ctx = values.context();
  if (ctx.comm().get() != indices.context().comm().get() || ctx.backend() != indices.context().backend())
    throw UsageError("gather: values and indices live on different contexts");
  const kernels::Queue& queue = ctx.queue();
  const index_t n = indices.local_size();
  const index_t size = values.global_size();
  PhaseClock clock(queue, times != nullptr);
  DistArray<T> out(ctx, indices.partition());
  if (ctx.size() == 1) {
    // One pass: the gather raises a flag where an index is outside (the result is then dropped).
    const int bad = detail::result_on_host<int>(ctx, [&](int* flag) {
      *flag = 0;  // host memory: the result's slot, or a local under cpu
      kernels::transform(queue, indices.local_data(), n, out.local_data(),
                         detail::TakeChecked<T, I>{values.local_data(), size, flag});
    });
    if (bad) throw UsageError("gather: an index on rank 0 lies outside [0, " + std::to_string(size) + ")");
    clock.end_phase(times ? &times->local : nullptr);
    clock.finish();
    return out;
  }
  // Plan: the requests in owner order, and how many go to (and come from) each rank.
  detail::ByOwner order(queue, n);
  detail::order_by_owner(ctx, indices.local_data(), n, values.partition(), order);
  const int parts = ctx.size();
  const std::vector<index_t> asked = detail::exchange_counts(ctx, order.counts, "gather", size);
  index_t received = 0;
  for (index_t c : asked) received += c;
  kernels::ScratchBuffer requests(queue, static_cast<std::size_t>(n) * sizeof(index_t));
  kernels::ScratchBuffer incoming(queue, static_cast<std::size_t>(received) * sizeof(index_t));
  kernels::transform_index(queue, 0, n, requests.as<index_t>(),
                           detail::IndexOrdered<I>{indices.local_data(), order.positions.as<const index_t>()});
  clock.end_phase(times ? &times->local : nullptr);
  // Exchange the requests.
  const DeviceComm device_comm(ctx);
  std::vector<DeviceComm::Message> sends, recvs;
  auto message_lists = [&](char* send_base, char* recv_base, std::size_t bytes, bool reply) {
    sends.clear();
    recvs.clear();
    std::size_t send_at = 0, recv_at = 0;
    for (int p = 0; p < parts; ++p) {
      const index_t out_count = reply ? asked[static_cast<std::size_t>(p)] : order.counts[static_cast<std::size_t>(p)];
      const index_t in_count = reply ? order.counts[static_cast<std::size_t>(p)] : asked[static_cast<std::size_t>(p)];
      if (out_count > 0) sends.push_back({p, send_base + send_at, static_cast<std::size_t>(out_count) * bytes});
      if (in_count > 0) recvs.push_back({p, recv_base + recv_at, static_cast<std::size_t>(in_count) * bytes});
      send_at += static_cast<std::size_t>(out_count) * bytes;
      recv_at += static_cast<std::size_t>(in_count) * bytes;
    }
  };
  message_lists(requests.as<char>(), incoming.as<char>(), sizeof(index_t), false);
  device_comm.alltoallv(sends, recvs);
  clock.end_phase(times ? &times->communication : nullptr);
  // The values asked of this rank, in the order asked.
  kernels::ScratchBuffer replies(queue, static_cast<std::size_t>(received) * sizeof(T));
  kernels::ScratchBuffer answers(queue, static_cast<std::size_t>(n) * sizeof(T));
  kernels::transform_index(queue, 0, received, replies.as<T>(),
                           detail::TakeAt<T, index_t>{values.local_data(), incoming.as<const index_t>(), values.global_offset()});
  clock.end_phase(times ? &times->fixup : nullptr);
  message_lists(replies.as<char>(), answers.as<char>(), sizeof(T), true);
  device_comm.alltoallv(sends, recvs);
  clock.end_phase(times ? &times->communication : nullptr);
  // The answers, in owner order, to their positions.
  kernels::for_each_index(queue, 0, n, detail::PutAt<T>{out.local_data(), answers.as<const T>(), order.positions.as<const index_t>()});
  clock.end_phase(times ? &times->fixup : nullptr);
  clock.finish();
  return out;
}

template <class T, class I>
void scatter(const DistArray<T>& values, const DistArray<I>& indices, DistArray<T>& out, PhaseTimes* times = nullptr) {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "scatter: indices must be of an integer type");
  detail::require_same_layout(values.context(), values.partition(), indices.context(), indices.partition(), "scatter");
  const Context& ctx = values.context();
  if (ctx.comm().get() != out.context().comm().get() || ctx.backend() != out.context().backend())
    throw UsageError("scatter: values and out live on different contexts");
  const kernels::Queue& queue = ctx.queue();
  const index_t n = values.local_size();
  const index_t size = out.global_size();
  PhaseClock clock(queue, times != nullptr);
  if (ctx.size() == 1) {
    const index_t bad = detail::result_on_host<index_t>(ctx, [&](index_t* count) {
      kernels::transform_reduce_index(queue, 0, n, detail::OutOfRange<I>{indices.local_data(), size}, plus{}, index_t(0),
                                      count);
    });
    if (bad > 0) throw UsageError("scatter: an index on rank 0 lies outside [0, " + std::to_string(size) + ")");
    kernels::for_each_index(queue, 0, n, detail::PutGlobal<T, I>{out.local_data(), values.local_data(), indices.local_data(), 0});
    clock.end_phase(times ? &times->local : nullptr);
    clock.finish();
    return;
  }
  // Plan: indices and values in owner order, and the counts.
  detail::ByOwner order(queue, n);
  detail::order_by_owner(ctx, indices.local_data(), n, out.partition(), order);
  const int parts = ctx.size();
  const std::vector<index_t> coming = detail::exchange_counts(ctx, order.counts, "scatter", size);
  index_t received = 0;
  for (index_t c : coming) received += c;
  kernels::ScratchBuffer send_indices(queue, static_cast<std::size_t>(n) * sizeof(index_t));
  kernels::ScratchBuffer send_values(queue, static_cast<std::size_t>(n) * sizeof(T));
  kernels::ScratchBuffer recv_indices(queue, static_cast<std::size_t>(received) * sizeof(index_t));
  kernels::ScratchBuffer recv_values(queue, static_cast<std::size_t>(received) * sizeof(T));
  kernels::transform_index(queue, 0, n, send_indices.as<index_t>(),
                           detail::IndexOrdered<I>{indices.local_data(), order.positions.as<const index_t>()});
  kernels::transform_index(queue, 0, n, send_values.as<T>(),
                           detail::TakeOrdered<T, I>{values.local_data(), order.positions.as<const index_t>()});
  clock.end_phase(times ? &times->local : nullptr);
  // One exchange: each owner's indices and values, two messages per peer.
  std::vector<DeviceComm::Message> sends, recvs;
  std::size_t send_at = 0, recv_at = 0;
  for (int p = 0; p < parts; ++p) {
    const index_t out_count = order.counts[static_cast<std::size_t>(p)];
    const index_t in_count = coming[static_cast<std::size_t>(p)];
    if (out_count > 0) {
      sends.push_back({p, send_indices.as<char>() + send_at * sizeof(index_t), static_cast<std::size_t>(out_count) * sizeof(index_t)});
      sends.push_back({p, send_values.as<char>() + send_at * sizeof(T), static_cast<std::size_t>(out_count) * sizeof(T)});
    }
    if (in_count > 0) {
      recvs.push_back({p, recv_indices.as<char>() + recv_at * sizeof(index_t), static_cast<std::size_t>(in_count) * sizeof(index_t)});
      recvs.push_back({p, recv_values.as<char>() + recv_at * sizeof(T), static_cast<std::size_t>(in_count) * sizeof(T)});
    }
    send_at += static_cast<std::size_t>(out_count);
    recv_at += static_cast<std::size_t>(in_count);
  }
  DeviceComm(ctx).alltoallv(sends, recvs);
  clock.end_phase(times ? &times->communication : nullptr);
  // Each value into this rank's block.
  kernels::for_each_index(queue, 0, received,
                          detail::PutGlobal<T, index_t>{out.local_data(), recv_values.as<const T>(),
                                                        recv_indices.as<const index_t>(), out.global_offset()});
  clock.end_phase(times ? &times->fixup : nullptr);
  clock.finish();
}

}  // namespace tessera
