// Matrices in 2-D blocks over a process grid, and the SUMMA product.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/partition.hpp"

namespace tessera {

// A rows x cols grid of ranks (rank = process_row * cols + process_col, row-major, as a Cartesian
// communicator orders them), with a sub-context along each process row and each process column.
class ProcessGrid {
 public:
  // rows = cols = 0: chosen by MPI_Dims_create; otherwise rows * cols must equal ctx.size()
  // (UsageError naming the grid otherwise). 1 x P and P x 1 are allowed.
  static ProcessGrid create(const Context& ctx, int rows = 0, int cols = 0);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  int process_row() const { return process_row_; }
  int process_col() const { return process_col_; }
  const Context& context() const { return grid_; }   // all ranks of the grid
  const Context& row() const { return row_; }        // my process row, ranked by process column
  const Context& column() const { return column_; }  // my process column, ranked by process row

 private:
  int rows_ = 1, cols_ = 1, process_row_ = 0, process_col_ = 0;
  Context grid_, row_, column_;
};

// A global rows x cols matrix, row-major, cut into grid.rows() x grid.cols() blocks: block rows by
// Partition::block(rows, grid.rows()), block columns by Partition::block(cols, grid.cols()).
// This rank's block lives in backend memory, row-major with leading dimension local_cols().
template <class T>
class DistMatrix {
 public:
  DistMatrix() = default;
  DistMatrix(const ProcessGrid& grid, index_t rows, index_t cols);
  ~DistMatrix();
  DistMatrix(DistMatrix&&) noexcept;
  DistMatrix& operator=(DistMatrix&&) noexcept;
  DistMatrix(const DistMatrix&) = delete;
  DistMatrix& operator=(const DistMatrix&) = delete;

  const ProcessGrid& grid() const { return grid_; }
  index_t rows() const { return rows_; }
  index_t cols() const { return cols_; }
  const Partition& row_partition() const { return row_partition_; }
  const Partition& col_partition() const { return col_partition_; }
  index_t local_rows() const;
  index_t local_cols() const;
  index_t row_offset() const;  // global row of this block's first row
  index_t col_offset() const;
  T* local_data() { return data_; }
  const T* local_data() const { return data_; }

  void fill(T value);
  // Element (i, j) = counter_value<T>(seed, i * cols + j), whatever the grid.
  void generate(std::uint64_t seed);
  std::vector<T> local_to_host() const;
  void local_from_host(const std::vector<T>& block);
  // The whole matrix (row-major) on `root`, empty elsewhere.
  std::vector<T> gather(int root = 0) const;
  // Every rank passes the same row-major global data; each keeps its block.
  static DistMatrix from_replicated(const ProcessGrid& grid, index_t rows, index_t cols, const std::vector<T>& global);

 private:
  void release();
  ProcessGrid grid_;
  index_t rows_ = 0, cols_ = 0;
  Partition row_partition_, col_partition_;
  T* data_ = nullptr;
};

struct MatmulOptions {
  index_t panel_width = 512;              // columns of A / rows of B per SUMMA step
  GemmEngine engine = GemmEngine::tiled;  // the local product: ours, or the vendor library
};

// C = A * B by SUMMA (van de Geijn and Watts 1997) on the grid A and B share: for each panel of K,
// the owners broadcast an A panel along their process row and a B panel along their process column;
// every rank accumulates the panel product. The broadcast of panel k+1 overlaps the product of panel
// k. Any M, N, K; A.cols() must equal B.rows() (UsageError naming both shapes otherwise).
template <class T>
DistMatrix<T> matmul(const DistMatrix<T>& a, const DistMatrix<T>& b, const MatmulOptions& options = {},
                     PhaseTimes* times = nullptr);

// The collectives of that call (collective_plan.hpp), on this rank: per SUMMA step, a broadcast of
// the A panel along the process row (where the grid has more than one column; with one, A's panels
// are already local) and one of the B panel along the process column, each of this rank's panel
// bytes. Steps are panels of options.panel_width, cut again where a panel straddles two owners.
// Pure arithmetic: not collective.
template <class T>
CollectivePlan matmul_plan(const DistMatrix<T>& a, const DistMatrix<T>& b, const MatmulOptions& options = {});

}  // namespace tessera
