// Checkpoints: the named state of a computation (distributed arrays, matrices, fields and scalars)
// in one HDF5 file that any rank count and any process grid can restore, bit for bit.
//
//   Field2D<double> u(grid, ny, nx, 1);
//   DistArray<std::int64_t> counts(ctx, n);
//   double time = 0;
//   std::int64_t step = 0;
//   ...
//   io::checkpoint(ctx, "run/ck.h5", {{"u", u}, {"counts", counts}, {"time", time}}, step);
//   ...                                  // later, in another job, on other ranks
//   step = io::restore(ctx, "run/ck.h5", {{"u", u}, {"counts", counts}, {"time", time}});
//
// The file: one dataset per entry, named "/" + name, in global order (an array as a 1-D dataset, a
// matrix or a field as rows x cols, row-major, a scalar as a dataset of one element), so that h5py
// reads it as it reads any output. Each dataset carries the attributes checkpoint_format ("tessera
// checkpoint 1"), checkpoint_step, checkpoint_kind (array, matrix, field, scalar), checkpoint_element
// (the element type's name) and checkpoint_checksum, plus app and the caller's attributes.
//
// Committed by rename: the file is written whole under a temporary name in its directory and renamed
// over `path` once every rank has written every dataset (io::OutputFile with replace_file). A run that
// ends during the write (a fault, a signal, a kill) leaves the previous checkpoint as it was, under
// its name. An existing file at `path` is replaced only when it is a Tessera checkpoint of the same
// entries made by the same app; any other file is refused (IoError) and left as it is.
//
// Checksums: checkpoint_checksum is the sum, modulo 2^64, over the elements of a dataset of a hash of
// (global index, the element's bytes): the same for any partition of the data, so restore computes
// it again over what it read, on its own grid, and compares. A flipped byte anywhere in a dataset's
// data is an IoError naming the file and the dataset ("checkpoint 'ck.h5': dataset '/u' does not
// match its checksum ..."), on every rank.
//
// A Field<T, D> (field.hpp) is a dataset of D axes in its global order, as io::write_field writes it;
// its checksum's global index is the row-major one. A Field2D is a Field<T, 2>.
//
// restore reads every entry: a field must have the field's shape (its ghost cells are left as they
// are); an array and a matrix take the shape in the file (an array is block-partitioned over its
// context, a matrix cut over its grid); a scalar takes the value on every rank. Each entry's element
// type must be the one it was written with (no conversion: a checkpoint resumes bit for bit). An
// entry missing from the file, another kind or type, or a checksum that does not match: IoError
// naming the entry. Collective over ctx (the entries' contexts must span the same ranks).
// Elements: arrays of int8..int64, uint8..uint64, float, double; matrices and fields of any type
// HDF5 can name (numbers, std::complex, structs named with TESSERA_HDF5_FIELDS); scalars of int32,
// int64, float and double.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/framework/io.hpp"

namespace tessera::io {

// One named piece of state; holds a reference to it (restore writes into it).
class CheckpointEntry {
 public:
  enum class Kind { array, matrix, field, scalar };

  template <class T>
  CheckpointEntry(std::string name, DistArray<T>& array);
  template <class T>
  CheckpointEntry(std::string name, DistMatrix<T>& matrix);
  template <class T, int D>
  CheckpointEntry(std::string name, Field<T, D>& field);
  template <class T>
    requires is_dtype_element_v<T>
  CheckpointEntry(std::string name, T& scalar);

  const std::string& name() const { return name_; }
  Kind kind() const { return kind_; }
  const H5Type& element() const { return element_; }

  // This rank's block on the host, row-major, and where it lies in the global dataset (an array and
  // a scalar are one row of `global_cols` elements; a Field<T, D> a box of 3 axes, leading axes of
  // one cell for D < 3, described by the box_* members instead).
  struct HostBlock {
    std::vector<unsigned char> bytes;
    index_t global_cols = 0, row_offset = 0, col_offset = 0, local_cols = 0;
    bool is_box = false;
    std::array<index_t, 3> box_extent{1, 1, 1}, box_offset{0, 0, 0}, box_local{0, 0, 0};
  };

  // Used by checkpoint() and restore().
  std::function<HostBlock()> host_block;
  std::function<void(OutputFile&, const std::string&, const OutputAttributes&)> add_to;
  std::function<void(const Context&, const DatasetPath&)> read_from;

 private:
  std::string name_;
  Kind kind_ = Kind::scalar;
  H5Type element_;
};

// What a checkpoint says about itself besides its data.
struct CheckpointOptions {
  std::string app;                                          // the attribute app (default "tessera")
  std::vector<std::pair<std::string, std::string>> extra;   // more string attributes on every dataset
};

// Collective: writes the entries and `step` to `path` and commits them by rename (see above).
// IoError when the path is refused (a file that is not a checkpoint of these entries by this app, an
// unwritable directory) or an entry's name is empty, holds '/', or repeats; the previous file is then
// untouched.
void checkpoint(const Context& ctx, const std::string& path, const std::vector<CheckpointEntry>& entries, index_t step,
                const CheckpointOptions& options = {});

// Collective: reads every entry from the checkpoint at `path`, verifies each dataset's checksum and
// returns the step it was written at (see above for the errors).
index_t restore(const Context& ctx, const std::string& path, const std::vector<CheckpointEntry>& entries);

// Collective: the step of the checkpoint at `path` (its first entry's, read from the attributes, no
// data read or verified). IoError when the file is missing, not HDF5, or not a Tessera checkpoint.
index_t checkpoint_step(const Context& ctx, const std::string& path);

// ---- implementation ------------------------------------------------------------------------------------

template <class T>
CheckpointEntry::CheckpointEntry(std::string name, DistArray<T>& array)
    : name_(std::move(name)), kind_(Kind::array), element_(h5_type_of<T>()) {
  DistArray<T>* a = &array;
  host_block = [a] {
    HostBlock b;
    const std::vector<T> host = a->local_to_host();
    b.bytes.resize(host.size() * sizeof(T));
    if (!host.empty()) std::memcpy(b.bytes.data(), host.data(), b.bytes.size());
    b.global_cols = a->global_size();
    b.col_offset = a->global_offset();
    b.local_cols = a->local_size();
    return b;
  };
  add_to = [a](OutputFile& out, const std::string& dataset, const OutputAttributes& attrs) { out.add(*a, dataset, attrs); };
  read_from = [a](const Context& ctx, const DatasetPath& path) { *a = read_array<T>(ctx, path); };
}

template <class T>
CheckpointEntry::CheckpointEntry(std::string name, DistMatrix<T>& matrix)
    : name_(std::move(name)), kind_(Kind::matrix), element_(h5_type_of<T>()) {
  DistMatrix<T>* m = &matrix;
  host_block = [m] {
    HostBlock b;
    b.bytes.resize(m->storage().local_bytes());
    m->storage().local_to_host(b.bytes.data());
    b.global_cols = m->cols();
    b.row_offset = m->row_offset();
    b.col_offset = m->col_offset();
    b.local_cols = m->local_cols();
    return b;
  };
  add_to = [m](OutputFile& out, const std::string& dataset, const OutputAttributes& attrs) { out.add(*m, dataset, attrs); };
  read_from = [m](const Context&, const DatasetPath& path) {
    const ProcessGrid grid = m->grid();
    *m = read_matrix<T>(grid, path);
  };
}

template <class T, int D>
CheckpointEntry::CheckpointEntry(std::string name, Field<T, D>& field)
    : name_(std::move(name)), kind_(Kind::field), element_(h5_type_of<T>()) {
  Field<T, D>* f = &field;
  host_block = [f] {
    HostBlock b;
    const tessera::detail::BlockLayout& l = f->layout();
    b.bytes.resize(static_cast<std::size_t>(l.local_cells()) * sizeof(T));
    f->storage().local_to_host(b.bytes.data());
    b.is_box = true;
    b.box_extent = l.extent;
    for (int a = 0; a < 3; ++a) {
      b.box_offset[static_cast<std::size_t>(a)] = l.offset(a);
      b.box_local[static_cast<std::size_t>(a)] = l.local(a);
    }
    b.local_cols = l.local_cells();
    return b;
  };
  add_to = [f](OutputFile& out, const std::string& dataset, const OutputAttributes& attrs) { out.add(*f, dataset, attrs); };
  read_from = [f](const Context&, const DatasetPath& path) { read_field(*f, path); };
}

template <class T>
  requires is_dtype_element_v<T>
CheckpointEntry::CheckpointEntry(std::string name, T& scalar)
    : name_(std::move(name)), kind_(Kind::scalar), element_(h5_type_of<T>()) {
  T* s = &scalar;
  // Rank 0's value is the one stored (a scalar of a checkpoint is the same on every rank).
  host_block = [s] {
    HostBlock b;
    b.bytes.resize(sizeof(T));
    std::memcpy(b.bytes.data(), s, sizeof(T));
    b.global_cols = 1;
    b.local_cols = 1;
    return b;
  };
  add_to = [s](OutputFile& out, const std::string& dataset, const OutputAttributes& attrs) {
    // One element, on rank 0 (the block partition of one element over the ranks).
    DistArray<T> one(out.context(), 1);
    one.fill(*s);
    out.add(one, dataset, attrs);
  };
  read_from = [s](const Context& ctx, const DatasetPath& path) {
    const DistArray<T> one = read_array<T>(ctx, path);
    std::vector<T> all = one.gather(0);
    all.resize(1);
    ctx.comm().bcast(all.data(), 1, 0);
    *s = all[0];
  };
}

}  // namespace tessera::io
