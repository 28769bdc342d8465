// ProcessGrid (a Cartesian communicator with row and column sub-communicators) and DistMatrix
// (2-D blocks over it).
#include "tessera/framework/dist_matrix.hpp"

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "block_transfer.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/transform.hpp"

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

namespace detail {

MatrixStorage::MatrixStorage(const ProcessGrid& grid, index_t rows, index_t cols, std::size_t element_bytes)
    : grid_(grid), rows_(rows), cols_(cols), element_bytes_(element_bytes) {
  TESSERA_ASSERT(!grid_.context().is_null(), "DistMatrix on a grid without a context");
  TESSERA_ASSERT(element_bytes >= 1, "DistMatrix: elements of zero bytes");
  if (rows < 0 || cols < 0)
    throw UsageError("a matrix of " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " elements: the sizes must not be negative");
  checked_elements(rows, cols, "a matrix");  // element (i, j) is numbered i * cols + j
  row_partition_ = Partition::block(rows, grid.rows());
  col_partition_ = Partition::block(cols, grid.cols());
  data_ = kernels::allocate(grid_.context().queue(),
                            kernels::array_bytes(local_rows() * local_cols(), element_bytes, "a matrix block"));
}

MatrixStorage MatrixStorage::view(const ProcessGrid& grid, index_t rows, index_t cols, std::size_t element_bytes,
                                  void* data) {
  MatrixStorage out;
  out.grid_ = grid;
  out.rows_ = rows;
  out.cols_ = cols;
  out.element_bytes_ = element_bytes;
  TESSERA_ASSERT(!grid.context().is_null(), "DistMatrix on a grid without a context");
  TESSERA_ASSERT(element_bytes >= 1, "DistMatrix: elements of zero bytes");
  if (rows < 0 || cols < 0)
    throw UsageError("a matrix of " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " elements: the sizes must not be negative");
  checked_elements(rows, cols, "a matrix");
  out.row_partition_ = Partition::block(rows, grid.rows());
  out.col_partition_ = Partition::block(cols, grid.cols());
  if (out.local_bytes() > 0 && (data == nullptr || reinterpret_cast<std::uintptr_t>(data) % 16 != 0))
    throw UsageError("DistMatrix::view_local: the block must start on a 16-byte boundary (it starts at " +
                     std::to_string(reinterpret_cast<std::uintptr_t>(data)) + ")");
  out.data_ = data;
  out.owns_ = false;
  return out;
}

MatrixStorage::~MatrixStorage() { release(); }

void MatrixStorage::release() {
  if (data_ && owns_) kernels::deallocate(grid_.context().queue(), data_);
  data_ = nullptr;
  owns_ = true;
}

MatrixStorage::MatrixStorage(MatrixStorage&& o) noexcept
    : grid_(std::move(o.grid_)),
      rows_(std::exchange(o.rows_, 0)),
      cols_(std::exchange(o.cols_, 0)),
      element_bytes_(std::exchange(o.element_bytes_, 0)),
      row_partition_(std::move(o.row_partition_)),
      col_partition_(std::move(o.col_partition_)),
      data_(std::exchange(o.data_, nullptr)),
      owns_(std::exchange(o.owns_, true)) {}

MatrixStorage& MatrixStorage::operator=(MatrixStorage&& o) noexcept {
  if (this != &o) {
    release();
    grid_ = std::move(o.grid_);
    rows_ = std::exchange(o.rows_, 0);
    cols_ = std::exchange(o.cols_, 0);
    element_bytes_ = std::exchange(o.element_bytes_, 0);
    row_partition_ = std::move(o.row_partition_);
    col_partition_ = std::move(o.col_partition_);
    data_ = std::exchange(o.data_, nullptr);
    owns_ = std::exchange(o.owns_, true);
  }
  return *this;
}

void MatrixStorage::fill(const void* value) {
  kernels::detail::fill_bytes(grid_.context().queue(), data_, local_rows() * local_cols(), element_bytes_, value);
}

void MatrixStorage::local_to_host(void* host) const {
  kernels::copy_to_host(grid_.context().queue(), host, data_, local_bytes());
}

void MatrixStorage::local_from_host(const void* host) {
  kernels::copy_from_host(grid_.context().queue(), data_, host, local_bytes());
}

namespace {

// Rank p's block: its rows and columns, and where it starts in the global matrix.
struct BlockOf {
  index_t rows, cols, row0, col0;
};
BlockOf block_of(const MatrixStorage& m, int p) {
  const int pr = p / m.grid().cols(), pc = p % m.grid().cols();
  return {m.row_partition().local_size(pr), m.col_partition().local_size(pc), m.row_partition().offset(pr),
          m.col_partition().offset(pc)};
}

// Copies a rows x cols block of row-major elements between a block (leading dimension cols) and
// its place in the whole matrix (leading dimension whole_cols), one row at a time.
void copy_rows(unsigned char* whole, index_t whole_cols, const BlockOf& b, unsigned char* block, std::size_t bytes,
               bool into_whole) {
  const std::size_t row_bytes = static_cast<std::size_t>(b.cols) * bytes;
  for (index_t r = 0; r < b.rows; ++r) {
    unsigned char* at = whole + (static_cast<std::size_t>(b.row0 + r) * static_cast<std::size_t>(whole_cols) +
                                 static_cast<std::size_t>(b.col0)) * bytes;
    unsigned char* row = block + static_cast<std::size_t>(r) * row_bytes;
    if (into_whole) std::memcpy(at, row, row_bytes);
    else std::memcpy(row, at, row_bytes);
  }
}

constexpr int kGatherTag = 7301;
constexpr int kScatterTag = 7302;

BlockGeometry geometry(const MatrixStorage& m, std::size_t element_bytes) {
  return {[&m, element_bytes](int p) {
            const BlockOf b = block_of(m, p);
            return static_cast<std::size_t>(b.rows * b.cols) * element_bytes;
          },
          [&m, element_bytes](int p, unsigned char* whole, unsigned char* block, bool into_whole) {
            copy_rows(whole, m.cols(), block_of(m, p), block, element_bytes, into_whole);
          }};
}

}  // namespace

void MatrixStorage::gather(void* all, int root) const {
  gather_blocks(grid_.context().comm(), geometry(*this, element_bytes_), [this](void* h) { local_to_host(h); }, all, root,
                kGatherTag);
}

void MatrixStorage::scatter(const void* all, int root) {
  scatter_blocks(grid_.context().comm(), geometry(*this, element_bytes_), [this](const void* h) { local_from_host(h); }, all,
                 root, kScatterTag);
}

void MatrixStorage::from_replicated(const void* global) {
  fill_from_replicated(grid_.context().rank(), geometry(*this, element_bytes_), [this](const void* h) { local_from_host(h); },
                       global);
}

}  // namespace detail

}  // namespace tessera
