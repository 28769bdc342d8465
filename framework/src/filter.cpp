// filter and count_if.
// filter: local select (kept elements written contiguously, and counted) -> Allgather of the
// counts, which gives every rank the ragged partition (each rank's global offset is the exclusive
// scan of the counts, the total their sum) -> fix-up: the kept elements move into the result's
// block. An Allgather rather than Exscan + Allreduce: one collective instead of two, and the
// partition (all counts) is needed on every rank anyway.
#include <cstdint>
#include <utility>
#include <vector>

#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/select.hpp"

namespace tessera {

template <class T>
DistArray<T> filter(const DistArray<T>& array, Predicate<T> pred, PhaseTimes* times) {
  const Context& ctx = array.context();
  PhaseClock clock(ctx.queue());
  const index_t n = array.local_size();
  kernels::ScratchBuffer selected(ctx.queue(), static_cast<std::size_t>(n) * sizeof(T));
  kernels::ScratchBuffer kept_device(ctx.queue(), sizeof(index_t));
  clock.end_phase(times ? &times->host : nullptr);

  // Local: select and count.
  kernels::select(ctx.queue(), array.local_data(), n, pred, selected.as<T>(), kept_device.as<index_t>());
  index_t kept = 0;
  kernels::copy_to_host(ctx.queue(), &kept, kept_device.data(), sizeof(index_t));
  clock.end_phase(times ? &times->local : nullptr);

  // Global: the counts of all ranks -> the ragged partition (offsets and total on every rank).
  const std::vector<index_t> counts = ctx.comm().allgather(kept);
  Partition partition = Partition::from_counts(counts);
  clock.end_phase(times ? &times->communication : nullptr);

  // Fix-up: the kept elements into the result's block.
  DistArray<T> out(ctx, std::move(partition));
  kernels::copy_within(ctx.queue(), out.local_data(), selected.data(), static_cast<std::size_t>(kept) * sizeof(T));
  clock.end_phase(times ? &times->fixup : nullptr);
  return out;
}

// count_if: the same path without the data: local count -> Allreduce of one count.
template <class T>
index_t count_if(const DistArray<T>& array, Predicate<T> pred, PhaseTimes* times) {
  const Context& ctx = array.context();
  PhaseClock clock(ctx.queue());

  // Local: this block's count.
  kernels::ScratchBuffer count_device(ctx.queue(), sizeof(index_t));
  kernels::count_if(ctx.queue(), array.local_data(), array.local_size(), pred, count_device.as<index_t>());
  index_t local_count = 0;
  kernels::copy_to_host(ctx.queue(), &local_count, count_device.data(), sizeof(index_t));
  clock.end_phase(times ? &times->local : nullptr);

  // Global: the total on every rank.
  const index_t total = ctx.comm().allreduce(local_count, ReduceOp::sum);
  clock.end_phase(times ? &times->communication : nullptr);
  return total;
}

#define TESSERA_FILTER_INSTANTIATE(T)                                                  \
  template DistArray<T> filter<T>(const DistArray<T>&, Predicate<T>, PhaseTimes*);     \
  template index_t count_if<T>(const DistArray<T>&, Predicate<T>, PhaseTimes*);

TESSERA_FILTER_INSTANTIATE(std::int32_t)
TESSERA_FILTER_INSTANTIATE(std::int64_t)
TESSERA_FILTER_INSTANTIATE(float)
TESSERA_FILTER_INSTANTIATE(double)

}  // namespace tessera
