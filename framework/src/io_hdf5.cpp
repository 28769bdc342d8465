// HDF5 input and output (io.hpp): probing on rank 0 with a broadcast verdict, hyperslab reads and
// writes in pieces below MPI-IO's 2 GiB limit, and the copy-write-rename of output files.
#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "temporary_file.hpp"
#include "tessera/build_config.hpp"
#include "tessera/framework/fault.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/kernels/error.hpp"

// TESSERA_IO_FORCE_SERIAL (a compile definition) takes the serial-HDF5 path with a parallel library
// too, so that the path the GPU machine's serial HDF5 takes can be tested where MPI-IO exists; the
// environment variable TESSERA_IO_SERIAL=1 does the same at run time (for tests).
#if TESSERA_HDF5_PARALLEL && defined(H5_HAVE_PARALLEL) && !defined(TESSERA_IO_FORCE_SERIAL)
#define TESSERA_IO_PARALLEL 1
#else
#define TESSERA_IO_PARALLEL 0
#endif

// HDF5 calls return a negative value on failure. A failure after rank 0 validated the input is not
// the user's doing (a file changed under us, a full disk): the job ends with the call's text and
// the innermost message of HDF5's error stack, in one line.
#define TESSERA_H5_CHECK(call)                                                                      \
  ([&]() {                                                                                          \
    auto tessera_h5_result_ = (call);                                                               \
    if (tessera_h5_result_ < 0)                                                                     \
      ::tessera::fatal(__FILE__, __LINE__, #call, "HDF5 call failed: " + ::tessera::io::h5_error_text()); \
    return tessera_h5_result_;                                                                      \
  }())

namespace tessera::io {
namespace {

// One HDF5 identifier, closed by the matching H5?close when it goes out of scope.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }
  // For files being written: a failed close may mean data never reached the disk.
  void close_checked() {
    const hid_t id = id_;
    id_ = H5I_INVALID_HID;
    if (id >= 0 && closer_ && closer_(id) < 0) fatal(__FILE__, __LINE__, "H5?close", "closing an HDF5 object failed");
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Silences HDF5's printed error stack while Tessera works on a file: a missing dataset or a corrupt
// chunk is reported in one line (h5_error_text), not as a page of library internals from every rank.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

herr_t innermost_error(unsigned n, const H5E_error2_t* error, void* text) {
  if (n == 0 && error && error->desc) *static_cast<std::string*>(text) = error->desc;
  return 0;
}

// The innermost message of HDF5's error stack (what failed first: "No space left on device",
// "required filter 'lzf' is not registered"), or "no HDF5 error message".
std::string h5_error_text() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, &innermost_error, &text);
  // The deepest message of a failed system call is long ("file write failed: time = ..., errno =
  // 28, error message = 'No space left on device', ..."): keep what the system said.
  const auto said = text.find("error message = '");
  if (said != std::string::npos) {
    const auto begin = said + 17;
    const auto end = text.find('\'', begin);
    text = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  }
  return text.empty() ? "no HDF5 error message" : text;
}

// The HDF5 types of an element type: in memory (native) and in files (little-endian standard types,
// whatever the host, so files compare anywhere).
template <class T>
hid_t memory_type() {
  if constexpr (std::is_same_v<T, std::int8_t>) return H5T_NATIVE_INT8;
  else if constexpr (std::is_same_v<T, std::int16_t>) return H5T_NATIVE_INT16;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return H5T_NATIVE_UINT16;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return H5T_NATIVE_UINT32;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return H5T_NATIVE_UINT64;
  else if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  else return H5T_NATIVE_DOUBLE;
}

template <class T>
hid_t file_type() {
  if constexpr (std::is_same_v<T, std::int8_t>) return H5T_STD_I8LE;
  else if constexpr (std::is_same_v<T, std::int16_t>) return H5T_STD_I16LE;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_STD_I32LE;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_STD_I64LE;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_STD_U8LE;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return H5T_STD_U16LE;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return H5T_STD_U32LE;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return H5T_STD_U64LE;
  else if constexpr (std::is_same_v<T, float>) return H5T_IEEE_F32LE;
  else return H5T_IEEE_F64LE;
}

// What rank 0 found, in one fixed-size record so that it crosses to the other ranks in one bcast.
struct ProbeRecord {
  int ok = 0;
  int dtype = 0;
  int ndims = 0;
  std::int64_t dims[H5S_MAX_RANK] = {};
  char type_name[64] = {};
  char message[1024] = {};
};

void set_text(char* dst, std::size_t size, const std::string& text) {
  std::snprintf(dst, size, "%s", text.c_str());
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Rank 0's half of probe_dataset. Returns with record.ok = 0 and a message for any user error.
// need_dtype: the caller picks its element type from the file's (the apps' DType); a type no DType
// holds exactly is then an error. Otherwise (read_array<T>: HDF5 converts to T) any integer or
// floating-point type is accepted.
void probe_on_root(const DatasetPath& path, std::string_view flag, ProbeRecord& record, bool need_dtype) {
  const std::string where = std::string(flag) + ": ";
  auto fail = [&](const std::string& what) { set_text(record.message, sizeof record.message, where + what); };

  struct stat st {};
  if (stat(path.file.c_str(), &st) != 0) return fail("no such file " + quoted(path.file));
  if (S_ISDIR(st.st_mode)) return fail(quoted(path.file) + " is a directory, not an HDF5 file");
  if (access(path.file.c_str(), R_OK) != 0) return fail("cannot read " + quoted(path.file) + " (permission denied)");

  QuietErrors quiet;
  const htri_t is_hdf5 = H5Fis_hdf5(path.file.c_str());
  if (is_hdf5 <= 0) return fail(quoted(path.file) + " is not an HDF5 file");
  Handle file(H5Fopen(path.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.valid()) return fail("cannot open " + quoted(path.file) + " as an HDF5 file");

  // H5Lexists fails (rather than answering no) when an intermediate group is missing, so walk the
  // path one component at a time.
  const std::string& name = path.dataset;
  for (std::size_t pos = 1; pos <= name.size(); ++pos) {
    if (pos != name.size() && name[pos] != '/') continue;
    const std::string prefix = name.substr(0, pos);
    if (prefix.back() == '/') continue;
    if (H5Lexists(file.get(), prefix.c_str(), H5P_DEFAULT) <= 0)
      return fail("no dataset " + quoted(name) + " in " + quoted(path.file) +
                  (pos == name.size() ? "" : " (no " + quoted(prefix) + ")"));
  }
  Handle dset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dset.valid()) return fail(quoted(name) + " in " + quoted(path.file) + " is not a dataset");

  Handle type(H5Dget_type(dset.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  const std::size_t bytes = H5Tget_size(type.get());
  std::string type_name;
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type.get()) == H5T_SGN_2;
    type_name = std::to_string(bytes * 8) + "-bit " + (is_signed ? "signed" : "unsigned") + " integer";
    // Widen to the narrowest of our types that holds every value of the file's type.
    if (bytes < 4 || (bytes == 4 && is_signed)) record.dtype = static_cast<int>(DType::int32);
    else if (bytes < 8 || (bytes == 8 && is_signed) || !need_dtype) record.dtype = static_cast<int>(DType::int64);
    else return fail(quoted(name) + " in " + quoted(path.file) + " holds " + type_name +
                     "s, which no supported dtype (int32, int64, float32, float64) holds exactly");
  } else if (cls == H5T_FLOAT) {
    type_name = std::to_string(bytes * 8) + "-bit float";
    record.dtype = static_cast<int>(bytes <= 4 ? DType::float32 : DType::float64);
  } else {
    return fail(quoted(name) + " in " + quoted(path.file) +
                " is not numeric (expected an integer or floating-point dataset)");
  }
  set_text(record.type_name, sizeof record.type_name, type_name);

  // A filter this library lacks (LZF, Blosc, ... registered only inside h5py or a plugin) would fail
  // every read of a chunk: say so now.
  Handle dcpl(H5Dget_create_plist(dset.get()), H5Pclose);
  const int filters = dcpl.valid() ? H5Pget_nfilters(dcpl.get()) : 0;
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t values = 0;
    char filter_name[128] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &values, nullptr,
                                           sizeof filter_name, filter_name, &config);
    if (id >= 0 && H5Zfilter_avail(id) <= 0)
      return fail(quoted(name) + " in " + quoted(path.file) + " is compressed with the HDF5 filter " +
                  (filter_name[0] ? quoted(filter_name) + " " : std::string()) + "(id " + std::to_string(id) +
                  "), which this HDF5 library does not have (rewrite it with gzip, or without compression)");
  }

  Handle space(H5Dget_space(dset.get()), H5Sclose);
  const H5S_class_t space_class = H5Sget_simple_extent_type(space.get());
  if (space_class == H5S_NULL) return fail(quoted(name) + " in " + quoted(path.file) + " has no data (null dataspace)");
  const int ndims = H5Sget_simple_extent_ndims(space.get());
  if (ndims < 0) return fail("cannot read the shape of " + quoted(name) + " in " + quoted(path.file));
  hsize_t dims[H5S_MAX_RANK] = {};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  record.ndims = ndims;
  for (int d = 0; d < ndims; ++d) record.dims[d] = static_cast<std::int64_t>(dims[d]);
  record.ok = 1;
}

std::string shape_text(const std::vector<index_t>& shape) {
  if (shape.empty()) return "a scalar";
  std::string s;
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? " x " : "") + std::to_string(shape[d]);
  return std::to_string(shape.size()) + "-D (" + s + ")";
}

// Parallel HDF5 (MPI-IO) where the library has it; TESSERA_IO_SERIAL=1 in the environment takes the
// serial path instead (for tests of the path a serial library takes; every rank must see the same).
bool parallel_io() {
#if TESSERA_IO_PARALLEL
  static const bool parallel = [] {
    const char* env = std::getenv("TESSERA_IO_SERIAL");
    return !(env && std::strcmp(env, "1") == 0);
  }();
  return parallel;
#else
  return false;
#endif
}

// File access for every rank of ctx together (MPI-IO) under parallel HDF5; the default otherwise.
Handle file_access(const Context& ctx) {
  Handle fapl(TESSERA_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
#if TESSERA_IO_PARALLEL
  if (parallel_io()) TESSERA_H5_CHECK(H5Pset_fapl_mpio(fapl.get(), ctx.comm().get(), MPI_INFO_NULL));
#endif
  (void)ctx;
  return fapl;
}

// Opens a file every rank of ctx reads from (MPI-IO under parallel HDF5) or writes to.
Handle open_file(const Context& ctx, const std::string& file, unsigned flags) {
  Handle fapl = file_access(ctx);
  return Handle(TESSERA_H5_CHECK(H5Fopen(file.c_str(), flags, fapl.get())), H5Fclose);
}

// Elements per H5Dread / H5Dwrite call: MPI-IO (and HDF5 1.10 over it) cannot move 2 GiB or more
// in one operation, so a large slab goes in pieces of whole rows.
constexpr index_t kPieceBytes = index_t(1) << 30;

// Values of a file that HDF5's conversion to the requested type would not keep: clamped (1e20 into
// int32 becomes 2147483647, 1e300 into float32 infinity) or made up (NaN into an integer). HDF5
// reports each through the transfer's conversion callback; a read that met any is refused.
struct LostValues {
  index_t count = 0;
  double example = 0;  // the first one, where its bits could be read
  bool have_example = false;
};

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

// Moves this rank's block [start, start + count) of a 1-D or 2-D dataset (2-D: start/count per
// dimension; the block is contiguous in memory, row-major) between `buffer` and the file. Under
// parallel HDF5 every rank makes the same number of collective calls (empty selections included).
// A failed write ends the job. A failed read (a corrupt chunk) does not: its message is returned
// (the remaining pieces are still read, so that the collective calls stay matched), and values the
// conversion to mem_type would lose are counted in *lost.
std::string transfer_block(const Context& ctx, hid_t dset, hid_t mem_type, std::size_t element_bytes, int ndims,
                           const index_t* start, const index_t* count, void* buffer, bool write,
                           LostValues* lost = nullptr) {
  const index_t row_elements = ndims == 2 ? count[1] : 1;
  const index_t total = ndims == 2 ? count[0] * count[1] : count[0];
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
    hsize_t file_start[2] = {static_cast<hsize_t>(start[0] + first_row), ndims == 2 ? static_cast<hsize_t>(start[1]) : 0};
    hsize_t sel_count[2] = {static_cast<hsize_t>(rows), static_cast<hsize_t>(row_elements)};
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

std::string quoted_path(const DatasetPath& path) { return quoted(path.dataset) + " in " + quoted(path.file); }

// Collective: every rank learns whether any rank's read failed or lost values (a corrupt chunk may
// sit in one rank's slab only), and all throw the same UsageError.
void agree_on_read(const Context& ctx, const DatasetPath& path, std::string_view flag, const std::string& type_name,
                   const char* requested_type, const std::string& error, const LostValues& lost) {
  const Communicator& comm = ctx.comm();
  const int failed_rank = comm.allreduce(error.empty() ? ctx.size() : ctx.rank(), ReduceOp::min);
  if (failed_rank < ctx.size()) {
    char message[1024] = {};
    if (ctx.rank() == failed_rank)
      set_text(message, sizeof message, std::string(flag) + ": cannot read " + quoted_path(path) + ": " + error);
    comm.bcast(message, sizeof message, failed_rank);
    throw UsageError(message);
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
  throw UsageError(std::string(flag) + ": " + std::to_string(lost_count) + (lost_count == 1 ? " value" : " values") +
                   " of " + quoted_path(path) + " (" + type_name + ") cannot be represented as " + requested_type +
                   " (out of range, or not a number" + example_text + "); read it as a type that holds " +
                   (lost_count == 1 ? "it" : "them") + " (--dtype)");
}

template <class T>
const char* type_text() {
  if constexpr (std::is_same_v<T, std::int8_t>) return "int8";
  else if constexpr (std::is_same_v<T, std::int16_t>) return "int16";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<T, std::uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
  else if constexpr (std::is_same_v<T, float>) return "float32";
  else return "float64";
}

// Reads this rank's block of a dataset that probe_dataset accepted. UsageError on every rank when
// any rank's read failed or met values that T cannot hold.
template <class T>
std::vector<T> read_block(const Context& ctx, const DatasetPath& path, std::string_view flag, const DatasetInfo& info,
                          int ndims, const index_t* start, const index_t* count, std::vector<T> host) {
  const index_t total = ndims == 2 ? count[0] * count[1] : count[0];
  TESSERA_ASSERT(static_cast<index_t>(host.size()) == total, "read_block: host buffer of the wrong size");
  LostValues lost;
  std::string error;
  {
    // Serial HDF5: every rank opens the file read-only on its own, and reads independently.
    Handle file = open_file(ctx, path.file, H5F_ACC_RDONLY);
    Handle dset(TESSERA_H5_CHECK(H5Dopen2(file.get(), path.dataset.c_str(), H5P_DEFAULT)), H5Dclose);
    error = transfer_block(ctx, dset.get(), memory_type<T>(), sizeof(T), ndims, start, count, host.data(), false, &lost);
  }
  agree_on_read(ctx, path, flag, info.type_name, type_text<T>(), error, lost);
  return host;
}

// ---- writing -------------------------------------------------------------------------------------

std::string directory_of(const std::string& file) {
  const auto slash = file.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return file.substr(0, slash);
}

// Length of the well-formed UTF-8 sequence at s[i] (1 to 4 bytes), or 0 where the bytes there are
// not one (a stray continuation byte, an overlong form, a surrogate, beyond U+10FFFF, cut short).
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, low = 0xA0;
  else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 3;
  else if (c == 0xED) n = 3, high = 0x9F;
  else if (c == 0xF0) n = 4, low = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, high = 0x8F;
  else return 0;
  if (i + n > s.size() || byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

// `s` with each byte that is not part of well-formed UTF-8 replaced by U+FFFD.
std::string valid_utf8(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

void write_string_attribute(hid_t object, const std::string& name, const std::string& value) {
  Handle type(TESSERA_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  TESSERA_H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  TESSERA_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  Handle space(TESSERA_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  Handle attr(TESSERA_H5_CHECK(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)),
              H5Aclose);
  const std::string text = valid_utf8(value);  // a path may hold any bytes; the attribute says UTF-8
  const char* data = text.c_str();
  TESSERA_H5_CHECK(H5Awrite(attr.get(), type.get(), &data));
}

void write_attributes(hid_t dset, const OutputAttributes& a) {
  write_string_attribute(dset, "app", a.app);
  write_string_attribute(dset, "backend", a.backend);
  write_string_attribute(dset, "version", TESSERA_VERSION_STRING);
  {
    Handle space(TESSERA_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
    Handle attr(TESSERA_H5_CHECK(H5Acreate2(dset, "ranks", H5T_STD_I32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT)),
                H5Aclose);
    const std::int32_t ranks = a.ranks;
    TESSERA_H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT32, &ranks));
  }
  for (const auto& [key, value] : a.extra) write_string_attribute(dset, key, value);
}

// Rank 0's check of an output destination, at start-up (check_output_path) and again just before
// the write. Returns the problem, or "" with *exists (the file exists: the dataset is added to it)
// and *replace (the dataset exists, and `overwrite` allows replacing it).
std::string check_destination(const DatasetPath& path, bool overwrite, bool* exists, bool* replace,
                              bool replace_file = false) {
  *exists = *replace = false;
  const std::string& file = path.file;
  if (file.empty() || file.back() == '/') return quoted(file) + " is not a file name";
  const std::string directory = directory_of(file);
  struct stat st {};
  if (stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return "no such directory " + quoted(directory) + " for " + quoted(file);
  if (access(directory.c_str(), W_OK | X_OK) != 0)
    return "cannot write in directory " + quoted(directory) + " (permission denied)";
  if (lstat(file.c_str(), &st) != 0) {
    if (errno == ENOENT) return "";
    return "cannot examine " + quoted(file) + ": " + std::strerror(errno);
  }
  // The output is written under another name and renamed over the path: never over a link (which
  // would be replaced, not followed) nor over anything but a regular file.
  if (S_ISLNK(st.st_mode)) return quoted(file) + " is a symbolic link (give the path of the file itself)";
  if (S_ISDIR(st.st_mode)) return quoted(file) + " is a directory";
  if (!S_ISREG(st.st_mode)) return quoted(file) + " is not a regular file (a FIFO, socket or device)";
  if (access(file.c_str(), R_OK | W_OK) != 0) return "cannot write " + quoted(file) + " (permission denied)";
  if (H5Fis_hdf5(file.c_str()) <= 0)
    return quoted(file) + " exists and is not an HDF5 file (it is left as it is: remove it or give another name)";
  // A file replaced as a whole (a checkpoint) keeps nothing of the old one: a new temporary, renamed
  // over it.
  if (replace_file) return "";
  Handle h5(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!h5.valid()) return "cannot open " + quoted(file) + " as an HDF5 file (" + h5_error_text() + ")";
  *exists = true;
  // Each group on the way must be a group (or be missing: it is created); the last component may be
  // missing, or a dataset when `overwrite`.
  const std::string& name = path.dataset;
  for (std::size_t pos = 1; pos <= name.size(); ++pos) {
    if (pos != name.size() && name[pos] != '/') continue;
    const std::string prefix = name.substr(0, pos);
    const htri_t there = H5Lexists(h5.get(), prefix.c_str(), H5P_DEFAULT);
    if (there < 0) return "cannot look up " + quoted(prefix) + " in " + quoted(file) + " (" + h5_error_text() + ")";
    if (there == 0) return "";
    Handle object(H5Oopen(h5.get(), prefix.c_str(), H5P_DEFAULT), H5Oclose);
    const H5I_type_t type = object.valid() ? H5Iget_type(object.get()) : H5I_BADID;
    if (pos != name.size()) {
      if (type != H5I_GROUP)
        return quoted(prefix) + " in " + quoted(file) + " is not a group, so " + quoted(name) + " cannot be made";
      continue;
    }
    if (type == H5I_GROUP) return quoted(name) + " in " + quoted(file) + " is a group, not a dataset";
    if (!overwrite) return "dataset " + quoted_path(path) + " already exists (give --overwrite to replace it)";
    *replace = true;
  }
  return "";
}

// Copies `from` to the new file `to` (created here, with from's permission bits). "" or the problem.
std::string copy_file(const std::string& from, const std::string& to) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return "cannot read " + quoted(from) + ": " + std::strerror(errno);
  struct stat st {};
  if (fstat(in, &st) != 0) st.st_mode = 0644;
  const int out = open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st.st_mode & 07777);
  if (out < 0) {
    const int error = errno;
    close(in);
    return "cannot create " + quoted(to) + ": " + std::strerror(error);
  }
  std::string problem;
  std::vector<char> buffer(std::size_t(4) << 20);
  while (problem.empty()) {
    const ssize_t got = read(in, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) problem = "cannot read " + quoted(from) + ": " + std::strerror(errno);
    if (got <= 0) break;
    for (ssize_t done = 0; done < got && problem.empty();) {
      const ssize_t put = write(out, buffer.data() + done, static_cast<std::size_t>(got - done));
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) problem = "cannot copy " + quoted(from) + " to " + quoted(to) + ": " + std::strerror(errno);
      else done += put;
    }
  }
  if (problem.empty()) fchmod(out, st.st_mode & 07777);  // the umask may have narrowed them
  if (close(out) != 0 && problem.empty())
    problem = "cannot copy " + quoted(from) + " to " + quoted(to) + ": " + std::strerror(errno);
  close(in);
  return problem;
}

// What rank 0 decided about an output, for every rank in one broadcast.
struct OutputPlan {
  char message[1024] = {};  // a UsageError's text; empty when the write goes ahead
  char temporary[PATH_MAX + 1] = {};
  int copy_of_existing = 0;  // the temporary is a copy of the existing file ...
  int replace_dataset = 0;   // ... whose dataset of the same name is unlinked before the new one is made
};

// Rank 0: checks the destination again (it may have changed since start-up), removes temporaries
// that killed writers left there, and makes the temporary: a copy of the existing file, or nothing
// yet (HDF5 creates it).
void plan_output(const DatasetPath& path, bool overwrite, OutputPlan& plan, bool replace_file = false) {
  bool exists = false, replace = false;
  std::string problem = check_destination(path, overwrite, &exists, &replace, replace_file);
  if (problem.empty()) {
    detail::remove_stale_temporaries(path.file);
    const std::string temporary = detail::temporary_name_for(path.file);
    if (temporary.size() >= sizeof plan.temporary) {
      problem = "the path " + quoted(path.file) + " is too long";
    } else {
      set_text(plan.temporary, sizeof plan.temporary, temporary);
      if (exists) {
        detail::register_temporary_file(temporary);  // an interrupted copy is removed too
        problem = copy_file(path.file, temporary);
        if (!problem.empty()) {
          detail::remove_temporary_file();
          detail::unregister_temporary_file();
        }
      }
    }
  }
  if (!problem.empty()) set_text(plan.message, sizeof plan.message, "--output: " + problem);
  plan.copy_of_existing = exists ? 1 : 0;
  plan.replace_dataset = replace ? 1 : 0;
}

// The temporary is registered on every rank while the write runs: an exception removes it here,
// a fatal error or a signal in the handlers of temporary_file.hpp.
class TemporaryGuard {
 public:
  explicit TemporaryGuard(const std::string& path) { detail::register_temporary_file(path); }
  ~TemporaryGuard() {
    if (!committed_) detail::remove_temporary_file();
    detail::unregister_temporary_file();
  }
  TemporaryGuard(const TemporaryGuard&) = delete;
  TemporaryGuard& operator=(const TemporaryGuard&) = delete;
  void commit() { committed_ = true; }

 private:
  bool committed_ = false;
};

// Opens the temporary (a copy of the existing file) or creates it, unlinks the dataset being
// replaced, and creates the new one with its attributes; returns the file, the dataset in `dset`.
// Collective under parallel HDF5.
Handle create_output(const Context& ctx, const OutputPlan& plan, const std::string& dataset, hid_t file_type,
                     int ndims, const hsize_t* dims, const OutputAttributes& attributes, Handle& dset) {
  Handle fapl = file_access(ctx);
  Handle f(plan.copy_of_existing ? TESSERA_H5_CHECK(H5Fopen(plan.temporary, H5F_ACC_RDWR, fapl.get()))
                                 : TESSERA_H5_CHECK(H5Fcreate(plan.temporary, H5F_ACC_EXCL, H5P_DEFAULT, fapl.get())),
           H5Fclose);
  if (plan.replace_dataset) TESSERA_H5_CHECK(H5Ldelete(f.get(), dataset.c_str(), H5P_DEFAULT));
  Handle lcpl(TESSERA_H5_CHECK(H5Pcreate(H5P_LINK_CREATE)), H5Pclose);
  TESSERA_H5_CHECK(H5Pset_create_intermediate_group(lcpl.get(), 1));
  Handle space(TESSERA_H5_CHECK(H5Screate_simple(ndims, dims, nullptr)), H5Sclose);
  dset = Handle(TESSERA_H5_CHECK(H5Dcreate2(f.get(), dataset.c_str(), file_type, space.get(), lcpl.get(),
                                            H5P_DEFAULT, H5P_DEFAULT)),
                H5Dclose);
  write_attributes(dset.get(), attributes);
  return f;
}

// The common path of write_array and write_matrix: rank 0 plans (and copies an existing file to
// the temporary name), every rank writes its block into the temporary (collectively, or in rank
// order with a token), then rank 0 renames it over the destination after a barrier.
template <class T>
void write_blocks(const Context& ctx, const DatasetPath& path, const OutputAttributes& attributes, int ndims,
                  const hsize_t* dims, const index_t* start, const index_t* count, const std::vector<T>& host) {
  OutputPlan plan;
  if (ctx.is_root()) plan_output(path, attributes.overwrite, plan, attributes.replace_file);
  ctx.comm().bcast(reinterpret_cast<unsigned char*>(&plan), static_cast<index_t>(sizeof plan), 0);
  if (plan.message[0]) throw UsageError(plan.message);
  TemporaryGuard guard(plan.temporary);
  // The file type is the little-endian standard type, whatever the host, so files compare anywhere.
  const hid_t element_file_type = file_type<T>();
  void* buffer = const_cast<T*>(host.data());
  if (parallel_io()) {
    // Declared file first, so that the dataset closes before the file does (an MPI-IO file does not
    // close while objects in it are open).
    Handle file;
    Handle dset;
    file = create_output(ctx, plan, path.dataset, element_file_type, ndims, dims, attributes, dset);
    transfer_block(ctx, dset.get(), memory_type<T>(), sizeof(T), ndims, start, count, buffer, true);
    dset.close_checked();
    file.close_checked();
  } else {
    // Rank r writes after rank r - 1 has closed the file: a serial HDF5 file has one writer at a time.
    constexpr int kTokenTag = 7301;
    const Communicator& comm = ctx.comm();
    int token = 0;
    if (comm.rank() > 0) comm.recv(&token, 1, comm.rank() - 1, kTokenTag);
    {
      Handle file;  // declared first: closes after the dataset
      Handle dset;
      if (comm.rank() == 0) {
        file = create_output(ctx, plan, path.dataset, element_file_type, ndims, dims, attributes, dset);
      } else {
        file = open_file(ctx, plan.temporary, H5F_ACC_RDWR);
        dset = Handle(TESSERA_H5_CHECK(H5Dopen2(file.get(), path.dataset.c_str(), H5P_DEFAULT)), H5Dclose);
      }
      transfer_block(ctx, dset.get(), memory_type<T>(), sizeof(T), ndims, start, count, buffer, true);
      dset.close_checked();
      file.close_checked();
    }
    if (comm.rank() + 1 < comm.size()) comm.send(&token, 1, comm.rank() + 1, kTokenTag);
  }
  TESSERA_FAULT_POINT("write");
  // Every rank has closed the file before rank 0 gives it its final name.
  ctx.comm().barrier();
  char error[1024] = {};
  if (ctx.is_root() && std::rename(plan.temporary, path.file.c_str()) != 0)
    std::snprintf(error, sizeof error, "--output: cannot rename '%s' to '%s': %s", plan.temporary, path.file.c_str(),
                  std::strerror(errno));
  ctx.comm().bcast(error, sizeof error, 0);
  if (error[0]) throw UsageError(error);  // the guard removes the temporary
  guard.commit();
}

}  // namespace

// ---- public functions -------------------------------------------------------------------------------

const char* to_string(DType t) {
  switch (t) {
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::float32: return "float32";
    case DType::float64: return "float64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view text) {
  if (text == "int32") return DType::int32;
  if (text == "int64") return DType::int64;
  if (text == "float32" || text == "float") return DType::float32;
  if (text == "float64" || text == "double") return DType::float64;
  return std::nullopt;
}

std::size_t size_of(DType t) { return t == DType::int32 || t == DType::float32 ? 4 : 8; }

DatasetPath parse_dataset_path(std::string_view text, std::string_view flag) {
  const auto colon = text.rfind(":/");
  if (colon == std::string_view::npos || colon == 0)
    throw UsageError(std::string(flag) + ": expected FILE.h5:/DATASET, got '" + std::string(text) + "'");
  DatasetPath path{std::string(text.substr(0, colon)), std::string(text.substr(colon + 1))};
  const auto not_a_name = [&](const std::string& why) {
    return UsageError(std::string(flag) + ": '" + path.dataset + "' is not a dataset name (" + why + ")");
  };
  if (path.dataset.size() < 2 || path.dataset.back() == '/' || path.dataset.find("//") != std::string::npos)
    throw not_a_name("expected /NAME or /GROUP/NAME");
  // HDF5 gives "." and ".." no special meaning in a path, but refuses them as names.
  for (std::size_t begin = 1; begin <= path.dataset.size();) {
    const auto end = std::min(path.dataset.find('/', begin), path.dataset.size());
    const std::string component = path.dataset.substr(begin, end - begin);
    if (component == "." || component == "..") throw not_a_name("'" + component + "' cannot name a group or dataset");
    begin = end + 1;
  }
  return path;
}

namespace {

DatasetInfo probe(const Context& ctx, const DatasetPath& path, std::string_view flag, bool need_dtype) {
  ProbeRecord record;
  if (ctx.is_root()) probe_on_root(path, flag, record, need_dtype);
  ctx.comm().bcast(reinterpret_cast<unsigned char*>(&record), static_cast<index_t>(sizeof record), 0);
  if (!record.ok) throw UsageError(record.message);
  DatasetInfo info;
  info.dtype = static_cast<DType>(record.dtype);
  info.shape.assign(record.dims, record.dims + record.ndims);
  info.type_name = record.type_name;
  return info;
}

}  // namespace

DatasetInfo probe_dataset(const Context& ctx, const DatasetPath& path, std::string_view flag) {
  return probe(ctx, path, flag, /*need_dtype=*/true);
}

template <class T>
DistArray<T> read_array(const Context& ctx, const DatasetPath& path, std::string_view flag) {
  QuietErrors quiet;
  const DatasetInfo info = probe(ctx, path, flag, /*need_dtype=*/false);
  if (info.shape.size() != 1)
    throw UsageError(std::string(flag) + ": dataset '" + path.dataset + "' in '" + path.file + "' is " +
                     shape_text(info.shape) + "; a 1-D dataset is needed");
  // The block and its host staging buffer, agreed on before the collective reads: a rank without
  // room stops every rank with one line.
  const Partition partition = Partition::block(info.shape[0], ctx.size());
  const index_t local = partition.local_size(ctx.rank());
  const std::size_t block_bytes = kernels::array_bytes(partition.local_size(0), sizeof(T), "a block");
  auto [array, host] = make_collectively(
      ctx,
      std::string(flag) + ": dataset '" + path.dataset + "' in '" + path.file + "' (" + std::to_string(info.shape[0]) +
          " elements) needs " + format_bytes(2.0 * static_cast<double>(block_bytes)) + " per rank on " +
          std::to_string(ctx.size()) + " rank(s), its block and a host copy",
      [&] {
        DistArray<T> block(ctx, partition);  // first: a device block that cannot be made stops here
        kernels::require_host_memory(static_cast<std::size_t>(local) * sizeof(T));
        std::vector<T> staging(static_cast<std::size_t>(local));
        return std::pair<DistArray<T>, std::vector<T>>(std::move(block), std::move(staging));
      });
  const index_t start = array.global_offset();
  const index_t count = array.local_size();
  array.local_from_host(read_block<T>(ctx, path, flag, info, 1, &start, &count, std::move(host)));
  return array;
}

template <class T>
DistMatrix<T> read_matrix(const ProcessGrid& grid, const DatasetPath& path, std::string_view flag) {
  QuietErrors quiet;
  const Context& ctx = grid.context();
  const DatasetInfo info = probe_dataset(ctx, path, flag);
  if (info.shape.size() != 2)
    throw UsageError(std::string(flag) + ": dataset '" + path.dataset + "' in '" + path.file + "' is " +
                     shape_text(info.shape) + "; a 2-D matrix is needed");
  DistMatrix<T> matrix(grid, info.shape[0], info.shape[1]);
  const index_t start[2] = {matrix.row_offset(), matrix.col_offset()};
  const index_t count[2] = {matrix.local_rows(), matrix.local_cols()};
  kernels::require_host_memory(static_cast<std::size_t>(count[0] * count[1]) * sizeof(T),
                               std::string(flag) + ": a host copy of this rank's block");
  matrix.local_from_host(read_block<T>(ctx, path, flag, info, 2, start, count,
                                      std::vector<T>(static_cast<std::size_t>(count[0] * count[1]))));
  return matrix;
}

void check_output_path(const Context& ctx, const DatasetPath& path, std::string_view flag, bool overwrite,
                       bool replace_file) {
  char error[1024] = {};
  if (ctx.is_root()) {
    QuietErrors quiet;
    bool exists = false, replace = false;
    const std::string what = check_destination(path, overwrite, &exists, &replace, replace_file);
    if (!what.empty()) std::snprintf(error, sizeof error, "%s: %s", std::string(flag).c_str(), what.c_str());
  }
  ctx.comm().bcast(error, sizeof error, 0);
  if (error[0]) throw UsageError(error);
}

void check_output_file(const Context& ctx, const std::string& file, std::string_view flag) {
  char error[1024] = {};
  if (ctx.is_root()) {
    const std::string directory = directory_of(file);
    struct stat st {};
    std::string what;
    if (file.empty() || file.back() == '/') {
      what = "'" + file + "' is not a file name";
    } else if (stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      what = "no such directory '" + directory + "' for '" + file + "'";
    } else if (access(directory.c_str(), W_OK | X_OK) != 0) {
      what = "cannot write in directory '" + directory + "' (permission denied)";
    } else if (stat(file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      what = "'" + file + "' is a directory";
    }
    if (!what.empty()) std::snprintf(error, sizeof error, "%s: %s", std::string(flag).c_str(), what.c_str());
  }
  ctx.comm().bcast(error, sizeof error, 0);
  if (error[0]) throw UsageError(error);
}

template <class T>
void write_array(const DistArray<T>& array, const DatasetPath& path, const OutputAttributes& attributes) {
  const hsize_t dims[1] = {static_cast<hsize_t>(array.global_size())};
  const index_t start = array.global_offset();
  const index_t count = array.local_size();
  QuietErrors quiet;
  write_blocks<T>(array.context(), path, attributes, 1, dims, &start, &count, array.local_to_host());
}

template <class T>
void write_matrix(const DistMatrix<T>& matrix, const DatasetPath& path, const OutputAttributes& attributes) {
  const hsize_t dims[2] = {static_cast<hsize_t>(matrix.rows()), static_cast<hsize_t>(matrix.cols())};
  const index_t start[2] = {matrix.row_offset(), matrix.col_offset()};
  const index_t count[2] = {matrix.local_rows(), matrix.local_cols()};
  QuietErrors quiet;
  write_blocks<T>(matrix.grid().context(), path, attributes, 2, dims, start, count, matrix.local_to_host());
}

// ---- fields and attributes ------------------------------------------------------------------------------

template <class T>
void write_field(const Field2D<T>& field, const DatasetPath& path, const OutputAttributes& attributes) {
  const hsize_t dims[2] = {static_cast<hsize_t>(field.rows()), static_cast<hsize_t>(field.cols())};
  const index_t start[2] = {field.row_offset(), field.col_offset()};
  const index_t count[2] = {field.local_rows(), field.local_cols()};
  QuietErrors quiet;
  write_blocks<T>(field.context(), path, attributes, 2, dims, start, count, field.local_to_host());
}

template <class T>
void read_field(Field2D<T>& field, const DatasetPath& path, std::string_view flag) {
  QuietErrors quiet;
  const Context& ctx = field.context();
  const DatasetInfo info = probe(ctx, path, flag, /*need_dtype=*/false);
  if (info.shape.size() != 2 || info.shape[0] != field.rows() || info.shape[1] != field.cols())
    throw UsageError(std::string(flag) + ": dataset '" + path.dataset + "' in '" + path.file + "' is " +
                     shape_text(info.shape) + "; this run's field is 2-D (" + std::to_string(field.rows()) + " x " +
                     std::to_string(field.cols()) + ")");
  const index_t start[2] = {field.row_offset(), field.col_offset()};
  const index_t count[2] = {field.local_rows(), field.local_cols()};
  kernels::require_host_memory(static_cast<std::size_t>(count[0] * count[1]) * sizeof(T),
                               std::string(flag) + ": a host copy of this rank's block");
  const std::vector<T> block =
      read_block<T>(ctx, path, flag, info, 2, start, count, std::vector<T>(static_cast<std::size_t>(count[0] * count[1])));
  field.local_from_host(block);
}

namespace {

using AttributeList = std::vector<std::pair<std::string, std::string>>;

// H5Aiterate2's callback: scalar string, integer and floating-point attributes, as text.
herr_t collect_attribute(hid_t location, const char* name, const H5A_info_t*, void* data) {
  auto& out = *static_cast<AttributeList*>(data);
  Handle attr(H5Aopen(location, name, H5P_DEFAULT), H5Aclose);
  if (!attr.valid()) return 0;
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (!type.valid() || !space.valid() || H5Sget_simple_extent_npoints(space.get()) != 1) return 0;
  switch (H5Tget_class(type.get())) {
    case H5T_STRING: {
      Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
      if (H5Tis_variable_str(type.get()) > 0) {
        H5Tset_size(memory.get(), H5T_VARIABLE);
        H5Tset_cset(memory.get(), H5Tget_cset(type.get()));
        char* value = nullptr;
        if (H5Aread(attr.get(), memory.get(), &value) >= 0 && value) {
          out.emplace_back(name, value);
          H5free_memory(value);
        }
      } else {
        const std::size_t size = H5Tget_size(type.get());
        std::vector<char> value(size + 1, '\0');
        H5Tset_size(memory.get(), size + 1);
        if (H5Aread(attr.get(), memory.get(), value.data()) >= 0) out.emplace_back(name, std::string(value.data()));
      }
      break;
    }
    case H5T_INTEGER: {
      long long value = 0;
      if (H5Aread(attr.get(), H5T_NATIVE_LLONG, &value) >= 0) out.emplace_back(name, std::to_string(value));
      break;
    }
    case H5T_FLOAT: {
      double value = 0;
      if (H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value) >= 0) {
        char digits[64] = {};
        const auto written = std::to_chars(digits, digits + sizeof digits - 1, value);
        out.emplace_back(name, std::string(digits, written.ptr));
      }
      break;
    }
    default: break;
  }
  return 0;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> read_attributes(const Context& ctx, const DatasetPath& path,
                                                                 std::string_view flag) {
  QuietErrors quiet;
  (void)probe(ctx, path, flag, /*need_dtype=*/false);  // a missing file or dataset: the usual message
  std::string packed;  // name, NUL, value, NUL, ...
  if (ctx.is_root()) {
    AttributeList found;
    Handle file(H5Fopen(path.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    Handle dset(file.valid() ? H5Dopen2(file.get(), path.dataset.c_str(), H5P_DEFAULT) : H5I_INVALID_HID, H5Dclose);
    if (dset.valid()) H5Aiterate2(dset.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, &collect_attribute, &found);
    for (const auto& [name, value] : found) {
      packed += name;
      packed += '\0';
      packed += value;
      packed += '\0';
    }
  }
  index_t size = ctx.comm().bcast_value(static_cast<index_t>(packed.size()), 0);
  packed.resize(static_cast<std::size_t>(size));
  ctx.comm().bcast(packed.data(), size, 0);
  AttributeList out;
  for (std::size_t at = 0; at < packed.size();) {
    const std::size_t name_end = packed.find('\0', at);
    const std::size_t value_end = packed.find('\0', name_end + 1);
    out.emplace_back(packed.substr(at, name_end - at), packed.substr(name_end + 1, value_end - name_end - 1));
    at = value_end + 1;
  }
  return out;
}

template void write_field<float>(const Field2D<float>&, const DatasetPath&, const OutputAttributes&);
template void write_field<double>(const Field2D<double>&, const DatasetPath&, const OutputAttributes&);
template void read_field<float>(Field2D<float>&, const DatasetPath&, std::string_view);
template void read_field<double>(Field2D<double>&, const DatasetPath&, std::string_view);

// Arrays of every arithmetic element type; matrices of the four the matrix code has.
#define TESSERA_IO_INSTANTIATE_ARRAY(T)                                                              \
  template DistArray<T> read_array<T>(const Context&, const DatasetPath&, std::string_view);          \
  template void write_array<T>(const DistArray<T>&, const DatasetPath&, const OutputAttributes&);
#define TESSERA_IO_INSTANTIATE_MATRIX(T)                                                             \
  template DistMatrix<T> read_matrix<T>(const ProcessGrid&, const DatasetPath&, std::string_view);    \
  template void write_matrix<T>(const DistMatrix<T>&, const DatasetPath&, const OutputAttributes&);
TESSERA_IO_INSTANTIATE_ARRAY(std::int8_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::int16_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::int32_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::int64_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::uint8_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::uint16_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::uint32_t)
TESSERA_IO_INSTANTIATE_ARRAY(std::uint64_t)
TESSERA_IO_INSTANTIATE_ARRAY(float)
TESSERA_IO_INSTANTIATE_ARRAY(double)
TESSERA_IO_INSTANTIATE_MATRIX(std::int32_t)
TESSERA_IO_INSTANTIATE_MATRIX(std::int64_t)
TESSERA_IO_INSTANTIATE_MATRIX(float)
TESSERA_IO_INSTANTIATE_MATRIX(double)

}  // namespace tessera::io

// ---- two datasets in one commit ---------------------------------------------------------------------

namespace tessera::io {
namespace {

// One 1-D dataset of a paired write: this rank's block and where it goes.
struct PairPart {
  std::string dataset;
  hid_t file_type;
  hid_t memory_type;
  std::size_t element_bytes;
  hsize_t global_size;
  index_t start;
  index_t count;
  void* buffer;
  const OutputAttributes* attributes;
};

// Creates a part's dataset in the open file `f` (unlinking the one it replaces) with its attributes.
Handle create_part(hid_t f, const PairPart& part, bool replace) {
  if (replace) TESSERA_H5_CHECK(H5Ldelete(f, part.dataset.c_str(), H5P_DEFAULT));
  Handle lcpl(TESSERA_H5_CHECK(H5Pcreate(H5P_LINK_CREATE)), H5Pclose);
  TESSERA_H5_CHECK(H5Pset_create_intermediate_group(lcpl.get(), 1));
  Handle space(TESSERA_H5_CHECK(H5Screate_simple(1, &part.global_size, nullptr)), H5Sclose);
  Handle dset(TESSERA_H5_CHECK(H5Dcreate2(f, part.dataset.c_str(), part.file_type, space.get(), lcpl.get(), H5P_DEFAULT,
                                          H5P_DEFAULT)),
              H5Dclose);
  write_attributes(dset.get(), *part.attributes);
  return dset;
}

// write_blocks for two datasets: rank 0 checks the second destination and plans the output (the
// first's), every rank writes its blocks of both into the temporary, rank 0 renames it.
void write_pair(const Context& ctx, const DatasetPath& path, const PairPart (&parts)[2]) {
  const bool overwrite = parts[0].attributes->overwrite;
  OutputPlan plan;
  int replace_second = 0;
  if (ctx.is_root()) {
    bool exists = false, replace = false;
    const std::string problem = check_destination({path.file, parts[1].dataset}, overwrite, &exists, &replace);
    if (!problem.empty()) set_text(plan.message, sizeof plan.message, "--output: " + problem);
    else if (parts[1].dataset == parts[0].dataset)
      set_text(plan.message, sizeof plan.message, "--output: both datasets are named " + quoted(parts[0].dataset));
    else plan_output(path, overwrite, plan);
    replace_second = replace ? 1 : 0;
  }
  ctx.comm().bcast(reinterpret_cast<unsigned char*>(&plan), static_cast<index_t>(sizeof plan), 0);
  replace_second = ctx.comm().bcast_value(replace_second, 0);
  if (plan.message[0]) throw UsageError(plan.message);
  TemporaryGuard guard(plan.temporary);
  const bool replace[2] = {plan.replace_dataset != 0, replace_second != 0};
  auto write_parts = [&](hid_t f, bool create) {
    for (int i = 0; i < 2; ++i) {
      const PairPart& part = parts[i];
      Handle dset = create ? create_part(f, part, replace[i])
                           : Handle(TESSERA_H5_CHECK(H5Dopen2(f, part.dataset.c_str(), H5P_DEFAULT)), H5Dclose);
      transfer_block(ctx, dset.get(), part.memory_type, part.element_bytes, 1, &part.start, &part.count, part.buffer, true);
      dset.close_checked();
    }
  };
  if (parallel_io()) {
    Handle fapl = file_access(ctx);
    Handle f(plan.copy_of_existing ? TESSERA_H5_CHECK(H5Fopen(plan.temporary, H5F_ACC_RDWR, fapl.get()))
                                   : TESSERA_H5_CHECK(H5Fcreate(plan.temporary, H5F_ACC_EXCL, H5P_DEFAULT, fapl.get())),
             H5Fclose);
    write_parts(f.get(), true);
    f.close_checked();
  } else {
    // One writer at a time (serial HDF5): rank 0 creates both datasets, the others add their blocks.
    constexpr int kTokenTag = 7302;
    const Communicator& comm = ctx.comm();
    int token = 0;
    if (comm.rank() > 0) comm.recv(&token, 1, comm.rank() - 1, kTokenTag);
    {
      Handle f;
      if (comm.rank() == 0) {
        Handle fapl = file_access(ctx);
        f = Handle(plan.copy_of_existing ? TESSERA_H5_CHECK(H5Fopen(plan.temporary, H5F_ACC_RDWR, fapl.get()))
                                         : TESSERA_H5_CHECK(H5Fcreate(plan.temporary, H5F_ACC_EXCL, H5P_DEFAULT, fapl.get())),
                   H5Fclose);
      } else {
        f = open_file(ctx, plan.temporary, H5F_ACC_RDWR);
      }
      write_parts(f.get(), comm.rank() == 0);
      f.close_checked();
    }
    if (comm.rank() + 1 < comm.size()) comm.send(&token, 1, comm.rank() + 1, kTokenTag);
  }
  TESSERA_FAULT_POINT("write");
  ctx.comm().barrier();
  char error[1024] = {};
  if (ctx.is_root() && std::rename(plan.temporary, path.file.c_str()) != 0)
    std::snprintf(error, sizeof error, "--output: cannot rename '%s' to '%s': %s", plan.temporary, path.file.c_str(),
                  std::strerror(errno));
  ctx.comm().bcast(error, sizeof error, 0);
  if (error[0]) throw UsageError(error);
  guard.commit();
}

}  // namespace

template <class A, class B>
void write_array_pair(const DistArray<A>& first, const DatasetPath& path, const OutputAttributes& first_attributes,
                      const DistArray<B>& second, const std::string& second_dataset,
                      const OutputAttributes& second_attributes) {
  TESSERA_ASSERT(first.context().comm().get() == second.context().comm().get(),
                 "write_array_pair: the arrays live on different contexts");
  QuietErrors quiet;
  std::vector<A> first_host = first.local_to_host();
  std::vector<B> second_host = second.local_to_host();
  const PairPart parts[2] = {
      {path.dataset, file_type<A>(), memory_type<A>(), sizeof(A), static_cast<hsize_t>(first.global_size()),
       first.global_offset(), first.local_size(), first_host.data(), &first_attributes},
      {second_dataset, file_type<B>(), memory_type<B>(), sizeof(B), static_cast<hsize_t>(second.global_size()),
       second.global_offset(), second.local_size(), second_host.data(), &second_attributes}};
  write_pair(first.context(), path, parts);
}

template void write_array_pair<std::int64_t, double>(const DistArray<std::int64_t>&, const DatasetPath&,
                                                    const OutputAttributes&, const DistArray<double>&,
                                                    const std::string&, const OutputAttributes&);

}  // namespace tessera::io
