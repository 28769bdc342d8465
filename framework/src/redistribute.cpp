// transpose and redistribute of DistMatrix: pack -> one all-to-all -> unpack (redistribute.hpp).
//
// Every rank knows both grids and both partitions, so the plan (which rectangle of which block
// goes to which rank) is arithmetic on the host, the same on every rank, with no counting pass and
// no exchange of sizes. Pieces travel in the orientation and order the receiver stores them: a
// transposed piece is transposed once, while it is packed.
#include "tessera/framework/redistribute.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/copy_2d.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/transpose.hpp"

namespace tessera {

ProcessGrid row_block_grid(const Context& ctx) { return ProcessGrid::create(ctx, ctx.size(), 1); }
ProcessGrid column_block_grid(const Context& ctx) { return ProcessGrid::create(ctx, 1, ctx.size()); }

namespace detail {
namespace {

struct Range {
  index_t begin = 0, end = 0;
};

Range part(const Partition& p, int i) { return {p.offset(i), p.offset(i) + p.local_size(i)}; }

// The rectangle rows x cols of the global matrix, intersected with the block at (block_rows,
// block_cols), in the block's local coordinates (all zero when they do not meet).
BlockRect local_overlap(Range rows, Range cols, Range block_rows, Range block_cols) {
  const index_t r0 = std::max(rows.begin, block_rows.begin), r1 = std::min(rows.end, block_rows.end);
  const index_t c0 = std::max(cols.begin, block_cols.begin), c1 = std::min(cols.end, block_cols.end);
  if (r1 <= r0 || c1 <= c0) return {};
  return {r0 - block_rows.begin, c0 - block_cols.begin, r1 - r0, c1 - c0};
}

}  // namespace

RedistributionPlan plan_redistribution(index_t rows, index_t cols, GridShape from, GridShape to, bool transposed,
                                       int rank) {
  const int ranks = from.rows * from.cols;
  TESSERA_ASSERT(ranks == to.rows * to.cols && rank >= 0 && rank < ranks, "redistribution between grids of other sizes");
  const index_t new_rows = transposed ? cols : rows, new_cols = transposed ? rows : cols;
  const Partition old_rows = Partition::block(rows, from.rows), old_cols = Partition::block(cols, from.cols);
  const Partition new_row_parts = Partition::block(new_rows, to.rows), new_col_parts = Partition::block(new_cols, to.cols);
  // A rank's old block (in A's coordinates) and new block (in the new matrix's coordinates).
  auto old_block = [&](int p) { return std::pair{part(old_rows, p / from.cols), part(old_cols, p % from.cols)}; };
  auto new_block = [&](int p) { return std::pair{part(new_row_parts, p / to.cols), part(new_col_parts, p % to.cols)}; };

  RedistributionPlan plan;
  plan.send.resize(static_cast<std::size_t>(ranks));
  plan.recv.resize(static_cast<std::size_t>(ranks));
  const auto [my_old_rows, my_old_cols] = old_block(rank);
  const auto [my_new_rows, my_new_cols] = new_block(rank);
  plan.old_local_rows = my_old_rows.end - my_old_rows.begin;
  plan.old_local_cols = my_old_cols.end - my_old_cols.begin;
  plan.new_local_rows = my_new_rows.end - my_new_rows.begin;
  plan.new_local_cols = my_new_cols.end - my_new_cols.begin;
  for (int p = 0; p < ranks; ++p) {
    // What p will hold, seen in A: its new rows are A's columns where transposed.
    const auto [their_new_rows, their_new_cols] = new_block(p);
    plan.send[static_cast<std::size_t>(p)] =
        transposed ? local_overlap(their_new_cols, their_new_rows, my_old_rows, my_old_cols)
                   : local_overlap(their_new_rows, their_new_cols, my_old_rows, my_old_cols);
    // What p holds now, seen in the new matrix.
    const auto [their_old_rows, their_old_cols] = old_block(p);
    plan.recv[static_cast<std::size_t>(p)] =
        transposed ? local_overlap(their_old_cols, their_old_rows, my_new_rows, my_new_cols)
                   : local_overlap(their_old_rows, their_old_cols, my_new_rows, my_new_cols);
  }
  return plan;
}

}  // namespace detail

namespace {

// Pieces start on 256-byte boundaries of the exchange buffers, where the vector tiles of the
// transpose kernel can reach them.
constexpr std::size_t kPieceAlignment = 256;

std::size_t align_piece(std::size_t bytes) { return (bytes + kPieceAlignment - 1) / kPieceAlignment * kPieceAlignment; }

std::string grid_text(const ProcessGrid& g) { return std::to_string(g.rows()) + "x" + std::to_string(g.cols()); }

void check_same_ranks(const ProcessGrid& from, const ProcessGrid& to, const char* operation) {
  if (to.context().is_null())
    throw UsageError(std::string(operation) + ": the target process grid was never created (ProcessGrid::create)");
  if (!from.context().comm().congruent(to.context().comm()))
    throw UsageError(std::string(operation) + ": the target grid " + grid_text(to) +
                     " does not span the same ranks, in the same order, as the matrix's grid " + grid_text(from));
}

// Backend memory for the exchange: allocate()'s plain device memory (which CUDA-aware MPI can
// map), freed at scope exit.
class ExchangeBuffer {
 public:
  ExchangeBuffer(const kernels::Queue& queue, std::size_t bytes)
      : queue_(queue), data_(bytes ? kernels::allocate(queue, bytes) : nullptr) {}
  ~ExchangeBuffer() {
    if (data_) kernels::deallocate(queue_, data_);
  }
  ExchangeBuffer(const ExchangeBuffer&) = delete;
  ExchangeBuffer& operator=(const ExchangeBuffer&) = delete;
  unsigned char* data() const { return static_cast<unsigned char*>(data_); }

 private:
  kernels::Queue queue_;
  void* data_;
};

template <class T>
DistMatrix<T> move_matrix(const DistMatrix<T>& a, const ProcessGrid& to, bool transposed, PhaseTimes* times,
                          const char* operation) {
  check_same_ranks(a.grid(), to, operation);
  const Context& ctx = a.grid().context();
  const kernels::Queue& queue = ctx.queue();
  PhaseClock clock(queue, times != nullptr);

  // Host: the plan, the byte counts and offsets of each peer's piece, the buffers.
  const int me = ctx.rank(), ranks = ctx.size();
  const detail::RedistributionPlan plan = detail::plan_redistribution(
      a.rows(), a.cols(), {a.grid().rows(), a.grid().cols()}, {to.rows(), to.cols()}, transposed, me);
  DistMatrix<T> out(to, transposed ? a.cols() : a.rows(), transposed ? a.rows() : a.cols());
  const index_t old_ld = plan.old_local_cols, new_ld = plan.new_local_cols;
  TESSERA_ASSERT(old_ld == a.local_cols() && new_ld == out.local_cols() && plan.old_local_rows == a.local_rows() &&
                     plan.new_local_rows == out.local_rows(),
                 "redistribution plan disagrees with the matrices' partitions");
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::size_t> send_bytes(n, 0), send_offsets(n, 0), recv_bytes(n, 0), recv_offsets(n, 0);
  std::size_t send_total = 0, recv_total = 0;
  // In place: every outgoing piece is one run of the old block in the order it travels (whole rows,
  // or one row), or every incoming piece one run of the new block.
  bool send_in_place = true, recv_in_place = true;
  for (std::size_t p = 0; p < n; ++p) {
    if (static_cast<int>(p) == me) continue;
    const detail::BlockRect& s = plan.send[p];
    if (!s.empty()) {
      send_bytes[p] = static_cast<std::size_t>(s.size()) * sizeof(T);
      send_offsets[p] = send_total;
      send_total = align_piece(send_total + send_bytes[p]);
      send_in_place = send_in_place && (transposed ? s.rows == 1 || (s.cols == 1 && old_ld == 1)
                                                   : s.rows == 1 || s.cols == old_ld);
    }
    const detail::BlockRect& r = plan.recv[p];
    if (!r.empty()) {
      recv_bytes[p] = static_cast<std::size_t>(r.size()) * sizeof(T);
      recv_offsets[p] = recv_total;
      recv_total = align_piece(recv_total + recv_bytes[p]);
      recv_in_place = recv_in_place && (r.rows == 1 || r.cols == new_ld);
    }
  }
  for (std::size_t p = 0; p < n; ++p) {
    if (send_in_place && send_bytes[p])
      send_offsets[p] = static_cast<std::size_t>(plan.send[p].row0 * old_ld + plan.send[p].col0) * sizeof(T);
    if (recv_in_place && recv_bytes[p])
      recv_offsets[p] = static_cast<std::size_t>(plan.recv[p].row0 * new_ld + plan.recv[p].col0) * sizeof(T);
  }
  const ExchangeBuffer send_buffer(queue, send_in_place ? 0 : send_total);
  const ExchangeBuffer recv_buffer(queue, recv_in_place ? 0 : recv_total);
  const DeviceComm device_comm(ctx);
  clock.end_phase(times ? &times->host : nullptr);

  // Pack: what this rank keeps goes straight into its new block; each peer's piece into the buffer.
  const T* old_block = a.local_data();
  T* new_block = out.local_data();
  auto old_at = [&](const detail::BlockRect& r) { return old_block + r.row0 * old_ld + r.col0; };
  auto new_at = [&](const detail::BlockRect& r) { return new_block + r.row0 * new_ld + r.col0; };
  auto move_piece = [&](const detail::BlockRect& from, T* dst, index_t dst_ld) {
    if (transposed) {
      kernels::transpose(queue, old_at(from), from.rows, from.cols, old_ld, dst, dst_ld);
    } else {
      kernels::copy_2d(queue, dst, dst_ld, old_at(from), old_ld, from.rows, from.cols, sizeof(T));
    }
  };
  const auto self = static_cast<std::size_t>(me);
  if (!plan.send[self].empty()) move_piece(plan.send[self], new_at(plan.recv[self]), new_ld);
  if (!send_in_place) {
    for (std::size_t p = 0; p < n; ++p)
      if (send_bytes[p]) {
        const detail::BlockRect& s = plan.send[p];
        move_piece(s, reinterpret_cast<T*>(send_buffer.data() + send_offsets[p]), transposed ? s.rows : s.cols);
      }
  }
  clock.end_phase(times ? &times->local : nullptr);

  // Exchange: the one all-to-all.
  device_comm.alltoallv(send_in_place ? static_cast<const void*>(old_block) : send_buffer.data(), send_bytes,
                        send_offsets, recv_in_place ? static_cast<void*>(new_block) : recv_buffer.data(), recv_bytes,
                        recv_offsets);
  clock.end_phase(times ? &times->communication : nullptr);

  // Unpack: each received piece into its rectangle of the new block.
  if (!recv_in_place) {
    for (std::size_t p = 0; p < n; ++p)
      if (recv_bytes[p]) {
        const detail::BlockRect& r = plan.recv[p];
        kernels::copy_2d(queue, new_at(r), new_ld, recv_buffer.data() + recv_offsets[p], r.cols, r.rows, r.cols,
                         sizeof(T));
      }
  }
  clock.end_phase(times ? &times->fixup : nullptr);
  clock.finish();
  return out;
}

}  // namespace

template <class T>
DistMatrix<T> redistribute(const DistMatrix<T>& a, const ProcessGrid& to, PhaseTimes* times) {
  return move_matrix(a, to, false, times, "redistribute");
}

template <class T>
DistMatrix<T> transpose(const DistMatrix<T>& a, const ProcessGrid& to, PhaseTimes* times) {
  return move_matrix(a, to, true, times, "transpose");
}

template <class T>
CollectivePlan redistribute_plan(const DistMatrix<T>& a, const ProcessGrid& to, bool transposed) {
  const int me = a.grid().context().rank();
  const detail::RedistributionPlan plan = detail::plan_redistribution(
      a.rows(), a.cols(), {a.grid().rows(), a.grid().cols()}, {to.rows(), to.cols()}, transposed, me);
  double sent = 0;
  for (std::size_t p = 0; p < plan.send.size(); ++p)
    if (static_cast<int>(p) != me) sent += static_cast<double>(plan.send[p].size()) * sizeof(T);
  return {{Collective::alltoallv, sent}};
}

#define TESSERA_INSTANTIATE_REDISTRIBUTE(T)                                                      \
  template DistMatrix<T> redistribute<T>(const DistMatrix<T>&, const ProcessGrid&, PhaseTimes*); \
  template DistMatrix<T> transpose<T>(const DistMatrix<T>&, const ProcessGrid&, PhaseTimes*);    \
  template CollectivePlan redistribute_plan<T>(const DistMatrix<T>&, const ProcessGrid&, bool);
TESSERA_INSTANTIATE_REDISTRIBUTE(std::int32_t)
TESSERA_INSTANTIATE_REDISTRIBUTE(std::int64_t)
TESSERA_INSTANTIATE_REDISTRIBUTE(float)
TESSERA_INSTANTIATE_REDISTRIBUTE(double)
#undef TESSERA_INSTANTIATE_REDISTRIBUTE

}  // namespace tessera
