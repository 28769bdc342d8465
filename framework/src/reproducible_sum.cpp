// reproducible_sum: the correctly rounded sum of all elements, bitwise the same for any number of
// ranks, either backend and every run, because nothing is rounded until the very end:
//   local   every element deposited exactly into a superaccumulator (kernels/exact_sum.hpp)
//   global  the normalized accumulators summed limb by limb as int64 (exact: normalized limbs are
//           below 2^32, so 2^31 ranks cannot overflow) with one MPI_Allreduce of integers
//           (reproducible_sum_plan)
//   fix-up  one rounding of the exact value to T, on the host, the same on every rank
// (three_phases: skeleton.hpp; its NVTX ranges and PhaseTimes)
// Integer addition is associative, so neither the partition nor MPI's reduction order matters.
#include <cstdint>

#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/kernels/exact_sum.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {

template <class T>
T reproducible_sum(const DistArray<T>& array, PhaseTimes* times) {
  using Accumulator = kernels::ExactAccumulator<T>;
  const Context& ctx = array.context();
  return detail::three_phases(
      {"reproducible_sum", array.global_size()}, ctx, times,
      // Local: the block's exact partial, normalized by the kernel (to the host: see pinned_result.hpp).
      [&] {
        Accumulator partial = detail::result_on_host<Accumulator>(ctx, [&](Accumulator* out) {
          kernels::exact_sum_partial(ctx.queue(), array.local_data(), array.local_size(), out);
        });
        kernels::exact_sum_normalize(partial);  // already normalized; cheap insurance for the headroom argument
        return partial;
      },
      // Global: limb-wise integer sum; the special-value counts and element counts add the same way.
      [&](Accumulator total) {
        ctx.comm().allreduce(reinterpret_cast<std::int64_t*>(&total), Accumulator::kFields, ReduceOp::sum);
        return total;
      },
      // Fix-up: the one rounding.
      [](const Accumulator& total) { return kernels::exact_sum_round(total); });
}

template float reproducible_sum<float>(const DistArray<float>&, PhaseTimes*);
template double reproducible_sum<double>(const DistArray<double>&, PhaseTimes*);

}  // namespace tessera
