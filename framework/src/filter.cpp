// filter and count_if.
// filter: local select (kept elements written contiguously, and counted) -> Allgather of the
// counts, which gives every rank the ragged partition (each rank's global offset is the exclusive
// scan of the counts, the total their sum) -> fix-up: the selected block becomes the result's.
// An Allgather rather than Exscan + Allreduce: one collective instead of two, and the partition
// (all counts) is needed on every rank anyway.
//
// The select writes straight into storage of the input block's size, which the result adopts: no
// copy of the kept elements, which would cost 2 x kept x sizeof(T) bytes of traffic (40% of select
// plus copy when half is kept). Where fewer than a third are kept, the result moves to an
// exact-size block instead (that copy then costs under half of the select's traffic), so that a
// result never holds more than three times its own size (DistArray::local_capacity).
#include <cstdint>
#include <utility>
#include <vector>

#include "pinned_result.hpp"
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
  struct Storage {  // owned here until the result adopts it (or an exception unwinds)
    const kernels::Queue& queue;
    T* data;
    ~Storage() { kernels::deallocate(queue, data); }
  } storage{ctx.queue(), static_cast<T*>(kernels::allocate(ctx.queue(), static_cast<std::size_t>(n) * sizeof(T)))};
  clock.end_phase(times ? &times->host : nullptr);

  // Local: select and count (the count to the host: see pinned_result.hpp). An empty block keeps
  // nothing and launches nothing.
  const index_t kept = n == 0 ? 0 : detail::result_on_host<index_t>(ctx, [&](index_t* out) {
    kernels::select(ctx.queue(), array.local_data(), n, pred, storage.data, out);
  });
  clock.end_phase(times ? &times->local : nullptr);

  // Global: the counts of all ranks -> the ragged partition (offsets and total on every rank).
  const std::vector<index_t> counts = ctx.comm().allgather(kept);
  Partition partition = Partition::from_counts(counts);
  clock.end_phase(times ? &times->communication : nullptr);

  // Fix-up: the result takes the selected block (or an exact-size copy of it, see above).
  DistArray<T> out = DistArray<T>::adopt_local(ctx, std::move(partition), std::exchange(storage.data, nullptr), n);
  if (kept * 3 < n) out.shrink_to_fit();
  clock.end_phase(times ? &times->fixup : nullptr);
  return out;
}

// count_if: the same path without the data: local count -> Allreduce of one count.
template <class T>
index_t count_if(const DistArray<T>& array, Predicate<T> pred, PhaseTimes* times) {
  const Context& ctx = array.context();
  PhaseClock clock(ctx.queue());

  // Local: this block's count (to the host: see pinned_result.hpp).
  const index_t local_count = detail::result_on_host<index_t>(ctx, [&](index_t* out) {
    kernels::count_if(ctx.queue(), array.local_data(), array.local_size(), pred, out);
  });
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
