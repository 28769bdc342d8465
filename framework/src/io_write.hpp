// Writing outputs: rank 0 checks the destination again and makes the temporary, every rank writes
// its block into it (collectively under parallel HDF5, in rank order with a token otherwise), and
// rank 0 renames it over the destination once all have closed it.
#pragma once

#include <string>

#include "io_hdf5_handles.hpp"
#include "tessera/framework/io.hpp"

namespace tessera::io::detail {

// One dataset of an output: its shape, this rank's block of it and the block's elements in memory
// (contiguous, row-major).
struct OutputBlock {
  std::string dataset;
  H5Element element;
  int ndims;
  hsize_t dims[2];
  index_t start[2];
  index_t count[2];
  const void* buffer;
  const OutputAttributes* attributes;
};

// Collective: writes one dataset at `path` (path.dataset is block.dataset).
void write_block(const Context& ctx, const DatasetPath& path, const OutputBlock& block);

// Collective: writes two 1-D datasets into one file, committed together (path.dataset is
// parts[0].dataset; both destinations checked, with parts[0].attributes->overwrite).
void write_pair(const Context& ctx, const DatasetPath& path, const OutputBlock (&parts)[2]);

}  // namespace tessera::io::detail
