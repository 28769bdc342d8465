// reduce: local reduce of the block -> MPI_Allreduce of one value. No fix-up phase.
#include <cstdint>

#include "pinned_result.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/timer.hpp"

namespace tessera {

template <class T>
T reduce(const DistArray<T>& array, ReduceOp op, PhaseTimes* times) {
  const Context& ctx = array.context();
  PhaseClock clock(ctx.queue());

  // Local: this block's partial; only the scalar crosses to the host (see pinned_result.hpp).
  const T partial = detail::result_on_host<T>(
      ctx, [&](T* out) { kernels::reduce(ctx.queue(), array.local_data(), array.local_size(), op, out); });
  clock.end_phase(times ? &times->local : nullptr);

  // Global: one value per rank, as plain MPI on the host. Empty blocks contribute the identity.
  const T result = ctx.comm().allreduce(partial, op);
  clock.end_phase(times ? &times->communication : nullptr);
  return result;
}

template std::int32_t reduce<std::int32_t>(const DistArray<std::int32_t>&, ReduceOp, PhaseTimes*);
template std::int64_t reduce<std::int64_t>(const DistArray<std::int64_t>&, ReduceOp, PhaseTimes*);
template float reduce<float>(const DistArray<float>&, ReduceOp, PhaseTimes*);
template double reduce<double>(const DistArray<double>&, ReduceOp, PhaseTimes*);

}  // namespace tessera
