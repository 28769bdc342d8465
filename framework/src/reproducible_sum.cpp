// reproducible_sum: the correctly rounded sum of all elements, bitwise the same for any number of
// ranks, either backend and every run, because nothing is rounded until the very end:
//   local   every element deposited exactly into a superaccumulator (kernels/exact_sum.hpp)
//   global  the normalized accumulators summed limb by limb as int64 (exact: normalized limbs are
//           below 2^32, so 2^31 ranks cannot overflow) with one MPI_Allreduce of integers
//           (reproducible_sum_plan)
//   fix-up  one rounding of the exact value to T, on the host, the same on every rank
// Integer addition is associative, so neither the partition nor MPI's reduction order matters.
#include <cstdint>

#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/framework/trace.hpp"
#include "tessera/kernels/exact_sum.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {

template <class T>
T reproducible_sum(const DistArray<T>& array, PhaseTimes* times) {
  using Accumulator = kernels::ExactAccumulator<T>;
  const Context& ctx = array.context();
  const trace::Range range({"reproducible_sum", array.global_size()}, ctx);
  PhaseClock clock(ctx.queue(), times != nullptr);

  // Local: the block's exact partial, normalized by the kernel (to the host: see pinned_result.hpp).
  Accumulator partial = detail::result_on_host<Accumulator>(ctx, [&](Accumulator* out) {
    kernels::exact_sum_partial(ctx.queue(), array.local_data(), array.local_size(), out);
  });
  kernels::exact_sum_normalize(partial);  // already normalized; cheap insurance for the headroom argument
  clock.end_phase(times ? &times->local : nullptr);

  // Global: limb-wise integer sum; the special-value counts and element counts add the same way.
  Accumulator total = partial;
  ctx.comm().allreduce(reinterpret_cast<std::int64_t*>(&total), Accumulator::kFields, ReduceOp::sum);
  clock.end_phase(times ? &times->communication : nullptr);

  // Fix-up: the one rounding.
  const T result = kernels::exact_sum_round(total);
  clock.end_phase(times ? &times->fixup : nullptr);
  clock.finish();
  return result;
}

template float reproducible_sum<float>(const DistArray<float>&, PhaseTimes*);
template double reproducible_sum<double>(const DistArray<double>&, PhaseTimes*);

}  // namespace tessera
