// matmul: SUMMA (van de Geijn and Watts, 1997) on a 2-D process grid.
//
// K is cut into steps: panels of options.panel_width, further cut wherever a panel straddles the
// boundary between two owners (A's column blocks follow the grid's columns, B's row blocks its
// rows, so the two sets of boundaries differ). Each step therefore has one owner of its A panel
// (a process column) and one owner of its B panel (a process row). Per step:
//   global  the A panel's owner broadcasts it along each process row, the B panel's owner along
//           each process column (device path: NCCL, CUDA-aware MPI, staged, or host MPI)
//   local   C_block += A_panel * B_panel with the local GEMM kernel (beta = 1)
// The steps run on the pipelined exchange skeleton (pipelined_exchange_phases, exchange.hpp): each
// step's two broadcasts are its exchange, the owner's copy of its A columns its pack, the product
// its unpack; the broadcasts of step s+1 are posted before the product of step s and travel while
// it runs (two panel buffers alternate). There is no fix-up phase: C is complete after the last
// step. The steps are stream-ordered: the host does not wait for a product before posting the next
// broadcast. The broadcast into a buffer is ordered after the product that last read it by the
// device path itself (NCCL and the staged copies run in the queue's order, CUDA-aware MPI waits for
// the queue before it posts), and a staged broadcast waits for the root's packed panel before it
// copies it to the host.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/framework/algorithms/exchange.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/framework/trace.hpp"
#include "tessera/kernels/copy_2d.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

std::string shape(index_t rows, index_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

struct Step {
  index_t k0, k1;  // global columns of A / rows of B
  int a_owner;     // process column holding A(:, k0:k1)
  int b_owner;     // process row holding B(k0:k1, :)
  index_t width() const { return k1 - k0; }
};

std::vector<Step> summa_steps(index_t k_total, index_t panel_width, const Partition& a_cols, const Partition& b_rows) {
  std::vector<Step> steps;
  for (index_t k = 0; k < k_total;) {
    const int a_owner = a_cols.owner(k);
    const int b_owner = b_rows.owner(k);
    index_t next = std::min(k_total, (k / panel_width + 1) * panel_width);
    next = std::min(next, a_cols.offset(a_owner) + a_cols.local_size(a_owner));
    next = std::min(next, b_rows.offset(b_owner) + b_rows.local_size(b_owner));
    steps.push_back({k, next, a_owner, b_owner});
    k = next;
  }
  return steps;
}

}  // namespace

template <class T>
DistMatrix<T> matmul(const DistMatrix<T>& a, const DistMatrix<T>& b, const MatmulOptions& options, PhaseTimes* times) {
  if (a.cols() != b.rows())
    throw UsageError("matmul: A is " + shape(a.rows(), a.cols()) + " and B is " + shape(b.rows(), b.cols()) +
                     ": the columns of A must equal the rows of B");
  if (options.panel_width < 1)
    throw UsageError("matmul: panel width must be at least 1, got " + std::to_string(options.panel_width));
  const ProcessGrid& grid = a.grid();
  if (!grid.context().comm().congruent(b.grid().context().comm()) || grid.rows() != b.grid().rows() ||
      grid.cols() != b.grid().cols())
    throw UsageError("matmul: A and B live on different process grids (" + std::to_string(grid.rows()) + "x" +
                     std::to_string(grid.cols()) + " and " + std::to_string(b.grid().rows()) + "x" +
                     std::to_string(b.grid().cols()) + ")");

  const kernels::Queue& queue = grid.context().queue();
  DistMatrix<T> c(grid, a.rows(), b.cols());
  c.fill(T(0));
  const index_t m = c.local_rows();  // == a.local_rows(): same process row, same row partition
  const index_t n = c.local_cols();  // == b.local_cols()
  const std::vector<Step> steps = summa_steps(a.cols(), options.panel_width, a.col_partition(), b.row_partition());
  index_t widest = 0;
  for (const Step& s : steps) widest = std::max(widest, s.width());
  // Two panel buffers of each kind, alternating between steps (the pipeline's two steps in flight).
  kernels::ScratchBuffer a_panels(queue, 2 * static_cast<std::size_t>(m * widest) * sizeof(T));
  kernels::ScratchBuffer b_panels(queue, 2 * static_cast<std::size_t>(widest * n) * sizeof(T));
  const bool row_alone = grid.cols() == 1;  // my A blocks are all mine: no packing, no broadcast
  auto a_buffer = [&](std::size_t s) { return a_panels.as<T>() + (s % 2) * static_cast<std::size_t>(m * widest); };
  // B's rows are contiguous in the owner's block: it broadcasts straight from there (only read).
  auto b_panel = [&](std::size_t s) {
    return grid.process_row() == steps[s].b_owner
               ? const_cast<T*>(b.local_data()) + (steps[s].k0 - b.row_offset()) * n
               : b_panels.as<T>() + (s % 2) * static_cast<std::size_t>(widest * n);
  };

  pipelined_exchange_phases(
      {"matmul", a.rows() * b.cols()}, grid.context(), times, steps.size(),
      [&](std::size_t s) {  // plan: the A panel along my process row, the B panel along my column
        const Step& step = steps[s];
        const index_t w = step.width();
        std::vector<Exchange> panels;
        if (!row_alone) {
          Exchange along_row(grid.row(), ExchangePattern::broadcast);
          along_row.broadcast(step.a_owner, a_buffer(s), static_cast<std::size_t>(m * w) * sizeof(T));
          panels.push_back(std::move(along_row));
        }
        Exchange along_column(grid.column(), ExchangePattern::broadcast);
        along_column.broadcast(step.b_owner, b_panel(s), static_cast<std::size_t>(w * n) * sizeof(T));
        panels.push_back(std::move(along_column));
        return panels;
      },
      [&](std::size_t s, std::vector<Exchange>&) {  // pack: the A panel's owner gathers its columns
        const Step& step = steps[s];
        if (!row_alone && grid.process_col() == step.a_owner)
          kernels::copy_2d(queue, a_buffer(s), step.width(), a.local_data() + (step.k0 - a.col_offset()),
                           a.local_cols(), m, step.width(), sizeof(T));
      },
      [&](std::size_t s, std::vector<Exchange>&) {  // unpack: the panel product, accumulated into C
        const Step& step = steps[s];
        const T* a_panel = row_alone ? a.local_data() + (step.k0 - a.col_offset()) : a_buffer(s);
        const index_t lda = row_alone ? a.local_cols() : step.width();
        kernels::gemm(queue, options.engine, m, n, step.width(), T(1), a_panel, lda, b_panel(s), n, T(1),
                      c.local_data(), n);
      });
  return c;
}

template <class T>
CollectivePlan matmul_plan(const DistMatrix<T>& a, const DistMatrix<T>& b, const MatmulOptions& options) {
  CollectivePlan plan;
  if (options.panel_width < 1) return plan;
  const double element = sizeof(T);
  for (const Step& step : summa_steps(a.cols(), options.panel_width, a.col_partition(), b.row_partition())) {
    const double w = static_cast<double>(step.width());
    if (a.grid().cols() > 1) plan.push_back({Collective::bcast, static_cast<double>(a.local_rows()) * w * element});
    plan.push_back({Collective::bcast, w * static_cast<double>(b.local_cols()) * element});
  }
  return plan;
}

#define TESSERA_INSTANTIATE_MATMUL(T)                                                                     \
  template CollectivePlan matmul_plan<T>(const DistMatrix<T>&, const DistMatrix<T>&, const MatmulOptions&); \
  template DistMatrix<T> matmul<T>(const DistMatrix<T>&, const DistMatrix<T>&, const MatmulOptions&, PhaseTimes*);
TESSERA_FOR_EACH_GEMM_TYPE(TESSERA_INSTANTIATE_MATMUL)
#undef TESSERA_INSTANTIATE_MATMUL

}  // namespace tessera
