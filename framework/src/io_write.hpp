// Writing outputs: rank 0 checks the destinations again and makes the temporary, every rank writes
// its block of every dataset into it (collectively under parallel HDF5, in rank order with a token
// otherwise), and rank 0 renames it over the destination once all have closed it: one commit for
// all the datasets of one output file (io.hpp, OutputFile).
#pragma once

#include <string>
#include <vector>

#include "io_hdf5_handles.hpp"
#include "io_posix.hpp"
#include "io_transfer.hpp"
#include "tessera/framework/io.hpp"

namespace tessera::io::detail {

// One dataset of an output: its shape, this rank's block of it and the block's elements on the host
// (contiguous, row-major).
struct OutputBlock {
  std::string dataset;
  H5Element element;
  int ndims;
  hsize_t dims[3];  // the first ndims (1 to 3) are used
  index_t start[3];
  index_t count[3];
  std::vector<unsigned char> host;  // this rank's block
  OutputAttributes attributes;
};

// Collective: writes the datasets into `file`, committed together (every destination checked with
// parts[0].attributes.overwrite and .replace_file).
void write_parts(const Context& ctx, const std::string& file, const std::vector<OutputBlock>& parts);

}  // namespace tessera::io::detail
