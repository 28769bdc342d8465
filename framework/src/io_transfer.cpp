// Hyperslab reads and writes of a rank's block, and the agreement on a read's outcome (io_transfer.hpp).
#include "io_transfer.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "io_verdict.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::io::detail {
namespace {

// Elements per H5Dread / H5Dwrite call: MPI-IO (and HDF5 1.10 over it) cannot move 2 GiB or more
// in one operation, so a large slab goes in pieces of whole rows.
constexpr index_t kPieceBytes = index_t(1) << 30;

// The source value of a conversion exception, as a double; false where its type is unusual.
bool source_value(hid_t type, const void* bytes, double* value) {
  if (!bytes || H5Tget_order(type) != H5Tget_order(H5T_NATIVE_INT)) return false;
  const std::size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_FLOAT:
      if (size == sizeof(float)) {
        float v;
        std::memcpy(&v, bytes, sizeof v);
        *value = v;
        return true;
      }
      if (size == sizeof(double)) {
        std::memcpy(value, bytes, sizeof(double));
        return true;
      }
      return false;
    case H5T_INTEGER: {
      if (size != 1 && size != 2 && size != 4 && size != 8) return false;
      std::uint64_t bits = 0;
      std::memcpy(&bits, bytes, size);  // little-endian host: the low bytes
      if (H5Tget_sign(type) == H5T_SGN_2 && size < 8 && (bits >> (8 * size - 1)) & 1) bits |= ~std::uint64_t(0) << (8 * size);
      *value = H5Tget_sign(type) == H5T_SGN_2 ? static_cast<double>(static_cast<std::int64_t>(bits)) : static_cast<double>(bits);
      return true;
    }
    default: return false;
  }
}

H5T_conv_ret_t count_lost_value(H5T_conv_except_t kind, hid_t source, hid_t destination, void* source_bytes,
                                void*, void* data) {
  const bool to_integer = H5Tget_class(destination) == H5T_INTEGER;
  double value = 0;
  const bool known = source_value(source, source_bytes, &value);
  // HDF5 1.10 reports a NaN going into an integer as a truncation (NaN compares unequal to anything).
  bool lost = kind == H5T_CONV_EXCEPT_RANGE_HI || kind == H5T_CONV_EXCEPT_RANGE_LOW ||
              (to_integer && (kind == H5T_CONV_EXCEPT_NAN || kind == H5T_CONV_EXCEPT_PINF || kind == H5T_CONV_EXCEPT_NINF ||
                              (kind == H5T_CONV_EXCEPT_TRUNCATE && known && std::isnan(value))));
  // An infinity stays an infinity in a floating-point type.
  if (lost && !to_integer && known && std::isinf(value)) lost = false;
  if (lost) {
    auto& values = *static_cast<LostValues*>(data);
    if (values.count++ == 0 && known) {
      values.example = value;
      values.have_example = true;
    }
  }
  return H5T_CONV_UNHANDLED;  // HDF5 goes on as it would have; the read is refused afterwards
}

// Test-only: TESSERA_TEST_PAUSE_IN_WRITE=SECONDS makes each rank stop that long after writing the
// first half of its slab, saying so on stderr, so that a test can kill the job in the middle of a
// write.
int test_pause_in_write() {
  const char* env = std::getenv("TESSERA_TEST_PAUSE_IN_WRITE");
  return env ? std::atoi(env) : 0;
}

// Collective: every rank learns whether any rank's read failed or lost values (a corrupt chunk may
// sit in one rank's slab only), and all throw the same IoError.
void agree_on_read(const Context& ctx, const DatasetPath& path, const std::string& type_name,
                   const char* requested_type, const std::string& error, const LostValues& lost) {
  const Communicator& comm = ctx.comm();
  const int failed_rank = comm.allreduce(error.empty() ? ctx.size() : ctx.rank(), ReduceOp::min);
  if (failed_rank < ctx.size()) {
    char message[1024] = {};
    if (ctx.rank() == failed_rank)
      set_text(message, sizeof message, "cannot read " + quoted_path(path) + ": " + error);
    comm.bcast(message, sizeof message, failed_rank);
    throw IoError(message, path.file, path.dataset);
  }
  const index_t lost_count = comm.allreduce(lost.count, ReduceOp::sum);
  if (lost_count == 0) return;
  const int example_rank = comm.allreduce(lost.have_example ? ctx.rank() : ctx.size(), ReduceOp::min);
  double example = lost.example;
  if (example_rank < ctx.size()) comm.bcast(&example, 1, example_rank);
  std::string example_text;
  if (example_rank < ctx.size()) {
    char digits[64] = {};
    const auto written = std::to_chars(digits, digits + sizeof digits - 1, example);  // shortest exact text
    example_text = ", such as " + std::string(digits, written.ptr);
  }
  throw IoError(std::to_string(lost_count) + (lost_count == 1 ? " value" : " values") + " of " + quoted_path(path) +
                    " (" + type_name + ") cannot be represented as " + requested_type + " (out of range, or not a number" +
                    example_text + "); read it as a type that holds " + (lost_count == 1 ? "it" : "them"),
                path.file, path.dataset, IoError::Kind::unrepresentable_values);
}

}  // namespace

std::string transfer_block(const Context& ctx, hid_t dset, hid_t mem_type, std::size_t element_bytes, int ndims,
                           const index_t* start, const index_t* count, void* buffer, bool write,
                           LostValues* lost) {
  // A block of 1 to 3 axes moves in pieces of whole rows along axis 0.
  TESSERA_ASSERT(ndims >= 1 && ndims <= kMaxBlockDims, "transfer_block: 1 to 3 axes");
  index_t row_elements = 1;
  for (int d = 1; d < ndims; ++d) row_elements *= count[d];
  const index_t total = count[0] * row_elements;
  index_t rows_per_piece =
      std::max<index_t>(1, kPieceBytes / static_cast<index_t>(element_bytes) / std::max<index_t>(row_elements, 1));
  const int pause_seconds = write ? test_pause_in_write() : 0;
  if (pause_seconds > 0) rows_per_piece = std::max<index_t>(1, std::min(rows_per_piece, (count[0] + 1) / 2));
  index_t pieces = total == 0 ? 0 : (count[0] + rows_per_piece - 1) / rows_per_piece;
  Handle dxpl(TESSERA_H5_CHECK(H5Pcreate(H5P_DATASET_XFER)), H5Pclose);
#if TESSERA_IO_PARALLEL
  if (parallel_io()) {
    pieces = ctx.comm().allreduce(pieces, ReduceOp::max);
    TESSERA_H5_CHECK(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE));
    // Writes stay collective for HDF5 but reach MPI-IO as independent writes: Open MPI 4.1's OMPIO
    // two-phase collective write was seen to corrupt small unaligned 2-D slabs (tests/apps matmul at
    // 3 ranks, 4 runs in 5) where independent writes and ROMIO are correct.
    if (write) TESSERA_H5_CHECK(H5Pset_dxpl_mpio_collective_opt(dxpl.get(), H5FD_MPIO_INDIVIDUAL_IO));
  }
#endif
  (void)ctx;
  if (lost) TESSERA_H5_CHECK(H5Pset_type_conv_cb(dxpl.get(), &count_lost_value, lost));
  const hid_t xfer = dxpl.get();
  Handle file_space(TESSERA_H5_CHECK(H5Dget_space(dset)), H5Sclose);
  char* bytes = static_cast<char*>(buffer);
  char dummy[16] = {};
  std::string error;
  for (index_t piece = 0; piece < pieces; ++piece) {
    const index_t first_row = piece * rows_per_piece;
    const index_t rows = total == 0 ? 0 : std::max<index_t>(0, std::min(rows_per_piece, count[0] - first_row));
    hsize_t file_start[kMaxBlockDims] = {static_cast<hsize_t>(start[0] + first_row), 0, 0};
    hsize_t sel_count[kMaxBlockDims] = {static_cast<hsize_t>(rows), 1, 1};
    for (int d = 1; d < ndims; ++d) {
      file_start[d] = static_cast<hsize_t>(start[d]);
      sel_count[d] = static_cast<hsize_t>(count[d]);
    }
    const hsize_t one = 1;
    Handle mem_space;
    void* piece_buffer = dummy;
    if (rows > 0) {
      TESSERA_H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, file_start, nullptr, sel_count, nullptr));
      mem_space = Handle(TESSERA_H5_CHECK(H5Screate_simple(ndims, sel_count, nullptr)), H5Sclose);
      piece_buffer = bytes + first_row * row_elements * static_cast<index_t>(element_bytes);
    } else {
      // A rank with nothing (left) to move still takes part in the collective call.
      TESSERA_H5_CHECK(H5Sselect_none(file_space.get()));
      mem_space = Handle(TESSERA_H5_CHECK(H5Screate_simple(1, &one, nullptr)), H5Sclose);
      TESSERA_H5_CHECK(H5Sselect_none(mem_space.get()));
    }
    if (write) {
      TESSERA_H5_CHECK(H5Dwrite(dset, mem_type, mem_space.get(), file_space.get(), xfer, piece_buffer));
      if (pause_seconds > 0 && piece == 0 && rows > 0) {
        std::fprintf(stderr, "tessera: rank %d (process %ld) paused for a test after writing half of its slab\n",
                     ctx.rank(), static_cast<long>(getpid()));
        std::fflush(stderr);
        sleep(static_cast<unsigned>(pause_seconds));
      }
    } else if (H5Dread(dset, mem_type, mem_space.get(), file_space.get(), xfer, piece_buffer) < 0 && error.empty()) {
      error = h5_error_text();
    }
  }
  return error;
}

void read_block(const Context& ctx, const DatasetPath& path, const std::string& type_name, const H5Element& element,
                int ndims, const index_t* start, const index_t* count, void* buffer) {
  LostValues lost;
  std::string error;
  {
    // Serial HDF5: every rank opens the file read-only on its own, and reads independently.
    Handle file = open_file(ctx, path.file, H5F_ACC_RDONLY);
    Handle dset(TESSERA_H5_CHECK(H5Dopen2(file.get(), path.dataset.c_str(), H5P_DEFAULT)), H5Dclose);
    error = transfer_block(ctx, dset.get(), element.memory_type, element.bytes, ndims, start, count, buffer, false, &lost);
  }
  agree_on_read(ctx, path, type_name, element.name, error, lost);
}

}  // namespace tessera::io::detail
