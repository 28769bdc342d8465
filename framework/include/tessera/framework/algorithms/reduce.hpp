// Reductions of a distributed array: local reduce of each block -> one collective -> every rank has
// the result. No fix-up phase.
//
//   transform_reduce(a, f, op, identity)   identity op f(a[0]) op ... op f(a[N-1])   (map-reduce)
//   reduce(a, op, identity)                the same with f the identity
//   reduce(a, ReduceOp)                    the apps' sum / min / max (precompiled)
//
// op: associative, with `identity` as its identity; applied in index order (ranks in rank order,
// blocks in block order) unless it declares itself commutative (functional.hpp), so an op that does
// not commute (2x2 matrix products, composed affine maps) gives the right result. The global phase:
// MPI_Allreduce with the library's MPI operation for plus / minimum / maximum of arithmetic types;
// for any other op, one MPI_Allgather of the ranks' partials folded on every rank in rank order (so
// op must be callable on the host). Every rank returns the same value.
#pragma once

#include <type_traits>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/reduce.hpp"

namespace tessera {

namespace detail {

// True when the global phase can be one MPI_Allreduce: the library's own operations on arithmetic
// types, with nothing of the user's in the local phase that could throw.
template <class F, class Op, class Acc>
inline constexpr bool reduces_with_mpi_op =
    std::is_same_v<F, identity_fn> && kernels::detail::is_reduce_op<Op> && std::is_arithmetic_v<Acc> &&
    !std::is_same_v<Acc, bool> && !std::is_same_v<Acc, char> && !std::is_same_v<Acc, long long> &&
    !std::is_same_v<Acc, unsigned long long>;

// The fold, in rank order, of every rank's partial (from one allgather).
template <class Acc, class Op>
Acc fold_partials(const Communicator& comm, const LocalOutcome<Acc>& partial, Op& op, const Acc& identity,
                  const char* algorithm) {
  require_host_callable<Op>();
  const std::vector<Acc> partials = gather_values(comm, partial, algorithm);
  Acc result = identity;
  for (const Acc& p : partials) result = op(result, p);
  return result;
}

}  // namespace detail

// The collectives of one transform_reduce call (collective_plan.hpp): one allreduce of the result
// where the library's MPI operation applies, else one allgather of every rank's partial.
template <class F, class Op, class Acc>
CollectivePlan transform_reduce_plan() {
  if constexpr (detail::reduces_with_mpi_op<F, Op, Acc>) {
    return {{Collective::allreduce, static_cast<double>(sizeof(Acc))}};
  } else {
    return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<Acc>))}};
  }
}

template <class T, class F, class Op, class Acc>
Acc transform_reduce(const DistArray<T>& array, F f, Op op, Acc identity, PhaseTimes* times = nullptr) {
  const Context& ctx = array.context();
  return detail::three_phases(
      ctx, times,
      // Local: this block's partial, on the host (see result_on_host.hpp).
      [&] {
        return detail::try_local([&] {
          return detail::result_on_host<Acc>(ctx, [&](Acc* out) {
            kernels::transform_reduce(ctx.queue(), array.local_data(), array.local_size(), f, op, identity, out);
          });
        });
      },
      // Global: one collective of one value per rank. Empty blocks contribute the identity.
      [&](detail::LocalOutcome<Acc>&& partial) -> Acc {
        if constexpr (detail::reduces_with_mpi_op<F, Op, Acc>) {
          return ctx.comm().allreduce(detail::value_or_rethrow(std::move(partial)), kernels::detail::reduce_op_of<Op>());
        } else {
          return detail::fold_partials(ctx.comm(), partial, op, identity, "transform_reduce");
        }
      },
      detail::no_fixup);
}

template <class T, class Op>
T reduce(const DistArray<T>& array, Op op, T identity, PhaseTimes* times = nullptr) {
  return tessera::transform_reduce(array, identity_fn{}, op, identity, times);
}

// The identity taken from identity_element<Op, T>() (plus, multiplies, minimum, maximum, ... on
// arithmetic types).
template <class T, class Op>
  requires has_identity_element<Op, T>::value
T reduce(const DistArray<T>& array, Op op, PhaseTimes* times = nullptr) {
  return tessera::transform_reduce(array, identity_fn{}, op, identity_element<Op, T>(), times);
}

// The apps' entry point: sum, min or max (precompiled for int32, int64, float and double).
template <class T>
T reduce(const DistArray<T>& array, ReduceOp op, PhaseTimes* times = nullptr);

// Its collectives: plus, minimum and maximum all take the MPI operation (one allreduce).
template <class T>
CollectivePlan reduce_plan(ReduceOp) {
  return transform_reduce_plan<identity_fn, plus, T>();
}

}  // namespace tessera
