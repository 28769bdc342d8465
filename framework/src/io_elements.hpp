// The HDF5 types of any element type the io layer can name (io.hpp's H5Type): numbers, h5py's
// complex compound {r, i}, and structs with named fields; and the check of a file's type against
// the one a read asks for.
#pragma once

#include <string>

#include "io_hdf5_handles.hpp"
#include "tessera/framework/io.hpp"

namespace tessera::io::detail {

// The memory and file types of an element type, owned (closed when they go).
struct H5Types {
  Handle memory;  // native numbers at the members' offsets in memory
  Handle file;    // little-endian standard numbers, members packed in order
  std::size_t bytes = 0;
  std::string name;
  H5Element element() const { return {memory.get(), file.get(), bytes, name.c_str()}; }
};
H5Types h5_types(const H5Type& type);

// IoError (naming `operation` and the dataset) when HDF5 cannot name the type.
void require_named(const H5Type& type, const char* operation, const DatasetPath& path);

// Why the file type `file_type` cannot be read as `wanted` (a compound): "" when it can (every
// member of wanted is in the file's compound, by name, numbers where wanted has numbers and
// compounds where it has compounds).
std::string compound_mismatch(hid_t file_type, const H5Type& wanted);

// A file type's description for messages ("64-bit float", "compound {r: 64-bit float, i: 64-bit
// float}").
std::string describe_file_type(hid_t type);

// Whether the file type is h5py's complex compound: exactly two float members r and i of one size
// (its size then in *component_bytes).
bool is_complex_compound(hid_t type, std::size_t* component_bytes);

}  // namespace tessera::io::detail
