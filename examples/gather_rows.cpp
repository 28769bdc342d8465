// A data-moving algorithm of one's own, on the exchange skeleton, from the public headers alone:
// B = A[idx, :], the rows of a distributed matrix A gathered by a distributed index array idx (as
// numpy's A[idx] or PETSc's VecScatter would), B in row blocks beside idx's blocks.
//
//   mpiexec -n 3 ./gather_rows [ROWS COLS K]
//
// Two exchanges, each plan -> pack -> exchange -> unpack (tessera::exchange_phases):
//   requests  each rank tells the owner of every row it needs which rows those are: one all-to-all
//             of the counts (host), then one exchange of the row numbers
//   rows      each owner packs the rows asked of it, one exchange moves them, each rank puts them in
//             the order its indices ask for
// Any element type moves the same way (the rows travel as bytes); duplicates and any order of idx
// are fine.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tessera/framework/algorithms/exchange.hpp"
#include "tessera/framework/framework.hpp"
#include "tessera/framework/redistribute.hpp"
#include "tessera/kernels/memory.hpp"

namespace {

using tessera::index_t;

template <class T>
tessera::DistMatrix<T> gather_rows(const tessera::DistMatrix<T>& a, const tessera::DistArray<std::int64_t>& idx,
                                   const tessera::ProcessGrid& rows_grid, tessera::PhaseTimes* times = nullptr) {
  const tessera::Context& ctx = idx.context();
  const tessera::kernels::Queue& queue = ctx.queue();
  const int ranks = ctx.size();
  if (a.grid().cols() != 1) throw tessera::UsageError("gather_rows: A must be in row blocks (a P x 1 grid)");
  const index_t cols = a.cols();
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * sizeof(T);
  tessera::DistMatrix<T> b(rows_grid, idx.global_size(), cols);  // row blocks of idx's size: idx's partition

  // Which rows this rank wants, grouped by owner (in the order of the indices within each owner).
  const std::vector<std::int64_t> wanted = idx.local_to_host();
  std::vector<std::vector<std::int64_t>> asked(static_cast<std::size_t>(ranks));
  std::vector<std::vector<index_t>> to_row(static_cast<std::size_t>(ranks));  // where each lands in B's block
  for (std::size_t j = 0; j < wanted.size(); ++j) {
    if (wanted[j] < 0 || wanted[j] >= a.rows()) throw tessera::UsageError("gather_rows: an index outside A's rows");
    const int owner = a.row_partition().owner(wanted[j]);
    asked[static_cast<std::size_t>(owner)].push_back(wanted[j]);
    to_row[static_cast<std::size_t>(owner)].push_back(static_cast<index_t>(j));
  }
  std::vector<std::int64_t> asked_count(static_cast<std::size_t>(ranks)), asked_of_me(static_cast<std::size_t>(ranks));
  for (int p = 0; p < ranks; ++p) asked_count[static_cast<std::size_t>(p)] = static_cast<std::int64_t>(asked[static_cast<std::size_t>(p)].size());
  ctx.comm().alltoall(asked_count.data(), 1, asked_of_me.data());

  // Requests: the row numbers to their owners.
  std::vector<std::size_t> request_slot(static_cast<std::size_t>(ranks)), incoming_slot(static_cast<std::size_t>(ranks));
  std::vector<std::vector<std::int64_t>> rows_to_send(static_cast<std::size_t>(ranks));
  tessera::exchange_phases(
      ctx, times,
      [&] {
        tessera::Exchange x(ctx, tessera::ExchangePattern::all_to_all);
        for (int p = 0; p < ranks; ++p) {
          const auto q = static_cast<std::size_t>(p);
          request_slot[q] = x.send_packed(p, asked[q].size() * sizeof(std::int64_t));
          incoming_slot[q] = x.receive_packed(p, static_cast<std::size_t>(asked_of_me[q]) * sizeof(std::int64_t));
        }
        return x;
      },
      [&](tessera::Exchange& x) {
        for (std::size_t q = 0; q < asked.size(); ++q)
          if (!asked[q].empty())
            tessera::kernels::copy_from_host(queue, x.send_slot(request_slot[q]), asked[q].data(),
                                             asked[q].size() * sizeof(std::int64_t));
      },
      tessera::no_overlap,
      [&](tessera::Exchange& x) {
        for (std::size_t q = 0; q < rows_to_send.size(); ++q) {
          rows_to_send[q].resize(static_cast<std::size_t>(asked_of_me[q]));
          if (!rows_to_send[q].empty())
            tessera::kernels::copy_to_host(queue, rows_to_send[q].data(), x.received_slot(incoming_slot[q]),
                                           rows_to_send[q].size() * sizeof(std::int64_t));
        }
      });

  // Rows: each owner packs the rows asked of it; each rank puts the rows it gets where its indices say.
  std::vector<std::size_t> out_slot(static_cast<std::size_t>(ranks)), in_slot(static_cast<std::size_t>(ranks));
  const auto* a_block = reinterpret_cast<const unsigned char*>(a.local_data());
  auto* b_block = reinterpret_cast<unsigned char*>(b.local_data());
  tessera::exchange_phases(
      ctx, times,
      [&] {
        tessera::Exchange x(ctx, tessera::ExchangePattern::all_to_all);
        for (int p = 0; p < ranks; ++p) {
          const auto q = static_cast<std::size_t>(p);
          out_slot[q] = x.send_packed(p, rows_to_send[q].size() * row_bytes);
          in_slot[q] = x.receive_packed(p, asked[q].size() * row_bytes);
        }
        return x;
      },
      [&](tessera::Exchange& x) {
        for (std::size_t q = 0; q < rows_to_send.size(); ++q)
          for (std::size_t i = 0; i < rows_to_send[q].size(); ++i)
            tessera::kernels::copy_within_async(
                queue, static_cast<unsigned char*>(x.send_slot(out_slot[q])) + i * row_bytes,
                a_block + static_cast<std::size_t>(rows_to_send[q][i] - a.row_offset()) * row_bytes, row_bytes);
      },
      tessera::no_overlap,
      [&](tessera::Exchange& x) {
        for (std::size_t q = 0; q < to_row.size(); ++q)
          for (std::size_t i = 0; i < to_row[q].size(); ++i)
            tessera::kernels::copy_within_async(queue, b_block + static_cast<std::size_t>(to_row[q][i]) * row_bytes,
                                                static_cast<const unsigned char*>(x.received_slot(in_slot[q])) + i * row_bytes,
                                                row_bytes);
      });
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  const tessera::Context ctx = runtime.start(tessera::BackendChoice::automatic);
  const index_t rows = argc > 3 ? std::atoll(argv[1]) : 1001;
  const index_t cols = argc > 3 ? std::atoll(argv[2]) : 7;
  const index_t k = argc > 3 ? std::atoll(argv[3]) : 2500;
  const tessera::ProcessGrid row_blocks = tessera::row_block_grid(ctx);

  // A(i, j) = 1000 i + j; idx[t] = 7919 t mod rows: every row, many twice, in a scrambled order.
  std::vector<double> whole;
  if (ctx.is_root())
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j) whole.push_back(1000.0 * static_cast<double>(i) + static_cast<double>(j));
  const auto a = tessera::DistMatrix<double>::scatter(row_blocks, rows, cols, whole);
  tessera::DistArray<std::int64_t> idx(ctx, k);
  tessera::generate(idx, [rows] TESSERA_HOST_DEVICE(index_t t) { return static_cast<std::int64_t>((t * 7919) % rows); });

  const tessera::DistMatrix<double> b = gather_rows(a, idx, row_blocks);

  // Check on rank 0 against the serial A[idx].
  const std::vector<double> got = b.gather(0);
  if (ctx.is_root()) {
    index_t wrong = 0;
    double checksum = 0;
    for (index_t t = 0; t < k; ++t)
      for (index_t j = 0; j < cols; ++j) {
        const double want = 1000.0 * static_cast<double>((t * 7919) % rows) + static_cast<double>(j);
        const double value = got[static_cast<std::size_t>(t * cols + j)];
        wrong += value != want;
        checksum += value * static_cast<double>((t + j) % 13);
      }
    std::printf("gather_rows: %lld rows of %lld gathered from %lld on %d rank(s): %s, checksum %.1f\n",
                static_cast<long long>(k), static_cast<long long>(cols), static_cast<long long>(rows), ctx.size(),
                wrong == 0 ? "all right" : "WRONG", checksum);
    if (wrong) return 1;
  }
  return 0;
}
