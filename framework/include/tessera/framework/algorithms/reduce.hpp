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

namespace detail {
template <class T>
struct is_dist_array : std::false_type {};
template <class T>
struct is_dist_array<DistArray<T>> : std::true_type {};

// Compile-time checks of a map-reduce's functors, with messages that name the mistake.
template <class Op, class Acc>
constexpr void require_reduce_op() {
  static_assert(kernels::detail::invocable_r_with<Acc, Op, const Acc&, const Acc&>,
                "reduce: op must take two accumulators (const Acc&, const Acc&), Acc the identity's type, and "
                "return one");
}
}  // namespace detail

template <class T, class F, class Op, class Acc>
  requires(!detail::is_dist_array<F>::value)
Acc transform_reduce(const DistArray<T>& array, F f, Op op, Acc identity, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<F, const T&>,
                "transform_reduce: f cannot take the array's element type (const T&)");
  static_assert(kernels::detail::result_converts_to<Acc, F, const T&>,
                "transform_reduce: f's result does not convert to the accumulator type (the identity's type)");
  detail::require_reduce_op<Op, Acc>();
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

namespace detail {
// The zipped element f(a[i], b[i]) at local index i, as an accumulator.
template <class A, class B, class F, class Acc>
struct ZipAt {
  using wrapped_functor = F;
  const A* a;
  const B* b;
  F f;
  TESSERA_HOST_DEVICE Acc operator()(index_t i) const { return static_cast<Acc>(f(a[i], b[i])); }
};

// True when a two-array map-reduce's global phase can be one MPI_Allreduce: the library's product
// and a reduction that reduces_with_mpi_op, with nothing of the user's in the local phase.
template <class Combine, class Op, class Acc>
inline constexpr bool zip_reduces_with_mpi_op = std::is_same_v<Combine, multiplies> &&
                                                reduces_with_mpi_op<identity_fn, Op, Acc>;
}  // namespace detail

// The collectives of one transform_reduce(a, b, combine, op, identity) call: one allreduce where
// combine is tessera::multiplies and op the library's plus, minimum or maximum (dot), else one
// allgather of every rank's partial.
template <class Combine, class Op, class Acc>
CollectivePlan zip_reduce_plan() {
  if constexpr (detail::zip_reduces_with_mpi_op<Combine, Op, Acc>) {
    return {{Collective::allreduce, static_cast<double>(sizeof(Acc))}};
  } else {
    return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<Acc>))}};
  }
}

// identity op combine(a[0], b[0]) op ... op combine(a[N-1], b[N-1]): a map-reduce over two arrays of
// one context and partition (a UsageError otherwise; repartition() aligns them). Index order kept.
template <class A, class B, class Combine, class Op, class Acc>
Acc transform_reduce(const DistArray<A>& a, const DistArray<B>& b, Combine combine, Op op, Acc identity,
                     PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_with<Combine, const A&, const B&>,
                "transform_reduce: combine must take one element of each array (const A&, const B&)");
  static_assert(kernels::detail::result_converts_to<Acc, Combine, const A&, const B&>,
                "transform_reduce: combine's result does not convert to the accumulator type (the identity's type)");
  detail::require_reduce_op<Op, Acc>();
  detail::require_same_layout(a.context(), a.partition(), b.context(), b.partition(), "transform_reduce");
  const Context& ctx = a.context();
  return detail::three_phases(
      ctx, times,
      [&] {
        return detail::try_local([&] {
          return detail::result_on_host<Acc>(ctx, [&](Acc* out) {
            kernels::transform_reduce_index(ctx.queue(), 0, a.local_size(),
                                            detail::ZipAt<A, B, Combine, Acc>{a.local_data(), b.local_data(), combine}, op,
                                            identity, out);
          });
        });
      },
      [&](detail::LocalOutcome<Acc>&& partial) -> Acc {
        if constexpr (detail::zip_reduces_with_mpi_op<Combine, Op, Acc>) {
          return ctx.comm().allreduce(detail::value_or_rethrow(std::move(partial)), kernels::detail::reduce_op_of<Op>());
        } else {
          return detail::fold_partials(ctx.comm(), partial, op, identity, "transform_reduce");
        }
      },
      detail::no_fixup);
}

// The sum of a[i] * b[i] (arithmetic T; integers wrap modulo 2^bits, as plus and multiplies).
template <class T>
T dot(const DistArray<T>& a, const DistArray<T>& b, PhaseTimes* times = nullptr) {
  static_assert(std::is_arithmetic_v<T>, "dot: arithmetic element types; transform_reduce(a, b, combine, op, identity) for others");
  return tessera::transform_reduce(a, b, multiplies{}, plus{}, T(0), times);
}

// init + the sum of a[i] * b[i], as std::inner_product with its default operations.
template <class T>
T inner_product(const DistArray<T>& a, const DistArray<T>& b, std::type_identity_t<T> init, PhaseTimes* times = nullptr) {
  return plus{}(init, tessera::dot(a, b, times));
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

namespace detail {
template <class T>
T reduce_precompiled(const DistArray<T>& array, ReduceOp op, PhaseTimes* times);
}  // namespace detail

// The apps' entry point: sum, min or max (precompiled for int32, int64, float and double).
template <class T>
T reduce(const DistArray<T>& array, ReduceOp op, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::is_precompiled_type<T>,
                "reduce(array, ReduceOp) is precompiled for int32, int64, float and double elements only: for "
                "another element type pass the operation, reduce(array, tessera::plus{}, identity)");
  return detail::reduce_precompiled(array, op, times);
}

// Its collectives: plus, minimum and maximum all take the MPI operation (one allreduce).
template <class T>
CollectivePlan reduce_plan(ReduceOp) {
  return transform_reduce_plan<identity_fn, plus, T>();
}

}  // namespace tessera
