// Scans of a distributed array, with the input's partition:
//
//   local    this block's total (op over the block; an empty block has none)
//   global   every rank's total (one MPI_Allgather), folded in rank order after init: the carry-in
//            of this rank = init op total[0] op ... op total[rank-1]
//   fix-up   one local scan pass seeded with the carry-in
//
//   inclusive_scan(a, op, init)    out[i] = init op a[0] op ... op a[i]
//   exclusive_scan(a, op, init)    out[i] = init op a[0] op ... op a[i-1]     (out[0] = init)
//   scan(a, out, kind, op, init)   into `out` (same context and partition; may be `a`)
//   inclusive_scan(a), exclusive_scan(a), scan(a, kind)   the prefix sum (precompiled)
//
// op: associative; it need not commute (every combination keeps index order) and needs no identity.
// The global fold runs on the host, so op must be callable there. Device traffic 3N: the prefix sum
// of int32, int64, float and double takes the two-pass scan (its first pass leaves segment prefixes,
// so the scan pass needs no look-back); any other op or type a reduce of the block, then the
// single-pass scan seeded with the carry-in.
#pragma once

#include <optional>
#include <type_traits>

#include "tessera/framework/algorithms/skeleton.hpp"
#include "tessera/framework/detail/result_on_host.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/reduce.hpp"
#include "tessera/kernels/scan.hpp"

namespace tessera {

namespace detail {

// A value that may be absent, with the combination that skips absent sides: it turns any
// associative op into one with an identity (the absent value), for the block total of a scan.
template <class T>
struct Maybe {
  T value{};
  bool has = false;
};

template <class T>
struct ToMaybe {
  TESSERA_HOST_DEVICE Maybe<T> operator()(const T& x) const { return Maybe<T>{x, true}; }
};

template <class T, class Op>
struct MaybeOp {
  static constexpr bool commutative = is_commutative_v<Op>;
  using wrapped_functor = Op;
  Op op;
  TESSERA_HOST_DEVICE Maybe<T> operator()(const Maybe<T>& a, const Maybe<T>& b) const {
    if (!a.has) return b;
    if (!b.has) return a;
    return Maybe<T>{op(a.value, b.value), true};
  }
};

// The local scan in two steps, the block total first and the seeded scan after: any op (a reduce
// of the block, then the single-pass scan).
template <class T, class Op>
class LocalScan {
 public:
  LocalScan(const Context& ctx, const T* in, index_t n, Op op) : ctx_(ctx), in_(in), n_(n), op_(op) {}
  std::optional<T> total() {
    if (n_ == 0) return std::nullopt;
    const Maybe<T> total = result_on_host<Maybe<T>>(ctx_, [&](Maybe<T>* out) {
      kernels::transform_reduce(ctx_.queue(), in_, n_, ToMaybe<T>{}, MaybeOp<T, Op>{op_}, Maybe<T>{}, out);
    });
    return total.value;
  }
  void scan(T* out, ScanKind kind, const T& carry_in) {
    kernels::scan(ctx_.queue(), in_, out, n_, kind, op_, carry_in);
  }

 private:
  const Context& ctx_;
  const T* in_;
  index_t n_;
  Op op_;
};

// The prefix sum of the precompiled types: the two-pass scan (kernels/scan.hpp).
template <class T>
  requires(std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> ||
           std::is_same_v<T, double>)
class LocalScan<T, plus> {
 public:
  LocalScan(const Context& ctx, const T* in, index_t n, plus)
      : ctx_(ctx),
        in_(in),
        n_(n),
        segment_prefix_(ctx.queue(),
                        static_cast<std::size_t>(kernels::scan_segment_count<T>(ctx.queue(), n)) * sizeof(T)) {}
  std::optional<T> total() {
    if (n_ == 0) return std::nullopt;
    return result_on_host<T>(ctx_, [&](T* total) {
      kernels::scan_totals(ctx_.queue(), in_, n_, segment_prefix_.as<T>(), total);
    });
  }
  void scan(T* out, ScanKind kind, const T& carry_in) {
    kernels::scan_from_totals(ctx_.queue(), in_, out, n_, kind, carry_in, segment_prefix_.as<const T>());
  }

 private:
  const Context& ctx_;
  const T* in_;
  index_t n_;
  kernels::ScratchBuffer segment_prefix_;
};

}  // namespace detail

// The collectives of one scan call (collective_plan.hpp): one allgather of every rank's block total.
template <class T>
CollectivePlan scan_plan() {
  return {{Collective::allgather, static_cast<double>(sizeof(detail::RankRecord<T>))}};
}

template <class T, class Op>
void scan(const DistArray<T>& array, DistArray<T>& out, ScanKind kind, Op op, T init, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_r_with<T, Op, const T&, const T&>,
                "scan: op must take two elements (const T&, const T&) and return one");
  const Context& ctx = array.context();
  detail::require_same_layout(ctx, array.partition(), out.context(), out.partition(), "scan");
  detail::require_host_callable<Op>();
  Stopwatch setup;
  detail::LocalScan<T, Op> local_scan(ctx, array.local_data(), array.local_size(), op);
  if (times) times->host += setup.seconds();
  detail::three_phases(
      ctx, times,
      // Local: this block's total (none for an empty block).
      [&] { return detail::try_local([&] { return local_scan.total(); }); },
      // Global: every rank's total; the carry-in folds init and the totals before this rank.
      [&](detail::LocalOutcome<std::optional<T>>&& total) {
        const std::vector<std::optional<T>> totals = detail::gather_outcomes<T>(ctx.comm(), total, "scan");
        T carry_in = init;
        for (int r = 0; r < ctx.rank(); ++r)
          if (totals[static_cast<std::size_t>(r)]) carry_in = op(carry_in, *totals[static_cast<std::size_t>(r)]);
        return carry_in;
      },
      // Fix-up: the one scan pass, seeded.
      [&](T carry_in) { local_scan.scan(out.local_data(), kind, carry_in); });
}

template <class T, class Op>
DistArray<T> scan(const DistArray<T>& array, ScanKind kind, Op op, T init, PhaseTimes* times = nullptr) {
  Stopwatch allocation;
  DistArray<T> out(array.context(), array.partition());
  if (times) times->host += allocation.seconds();
  tessera::scan(array, out, kind, op, init, times);
  return out;
}

template <class T, class Op>
DistArray<T> inclusive_scan(const DistArray<T>& array, Op op, T init, PhaseTimes* times = nullptr) {
  return tessera::scan(array, ScanKind::inclusive, op, init, times);
}

template <class T, class Op>
DistArray<T> exclusive_scan(const DistArray<T>& array, Op op, T init, PhaseTimes* times = nullptr) {
  return tessera::scan(array, ScanKind::exclusive, op, init, times);
}

// inclusive_scan(a, op): out[i] = a[0] op ... op a[i], with no init (as std::inclusive_scan without
// one). A rank with nothing before it (the first non-empty one) seeds its scan with its own first
// element (one element to the host); the others with the fold of the ranks before, as above.
// (An exclusive scan needs an init: out[0] has nothing before it.)
template <class T, class Op>
  requires detail::is_functor_argument<Op>
DistArray<T> inclusive_scan(const DistArray<T>& array, Op op, PhaseTimes* times = nullptr) {
  static_assert(kernels::detail::invocable_r_with<T, Op, const T&, const T&>,
                "inclusive_scan: op must take two elements (const T&, const T&) and return one");
  detail::require_host_callable<Op>();
  if constexpr (std::is_same_v<Op, plus> && std::is_arithmetic_v<T>) {
    return tessera::inclusive_scan(array, plus{}, T(0), times);  // 0 + a[0] is a[0]
  } else {
    const Context& ctx = array.context();
    const index_t n = array.local_size();
    Stopwatch setup;
    DistArray<T> out(ctx, array.partition());
    detail::LocalScan<T, Op> local_scan(ctx, array.local_data(), n, op);
    if (times) times->host += setup.seconds();
    detail::three_phases(
        ctx, times,
        [&] { return detail::try_local([&] { return local_scan.total(); }); },
        [&](detail::LocalOutcome<std::optional<T>>&& total) {
          const std::vector<std::optional<T>> totals = detail::gather_outcomes<T>(ctx.comm(), total, "inclusive_scan");
          std::optional<T> carry_in;
          for (int r = 0; r < ctx.rank(); ++r) {
            const auto& t = totals[static_cast<std::size_t>(r)];
            if (t) carry_in = carry_in ? op(*carry_in, *t) : *t;
          }
          return carry_in;
        },
        [&](std::optional<T> carry_in) {
          if (carry_in) {
            local_scan.scan(out.local_data(), ScanKind::inclusive, *carry_in);
          } else if (n > 0) {
            T first;
            kernels::copy_to_host(ctx.queue(), &first, array.local_data(), sizeof(T));
            kernels::copy_within_async(ctx.queue(), out.local_data(), array.local_data(), sizeof(T));
            kernels::scan(ctx.queue(), array.local_data() + 1, out.local_data() + 1, n - 1, ScanKind::inclusive, op, first);
          }
        });
    return out;
  }
}

// The prefix sum (precompiled for int32, int64, float and double; the same path as
// scan(array, kind, plus{}, T(0))).
namespace detail {
template <class T>
DistArray<T> prefix_sum(const DistArray<T>& array, ScanKind kind, PhaseTimes* times);
template <class T>
void prefix_sum(const DistArray<T>& array, DistArray<T>& out, ScanKind kind, PhaseTimes* times);
template <class T>
constexpr void require_precompiled_prefix_sum() {
  static_assert(kernels::detail::is_precompiled_type<T>,
                "the prefix sum scan(array, kind) is precompiled for int32, int64, float and double elements only: "
                "for another element type pass the operation and init, scan(array, kind, tessera::plus{}, init)");
}
}  // namespace detail

template <class T>
DistArray<T> scan(const DistArray<T>& array, ScanKind kind, PhaseTimes* times = nullptr) {
  detail::require_precompiled_prefix_sum<T>();
  return detail::prefix_sum(array, kind, times);
}
// The same into `out`, an array with the input's partition on the same context (no allocation:
// for repeated scans, and benchmarks that time the scan rather than the allocator). In place allowed.
template <class T>
void scan(const DistArray<T>& array, DistArray<T>& out, ScanKind kind, PhaseTimes* times = nullptr) {
  detail::require_precompiled_prefix_sum<T>();
  detail::prefix_sum(array, out, kind, times);
}
template <class T>
DistArray<T> inclusive_scan(const DistArray<T>& array, PhaseTimes* times = nullptr) {
  return tessera::scan(array, ScanKind::inclusive, times);
}
template <class T>
DistArray<T> exclusive_scan(const DistArray<T>& array, PhaseTimes* times = nullptr) {
  return tessera::scan(array, ScanKind::exclusive, times);
}

}  // namespace tessera
