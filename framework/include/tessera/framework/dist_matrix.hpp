// Matrices in 2-D blocks over a process grid, and the SUMMA product.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/kernels/element_traits.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/generate.hpp"

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

namespace detail {

// The storage of a DistMatrix with its element type erased: the layout, and this rank's block of
// elements of element_bytes bytes in backend memory. Everything that only moves elements (the
// block's allocation, host copies, gather and scatter, transpose and redistribute, HDF5) works on
// it, so the library instantiates nothing per element type.
class MatrixStorage {
 public:
  MatrixStorage() = default;
  // UsageError when rows or cols is negative, or the block's bytes do not fit in 64 bits; OutOfMemory
  // (this rank) when it does not fit in memory.
  MatrixStorage(const ProcessGrid& grid, index_t rows, index_t cols, std::size_t element_bytes);
  ~MatrixStorage();
  MatrixStorage(MatrixStorage&&) noexcept;
  MatrixStorage& operator=(MatrixStorage&&) noexcept;
  MatrixStorage(const MatrixStorage&) = delete;
  MatrixStorage& operator=(const MatrixStorage&) = delete;

  const ProcessGrid& grid() const { return grid_; }
  index_t rows() const { return rows_; }
  index_t cols() const { return cols_; }
  std::size_t element_bytes() const { return element_bytes_; }
  const Partition& row_partition() const { return row_partition_; }
  const Partition& col_partition() const { return col_partition_; }
  index_t local_rows() const { return row_partition_.local_size(grid_.process_row()); }
  index_t local_cols() const { return col_partition_.local_size(grid_.process_col()); }
  index_t row_offset() const { return row_partition_.offset(grid_.process_row()); }
  index_t col_offset() const { return col_partition_.offset(grid_.process_col()); }
  std::size_t local_bytes() const {
    return static_cast<std::size_t>(local_rows()) * static_cast<std::size_t>(local_cols()) * element_bytes_;
  }
  void* data() const { return data_; }

  // Every element of the block = the element_bytes bytes at `value` (host memory).
  void fill(const void* value);
  // The block, row-major, to and from host memory of local_bytes().
  void local_to_host(void* host) const;
  void local_from_host(const void* host);
  // The whole matrix (row-major, rows * cols elements) into `all` on root (host memory there,
  // ignored elsewhere). Collective over the grid.
  void gather(void* all, int root) const;
  // Each rank's block from root's whole matrix `all` (host memory there, ignored elsewhere).
  // Collective over the grid.
  void scatter(const void* all, int root);
  // Each rank's block from `global`, the whole matrix, the same on every rank (host memory).
  void from_replicated(const void* global);

 private:
  void release();
  ProcessGrid grid_;
  index_t rows_ = 0, cols_ = 0;
  std::size_t element_bytes_ = 0;
  Partition row_partition_, col_partition_;
  void* data_ = nullptr;
};

}  // namespace detail

// A global rows x cols matrix, row-major, cut into grid.rows() x grid.cols() blocks: block rows by
// Partition::block(rows, grid.rows()), block columns by Partition::block(cols, grid.cols()).
// This rank's block lives in backend memory, row-major with leading dimension local_cols(), and
// starts on a 16-byte boundary. T: any trivially copyable type (numbers, std::complex, a struct of
// fields); the library moves its elements as bytes (detail::MatrixStorage), so nothing is
// instantiated per type. generate() needs one of the generator's numeric types; matmul float,
// double, std::int32_t, std::int64_t, std::complex<float> or std::complex<double>.
template <class T>
class DistMatrix {
  static_assert(std::is_trivially_copyable_v<T>, "DistMatrix: the element type must be trivially copyable");

 public:
  using value_type = T;

  DistMatrix() = default;
  DistMatrix(const ProcessGrid& grid, index_t rows, index_t cols) : storage_(grid, rows, cols, sizeof(T)) {}
  // Takes storage of sizeof(T)-byte elements (what the byte-level algorithms return).
  explicit DistMatrix(detail::MatrixStorage&& storage) : storage_(std::move(storage)) {
    TESSERA_ASSERT(storage_.data() == nullptr || storage_.element_bytes() == sizeof(T),
                   "DistMatrix: storage of another element size");
  }

  const ProcessGrid& grid() const { return storage_.grid(); }
  index_t rows() const { return storage_.rows(); }
  index_t cols() const { return storage_.cols(); }
  const Partition& row_partition() const { return storage_.row_partition(); }
  const Partition& col_partition() const { return storage_.col_partition(); }
  index_t local_rows() const { return storage_.local_rows(); }
  index_t local_cols() const { return storage_.local_cols(); }
  index_t row_offset() const { return storage_.row_offset(); }  // global row of this block's first row
  index_t col_offset() const { return storage_.col_offset(); }
  T* local_data() { return static_cast<T*>(storage_.data()); }
  const T* local_data() const { return static_cast<const T*>(storage_.data()); }
  const detail::MatrixStorage& storage() const { return storage_; }
  detail::MatrixStorage& storage() { return storage_; }

  void fill(const T& value) {
    if constexpr (is_numeric_element_v<T>) {
      kernels::fill(grid().context().queue(), local_data(), local_rows() * local_cols(), value);  // one launch
    } else {
      storage_.fill(&value);
    }
  }
  // Element (i, j) = counter_value<T>(seed, i * cols + j), whatever the grid. T: int8 .. int64,
  // uint8 .. uint64, float, double.
  void generate(std::uint64_t seed) {
    static_assert(is_numeric_element_v<T>, "DistMatrix::generate: the generator makes numbers only");
    const index_t lc = local_cols();
    if (lc == 0) return;
    const kernels::Queue& q = grid().context().queue();
    // Each local row is a contiguous run of the global row-major sequence; where the block spans
    // whole rows (one process column), the whole block is one run: one launch.
    if (lc == cols()) {
      kernels::generate(q, local_data(), local_rows() * lc, seed, row_offset() * cols());
      return;
    }
    for (index_t r = 0; r < local_rows(); ++r)
      kernels::generate(q, local_data() + r * lc, lc, seed, (row_offset() + r) * cols() + col_offset());
  }
  std::vector<T> local_to_host() const {
    std::vector<T> host(static_cast<std::size_t>(local_rows() * local_cols()));
    storage_.local_to_host(host.data());
    return host;
  }
  void local_from_host(const std::vector<T>& block) {
    TESSERA_ASSERT(static_cast<index_t>(block.size()) == local_rows() * local_cols(),
                   "DistMatrix::local_from_host: size differs from the block");
    storage_.local_from_host(block.data());
  }
  // The whole matrix (row-major) on `root`, empty elsewhere. Collective.
  std::vector<T> gather(int root = 0) const {
    std::vector<T> all(grid().context().rank() == root ? static_cast<std::size_t>(rows() * cols()) : 0);
    storage_.gather(all.data(), root);
    return all;
  }
  // The matrix whose whole is `global` (row-major rows x cols) on `root` (ignored elsewhere): each
  // rank receives its block. Collective.
  static DistMatrix scatter(const ProcessGrid& grid, index_t rows, index_t cols, const std::vector<T>& global,
                            int root = 0) {
    DistMatrix m(grid, rows, cols);
    if (grid.context().rank() == root)
      TESSERA_ASSERT(static_cast<index_t>(global.size()) == rows * cols, "DistMatrix::scatter: size differs from rows x cols");
    m.storage_.scatter(global.data(), root);
    return m;
  }
  // Every rank passes the same row-major global data; each keeps its block.
  static DistMatrix from_replicated(const ProcessGrid& grid, index_t rows, index_t cols, const std::vector<T>& global) {
    TESSERA_ASSERT(static_cast<index_t>(global.size()) == rows * cols,
                   "DistMatrix::from_replicated: size differs from rows x cols");
    DistMatrix m(grid, rows, cols);
    m.storage_.from_replicated(global.data());
    return m;
  }

 private:
  detail::MatrixStorage storage_;
};

struct MatmulOptions {
  index_t panel_width = 512;              // columns of A / rows of B per SUMMA step
  GemmEngine engine = GemmEngine::tiled;  // the local product: ours, or the vendor library
};

// C = A * B by SUMMA (van de Geijn and Watts 1997) on the grid A and B share: for each panel of K,
// the owners broadcast an A panel along their process row and a B panel along their process column;
// every rank accumulates the panel product. The broadcast of panel k+1 overlaps the product of panel
// k. Any M, N, K; A.cols() must equal B.rows() (UsageError naming both shapes otherwise).
// T: float and double (tuned local products: SIMT SGEMM, FP64 tensor-core DGEMM, or cuBLAS);
// std::int32_t and std::int64_t, whose sums and products wrap modulo 2^32 / 2^64 as NumPy's do;
// std::complex<float> and std::complex<double> (engine vendor: cuBLAS's cgemm/zgemm; tiled, and
// for the integers always: a generic tiled kernel on the CUDA cores).
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
