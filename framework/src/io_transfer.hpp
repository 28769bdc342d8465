// Moving a rank's block between memory and a dataset: hyperslab selections in pieces below MPI-IO's
// 2 GiB limit, collective under parallel HDF5, and the read's verdict shared by every rank (a
// corrupt chunk, values the requested type cannot hold).
#pragma once

#include <string>

#include "io_hdf5_handles.hpp"
#include "tessera/framework/io.hpp"

namespace tessera::io::detail {

// Values of a file that HDF5's conversion to the requested type would not keep: clamped (1e20 into
// int32 becomes 2147483647, 1e300 into float32 infinity) or made up (NaN into an integer). HDF5
// reports each through the transfer's conversion callback; a read that met any is refused.
struct LostValues {
  index_t count = 0;
  double example = 0;  // the first one, where its bits could be read
  bool have_example = false;
};

// The most axes a block may have.
inline constexpr int kMaxBlockDims = 3;

// Moves this rank's block [start, start + count) of a dataset of 1 to 3 axes (start/count per
// axis; the block is contiguous in memory, row-major) between `buffer` and the file. Under
// parallel HDF5 every rank makes the same number of collective calls (empty selections included).
// A failed write ends the job. A failed read (a corrupt chunk) does not: its message is returned
// (the remaining pieces are still read, so that the collective calls stay matched), and values the
// conversion to mem_type would lose are counted in *lost.
std::string transfer_block(const Context& ctx, hid_t dset, hid_t mem_type, std::size_t element_bytes, int ndims,
                           const index_t* start, const index_t* count, void* buffer, bool write,
                           LostValues* lost = nullptr);

// Reads this rank's block of a dataset that probe accepted (its file type named `type_name`) into
// `buffer`, as `element`. IoError on every rank when any rank's read failed or met values that the
// element type cannot hold.
void read_block(const Context& ctx, const DatasetPath& path, const std::string& type_name, const H5Element& element,
                int ndims, const index_t* start, const index_t* count, void* buffer);

}  // namespace tessera::io::detail
