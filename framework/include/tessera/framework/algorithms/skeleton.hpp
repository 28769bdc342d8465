// The skeleton every global algorithm that agrees on a value is written with: three phases in
// order, each timed. (Algorithms that move data use the other skeleton, exchange.hpp.)
//
//   local   kernels on this rank's block            -> a per-rank partial (scalar, count, optional)
//   global  MPI collectives over the context        -> the agreed value (result, offset, carry-in)
//   fix-up  a second local pass where one is needed -> the output block
//
//   return detail::three_phases(ctx, times,
//       [&] { return detail::try_local([&] { ... local kernels, result on the host ... }); },
//       [&](detail::LocalOutcome<P>&& partial) { ... collectives ... return agreed; },
//       [&](A&& agreed) { ... fix-up kernels ... return result; });   // or detail::no_fixup
//
// A user's functor may throw on the host (cpu backend). try_local keeps the exception until the
// global phase, whose collective tells every rank: the rank that threw rethrows its own exception,
// the others throw a UsageError naming that rank, and no rank is left waiting in a collective.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera {

// This rank's seconds per phase of one call (PhaseTimes* times = nullptr: not recorded), with one
// meaning in every algorithm, whichever of the two skeletons it is written with (three_phases here,
// exchange_phases in exchange.hpp):
//   local          work on this rank's own data that needs nothing from other ranks: the local
//                  kernels that make a partial; the pack of an exchange and the local work queued
//                  beside it while it travels
//   communication  collectives and exchanges, for as long as the rank waits for them: where local
//                  work overlaps an exchange, only the part of the exchange it did not hide
//   fixup          work that uses what the other ranks sent or agreed on: a scan's carry-in pass, a
//                  filter's scatter, an exchange's unpack
//   host           host-side serial work: set-up, plans, bookkeeping, allocation
// Under cuda each phase lasts until the device work queued in it completes (PhaseClock).
struct PhaseTimes {
  double local = 0;
  double communication = 0;
  double fixup = 0;
  double host = 0;
  double total() const { return local + communication + fixup + host; }
  PhaseTimes& operator+=(const PhaseTimes& o) {
    local += o.local;
    communication += o.communication;
    fixup += o.fixup;
    host += o.host;
    return *this;
  }
};

namespace detail {

// What one rank's local phase produced: a value, or the exception its code threw.
template <class T>
struct LocalOutcome {
  std::optional<T> value;
  std::exception_ptr error;
};

template <class F>
auto try_local(F&& f) -> LocalOutcome<std::invoke_result_t<F&>> {
  LocalOutcome<std::invoke_result_t<F&>> outcome;
  try {
    outcome.value.emplace(f());
  } catch (...) {
    outcome.error = std::current_exception();
  }
  return outcome;
}

// Runs local() -> global(partial) -> fixup(agreed), timing each phase into `times` when given
// (PhaseClock: events under cuda, read once at the end). The host waits for the device only where
// a phase brings a value to it (the local partial, through result_on_host); the fix-up's work stays
// queued in stream order when no times are asked for.
template <class Local, class Global, class Fixup>
decltype(auto) three_phases(const Context& ctx, PhaseTimes* times, Local&& local, Global&& global, Fixup&& fixup) {
  PhaseClock clock(ctx.queue(), times != nullptr);
  auto partial = local();
  clock.end_phase(times ? &times->local : nullptr);
  auto agreed = global(std::move(partial));
  clock.end_phase(times ? &times->communication : nullptr);
  if constexpr (std::is_void_v<decltype(fixup(std::move(agreed)))>) {
    fixup(std::move(agreed));
    clock.end_phase(times ? &times->fixup : nullptr);
    clock.finish();
  } else {
    auto result = fixup(std::move(agreed));
    clock.end_phase(times ? &times->fixup : nullptr);
    clock.finish();
    return result;
  }
}

// For local-only algorithms (transform, for_each, generate): runs f, stream-ordered; timed like
// three_phases when times are asked for.
template <class F>
void local_phase(const Context& ctx, PhaseTimes* times, F&& f) {
  PhaseClock clock(ctx.queue(), times != nullptr);
  f();
  clock.end_phase(times ? &times->local : nullptr);
  clock.finish();
}

// For algorithms without a fix-up phase: hands the agreed value through.
struct NoFixup {
  template <class A>
  std::remove_cvref_t<A> operator()(A&& agreed) const {
    return std::forward<A>(agreed);
  }
};
inline constexpr NoFixup no_fixup{};

// One rank's contribution to an allgather-based global phase.
template <class T>
struct RankRecord {
  T value{};
  std::int32_t has = 0;     // 1 when value holds something (an empty block may have nothing)
  std::int32_t failed = 0;  // 1 when the local phase threw
};

// Rethrows on every rank when some rank's local phase threw (see the top of this file).
void throw_failed_rank(const char* algorithm, int rank);

// Every rank's value (nullopt where a rank has none), in rank order, from one allgather. Throws on
// every rank if any rank's local phase threw.
template <class T>
std::vector<std::optional<T>> gather_outcomes(const Communicator& comm, const LocalOutcome<std::optional<T>>& mine,
                                              const char* algorithm) {
  RankRecord<T> record;
  if (mine.error) {
    record.failed = 1;
  } else if (mine.value && *mine.value) {
    record.value = **mine.value;
    record.has = 1;
  }
  const std::vector<RankRecord<T>> all = comm.allgather(record);
  for (int r = 0; r < comm.size(); ++r) {
    if (all[static_cast<std::size_t>(r)].failed) {
      if (mine.error) std::rethrow_exception(mine.error);
      throw_failed_rank(algorithm, r);
    }
  }
  std::vector<std::optional<T>> values(all.size());
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].has) values[r] = all[r].value;
  return values;
}

// The same for a local phase that always yields a value.
template <class T>
std::vector<T> gather_values(const Communicator& comm, const LocalOutcome<T>& mine, const char* algorithm) {
  LocalOutcome<std::optional<T>> wrapped;
  wrapped.error = mine.error;
  if (mine.value) wrapped.value.emplace(*mine.value);
  const std::vector<std::optional<T>> all = gather_outcomes<T>(comm, wrapped, algorithm);
  std::vector<T> values;
  values.reserve(all.size());
  for (const auto& v : all) values.push_back(v ? *v : T{});
  return values;
}

// The value of a local phase that cannot throw because of user code (only the library's own
// deterministic errors, alike on every rank): rethrown at once.
template <class T>
T value_or_rethrow(LocalOutcome<T>&& outcome) {
  if (outcome.error) std::rethrow_exception(outcome.error);
  return std::move(*outcome.value);
}

// Throws a UsageError (alike on every rank: partitions and communicators are known everywhere) when
// two arrays of one call live on different contexts or have different partitions.
void require_same_layout(const Context& a, const Partition& pa, const Context& b, const Partition& pb,
                         const char* algorithm);

// True for a functor argument, false for the PhaseTimes* that overloads without a functor take in
// the same place (inclusive_scan(a, times) is the prefix sum, inclusive_scan(a, op) a scan by op).
template <class F>
inline constexpr bool is_functor_argument = !std::is_pointer_v<F> && !std::is_null_pointer_v<F>;

// Checks that the global phase may call op on the host (the fold of the ranks' partials).
template <class Op>
constexpr void require_host_callable() {
  static_assert(kernels::detail::host_callable<Op>,
                "this operation combines the ranks' partials on the host: it must be __host__ __device__ "
                "(TESSERA_HOST_DEVICE), not __device__ only");
}

}  // namespace detail
}  // namespace tessera
