// --verify of tessera-stencil, independent of the stencil kernels and the halo exchange: each rank
// recomputes its own cells on the host from its block and the cells of its neighbours' blocks that
// it needs, which it gets with plain MPI messages of its own. No rank holds more than its block and
// a ring (Jacobi) or a window of 2r elements more (convolution). Collective; every rank gets the
// same verdict.
//
//   check_last_step   Jacobi: every cell of u_k against one step of the stencil from u_(k-1),
//                     evaluated on the host in T in the order kernels/stencil.hpp defines (each
//                     product and sum rounded on its own, left to right): bitwise equal, as the
//                     kernels promise on every backend. A cell wrong by any amount fails, after one
//                     iteration or a million.
//   check_convolve    every output against sum_k w_k a_(i+r-k) in long double, within the rounding
//                     any order of the 2r + 1 products and sums may carry:
//                     |out_i - exact_i| <= gamma_(2r+1) sum_k |w_k a_(i+r-k)| (+ the smallest
//                     subnormal, for products that underflow), or, for the FFT path, within its
//                     bound (fft_convolve.hpp: fft::Convolution::error_bound of the largest input).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "app.hpp"
#include "tessera/framework/algorithms/stencil.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/mpi_type.hpp"
#include "verify.hpp"

namespace tessera::apps::verify {

// The owned cells of `block` (local_rows x local_cols of `layout`, row-major) with a ring of one cell
// around them: (local_rows + 2) x (local_cols + 2), row-major, cell (i, j) of the block at
// (i + 1, j + 1). Ring cells inside the global field come from the neighbouring ranks' blocks (one
// message per neighbour, the eight around on the grid); those outside it are boundary(i, j) of
// their global index. Collective over the grid's context.
template <class T, class BoundaryValue>
std::vector<T> with_ring(const Context& grid_ctx, const FieldLayout& layout, const std::vector<T>& block,
                         BoundaryValue&& boundary) {
  const index_t rows = layout.local_rows(), cols = layout.local_cols();
  const index_t width = cols + 2;
  std::vector<T> ring(static_cast<std::size_t>((rows + 2) * width));
  auto at = [&](index_t i, index_t j) -> T& { return ring[static_cast<std::size_t>((i + 1) * width + (j + 1))]; };
  for (index_t i = 0; i < rows; ++i)
    std::copy_n(block.begin() + i * cols, cols, ring.begin() + (i + 1) * width + 1);

  // The strip of this block a neighbour in direction (dr, dc) needs, and the ring cells the neighbour
  // there fills: rows -1, all or rows, and the same for columns.
  struct Strip {
    index_t row0, rows, col0, cols;
  };
  auto facing = [&](int dr, int dc) {  // my cells that face direction (dr, dc)
    return Strip{dr < 0 ? 0 : dr > 0 ? rows - 1 : 0, dr == 0 ? rows : 1, dc < 0 ? 0 : dc > 0 ? cols - 1 : 0,
                 dc == 0 ? cols : 1};
  };
  auto ring_part = [&](int dr, int dc) {  // my ring cells in direction (dr, dc)
    return Strip{dr < 0 ? -1 : dr > 0 ? rows : 0, dr == 0 ? rows : 1, dc < 0 ? -1 : dc > 0 ? cols : 0,
                 dc == 0 ? cols : 1};
  };
  std::vector<std::vector<T>> sent(9), received(9);
  std::vector<MPI_Request> requests;
  const MPI_Comm comm = grid_ctx.comm().get();
  for (int dr = -1; dr <= 1; ++dr)
    for (int dc = -1; dc <= 1; ++dc) {
      const int row = layout.process_row + dr, col = layout.process_col + dc;
      if ((dr == 0 && dc == 0) || row < 0 || row >= layout.grid_rows || col < 0 || col >= layout.grid_cols) continue;
      const int peer = layout.rank_of(row, col);
      const int d = (dr + 1) * 3 + (dc + 1);
      const Strip mine = facing(dr, dc), theirs = ring_part(dr, dc);
      for (index_t i = 0; i < mine.rows; ++i)
        for (index_t j = 0; j < mine.cols; ++j) sent[d].push_back(at(mine.row0 + i, mine.col0 + j));
      received[d].resize(static_cast<std::size_t>(theirs.rows * theirs.cols));
      // The tag is the direction as the sender sees it: the peer sends in direction (-dr, -dc).
      const int recv_tag = (1 - dr) * 3 + (1 - dc);
      requests.emplace_back();
      TESSERA_MPI_CHECK(MPI_Irecv(received[d].data(), static_cast<int>(received[d].size() * sizeof(T)), MPI_BYTE, peer,
                                  recv_tag, comm, &requests.back()));
      requests.emplace_back();
      TESSERA_MPI_CHECK(MPI_Isend(sent[d].data(), static_cast<int>(sent[d].size() * sizeof(T)), MPI_BYTE, peer, d, comm,
                                  &requests.back()));
    }
  TESSERA_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  for (int dr = -1; dr <= 1; ++dr)
    for (int dc = -1; dc <= 1; ++dc) {
      if (dr == 0 && dc == 0) continue;
      const int d = (dr + 1) * 3 + (dc + 1);
      const Strip part = ring_part(dr, dc);
      for (index_t i = 0; i < part.rows; ++i)
        for (index_t j = 0; j < part.cols; ++j) {
          const index_t gi = layout.row_offset() + part.row0 + i, gj = layout.col_offset() + part.col0 + j;
          const bool inside = gi >= 0 && gi < layout.rows && gj >= 0 && gj < layout.cols;
          at(part.row0 + i, part.col0 + j) = inside ? received[d][static_cast<std::size_t>(i * part.cols + j)]
                                                    : static_cast<T>(boundary(gi, gj));
        }
    }
  return ring;
}

// One cell of the stencil, in T, in the order of kernels/stencil.hpp (each product and each sum
// rounded on its own, left to right). `cell(di, dj)` is the input at offset (di, dj).
template <class T, class Cell>
T stencil_cell(const StencilWeights<T>& w, Cell&& cell) {
  volatile T acc = w.centre * cell(0, 0);  // volatile: no contraction into a fused multiply-add
  acc = acc + w.north * cell(-1, 0);
  acc = acc + w.south * cell(1, 0);
  acc = acc + w.west * cell(0, -1);
  acc = acc + w.east * cell(0, 1);
  if (w.shape == StencilShape::nine_point) {
    acc = acc + w.north_west * cell(-1, -1);
    acc = acc + w.north_east * cell(-1, 1);
    acc = acc + w.south_west * cell(1, -1);
    acc = acc + w.south_east * cell(1, 1);
  }
  return acc;
}

// Every cell of u_k (`latest`, the block of `u`) against one stencil step from u_(k-1) (`previous`,
// the same block of the iterate before), the ring around `previous` from the neighbours and from
// `boundary` outside the field. Bitwise (NaN equal to NaN).
template <class T, class BoundaryValue>
Verdict check_last_step(const Field2D<T>& u, const std::vector<T>& latest, const std::vector<T>& previous,
                        const StencilWeights<T>& weights, BoundaryValue&& boundary) {
  const Context& ctx = u.context();
  const FieldLayout& layout = u.plane_layout();
  const std::vector<T> ring = with_ring(ctx, layout, previous, boundary);
  const index_t rows = u.local_rows(), cols = u.local_cols(), width = cols + 2;
  index_t wrong = 0;
  index_t first_i = -1, first_j = -1;
  double got = 0, want = 0;
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) {
      const T expected = stencil_cell(weights, [&](index_t di, index_t dj) {
        return ring[static_cast<std::size_t>((i + 1 + di) * width + (j + 1 + dj))];
      });
      const T actual = latest[static_cast<std::size_t>(i * cols + j)];
      const bool same = std::memcmp(&expected, &actual, sizeof(T)) == 0 || (std::isnan(expected) && std::isnan(actual));
      if (!same && wrong++ == 0) {
        first_i = u.row_offset() + i;
        first_j = u.col_offset() + j;
        got = static_cast<double>(actual);
        want = static_cast<double>(expected);
      }
    }
  const index_t wrong_cells = ctx.comm().allreduce(wrong, ReduceOp::sum);
  Verdict v;
  v.ok = wrong_cells == 0;
  if (v.ok) {
    v.detail = "the last iteration: all " + std::to_string(u.rows() * u.cols()) +
               " cells equal one step of the stencil from the iteration before, recomputed on the host";
    return v;
  }
  // The first wrong cell of the lowest rank that has one.
  const int reporter = ctx.comm().allreduce(wrong > 0 ? ctx.rank() : ctx.size(), ReduceOp::min);
  double record[4] = {static_cast<double>(first_i), static_cast<double>(first_j), got, want};
  ctx.comm().bcast(record, 4, reporter);
  v.detail = "the last iteration: " + std::to_string(wrong_cells) + " cell(s) differ from one step of the stencil from "
             "the iteration before, recomputed on the host; the first, (" + std::to_string(static_cast<index_t>(record[0])) +
             ", " + std::to_string(static_cast<index_t>(record[1])) + "), is " + format_number(record[2]) +
             " where the step gives " + format_number(record[3]);
  return v;
}

// Elements [begin, end) of the global sequence of `a` (block partition or any other), with what a
// boundary gives beyond its ends: zero, or the array again (periodic, |wrap| at most one length).
// Collective: every rank asks for its own range; one MPI_Alltoallv moves them. Empty when a rank's
// messages would pass MPI's int counts (the caller then checks another way).
template <class T>
std::vector<T> global_window(const DistArray<T>& a, const std::vector<T>& block, index_t begin, index_t end,
                             Boundary boundary, bool* fits) {
  const Context& ctx = a.context();
  const Partition& part = a.partition();
  const index_t n = a.global_size();
  const int ranks = ctx.size();
  // The windows of every rank.
  const std::vector<index_t> begins = ctx.comm().allgather<index_t>(begin), ends = ctx.comm().allgather<index_t>(end);
  // The runs of window [b, e) that live in the array: (global start, length, position in the window),
  // with a periodic window mapped into [0, n).
  struct Run {
    index_t start, length, position;
  };
  auto runs_of = [&](index_t b, index_t e) {
    std::vector<Run> runs;
    for (int shift = -1; shift <= 1; ++shift) {  // the window's part left of 0, inside, right of n
      if (shift != 0 && (boundary == Boundary::zero || n == 0)) continue;
      const index_t lo = std::max(b, shift * n), hi = std::min(e, (shift + 1) * n);
      if (lo < hi) runs.push_back({lo - shift * n, hi - lo, lo - b});
    }
    return runs;
  };
  std::vector<long long> send_counts(static_cast<std::size_t>(ranks), 0), recv_counts(static_cast<std::size_t>(ranks), 0);
  std::vector<T> send;
  const index_t mine0 = a.global_offset(), mine1 = mine0 + a.local_size();
  for (int q = 0; q < ranks; ++q) {
    for (const Run& run : runs_of(begins[static_cast<std::size_t>(q)], ends[static_cast<std::size_t>(q)])) {
      const index_t lo = std::max(run.start, mine0), hi = std::min(run.start + run.length, mine1);
      if (lo < hi) {
        send.insert(send.end(), block.begin() + (lo - mine0), block.begin() + (hi - mine0));
        send_counts[static_cast<std::size_t>(q)] += hi - lo;
      }
    }
  }
  // What arrives from each rank, in the order the runs and the ranks' blocks give.
  struct Piece {
    int owner;
    index_t length, position;
  };
  std::vector<Piece> pieces;
  for (const Run& run : runs_of(begin, end)) {
    for (index_t at = run.start; at < run.start + run.length;) {
      const int owner = part.owner(at);
      const index_t stop = std::min(run.start + run.length, part.offset(owner) + part.local_size(owner));
      pieces.push_back({owner, stop - at, run.position + (at - run.start)});
      recv_counts[static_cast<std::size_t>(owner)] += stop - at;
      at = stop;
    }
  }
  long long largest = 0;
  for (int q = 0; q < ranks; ++q)
    largest = std::max({largest, send_counts[static_cast<std::size_t>(q)] * static_cast<long long>(sizeof(T)),
                        recv_counts[static_cast<std::size_t>(q)] * static_cast<long long>(sizeof(T)),
                        static_cast<long long>(send.size() * sizeof(T))});
  *fits = ctx.comm().allreduce<std::int64_t>(largest, ReduceOp::max) <= std::numeric_limits<int>::max();
  if (!*fits) return {};
  std::vector<int> sc(static_cast<std::size_t>(ranks)), sd(static_cast<std::size_t>(ranks)), rc(static_cast<std::size_t>(ranks)),
      rd(static_cast<std::size_t>(ranks));
  long long total_recv = 0, total_send = 0;
  for (int q = 0; q < ranks; ++q) {
    sc[static_cast<std::size_t>(q)] = static_cast<int>(send_counts[static_cast<std::size_t>(q)] * sizeof(T));
    sd[static_cast<std::size_t>(q)] = static_cast<int>(total_send);
    total_send += sc[static_cast<std::size_t>(q)];
    rc[static_cast<std::size_t>(q)] = static_cast<int>(recv_counts[static_cast<std::size_t>(q)] * sizeof(T));
    rd[static_cast<std::size_t>(q)] = static_cast<int>(total_recv);
    total_recv += rc[static_cast<std::size_t>(q)];
  }
  std::vector<T> arrived(static_cast<std::size_t>(total_recv / static_cast<long long>(sizeof(T))));
  TESSERA_MPI_CHECK(MPI_Alltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, arrived.data(), rc.data(), rd.data(),
                                  MPI_BYTE, ctx.comm().get()));
  std::vector<T> window(static_cast<std::size_t>(end - begin), T(0));
  std::vector<long long> taken(static_cast<std::size_t>(ranks), 0);  // elements of each rank's message used
  for (const Piece& p : pieces) {
    const long long from = rd[static_cast<std::size_t>(p.owner)] / static_cast<long long>(sizeof(T)) +
                           taken[static_cast<std::size_t>(p.owner)];
    std::copy_n(arrived.begin() + from, p.length, window.begin() + p.position);
    taken[static_cast<std::size_t>(p.owner)] += p.length;
  }
  return window;
}

// Every output of the convolution against the exact sum (see the top of this file). Where the
// recomputation would pass kMaxConvolveWork multiply-adds on a rank, or a window does not fit MPI's
// counts, the check says it was not made (checked = false).
inline constexpr double kMaxConvolveWork = 1e10;

template <class T>
Verdict check_convolve(const DistArray<T>& a, const DistArray<T>& out, const std::vector<T>& w, Boundary boundary,
                       double fft_bound = 0) {
  const Context& ctx = a.context();
  const auto taps = static_cast<index_t>(w.size());
  const index_t radius = (taps - 1) / 2;
  Verdict v;
  const double work = static_cast<double>(a.local_size()) * static_cast<double>(taps);
  if (ctx.comm().allreduce(work, ReduceOp::max) > kMaxConvolveWork) {
    v.checked = false;
    v.detail = "not checked: recomputing each output would take more than " + sci(kMaxConvolveWork) +
               " multiply-adds on a rank";
    return v;
  }
  const std::vector<T> x = a.local_to_host(), y = out.local_to_host();
  bool fits = true;
  const std::vector<T> window =
      global_window(a, x, a.global_offset() - radius, a.global_offset() + a.local_size() + radius, boundary, &fits);
  if (!fits) {
    v.checked = false;
    v.detail = "not checked: a rank's window of the input passes 2^31 bytes";
    return v;
  }
  const long double u = unit_roundoff<T>();
  const long double gamma = static_cast<long double>(taps) * u / (1 - static_cast<long double>(taps) * u);
  const long double tiny = static_cast<long double>(taps) * std::numeric_limits<T>::denorm_min();
  index_t wrong = 0, first = -1;
  long double worst = 0;  // the largest |out - exact| / bound
  double got = 0, want = 0;
  for (index_t i = 0; i < static_cast<index_t>(y.size()); ++i) {
    long double exact = 0, magnitude = 0;
    for (index_t k = 0; k < taps; ++k) {
      const long double term = static_cast<long double>(w[static_cast<std::size_t>(k)]) *
                               static_cast<long double>(window[static_cast<std::size_t>(i + 2 * radius - k)]);
      exact += term;
      magnitude += std::fabs(term);
    }
    const long double bound = std::max(gamma * magnitude + tiny, static_cast<long double>(fft_bound));
    const long double error = std::fabs(static_cast<long double>(y[static_cast<std::size_t>(i)]) - exact);
    const bool ok = error <= bound || (std::isnan(exact) && std::isnan(static_cast<long double>(y[static_cast<std::size_t>(i)])));
    if (!ok && wrong++ == 0) {
      first = a.global_offset() + i;
      got = static_cast<double>(y[static_cast<std::size_t>(i)]);
      want = static_cast<double>(exact);
    }
    if (ok && !std::isnan(error)) worst = std::max(worst, error / bound);
  }
  const index_t wrong_outputs = ctx.comm().allreduce(wrong, ReduceOp::sum);
  const double worst_all = ctx.comm().allreduce(static_cast<double>(worst), ReduceOp::max);
  v.ok = wrong_outputs == 0;
  if (v.ok) {
    v.detail = fft_bound > 0
                   ? "every output within the FFT path's bound " + sci(fft_bound) + " of its exact sum: at most " +
                         sci(worst_all) + " of it"
                   : "every output within the rounding of its sum of " + std::to_string(taps) +
                         " products: at most " + sci(worst_all) + " of gamma_" + std::to_string(taps) +
                         " sum|w_k a_(i+r-k)|";
    return v;
  }
  const int reporter = ctx.comm().allreduce(wrong > 0 ? ctx.rank() : ctx.size(), ReduceOp::min);
  double record[3] = {static_cast<double>(first), got, want};
  ctx.comm().bcast(record, 3, reporter);
  v.detail = std::to_string(wrong_outputs) + " output(s) beyond the rounding of their sums; the first, out[" +
             std::to_string(static_cast<index_t>(record[0])) + "], is " + format_number(record[1]) + " where the sum is " +
             format_number(record[2]);
  return v;
}

}  // namespace tessera::apps::verify
