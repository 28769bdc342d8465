// HDF5 input and output of distributed arrays and matrices.
//
// Reads: each rank reads its own hyperslab of the dataset (collective MPI-IO where the HDF5 library
// is parallel, TESSERA_HDF5_PARALLEL; otherwise every rank opens the file read-only and reads its
// slab independently). The file's element type is converted to the requested one by HDF5, so any of
// the four element types, chunked or contiguous, deflate-compressed or not, reads into any other.
//
// Writes: one dataset holding the global result, with attributes naming what made it, added to the
// destination file (a new file where there is none; every other object of an existing file is
// kept). The write goes to a temporary file in the destination directory (a copy of the existing
// file, or a new one), which rank 0 renames over the destination once every rank has written its
// slab: a reader never sees a half-written dataset under the final name, and the existing file is
// untouched until the new one is complete. A job that ends abnormally removes the temporary (see
// framework/src/temporary_file.hpp); one killed outright leaves it to the next write in that
// directory. Collective writes with parallel HDF5; with a serial library rank 0 creates the dataset
// and the ranks write their slabs in rank order, passing a token.
//
// Every function is collective over the context it is given. User errors (a missing file or dataset,
// a file that is not HDF5, a wrong rank or shape, an unwritable output directory, a corrupt chunk,
// values that do not fit in the requested type) are found by one rank and shared, so that every rank
// throws the same IoError and none is left in a collective. An IoError says what went wrong with
// which file and dataset ("no dataset '/d' in 'x.h5'"); the caller says which of its inputs that was
// (the apps prefix the command-line flag: "--input: no dataset '/d' in 'x.h5'"). HDF5 prints no
// error stack.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/field.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/kernels/element_traits.hpp"

namespace tessera::io {

// What every io function throws for a user error: a UsageError whose message says what went wrong
// with the file or dataset, naming them ("no such file 'x.h5'", "dataset '/d' in 'x.h5' is 2-D
// (3 x 4); a 1-D dataset is needed"). file() and dataset() are the path the call was given (empty
// where the text could not be parsed as one). kind() tells the errors a caller may have a remedy
// for: an existing dataset that was not to be replaced, file values the requested element type
// cannot hold, and an HDF5 file that opens but has no dataset at the path (no_dataset: a file of
// another program under an expected name, rather than a damaged one).
class IoError : public UsageError {
 public:
  enum class Kind { other, dataset_exists, unrepresentable_values, no_dataset };
  IoError(const std::string& message, std::string file, std::string dataset, Kind kind = Kind::other)
      : UsageError(message), file_(std::move(file)), dataset_(std::move(dataset)), kind_(kind) {}
  const std::string& file() const { return file_; }
  const std::string& dataset() const { return dataset_; }
  Kind kind() const { return kind_; }

 private:
  std::string file_;
  std::string dataset_;
  Kind kind_;
};

// The element types an array or a file may hold. Their names and sizes are ElementTraits'.
enum class DType { int32, int64, float32, float64 };

// Calls f.template operator()<T>() with T the C++ type of `t`; returns what f returns.
template <class F>
constexpr decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::int32: return f.template operator()<std::int32_t>();
    case DType::int64: return f.template operator()<std::int64_t>();
    case DType::float32: return f.template operator()<float>();
    case DType::float64: break;
  }
  return f.template operator()<double>();
}

inline constexpr DType kDTypes[] = {DType::int32, DType::int64, DType::float32, DType::float64};

// ElementTraits<T>::name of the type of `t`: "int32", "int64", "float32", "float64".
const char* to_string(DType t);
// "int32", "int64", "float32", "float64" (also "float" and "double"); nullopt otherwise.
std::optional<DType> parse_dtype(std::string_view text);
std::size_t size_of(DType t);

namespace detail {
// For dispatch: whether the DType's C++ type is T.
template <class T>
struct IsDTypeOf {
  template <class U>
  constexpr bool operator()() const {
    return std::is_same_v<U, T>;
  }
};
}  // namespace detail

// True when T is the C++ type of one of the DTypes.
template <class T>
inline constexpr bool is_dtype_element_v = [] {
  for (DType t : kDTypes)
    if (dispatch(t, detail::IsDTypeOf<T>{})) return true;
  return false;
}();

template <class T>
constexpr DType dtype_of() {
  static_assert(is_dtype_element_v<T>, "dtype_of: unsupported element type");
  for (DType t : kDTypes)
    if (dispatch(t, detail::IsDTypeOf<T>{})) return t;
  return DType::float64;
}

// ---- element types in HDF5 files ---------------------------------------------------------------------
//
// How an element type is stored in a dataset: a number (the little-endian standard type of its kind
// and size), or a compound of named members. std::complex<float> and std::complex<double> are the
// compound {r, i} of two floats that h5py and numpy write and read for complex64 and complex128. A
// struct is a compound when its fields are named:
//
//   struct Particle { double x, y; float mass; std::int32_t id; };
//   TESSERA_HDF5_FIELDS(Particle, x, y, mass, id)      // at namespace scope, after the struct
//
// (or a specialisation of tessera::io::Hdf5Fields<Particle> whose static members() lists
// io::h5_member("x", &Particle::x), ...). Members are numbers, complex numbers, or structs named the
// same way. Any other type has no HDF5 name: reading or writing it is an IoError, on every rank,
// before any file is touched.
struct H5Member;
struct H5Type {
  enum class Class { none, number, compound } cls = Class::none;
  ElementKind kind = ElementKind::floating_point;  // a number's
  std::size_t bytes = 0;                           // the element in memory (sizeof)
  std::vector<H5Member> members;                   // a compound's, at their offsets in memory
  std::string name;                                // for messages: "float64", "complex128", "{x, y, id}"
};
struct H5Member {
  std::string name;
  std::size_t offset = 0;
  H5Type type;
};

// The members of a struct T, for a specialisation to list (TESSERA_HDF5_FIELDS writes one).
template <class T>
struct Hdf5Fields;

namespace detail {
template <class T, class = void>
struct has_hdf5_fields : std::false_type {};
template <class T>
struct has_hdf5_fields<T, std::void_t<decltype(Hdf5Fields<T>::members())>> : std::true_type {};
template <class T>
struct is_std_complex : std::false_type {};
template <class F>
struct is_std_complex<std::complex<F>> : std::bool_constant<std::is_same_v<F, float> || std::is_same_v<F, double>> {};
std::string compound_name(const std::vector<H5Member>& members);
}  // namespace detail

// The HDF5 type of T (Class::none where HDF5 cannot name it).
template <class T>
H5Type h5_type_of() {
  H5Type t;
  t.bytes = sizeof(T);
  if constexpr (is_numeric_element_v<T>) {
    t.cls = H5Type::Class::number;
    t.kind = ElementTraits<T>::kind;
    t.name = ElementTraits<T>::name;
  } else if constexpr (detail::is_std_complex<T>::value) {
    using F = typename T::value_type;
    t.cls = H5Type::Class::compound;
    t.members = {{"r", 0, h5_type_of<F>()}, {"i", sizeof(F), h5_type_of<F>()}};
    t.name = sizeof(F) == 4 ? "complex64" : "complex128";
  } else if constexpr (detail::has_hdf5_fields<T>::value) {
    t.cls = H5Type::Class::compound;
    t.members = Hdf5Fields<T>::members();
    t.name = detail::compound_name(t.members);
  } else {
    t.name = "a type of " + std::to_string(sizeof(T)) + " bytes with no HDF5 name";
  }
  return t;
}

// A member of a struct S at `offset` (offsetof(S, field)), of the field's type M.
template <class M>
H5Member h5_member(const char* name, std::size_t offset) {
  return {name, offset, h5_type_of<M>()};
}
// The same from a pointer to the member.
template <class S, class M>
H5Member h5_member(const char* name, M S::*field) {
  alignas(S) unsigned char storage[sizeof(S)] = {};
  const S* object = reinterpret_cast<const S*>(storage);
  const auto offset = static_cast<std::size_t>(reinterpret_cast<const unsigned char*>(&(object->*field)) - storage);
  return h5_member<M>(name, offset);
}

// "FILE.h5:/DATASET" (the dataset part starts at the last ":/"; groups allowed: /group/dset).
struct DatasetPath {
  std::string file;
  std::string dataset;
  std::string str() const { return file + ":" + dataset; }
};

// Throws IoError when text has no ":/DATASET" part, an empty file name, or a dataset path with an
// empty, "." or ".." component.
DatasetPath parse_dataset_path(std::string_view text);

struct DatasetInfo {
  DType dtype = DType::float32;  // the type the file's type maps to (unsigned and narrow integers widen)
  std::vector<index_t> shape;    // one entry per dimension
  std::string type_name;         // the file's type, for messages ("16-bit unsigned integer", ...)
  bool is_complex = false;       // probe_numeric_or_complex: h5py's complex compound {r, i} of dtype
};

// Collective. Rank 0 opens the file and the dataset and broadcasts what it found; every rank gets
// the same DatasetInfo or throws the same IoError ("no such file 'x.h5'", "'x.h5' is not an HDF5
// file", "no dataset '/d' in 'x.h5'", "... has an unsupported type").
DatasetInfo probe_dataset(const Context& ctx, const DatasetPath& path);

// The same, also accepting the compound {r, i} of two floats of one size that h5py and numpy write
// for complex64 and complex128: is_complex is then true and dtype names the type of r and i.
DatasetInfo probe_numeric_or_complex(const Context& ctx, const DatasetPath& path);

// Reads a 1-D dataset into the block distribution. IoError (from probe_dataset, or naming the
// dataset and its shape when it is not 1-D, or when a chunk cannot be read). T: int8..int64,
// uint8..uint64, float, double (HDF5 converts the file's type; a value that T cannot hold, 1e20 or
// NaN for int32, 1e300 for float, is an IoError of kind unrepresentable_values, not a clamped
// value).
template <class T>
DistArray<T> read_array(const Context& ctx, const DatasetPath& path);

namespace detail {
// The byte-level reads of matrices and fields, for elements of the type `element` describes
// (h5_type_of<T>()). An element type with no HDF5 name: IoError before any file is touched.
tessera::detail::MatrixStorage read_matrix(const ProcessGrid& grid, const DatasetPath& path, const H5Type& element);
// A Field<T, D>'s owned cells from a dataset of D axes of exactly its extents.
void read_block_field(tessera::detail::BlockStorage& field, const DatasetPath& path, const H5Type& element);
}  // namespace detail

// This rank's box [start, start + count) of a dataset of 1 to 3 axes that probe_dataset or
// probe_numeric_or_complex described as `info`, row-major on the host, as elements of `element`
// (h5_type_of<T>(): numbers converted as read_array converts them, complex numbers from h5py's
// compound {r, i}). For arrays that are neither DistArrays nor DistMatrices (the distributed FFT's
// boxes). Collective; IoError on every rank as read_array.
std::vector<unsigned char> read_box(const Context& ctx, const DatasetPath& path, const DatasetInfo& info,
                                    const H5Type& element, const std::vector<index_t>& start,
                                    const std::vector<index_t>& count);

// Reads a 2-D dataset (row-major, rows x cols) into the grid's 2-D blocks. IoError when the
// dataset is not 2-D. T: a number (HDF5 converts the file's numbers, and refuses values T cannot
// hold, as read_array does), std::complex<float> or std::complex<double> (the file's compound
// {r, i}, its members converted), or a struct with named fields (a compound holding every named
// member; other members of the file's compound are ignored).
template <class T>
DistMatrix<T> read_matrix(const ProcessGrid& grid, const DatasetPath& path) {
  return DistMatrix<T>(detail::read_matrix(grid, path, h5_type_of<T>()));
}

// Attributes stored on an output dataset. `version` is filled in with TESSERA_VERSION_STRING.
struct OutputAttributes {
  std::string app;
  std::string backend;
  int ranks = 1;
  std::vector<std::pair<std::string, std::string>> extra;  // more string attributes (dtype, op, ...)
  // Not stored: whether an existing dataset of the same name may be replaced (--overwrite).
  bool overwrite = false;
  // Not stored: the output replaces an existing HDF5 file as a whole instead of adding the dataset
  // to it (a checkpoint, rewritten again and again: nothing of the old file is copied or kept).
  // Only a file that holds nothing else may be replaced so: every object at its root a dataset
  // that this output writes, made by the same app (the `app` attribute). Any other file (one of
  // the user's, an input of the run) is refused, and left as it is.
  bool replace_file = false;
};

// Collective. Checks before any work is done that an output can be made at `path`: the directory
// exists and is writable; the path is a new file, or an HDF5 file (not a symbolic link, FIFO, device
// or other file) in which every group on the dataset's path is a group and the dataset does not
// exist (or is a dataset, and `overwrite`; an existing dataset otherwise is an IoError of kind
// dataset_exists). With `replace_file`, an existing file must be one that replace_file may
// replace (OutputAttributes::replace_file), written by `app`. IoError otherwise.
void check_output_path(const Context& ctx, const DatasetPath& path, bool overwrite = false, bool replace_file = false,
                       const std::string& app = "");

// Collective. The same for a plain file that rank 0 writes through (a report): the directory exists
// and is writable, and the path is not a directory.
void check_output_file(const Context& ctx, const std::string& file);

// Not collective (plain POSIX; one rank calls it): writes `bytes` to the file `path` whole or not
// at all, as the outputs above are. A new or regular file is written under a temporary name in its
// directory ("DIR/.BASE.tmp-HOST-PID-TICKS", made with O_EXCL, so that no existing file is ever
// opened), flushed to disk and renamed over `path` when complete: a reader sees the old file or the
// whole new one. A fatal error or SIGINT, SIGTERM or SIGHUP removes the temporary; what a process of
// this host killed outright left in that directory is removed by the next write there. Anything
// else at the path (a symbolic link, a FIFO, a device such as /dev/stdout) is written through,
// never replaced. Returns "" or what went wrong, without a flag: "cannot create
// 'DIR/.out.json.tmp-...': Permission denied", "cannot write 'out.json': No space left on device".
std::string write_whole_file(const std::string& path, std::string_view bytes);

// Several datasets of one output file, committed together: the file is written once, under a
// temporary name in its directory (a copy of the existing file with the datasets added, or a new
// file; a new one too with replace_file), and renamed over the destination only after every rank
// has written every dataset: a reader sees all of them or none, and a run that ends during the
// write (a fault, a signal, a kill) leaves the destination as it was. Every output of the framework
// goes through here; write_array, write_matrix and write_field are the one-dataset case.
//
//   io::OutputFile out(ctx, "sorted.h5");
//   out.add(keys, "/x", key_attributes).add(indices, "/x_index", index_attributes);
//   out.commit();
//
// add() copies this rank's block to the host at once (the arrays may change or go afterwards);
// commit() is collective: it checks every destination again as check_output_path does (with the
// first dataset's attributes.overwrite and replace_file), writes, and renames. Datasets are any
// absolute paths in the file (groups on the way are made), distinct. T: as for read_array.
class OutputFile {
 public:
  OutputFile(const Context& ctx, std::string file);
  ~OutputFile();
  OutputFile(OutputFile&&) noexcept;
  OutputFile& operator=(OutputFile&&) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // The whole array (any partition: block or ragged) as one 1-D dataset in global order.
  template <class T>
  OutputFile& add(const DistArray<T>& array, const std::string& dataset, const OutputAttributes& attributes);
  // The matrix as one rows x cols dataset, row-major; any element type HDF5 can name (numbers as
  // the little-endian standard type, complex numbers and named structs as compounds of those).
  template <class T>
  OutputFile& add(const DistMatrix<T>& matrix, const std::string& dataset, const OutputAttributes& attributes) {
    return add_matrix(matrix.storage(), dataset, attributes, h5_type_of<T>());
  }
  // The same on bytes, for elements of the type `element` describes (IoError where HDF5 cannot name it).
  OutputFile& add_matrix(const tessera::detail::MatrixStorage& matrix, const std::string& dataset,
                         const OutputAttributes& attributes, const H5Type& element);
  // A Field<T, D>'s owned cells as one dataset of D axes (its extents), in global order (row-major:
  // the last axis fastest); element types as for matrices.
  template <class T, int D>
  OutputFile& add(const Field<T, D>& field, const std::string& dataset, const OutputAttributes& attributes) {
    return add_block_field(field.storage(), dataset, attributes, h5_type_of<T>());
  }
  OutputFile& add_block_field(const tessera::detail::BlockStorage& field, const std::string& dataset,
                              const OutputAttributes& attributes, const H5Type& element);
  // A dataset of dims (1 to 3 axes) of which this rank holds the box [start, start + count),
  // row-major in host memory at `host` (copied at once), of elements of the type `element` describes.
  OutputFile& add_box(const std::string& dataset, const H5Type& element, const std::vector<index_t>& dims,
                      const std::vector<index_t>& start, const std::vector<index_t>& count, const void* host,
                      const OutputAttributes& attributes);

  const std::string& file() const;
  const Context& context() const;
  std::size_t datasets() const;

  // Collective: writes and renames (see above). IoError on every rank when a destination is refused
  // or the file cannot be written; the destination is then untouched. At most once.
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes the whole distributed array (any partition: block or ragged) as one 1-D dataset, in global
// order, into `path.file` (created, or a copy of it with the dataset added that replaces it when
// complete). The destination is checked again as check_output_path does, with
// attributes.overwrite. T: as for read_array (stored as the little-endian standard type of the
// same size). An OutputFile of one dataset.
template <class T>
void write_array(const DistArray<T>& array, const DatasetPath& path, const OutputAttributes& attributes);

// Writes the matrix as one rows x cols dataset, row-major (any element type HDF5 can name, as
// OutputFile::add). An OutputFile of one dataset.
template <class T>
void write_matrix(const DistMatrix<T>& matrix, const DatasetPath& path, const OutputAttributes& attributes) {
  OutputFile(matrix.grid().context(), path.file).add(matrix, path.dataset, attributes).commit();
}

// Writes a Field<T, D>'s owned cells (any process grid, any ghost widths; a Field2D is a Field<T, 2>:
// one rows x cols dataset) as one dataset of D axes,
// extent(0) x ... x extent(D-1), in global order: the last axis is the fastest, as in the field's
// own global order (gather) and as numpy and h5py index it (f["/u"][i0, i1, i2] is the cell
// (i0, i1, i2)). Element types as for write_matrix (complex numbers as the compound {r, i}). An
// OutputFile of one dataset: committed by rename, an existing file kept (see OutputFile).
template <class T, int D>
void write_field(const Field<T, D>& field, const DatasetPath& path, const OutputAttributes& attributes) {
  OutputFile(field.context(), path.file).add(field, path.dataset, attributes).commit();
}

// Reads a dataset of D axes of exactly the field's extents (in the order above) into its owned cells,
// on any process grid (its ghost cells are left as they are). IoError for another rank or shape. T
// as for read_matrix: numbers converted by HDF5, complex numbers and named structs from compounds.
template <class T, int D>
void read_field(Field<T, D>& field, const DatasetPath& path) {
  detail::read_block_field(field.storage(), path, h5_type_of<T>());
}

// The scalar attributes of a dataset (strings, and integers and floats as text), in name order.
// Collective; a missing file or dataset is an IoError as in probe_dataset.
std::vector<std::pair<std::string, std::string>> read_attributes(const Context& ctx, const DatasetPath& path);

}  // namespace tessera::io

// TESSERA_HDF5_FIELDS(Struct, field, ...): names up to 16 fields of Struct as the members of its
// HDF5 compound type (io::Hdf5Fields<Struct>). At global namespace scope, after Struct is complete.
#define TESSERA_HDF5_MEMBER_(S, f) ::tessera::io::h5_member<decltype(S::f)>(#f, offsetof(S, f))
#define TESSERA_HDF5_EXPAND_(x) x
#define TESSERA_HDF5_M1_(S, a) TESSERA_HDF5_MEMBER_(S, a)
#define TESSERA_HDF5_M2_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M1_(S, __VA_ARGS__))
#define TESSERA_HDF5_M3_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M2_(S, __VA_ARGS__))
#define TESSERA_HDF5_M4_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M3_(S, __VA_ARGS__))
#define TESSERA_HDF5_M5_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M4_(S, __VA_ARGS__))
#define TESSERA_HDF5_M6_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M5_(S, __VA_ARGS__))
#define TESSERA_HDF5_M7_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M6_(S, __VA_ARGS__))
#define TESSERA_HDF5_M8_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M7_(S, __VA_ARGS__))
#define TESSERA_HDF5_M9_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M8_(S, __VA_ARGS__))
#define TESSERA_HDF5_M10_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M9_(S, __VA_ARGS__))
#define TESSERA_HDF5_M11_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M10_(S, __VA_ARGS__))
#define TESSERA_HDF5_M12_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M11_(S, __VA_ARGS__))
#define TESSERA_HDF5_M13_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M12_(S, __VA_ARGS__))
#define TESSERA_HDF5_M14_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M13_(S, __VA_ARGS__))
#define TESSERA_HDF5_M15_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M14_(S, __VA_ARGS__))
#define TESSERA_HDF5_M16_(S, a, ...) TESSERA_HDF5_MEMBER_(S, a), TESSERA_HDF5_EXPAND_(TESSERA_HDF5_M15_(S, __VA_ARGS__))
#define TESSERA_HDF5_PICK_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, NAME, ...) NAME
#define TESSERA_HDF5_FIELDS(S, ...)                                                                              \
  template <>                                                                                                    \
  struct tessera::io::Hdf5Fields<S> {                                                                            \
    static std::vector<::tessera::io::H5Member> members() {                                                     \
      return {TESSERA_HDF5_EXPAND_(TESSERA_HDF5_PICK_(__VA_ARGS__, TESSERA_HDF5_M16_, TESSERA_HDF5_M15_,         \
                                                      TESSERA_HDF5_M14_, TESSERA_HDF5_M13_, TESSERA_HDF5_M12_,   \
                                                      TESSERA_HDF5_M11_, TESSERA_HDF5_M10_, TESSERA_HDF5_M9_,    \
                                                      TESSERA_HDF5_M8_, TESSERA_HDF5_M7_, TESSERA_HDF5_M6_,      \
                                                      TESSERA_HDF5_M5_, TESSERA_HDF5_M4_, TESSERA_HDF5_M3_,      \
                                                      TESSERA_HDF5_M2_, TESSERA_HDF5_M1_)(S, __VA_ARGS__))};     \
    }                                                                                                            \
  };
