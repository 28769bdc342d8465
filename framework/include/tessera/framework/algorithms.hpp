// The distributed algorithms. Each is one header in algorithms/, written with the three-phase
// skeleton (algorithms/skeleton.hpp), in this order:
//   local   kernels on this rank's block            -> a per-rank partial (scalar, count, panel)
//   global  MPI / NCCL collectives over the context -> the agreed value (result, offset, panel)
//   fix-up  a second local pass where one is needed -> the output block
// Every call that has a global phase is collective over the array's context; results are identical
// on every rank where a scalar is returned. PhaseTimes, where given, receives this rank's seconds
// per phase. The algorithms take any functor and any trivially copyable element type (docs/API.md);
// the apps' operations are precompiled.
#pragma once

#include <cstdint>

#include "tessera/framework/algorithms/by_key.hpp"
#include "tessera/framework/algorithms/filter.hpp"
#include "tessera/framework/algorithms/gather.hpp"
#include "tessera/framework/algorithms/histogram.hpp"
#include "tessera/framework/algorithms/order.hpp"
#include "tessera/framework/algorithms/rebalance.hpp"
#include "tessera/framework/algorithms/repartition.hpp"
#include "tessera/framework/algorithms/reduce.hpp"
#include "tessera/framework/algorithms/scan.hpp"
#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/algorithms/sort.hpp"
#include "tessera/framework/algorithms/sort_by.hpp"
#include "tessera/framework/algorithms/transform.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/exact_sum.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/gemm.hpp"
#include "tessera/kernels/predicate.hpp"

namespace tessera {

// The correctly rounded sum (round to nearest, ties to even, of the exact sum of all elements), so
// bitwise identical for any number of ranks, backend and run. IEEE special values: any NaN -> NaN;
// +inf and -inf together -> NaN; otherwise an infinity wins; an exact sum beyond the largest finite
// value rounds to the infinity of its sign. The sum of no elements, and of zeros only, is +0 (-0 only
// when every element is -0, as in IEEE addition). T is float or double.
template <class T>
T reproducible_sum(const DistArray<T>& array, PhaseTimes* times = nullptr);

// Its collectives (collective_plan.hpp): one allreduce of the superaccumulator's integer fields.
template <class T>
CollectivePlan reproducible_sum_plan() {
  return {{Collective::allreduce, static_cast<double>(sizeof(kernels::ExactAccumulator<T>))}};
}

}  // namespace tessera
