// What is in a file before it is read or written: rank 0 opens it, looks, and tells the others. The
// probe of an input dataset (its type and shape, or why it cannot be read), the check of an output
// destination (made at start-up and again just before the write), and the attributes of a dataset.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tessera/framework/io.hpp"

namespace tessera::io::detail {

// Collective. The DatasetInfo of path on every rank, or the same IoError on every rank.
// need_dtype: the caller picks its element type from the file's (the apps' DType); a type no DType
// holds exactly is then an error. Otherwise (read_array<T>: HDF5 converts to T) any integer or
// floating-point type is accepted.
// element: where given and a compound (h5_type_of), the file's type must be a compound that holds
// its members (io_elements.hpp's compound_mismatch); its numbers are then converted member by
// member. accept_complex: h5py's complex compound {r, i} of two floats is accepted as well
// (DatasetInfo::is_complex, dtype the members' type). any_type: a dataset of any type is accepted
// (only its existence matters: attributes).
DatasetInfo probe(const Context& ctx, const DatasetPath& path, bool need_dtype, const H5Type* element = nullptr,
                  bool accept_complex = false, bool any_type = false);

// Rank 0's check of an output destination: the problem ("" when none; `kind` says which), whether
// the file exists (the dataset is added to a copy of it) and whether the dataset exists and
// `overwrite` allows replacing it. With `replace_file` the file is replaced as a whole, which is
// allowed only for a file (or no file) that holds nothing the replacement would lose: every object
// at its root a dataset named in `written` (the datasets of the replacement; path.dataset when
// empty) whose `app` attribute is `app`.
struct Destination {
  std::string problem;
  IoError::Kind kind = IoError::Kind::other;
  bool exists = false;
  bool replace_dataset = false;
};
Destination check_destination(const DatasetPath& path, bool overwrite, bool replace_file = false,
                              const std::string& app = "", const std::vector<std::string>& written = {});

// Rank 0: the scalar string, integer and floating-point attributes of a dataset that probe accepted,
// as text, in name order.
std::vector<std::pair<std::string, std::string>> attributes_on_root(const DatasetPath& path);

}  // namespace tessera::io::detail
