// HDF5 input and output (io.hpp): probing on rank 0 with a broadcast verdict, hyperslab reads and
// writes in pieces below MPI-IO's 2 GiB limit, and the write-then-rename of output files.
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "tessera/build_config.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/kernels/error.hpp"

// TESSERA_IO_FORCE_SERIAL (a compile definition) takes the serial-HDF5 path with a parallel library
// too, so that the path the GPU machine's serial HDF5 takes can be tested where MPI-IO exists.
#if TESSERA_HDF5_PARALLEL && defined(H5_HAVE_PARALLEL) && !defined(TESSERA_IO_FORCE_SERIAL)
#define TESSERA_IO_PARALLEL 1
#else
#define TESSERA_IO_PARALLEL 0
#endif

// HDF5 calls return a negative value on failure. A failure after rank 0 validated the input is not
// the user's doing (a file changed under us, a full disk): the job ends with the call's text.
#define TESSERA_H5_CHECK(call)                                                                  \
  ([&]() {                                                                                      \
    auto tessera_h5_result_ = (call);                                                           \
    if (tessera_h5_result_ < 0) ::tessera::fatal(__FILE__, __LINE__, #call, "HDF5 call failed"); \
    return tessera_h5_result_;                                                                  \
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

// Silences HDF5's printed error stack while rank 0 probes a user's file: a missing dataset is a
// usage error reported in one line, not a page of library internals.
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

// Opens a file every rank of ctx reads from (MPI-IO under parallel HDF5) or writes to.
Handle open_file(const Context& ctx, const std::string& file, unsigned flags) {
  Handle fapl(TESSERA_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
#if TESSERA_IO_PARALLEL
  TESSERA_H5_CHECK(H5Pset_fapl_mpio(fapl.get(), ctx.comm().get(), MPI_INFO_NULL));
#else
  (void)ctx;
#endif
  return Handle(TESSERA_H5_CHECK(H5Fopen(file.c_str(), flags, fapl.get())), H5Fclose);
}

// Elements per H5Dread / H5Dwrite call: MPI-IO (and HDF5 1.10 over it) cannot move 2 GiB or more
// in one operation, so a large slab goes in pieces of whole rows.
constexpr index_t kPieceBytes = index_t(1) << 30;

// Moves this rank's block [start, start + count) of a 1-D or 2-D dataset (2-D: start/count per
// dimension; the block is contiguous in memory, row-major) between `buffer` and the file. Under
// parallel HDF5 every rank makes the same number of collective calls (empty selections included).
void transfer_block(const Context& ctx, hid_t dset, hid_t mem_type, std::size_t element_bytes, int ndims,
                    const index_t* start, const index_t* count, void* buffer, bool write) {
  const index_t row_elements = ndims == 2 ? count[1] : 1;
  const index_t total = ndims == 2 ? count[0] * count[1] : count[0];
  const index_t rows_per_piece =
      std::max<index_t>(1, kPieceBytes / static_cast<index_t>(element_bytes) / std::max<index_t>(row_elements, 1));
  index_t pieces = total == 0 ? 0 : (count[0] + rows_per_piece - 1) / rows_per_piece;
#if TESSERA_IO_PARALLEL
  pieces = ctx.comm().allreduce(pieces, ReduceOp::max);
  Handle dxpl(TESSERA_H5_CHECK(H5Pcreate(H5P_DATASET_XFER)), H5Pclose);
  TESSERA_H5_CHECK(H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE));
  // Writes stay collective for HDF5 but reach MPI-IO as independent writes: Open MPI 4.1's OMPIO
  // two-phase collective write was seen to corrupt small unaligned 2-D slabs (tests/apps matmul at
  // 3 ranks, 4 runs in 5) where independent writes and ROMIO are correct.
  if (write) TESSERA_H5_CHECK(H5Pset_dxpl_mpio_collective_opt(dxpl.get(), H5FD_MPIO_INDIVIDUAL_IO));
  const hid_t xfer = dxpl.get();
#else
  (void)ctx;
  const hid_t xfer = H5P_DEFAULT;
#endif
  Handle file_space(TESSERA_H5_CHECK(H5Dget_space(dset)), H5Sclose);
  char* bytes = static_cast<char*>(buffer);
  char dummy[16] = {};
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
    if (write)
      TESSERA_H5_CHECK(H5Dwrite(dset, mem_type, mem_space.get(), file_space.get(), xfer, piece_buffer));
    else
      TESSERA_H5_CHECK(H5Dread(dset, mem_type, mem_space.get(), file_space.get(), xfer, piece_buffer));
  }
}

// Reads this rank's block of a dataset that probe_dataset accepted.
template <class T>
std::vector<T> read_block(const Context& ctx, const DatasetPath& path, int ndims, const index_t* start,
                          const index_t* count, std::vector<T> host) {
  const index_t total = ndims == 2 ? count[0] * count[1] : count[0];
  TESSERA_ASSERT(static_cast<index_t>(host.size()) == total, "read_block: host buffer of the wrong size");
  // Serial HDF5: every rank opens the file read-only on its own, and reads independently.
  Handle file = open_file(ctx, path.file, H5F_ACC_RDONLY);
  Handle dset(TESSERA_H5_CHECK(H5Dopen2(file.get(), path.dataset.c_str(), H5P_DEFAULT)), H5Dclose);
  transfer_block(ctx, dset.get(), memory_type<T>(), sizeof(T), ndims, start, count, host.data(), false);
  return host;
}

// ---- writing -------------------------------------------------------------------------------------

std::string directory_of(const std::string& file) {
  const auto slash = file.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return file.substr(0, slash);
}

std::string base_name_of(const std::string& file) {
  const auto slash = file.find_last_of('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

// A name in the destination directory (so that rename() is atomic), chosen by rank 0 and shared.
std::string temporary_name(const Context& ctx, const std::string& file) {
  char name[4096] = {};
  if (ctx.is_root()) {
    const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
    std::snprintf(name, sizeof name, "%s/.%s.tmp-%ld-%llx", directory_of(file).c_str(), base_name_of(file).c_str(),
                  static_cast<long>(getpid()), static_cast<unsigned long long>(ticks));
  }
  ctx.comm().bcast(name, sizeof name, 0);
  return name;
}

void write_string_attribute(hid_t object, const std::string& name, const std::string& value) {
  Handle type(TESSERA_H5_CHECK(H5Tcopy(H5T_C_S1)), H5Tclose);
  TESSERA_H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  TESSERA_H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  Handle space(TESSERA_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose);
  Handle attr(TESSERA_H5_CHECK(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)),
              H5Aclose);
  const char* text = value.c_str();
  TESSERA_H5_CHECK(H5Awrite(attr.get(), type.get(), &text));
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

// Creates the file (truncating) and its one dataset; returns the file, the dataset in `dset`.
Handle create_file(const Context& ctx, const std::string& file, const std::string& dataset, hid_t file_type,
                   int ndims, const hsize_t* dims, const OutputAttributes& attributes, Handle& dset) {
  Handle fapl(TESSERA_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)), H5Pclose);
#if TESSERA_IO_PARALLEL
  TESSERA_H5_CHECK(H5Pset_fapl_mpio(fapl.get(), ctx.comm().get(), MPI_INFO_NULL));
#else
  (void)ctx;
#endif
  Handle f(TESSERA_H5_CHECK(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get())), H5Fclose);
  Handle lcpl(TESSERA_H5_CHECK(H5Pcreate(H5P_LINK_CREATE)), H5Pclose);
  TESSERA_H5_CHECK(H5Pset_create_intermediate_group(lcpl.get(), 1));
  Handle space(TESSERA_H5_CHECK(H5Screate_simple(ndims, dims, nullptr)), H5Sclose);
  dset = Handle(TESSERA_H5_CHECK(H5Dcreate2(f.get(), dataset.c_str(), file_type, space.get(), lcpl.get(),
                                            H5P_DEFAULT, H5P_DEFAULT)),
                H5Dclose);
  write_attributes(dset.get(), attributes);
  return f;
}

// The common path of write_array and write_matrix: create under a temporary name, every rank writes
// its block (collectively, or in rank order with a token), then rank 0 renames after a barrier.
template <class T>
void write_blocks(const Context& ctx, const DatasetPath& path, const OutputAttributes& attributes, int ndims,
                  const hsize_t* dims, const index_t* start, const index_t* count, const std::vector<T>& host) {
  const std::string temporary = temporary_name(ctx, path.file);
  // The file type is the little-endian standard type, whatever the host, so files compare anywhere.
  const hid_t element_file_type = file_type<T>();
  void* buffer = const_cast<T*>(host.data());
#if TESSERA_IO_PARALLEL
  {
    // Declared file first, so that the dataset closes before the file does (an MPI-IO file does not
    // close while objects in it are open).
    Handle file;
    Handle dset;
    file = create_file(ctx, temporary, path.dataset, element_file_type, ndims, dims, attributes, dset);
    transfer_block(ctx, dset.get(), memory_type<T>(), sizeof(T), ndims, start, count, buffer, true);
    dset.close_checked();
    file.close_checked();
  }
#else
  // Rank r writes after rank r - 1 has closed the file: a serial HDF5 file has one writer at a time.
  constexpr int kTokenTag = 7301;
  const Communicator& comm = ctx.comm();
  int token = 0;
  if (comm.rank() > 0) comm.recv(&token, 1, comm.rank() - 1, kTokenTag);
  {
    Handle file;  // declared first: closes after the dataset
    Handle dset;
    if (comm.rank() == 0) {
      file = create_file(ctx, temporary, path.dataset, element_file_type, ndims, dims, attributes, dset);
    } else {
      file = open_file(ctx, temporary, H5F_ACC_RDWR);
      dset = Handle(TESSERA_H5_CHECK(H5Dopen2(file.get(), path.dataset.c_str(), H5P_DEFAULT)), H5Dclose);
    }
    transfer_block(ctx, dset.get(), memory_type<T>(), sizeof(T), ndims, start, count, buffer, true);
    dset.close_checked();
    file.close_checked();
  }
  if (comm.rank() + 1 < comm.size()) comm.send(&token, 1, comm.rank() + 1, kTokenTag);
#endif
  // Every rank has closed the file before rank 0 gives it its final name.
  ctx.comm().barrier();
  char error[1024] = {};
  if (ctx.is_root() && std::rename(temporary.c_str(), path.file.c_str()) != 0) {
    std::snprintf(error, sizeof error, "--output: cannot rename '%s' to '%s': %s", temporary.c_str(),
                  path.file.c_str(), std::strerror(errno));
    std::remove(temporary.c_str());
  }
  ctx.comm().bcast(error, sizeof error, 0);
  if (error[0]) throw UsageError(error);
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
  if (path.dataset.size() < 2 || path.dataset.back() == '/' || path.dataset.find("//") != std::string::npos)
    throw UsageError(std::string(flag) + ": '" + path.dataset + "' is not a dataset name (expected /NAME or /GROUP/NAME)");
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
        return std::pair<DistArray<T>, std::vector<T>>(DistArray<T>(ctx, partition),
                                                       std::vector<T>(static_cast<std::size_t>(local)));
      });
  const index_t start = array.global_offset();
  const index_t count = array.local_size();
  array.local_from_host(read_block<T>(ctx, path, 1, &start, &count, std::move(host)));
  return array;
}

template <class T>
DistMatrix<T> read_matrix(const ProcessGrid& grid, const DatasetPath& path, std::string_view flag) {
  const Context& ctx = grid.context();
  const DatasetInfo info = probe_dataset(ctx, path, flag);
  if (info.shape.size() != 2)
    throw UsageError(std::string(flag) + ": dataset '" + path.dataset + "' in '" + path.file + "' is " +
                     shape_text(info.shape) + "; a 2-D matrix is needed");
  DistMatrix<T> matrix(grid, info.shape[0], info.shape[1]);
  const index_t start[2] = {matrix.row_offset(), matrix.col_offset()};
  const index_t count[2] = {matrix.local_rows(), matrix.local_cols()};
  matrix.local_from_host(read_block<T>(ctx, path, 2, start, count,
                                      std::vector<T>(static_cast<std::size_t>(count[0] * count[1]))));
  return matrix;
}

void check_output_path(const Context& ctx, const DatasetPath& path, std::string_view flag) {
  char error[1024] = {};
  if (ctx.is_root()) {
    const std::string directory = directory_of(path.file);
    struct stat st {};
    std::string what;
    if (path.file.empty() || path.file.back() == '/') {
      what = "'" + path.file + "' is not a file name";
    } else if (stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      what = "no such directory '" + directory + "' for '" + path.file + "'";
    } else if (access(directory.c_str(), W_OK | X_OK) != 0) {
      what = "cannot write in directory '" + directory + "' (permission denied)";
    } else if (stat(path.file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      what = "'" + path.file + "' is a directory";
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
  write_blocks<T>(array.context(), path, attributes, 1, dims, &start, &count, array.local_to_host());
}

template <class T>
void write_matrix(const DistMatrix<T>& matrix, const DatasetPath& path, const OutputAttributes& attributes) {
  const hsize_t dims[2] = {static_cast<hsize_t>(matrix.rows()), static_cast<hsize_t>(matrix.cols())};
  const index_t start[2] = {matrix.row_offset(), matrix.col_offset()};
  const index_t count[2] = {matrix.local_rows(), matrix.local_cols()};
  write_blocks<T>(matrix.grid().context(), path, attributes, 2, dims, start, count, matrix.local_to_host());
}

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
