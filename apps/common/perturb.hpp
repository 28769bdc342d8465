// TESSERA_TEST_PERTURB: a test-only switch that makes an app's result slightly wrong after it is
// computed, before --verify, the output file and the report see it, so that tests can show that
// --verify catches such a result (exit status 1). Never set it outside tests; an app that finds it
// set says so on stderr. Values (INDEX: a global index into the result, row-major for a matrix or
// field; without one, the element of largest magnitude, the first of equals):
//   ulps:N               global_sum: the result N units in the last place up (N < 0: down)
//   relative:R[@INDEX]   global_sum, prefix_sum, matmul, transpose, stencil, fft: the result (one
//                        element) times 1 + R
//   add:X[@INDEX]        sort, transpose, stencil, fft: one element of the result plus X (rounded to
//                        the element type; X must change it; a complex element's real part)
//   swap[@INDEX]         sort: result elements INDEX and INDEX + 1 exchanged (default the middle
//                        pair), with their indices under --values
//   move[@INDEX]         histogram: one count moved from bin INDEX (default the fullest) to the
//                        next bin (the last bin's to the one before)
//   drop[@INDEX]         filter: kept element INDEX (default the middle one) removed;
//                        prefix_sum: input element INDEX left out of every prefix that holds it
//   value:X              global_sum: the result replaced by X (0, say)
//   negate               global_sum: the result's sign flipped
// A malformed value, or one the app does not take, stops the app before any work (exit status 2,
// one line naming the variable).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/field.hpp"
#include "tessera/framework/field_2d.hpp"

namespace tessera::apps {

struct Perturbation {
  enum class Kind { none, ulps, relative, add, swap, move, drop, value, negate };
  Kind kind = Kind::none;
  long long ulps = 0;
  double amount = 0;  // relative: R; add, value: X
  std::optional<index_t> index;
  std::string spec;
  explicit operator bool() const { return kind != Kind::none; }
};

// Reads TESSERA_TEST_PERTURB for an app that takes `kinds`; prints the stderr note on rank 0.
// A malformed value or another kind is a UsageError.
Perturbation test_perturbation(const App& app, const Context& ctx, std::initializer_list<Perturbation::Kind> kinds);

// The scalar result perturbed (ulps, relative, value, negate).
template <class T>
T perturbed(const Perturbation& p, T value) {
  switch (p.kind) {
    case Perturbation::Kind::ulps: {
      const T toward = p.ulps > 0 ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
      for (long long i = 0; i < (p.ulps > 0 ? p.ulps : -p.ulps); ++i) value = std::nextafter(value, toward);
      return value;
    }
    case Perturbation::Kind::relative: return static_cast<T>(value * (1 + p.amount));
    case Perturbation::Kind::add: return static_cast<T>(value + static_cast<T>(p.amount));
    case Perturbation::Kind::value: return static_cast<T>(p.amount);
    case Perturbation::Kind::negate: return -value;
    default: return value;
  }
}

// The global index that a perturbation of one element of a result of `size` elements means: INDEX
// (checked against the size), or the first element of largest magnitude given each rank's
// (largest |value|, its global index) candidate.
index_t perturbed_index(const Context& ctx, const Perturbation& p, index_t size, double local_largest,
                        index_t local_index);

template <class T>
std::pair<double, index_t> largest_element(const std::vector<T>& block, index_t offset) {
  double largest = -1;
  index_t at = -1;
  for (std::size_t i = 0; i < block.size(); ++i) {
    const double magnitude = std::fabs(static_cast<double>(block[i]));
    if (magnitude > largest) {  // NaN never is
      largest = magnitude;
      at = offset + static_cast<index_t>(i);
    }
  }
  return {largest, at};
}

// The element made wrong must change: a perturbation that leaves it as it was (add:0.5 on an
// integer, relative:1e-9 below the rounding) would let a test pass for the wrong reason. Collective
// over the owner's verdict.
template <class T>
void require_changed(const Context& ctx, const Perturbation& p, bool mine, T before, T after) {
  const bool same = mine && std::memcmp(&before, &after, sizeof(T)) == 0;
  if (ctx.comm().allreduce<std::int32_t>(same ? 1 : 0, ReduceOp::max) != 0)
    throw UsageError("TESSERA_TEST_PERTURB='" + p.spec + "': the element it names does not change (" +
                     value_text(before) + ")");
}

// relative, add: one element of a distributed array changed.
template <class T>
void perturb_element(const Perturbation& p, DistArray<T>& array) {
  std::vector<T> block = array.local_to_host();
  const auto [largest, at] = largest_element(block, array.global_offset());
  const index_t target = perturbed_index(array.context(), p, array.global_size(), largest, at);
  const index_t local = target - array.global_offset();
  const bool mine = local >= 0 && local < array.local_size();
  T before{}, after{};
  if (mine) {
    before = block[static_cast<std::size_t>(local)];
    after = perturbed(p, before);
    block[static_cast<std::size_t>(local)] = after;
    array.local_from_host(block);
  }
  require_changed(array.context(), p, mine, before, after);
}

// swap (sort): result elements INDEX and INDEX + 1 exchanged (default: the middle pair), in `array`
// and in `values` where given; the two may live on different ranks.
template <class T, class V>
void perturb_swap(const Perturbation& p, DistArray<T>& array, DistArray<V>* values) {
  const Context& ctx = array.context();
  const index_t n = array.global_size();
  if (n < 2) throw UsageError("TESSERA_TEST_PERTURB='" + p.spec + "': the result has fewer than two elements");
  const index_t first = p.index ? perturbed_index(ctx, p, n - 1, -1, -1) : n / 2 - 1;
  auto swap_in = [&]<class U>(DistArray<U>& a) {
    std::vector<U> block = a.local_to_host();
    U pair[2] = {};
    for (int k = 0; k < 2; ++k) {
      const index_t local = first + k - a.global_offset();
      const bool mine = local >= 0 && local < a.local_size();
      const int owner = ctx.comm().allreduce(mine ? ctx.rank() : ctx.size(), ReduceOp::min);
      pair[k] = ctx.comm().bcast_value(mine ? block[static_cast<std::size_t>(local)] : U{}, owner);
    }
    for (int k = 0; k < 2; ++k) {
      const index_t local = first + k - a.global_offset();
      if (local >= 0 && local < a.local_size()) block[static_cast<std::size_t>(local)] = pair[1 - k];
    }
    a.local_from_host(block);
  };
  swap_in(array);
  if (values) swap_in(*values);
}

// relative, add: one element of a distributed matrix changed (INDEX row-major).
template <class T>
void perturb_element(const Perturbation& p, DistMatrix<T>& matrix) {
  std::vector<T> block = matrix.local_to_host();
  double largest = -1;
  index_t at = -1;
  for (index_t i = 0; i < matrix.local_rows(); ++i)
    for (index_t j = 0; j < matrix.local_cols(); ++j) {
      const double magnitude = std::fabs(static_cast<double>(block[static_cast<std::size_t>(i * matrix.local_cols() + j)]));
      if (magnitude > largest) {
        largest = magnitude;
        at = (matrix.row_offset() + i) * matrix.cols() + matrix.col_offset() + j;
      }
    }
  const index_t target = perturbed_index(matrix.grid().context(), p, matrix.rows() * matrix.cols(), largest, at);
  const index_t i = target / std::max<index_t>(matrix.cols(), 1) - matrix.row_offset();
  const index_t j = target % std::max<index_t>(matrix.cols(), 1) - matrix.col_offset();
  const bool mine = i >= 0 && i < matrix.local_rows() && j >= 0 && j < matrix.local_cols();
  T before{}, after{};
  if (mine) {
    T& e = block[static_cast<std::size_t>(i * matrix.local_cols() + j)];
    before = e;
    after = e = perturbed(p, e);
    matrix.local_from_host(block);
  }
  require_changed(matrix.grid().context(), p, mine, before, after);
}

// relative, add: one cell of a field changed (INDEX row-major over the whole field).
template <class T>
void perturb_element(const Perturbation& p, Field2D<T>& field) {
  std::vector<T> block = field.local_to_host();
  double largest = -1;
  index_t at = -1;
  for (index_t i = 0; i < field.local_rows(); ++i)
    for (index_t j = 0; j < field.local_cols(); ++j) {
      const double magnitude = std::fabs(static_cast<double>(block[static_cast<std::size_t>(i * field.local_cols() + j)]));
      if (magnitude > largest) {
        largest = magnitude;
        at = (field.row_offset() + i) * field.cols() + field.col_offset() + j;
      }
    }
  const index_t target = perturbed_index(field.context(), p, field.rows() * field.cols(), largest, at);
  const index_t i = target / field.cols() - field.row_offset(), j = target % field.cols() - field.col_offset();
  const bool mine = i >= 0 && i < field.local_rows() && j >= 0 && j < field.local_cols();
  T before{}, after{};
  if (mine) {
    T& e = block[static_cast<std::size_t>(i * field.local_cols() + j)];
    before = e;
    after = e = perturbed(p, e);
    field.local_from_host(block);
  }
  require_changed(field.context(), p, mine, before, after);
}

// relative, add: one cell of a field of any dimension changed (INDEX row-major over the whole field).
// One copy of the block to the host; its cells are row-major over the local extents.
template <class T, int D>
void perturb_element(const Perturbation& p, Field<T, D>& field) {
  std::vector<T> block = field.local_to_host();
  index_t cells = 1;
  for (int a = 0; a < D; ++a) cells *= field.extent(a);
  // The global row-major index of local cell k.
  const auto global_of = [&](index_t k) {
    index_t global = 0, weight = 1;
    for (int a = D - 1; a >= 0; --a) {
      const index_t local = field.local_extent(a);
      global += (field.offset(a) + k % local) * weight;
      k /= local;
      weight *= field.extent(a);
    }
    return global;
  };
  double largest = -1;
  index_t at = -1;
  for (std::size_t k = 0; k < block.size(); ++k)
    if (std::fabs(static_cast<double>(block[k])) > largest) {
      largest = std::fabs(static_cast<double>(block[k]));
      at = global_of(static_cast<index_t>(k));
    }
  const index_t target = perturbed_index(field.context(), p, cells, largest, at);
  index_t local = -1;
  for (index_t k = 0; k < static_cast<index_t>(block.size()) && local < 0; ++k)
    if (global_of(k) == target) local = k;
  const bool mine = local >= 0;
  T before{}, after{};
  if (mine) {
    T& e = block[static_cast<std::size_t>(local)];
    before = e;
    after = e = perturbed(p, e);
    field.local_from_host(block);
  }
  require_changed(field.context(), p, mine, before, after);
}

// move (histogram): one count moved from bin INDEX (default: the fullest, the first of equals) to the
// next bin, the last bin's to the one before. counts: this rank's bins from global bin first_bin
// (all of them on every rank when the histogram is replicated: each rank changes its copy alike).
void perturb_move(const Context& ctx, const Perturbation& p, std::vector<index_t>& counts, index_t first_bin,
                  index_t bins);

// drop (prefix_sum): input element INDEX left out of every prefix that holds it.
template <class T>
void perturb_scan_drop(const Perturbation& p, const DistArray<T>& in, DistArray<T>& out, ScanKind kind) {
  const Context& ctx = in.context();
  if (in.global_size() == 0) throw UsageError("TESSERA_TEST_PERTURB='" + p.spec + "': the input is empty");
  const index_t target = p.index ? perturbed_index(ctx, p, in.global_size(), -1, -1) : in.global_size() / 2;
  const std::vector<T> x = in.local_to_host();
  const index_t local = target - in.global_offset();
  const bool mine = local >= 0 && local < in.local_size();
  const int owner = ctx.comm().allreduce(mine ? ctx.rank() : ctx.size(), ReduceOp::min);
  const T dropped = ctx.comm().bcast_value(mine ? x[static_cast<std::size_t>(local)] : T(0), owner);
  std::vector<T> y = out.local_to_host();
  const index_t from = kind == ScanKind::inclusive ? target : target + 1;
  for (index_t k = 0; k < out.local_size(); ++k)
    if (out.global_offset() + k >= from) y[static_cast<std::size_t>(k)] = static_cast<T>(y[static_cast<std::size_t>(k)] - dropped);
  out.local_from_host(y);
}

// drop (filter): one kept element removed; the result keeps its partition otherwise.
template <class T>
DistArray<T> perturb_filter_drop(const Perturbation& p, DistArray<T> kept) {
  const Context& ctx = kept.context();
  if (kept.global_size() == 0) return kept;
  const index_t target = p.index ? perturbed_index(ctx, p, kept.global_size(), -1, -1) : kept.global_size() / 2;
  std::vector<index_t> counts(static_cast<std::size_t>(ctx.size()));
  for (int r = 0; r < ctx.size(); ++r) counts[static_cast<std::size_t>(r)] = kept.partition().local_size(r);
  const int owner = kept.partition().owner(target);
  counts[static_cast<std::size_t>(owner)] -= 1;
  std::vector<T> block = kept.local_to_host();
  if (ctx.rank() == owner) block.erase(block.begin() + (target - kept.global_offset()));
  DistArray<T> out(ctx, Partition::from_counts(counts));
  out.local_from_host(block);
  return out;
}

}  // namespace tessera::apps
