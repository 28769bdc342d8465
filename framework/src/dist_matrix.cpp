// ProcessGrid (a Cartesian communicator with row and column sub-communicators) and DistMatrix
// (2-D blocks over it).
#include "tessera/framework/dist_matrix.hpp"

#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>

#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {

ProcessGrid ProcessGrid::create(const Context& ctx, int rows, int cols) {
  TESSERA_ASSERT(!ctx.is_null(), "ProcessGrid on a null context");
  const int ranks = ctx.size();
  const std::string asked = std::to_string(rows) + "x" + std::to_string(cols);
  if (rows < 0 || cols < 0) throw UsageError("process grid " + asked + ": dimensions must not be negative");
  if ((rows == 0) != (cols == 0) && ranks % (rows + cols) != 0)
    throw UsageError("process grid " + asked + ": " + std::to_string(ranks) + " ranks do not divide into " +
                     std::to_string(rows + cols) + (rows ? " rows" : " columns"));
  if (rows > 0 && cols > 0 && static_cast<long long>(rows) * cols != ranks)
    throw UsageError("process grid " + asked + " needs " + std::to_string(static_cast<long long>(rows) * cols) +
                     " ranks, but the context has " + std::to_string(ranks));
  int dims[2] = {rows, cols};
  TESSERA_MPI_CHECK(MPI_Dims_create(ranks, 2, dims));  // fills the zero entries only

  // reorder = 0: grid rank == context rank, so rank = process_row * cols + process_col holds for
  // the caller's numbering too (MPI's Cartesian order is row-major).
  const int periods[2] = {0, 0};
  MPI_Comm cart = MPI_COMM_NULL;
  TESSERA_MPI_CHECK(MPI_Cart_create(ctx.comm().get(), 2, dims, periods, /*reorder=*/0, &cart));
  ProcessGrid g;
  g.rows_ = dims[0];
  g.cols_ = dims[1];
  g.grid_ = ctx.with_comm(Communicator::adopt(cart));
  int coords[2] = {0, 0};
  TESSERA_MPI_CHECK(MPI_Cart_coords(cart, g.grid_.rank(), 2, coords));
  g.process_row_ = coords[0];
  g.process_col_ = coords[1];
  const int keep_cols[2] = {0, 1};  // my process row: ranks differ in column
  const int keep_rows[2] = {1, 0};  // my process column: ranks differ in row
  MPI_Comm row = MPI_COMM_NULL, column = MPI_COMM_NULL;
  TESSERA_MPI_CHECK(MPI_Cart_sub(cart, keep_cols, &row));
  TESSERA_MPI_CHECK(MPI_Cart_sub(cart, keep_rows, &column));
  g.row_ = ctx.with_comm(Communicator::adopt(row));
  g.column_ = ctx.with_comm(Communicator::adopt(column));
  TESSERA_ASSERT(g.row_.rank() == g.process_col_ && g.column_.rank() == g.process_row_,
                 "Cartesian sub-communicators ranked other than by grid coordinate");
  return g;
}

template <class T>
DistMatrix<T>::DistMatrix(const ProcessGrid& grid, index_t rows, index_t cols)
    : grid_(grid),
      rows_(rows),
      cols_(cols),
      row_partition_(Partition::block(rows, grid.rows())),
      col_partition_(Partition::block(cols, grid.cols())) {
  TESSERA_ASSERT(!grid_.context().is_null(), "DistMatrix on a grid without a context");
  checked_elements(rows, cols, "a matrix");  // element (i, j) is numbered i * cols + j
  const std::size_t bytes = kernels::array_bytes(local_rows() * local_cols(), sizeof(T), "a matrix block");
  data_ = static_cast<T*>(kernels::allocate(grid_.context().queue(), bytes));
}

template <class T>
DistMatrix<T>::~DistMatrix() {
  release();
}

template <class T>
void DistMatrix<T>::release() {
  if (data_) kernels::deallocate(grid_.context().queue(), data_);
  data_ = nullptr;
}

template <class T>
DistMatrix<T>::DistMatrix(DistMatrix&& o) noexcept
    : grid_(std::move(o.grid_)),
      rows_(std::exchange(o.rows_, 0)),
      cols_(std::exchange(o.cols_, 0)),
      row_partition_(std::move(o.row_partition_)),
      col_partition_(std::move(o.col_partition_)),
      data_(std::exchange(o.data_, nullptr)) {}

template <class T>
DistMatrix<T>& DistMatrix<T>::operator=(DistMatrix&& o) noexcept {
  if (this != &o) {
    release();
    grid_ = std::move(o.grid_);
    rows_ = std::exchange(o.rows_, 0);
    cols_ = std::exchange(o.cols_, 0);
    row_partition_ = std::move(o.row_partition_);
    col_partition_ = std::move(o.col_partition_);
    data_ = std::exchange(o.data_, nullptr);
  }
  return *this;
}

template <class T>
index_t DistMatrix<T>::local_rows() const {
  return row_partition_.local_size(grid_.process_row());
}
template <class T>
index_t DistMatrix<T>::local_cols() const {
  return col_partition_.local_size(grid_.process_col());
}
template <class T>
index_t DistMatrix<T>::row_offset() const {
  return row_partition_.offset(grid_.process_row());
}
template <class T>
index_t DistMatrix<T>::col_offset() const {
  return col_partition_.offset(grid_.process_col());
}

template <class T>
void DistMatrix<T>::fill(T value) {
  kernels::fill(grid_.context().queue(), data_, local_rows() * local_cols(), value);
}

template <class T>
void DistMatrix<T>::generate(std::uint64_t seed) {
  // Each local row is a contiguous run of the global row-major sequence; where the block spans
  // whole rows (one process column), the whole block is one run: one launch.
  const index_t lc = local_cols();
  if (lc == 0) return;
  if (lc == cols_) {
    kernels::generate(grid_.context().queue(), data_, local_rows() * lc, seed, row_offset() * cols_);
    return;
  }
  for (index_t r = 0; r < local_rows(); ++r)
    kernels::generate(grid_.context().queue(), data_ + r * lc, lc, seed, (row_offset() + r) * cols_ + col_offset());
}

template <class T>
std::vector<T> DistMatrix<T>::local_to_host() const {
  std::vector<T> host(static_cast<std::size_t>(local_rows() * local_cols()));
  kernels::copy_to_host(grid_.context().queue(), host.data(), data_, host.size() * sizeof(T));
  return host;
}

template <class T>
void DistMatrix<T>::local_from_host(const std::vector<T>& block) {
  TESSERA_ASSERT(static_cast<index_t>(block.size()) == local_rows() * local_cols(),
                 "DistMatrix::local_from_host: size differs from the block");
  kernels::copy_from_host(grid_.context().queue(), data_, block.data(), block.size() * sizeof(T));
}

template <class T>
std::vector<T> DistMatrix<T>::gather(int root) const {
  const Communicator& comm = grid_.context().comm();
  constexpr int kTag = 7301;
  std::vector<T> block = local_to_host();
  if (comm.rank() != root) {
    comm.send(block.data(), static_cast<index_t>(block.size()), root, kTag);
    return {};
  }
  std::vector<T> all(static_cast<std::size_t>(rows_ * cols_));
  std::vector<T> incoming;
  for (int p = 0; p < comm.size(); ++p) {
    const int pr = p / grid_.cols(), pc = p % grid_.cols();
    const index_t lr = row_partition_.local_size(pr), lc = col_partition_.local_size(pc);
    const index_t r0 = row_partition_.offset(pr), c0 = col_partition_.offset(pc);
    const T* src = block.data();
    if (p != root) {
      incoming.resize(static_cast<std::size_t>(lr * lc));
      comm.recv(incoming.data(), lr * lc, p, kTag);
      src = incoming.data();
    }
    for (index_t r = 0; r < lr; ++r)
      for (index_t c = 0; c < lc; ++c) all[static_cast<std::size_t>((r0 + r) * cols_ + c0 + c)] = src[r * lc + c];
  }
  return all;
}

template <class T>
DistMatrix<T> DistMatrix<T>::from_replicated(const ProcessGrid& grid, index_t rows, index_t cols,
                                             const std::vector<T>& global) {
  TESSERA_ASSERT(static_cast<index_t>(global.size()) == rows * cols, "DistMatrix::from_replicated: size differs from rows x cols");
  DistMatrix<T> m(grid, rows, cols);
  std::vector<T> block(static_cast<std::size_t>(m.local_rows() * m.local_cols()));
  for (index_t r = 0; r < m.local_rows(); ++r)
    for (index_t c = 0; c < m.local_cols(); ++c)
      block[static_cast<std::size_t>(r * m.local_cols() + c)] =
          global[static_cast<std::size_t>((m.row_offset() + r) * cols + m.col_offset() + c)];
  m.local_from_host(block);
  return m;
}

template class DistMatrix<std::int32_t>;
template class DistMatrix<std::int64_t>;
template class DistMatrix<float>;
template class DistMatrix<double>;

}  // namespace tessera
