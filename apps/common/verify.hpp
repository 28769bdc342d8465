// --verify: checks of each app's result that scale with the run. No rank ever holds more than its
// own blocks (plus, for matmul, vectors of length M, K or N): the checks compare local recomputations
// and a few scalars exchanged between ranks, never a serial copy of the data.
//
// Every function is collective and returns the same Verdict on every rank.
#pragma once

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "app.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/predicate.hpp"

namespace tessera::apps::verify {

// Unit roundoff of T (2^-24 for float, 2^-53 for double).
template <class T>
constexpr long double unit_roundoff() {
  return std::numeric_limits<T>::epsilon() / 2;
}

inline std::string sci(long double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3Le", v);
  return buf;
}

// Sums of long doubles over all ranks, in place (counts of any size).
inline void allreduce_sum(const Context& ctx, long double* data, index_t count) {
  for (index_t done = 0; done < count;) {
    const int piece = static_cast<int>(std::min<index_t>(count - done, kMpiChunkElements));
    TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, piece, MPI_LONG_DOUBLE, MPI_SUM, ctx.comm().get()));
    done += piece;
  }
}

// Sums modulo 2^64 over all ranks, in place.
inline void allreduce_sum(const Context& ctx, std::uint64_t* data, index_t count) {
  for (index_t done = 0; done < count;) {
    const int piece = static_cast<int>(std::min<index_t>(count - done, kMpiChunkElements));
    TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, piece, MPI_UINT64_T, MPI_SUM, ctx.comm().get()));
    done += piece;
  }
}

inline bool all_ranks(const Context& ctx, bool ok) { return ctx.comm().allreduce<std::int32_t>(ok ? 1 : 0, ReduceOp::min) == 1; }

// ---- global_sum --------------------------------------------------------------------------------------

// Against a second, independent reduction of the same data: a long double (floats) or modulo 2^64
// (integers) local sum of this rank's block, combined with MPI_Allreduce; min and max through a
// host loop and MPI. Integer results must match exactly. A plain float sum may differ from the
// exact sum by rounding, at most about u (4 + sqrt(n)) sum|x| for any summation order seen in
// practice; a reproducible sum must be the exact sum correctly rounded: within u |sum| of the long
// double reference (plus that reference's own n 2^-63 sum|x|).
template <class T>
Verdict check_reduce(const DistArray<T>& array, ReduceOp op, T result, bool reproducible) {
  const Context& ctx = array.context();
  const std::vector<T> host = array.local_to_host();
  Verdict v;
  if constexpr (std::is_integral_v<T>) {
    T expected{};
    if (op == ReduceOp::sum) {
      std::uint64_t s = 0;
      for (const T x : host) s += static_cast<std::uint64_t>(static_cast<std::int64_t>(x));
      allreduce_sum(ctx, &s, 1);
      expected = static_cast<T>(static_cast<std::make_unsigned_t<T>>(s));
    } else {
      T local = reduce_identity<T>(op);
      for (const T x : host) local = op == ReduceOp::min ? std::min(local, x) : std::max(local, x);
      expected = ctx.comm().allreduce(local, op);
    }
    v.ok = expected == result;
    v.detail = std::string("exact ") + to_string(op) + " of a second reduction (modulo 2^64 / host loop + MPI) is " +
               std::to_string(expected);
  } else {
    if (op != ReduceOp::sum) {
      int any_nan = 0;
      T local = reduce_identity<T>(op);
      for (const T x : host) {
        if (std::isnan(x)) any_nan = 1;
        else local = op == ReduceOp::min ? std::min(local, x) : std::max(local, x);
      }
      any_nan = ctx.comm().allreduce(any_nan, ReduceOp::max);
      const T expected = ctx.comm().allreduce(local, op);
      v.ok = any_nan ? std::isnan(result) : result == expected;
      v.detail = std::string("exact ") + to_string(op) + " of a host loop + MPI is " +
                 (any_nan ? std::string("nan") : format_number(expected));
    } else {
      long double partial[3] = {0, 0, 0};  // sum, sum of |x|, count of NaN
      bool pos_inf = false, neg_inf = false;
      for (const T x : host) {
        if (std::isnan(x)) partial[2] += 1;
        else if (std::isinf(x)) (x > 0 ? pos_inf : neg_inf) = true;
        else {
          partial[0] += x;
          partial[1] += std::fabs(static_cast<long double>(x));
        }
      }
      allreduce_sum(ctx, partial, 3);
      pos_inf = ctx.comm().allreduce<std::int32_t>(pos_inf, ReduceOp::max);
      neg_inf = ctx.comm().allreduce<std::int32_t>(neg_inf, ReduceOp::max);
      const long double reference = partial[0];
      const long double n = static_cast<long double>(array.global_size());
      if (partial[2] > 0 || (pos_inf && neg_inf)) {
        v.ok = std::isnan(result);
        v.detail = "input holds NaN or both infinities, so the sum must be NaN";
      } else if (pos_inf || neg_inf) {
        v.ok = std::isinf(result) && (result > 0) == pos_inf;
        v.detail = std::string("input holds ") + (pos_inf ? "+inf" : "-inf") + ", so must the sum";
      } else {
        const long double u = unit_roundoff<T>();
        const long double reference_error = n * 0x1p-63L * partial[1];
        const long double tolerance = reproducible ? u * std::fabs(reference) + reference_error + std::numeric_limits<T>::denorm_min()
                                                   : u * (4 + std::sqrt(n)) * partial[1] + reference_error;
        const long double diff = std::fabs(static_cast<long double>(result) - reference);
        v.ok = std::isfinite(result) && diff <= tolerance;
        v.detail = std::string("long double sum + MPI is ") + sci(reference) + ", |difference| " + sci(diff) +
                   " <= tolerance " + sci(tolerance);
        if (!v.ok) v.detail = "|difference| " + sci(diff) + " from the long double sum " + sci(reference) +
                              " exceeds the tolerance " + sci(tolerance);
      }
    }
  }
  v.ok = all_ranks(ctx, v.ok);
  return v;
}

// ---- prefix_sum ----------------------------------------------------------------------------------------

// By differences: out[i] - out[i-1] must equal in[i] (inclusive) or in[i-1] (exclusive) inside each
// block, and across a block border the same with out[i-1] and in[i-1] taken from the nearest
// non-empty rank before this one (one element each, exchanged with an allgather of three scalars).
// The first element of the whole output must be in[0] (inclusive) or 0 (exclusive). Integers wrap
// and must match exactly; floats within 4u(|out[i]| + |out[i-1]| + |in|) + 4u sqrt(n) max|out|,
// which covers the rounding of any blocked or tree-shaped scan and not a lost or doubled element
// of typical size.
template <class T>
Verdict check_scan(const DistArray<T>& in, const DistArray<T>& out, ScanKind kind) {
  const Context& ctx = in.context();
  Verdict v;
  if (!(in.partition() == out.partition())) {
    v.ok = false;
    v.detail = "the output's partition differs from the input's";
    return v;
  }
  const std::vector<T> x = in.local_to_host();
  const std::vector<T> y = out.local_to_host();
  const index_t m = static_cast<index_t>(x.size());
  const std::vector<index_t> counts = ctx.comm().allgather<index_t>(m);
  const std::vector<T> last_in = ctx.comm().allgather<T>(m ? x.back() : T(0));
  const std::vector<T> last_out = ctx.comm().allgather<T>(m ? y.back() : T(0));
  int before = -1;  // nearest non-empty rank before this one
  for (int r = ctx.rank() - 1; r >= 0; --r)
    if (counts[r] > 0) {
      before = r;
      break;
    }

  index_t bad = 0, first_bad = -1;
  long double worst_ratio = 0;
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    for (index_t i = 0; i < m; ++i) {
      const U prev_out = i > 0 ? U(y[i - 1]) : before >= 0 ? U(last_out[before]) : U(0);
      const U addend = kind == ScanKind::inclusive ? U(x[i]) : i > 0 ? U(x[i - 1]) : before >= 0 ? U(last_in[before]) : U(0);
      if (U(U(y[i]) - prev_out) != addend) {
        if (first_bad < 0) first_bad = in.global_offset() + i;
        ++bad;
      }
    }
  } else {
    long double max_out = 0;
    int non_finite = 0;
    for (index_t i = 0; i < m; ++i) {
      if (!std::isfinite(x[i])) non_finite = 1;
      if (std::isfinite(y[i])) max_out = std::max(max_out, std::fabs(static_cast<long double>(y[i])));
    }
    non_finite = ctx.comm().allreduce(non_finite, ReduceOp::max);
    max_out = ctx.comm().allreduce(static_cast<double>(max_out), ReduceOp::max);
    const long double u = unit_roundoff<T>();
    const long double spread = 4 * u * std::sqrt(static_cast<long double>(in.global_size())) * max_out;
    for (index_t i = 0; i < m && !non_finite; ++i) {
      const long double prev_out = i > 0 ? y[i - 1] : before >= 0 ? last_out[before] : T(0);
      const long double addend =
          kind == ScanKind::inclusive ? x[i] : i > 0 ? x[i - 1] : before >= 0 ? last_in[before] : T(0);
      const long double diff = std::fabs((static_cast<long double>(y[i]) - prev_out) - addend);
      const long double tolerance =
          4 * u * (std::fabs(static_cast<long double>(y[i])) + std::fabs(prev_out) + std::fabs(addend)) + spread;
      if (!(diff <= tolerance)) {
        if (first_bad < 0) first_bad = in.global_offset() + i;
        ++bad;
      }
      if (tolerance > 0) worst_ratio = std::max(worst_ratio, diff / tolerance);
    }
    if (non_finite) {
      v.detail = "input holds NaN or infinity: differences not checked";
      v.ok = true;
      return v;
    }
    worst_ratio = ctx.comm().allreduce(static_cast<double>(worst_ratio), ReduceOp::max);
  }
  const index_t total_bad = ctx.comm().allreduce(bad, ReduceOp::sum);
  const index_t first = ctx.comm().allreduce(first_bad < 0 ? std::numeric_limits<index_t>::max() : first_bad, ReduceOp::min);
  v.ok = total_bad == 0;
  if (v.ok) {
    v.detail = std::string("all ") + std::to_string(in.global_size()) + " differences out[i] - out[i-1] match the input" +
               (std::is_integral_v<T> ? " exactly" : " (worst " + sci(worst_ratio) + " of the tolerance)");
  } else {
    v.detail = std::to_string(total_bad) + " of " + std::to_string(in.global_size()) +
               " differences out[i] - out[i-1] do not match the input; the first at index " + std::to_string(first);
  }
  return v;
}

// ---- filter ----------------------------------------------------------------------------------------------

// An order-sensitive fingerprint of a sequence: the sum, modulo 2^64, of a hash of each element's
// global position and bits. Two sequences with the same fingerprint and length are, with
// overwhelming probability, the same sequence in the same order.
template <class T>
std::uint64_t element_hash(index_t position, T value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof value);
  return mix64(mix64(static_cast<std::uint64_t>(position) + 0x632BE59BD9B4E019ull) ^ bits);
}

// By count and order: count_if over the input, and a host recount of this rank's block, must both
// give the output's length; every kept element satisfies the predicate; and the output's
// fingerprint (each element hashed with its global position in the output, whatever the output's
// partition, ragged or rebalanced) equals that of the local recomputation placed at each rank's
// global offset (an Exscan of the local counts).
template <class T>
Verdict check_filter(const DistArray<T>& in, const DistArray<T>& out, const Predicate<T>& pred) {
  const Context& ctx = in.context();
  const std::vector<T> x = in.local_to_host();
  const std::vector<T> y = out.local_to_host();
  index_t kept_here = 0;
  std::uint64_t expected_print = 0;
  std::vector<T> kept;
  for (const T value : x)
    if (pred(value)) kept.push_back(value);
  kept_here = static_cast<index_t>(kept.size());
  const index_t offset = ctx.comm().exscan_sum(kept_here);
  for (index_t j = 0; j < kept_here; ++j) expected_print += element_hash(offset + j, kept[j]);
  std::uint64_t actual_print = 0;
  index_t unsatisfied = 0;
  for (std::size_t j = 0; j < y.size(); ++j) {
    actual_print += element_hash(out.global_offset() + static_cast<index_t>(j), y[j]);
    if (!pred(y[j])) ++unsatisfied;
  }
  std::uint64_t prints[2] = {expected_print, actual_print};
  allreduce_sum(ctx, prints, 2);
  const index_t expected_count = ctx.comm().allreduce(kept_here, ReduceOp::sum);
  const index_t counted = count_if(in, pred);
  unsatisfied = ctx.comm().allreduce(unsatisfied, ReduceOp::sum);

  Verdict v;
  if (counted != expected_count || out.global_size() != expected_count) {
    v.ok = false;
    v.detail = "count mismatch: output holds " + std::to_string(out.global_size()) + ", count_if says " +
               std::to_string(counted) + ", the host recount says " + std::to_string(expected_count);
  } else if (unsatisfied != 0) {
    v.ok = false;
    v.detail = std::to_string(unsatisfied) + " kept elements do not satisfy the predicate";
  } else if (prints[0] != prints[1]) {
    v.ok = false;
    v.detail = "the kept elements or their order differ from a per-rank recomputation";
  } else {
    v.ok = true;
    v.detail = std::to_string(expected_count) +
               " kept: count_if and a host recount agree; every kept element satisfies the predicate; "
               "order and values match a per-rank recomputation";
  }
  return v;
}

// ---- matmul ----------------------------------------------------------------------------------------------

// Freivalds' check (1977): for random x, A(Bx) must equal Cx. Three trials; each is three
// distributed matrix-vector products on the ranks' own blocks (partial vectors summed with an
// Allreduce), so the check costs O(MK + KN + MN) work instead of the product's O(MKN). Integers:
// arithmetic modulo 2^64 with x of random 64-bit values, compared modulo 2^bits (the product wraps);
// a wrong C escapes a trial with probability at most 1/2. Floats: long double, within
// u((sqrt(K) + 4)(|A|(|B||x|))_i + 2(|C||x|)_i) per row.
template <class T>
Verdict check_matmul(const DistMatrix<T>& a, const DistMatrix<T>& b, const DistMatrix<T>& c, std::uint64_t seed) {
  const Context& ctx = a.grid().context();
  const index_t m = a.rows(), k = a.cols(), n = b.cols();
  const std::vector<T> ah = a.local_to_host(), bh = b.local_to_host(), ch = c.local_to_host();
  constexpr int kTrials = 3;
  using Acc = std::conditional_t<std::is_integral_v<T>, std::uint64_t, long double>;
  auto widen = [](T value) -> Acc {
    if constexpr (std::is_integral_v<T>) return static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
    else return static_cast<long double>(value);
  };
  // out[row_offset + i] += sum_j block[i][j] * in[col_offset + j] (with |.| when absolute).
  auto block_matvec = [&](const std::vector<T>& block, index_t rows, index_t cols, index_t row_offset, index_t col_offset,
                          const std::vector<Acc>& in, std::vector<Acc>& out, bool absolute) {
    for (index_t i = 0; i < rows; ++i) {
      Acc s = 0;
      for (index_t j = 0; j < cols; ++j) {
        Acc e = widen(block[static_cast<std::size_t>(i * cols + j)]);
        if constexpr (!std::is_integral_v<T>)
          if (absolute) e = std::fabs(e);
        s += e * in[static_cast<std::size_t>(col_offset + j)];
      }
      out[static_cast<std::size_t>(row_offset + i)] += s;
    }
  };
  auto product = [&](const std::vector<T>& block, const DistMatrix<T>& mat, const std::vector<Acc>& in, bool absolute) {
    std::vector<Acc> out(static_cast<std::size_t>(mat.rows()), Acc(0));
    block_matvec(block, mat.local_rows(), mat.local_cols(), mat.row_offset(), mat.col_offset(), in, out, absolute);
    allreduce_sum(ctx, out.data(), static_cast<index_t>(out.size()));
    return out;
  };

  index_t bad_rows = 0;
  long double worst_ratio = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    std::vector<Acc> x(static_cast<std::size_t>(n));
    for (index_t j = 0; j < n; ++j) {
      const std::uint64_t s = seed ^ (0xF1E2D3C4B5A69788ull + static_cast<std::uint64_t>(trial));
      if constexpr (std::is_integral_v<T>) x[static_cast<std::size_t>(j)] = counter_bits(s, static_cast<std::uint64_t>(j));
      else x[static_cast<std::size_t>(j)] = counter_value<double>(s, static_cast<std::uint64_t>(j));
    }
    const std::vector<Acc> bx = product(bh, b, x, false);
    const std::vector<Acc> abx = product(ah, a, bx, false);
    const std::vector<Acc> cx = product(ch, c, x, false);
    if constexpr (std::is_integral_v<T>) {
      const std::uint64_t mask = sizeof(T) == 8 ? ~0ull : (1ull << (8 * sizeof(T))) - 1;
      for (index_t i = 0; i < m; ++i)
        if (((abx[i] ^ cx[i]) & mask) != 0) ++bad_rows;
    } else {
      std::vector<Acc> xa(x.size());
      for (std::size_t j = 0; j < x.size(); ++j) xa[j] = std::fabs(x[j]);
      const std::vector<Acc> w = product(ah, a, product(bh, b, xa, true), true);
      const std::vector<Acc> cw = product(ch, c, xa, true);
      const long double u = unit_roundoff<T>();
      for (index_t i = 0; i < m; ++i) {
        const long double tolerance = u * ((std::sqrt(static_cast<long double>(k)) + 4) * w[i] + 2 * cw[i]);
        const long double diff = std::fabs(abx[i] - cx[i]);
        if (!std::isfinite(w[i])) continue;  // non-finite inputs: nothing to compare against
        if (!(diff <= tolerance)) ++bad_rows;
        if (tolerance > 0) worst_ratio = std::max(worst_ratio, diff / tolerance);
      }
    }
  }
  // Every rank computed the same full vectors; the verdict is already common. Agree anyway, in
  // case a rank's long double differs.
  Verdict v;
  v.ok = all_ranks(ctx, bad_rows == 0);
  if (v.ok) {
    v.detail = "Freivalds, " + std::to_string(kTrials) + " trials: A(Bx) matches Cx" +
               (std::is_integral_v<T> ? std::string(" exactly (mod 2^") + std::to_string(8 * sizeof(T)) + ")"
                                      : " (worst " + sci(worst_ratio) + " of the tolerance)");
  } else {
    v.detail = "Freivalds: A(Bx) differs from Cx in " + std::to_string(bad_rows) + " row checks over " +
               std::to_string(kTrials) + " trials";
  }
  return v;
}

}  // namespace tessera::apps::verify
