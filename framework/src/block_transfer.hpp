// The gather, scatter and replicated fill of an array cut into one block per rank (DistMatrix,
// Field2D, Field<T, D>), through the host: each storage gives its blocks' geometry, these move them.
#pragma once

#include <cstddef>
#include <functional>

#include "tessera/framework/comm.hpp"

namespace tessera::detail {

struct BlockGeometry {
  // The bytes of rank p's block, contiguous (its owned cells in the array's order).
  std::function<std::size_t(int p)> block_bytes;
  // Rank p's owned cells between the whole array (host memory, global order) and its block:
  // into the whole array when `into_whole`, else out of it.
  std::function<void(int p, unsigned char* whole, unsigned char* block, bool into_whole)> copy;
};

// The whole array in global order on `root` (`all`; ignored elsewhere) from every rank's block
// (local_to_host copies this rank's block out of backend memory). Collective; `tag` tells this
// kind's messages apart.
void gather_blocks(const Communicator& comm, const BlockGeometry& g, const std::function<void(void*)>& local_to_host,
                   void* all, int root, int tag);
// Each rank's block from root's whole array (local_from_host copies a block into backend memory).
void scatter_blocks(const Communicator& comm, const BlockGeometry& g, const std::function<void(const void*)>& local_from_host,
                    const void* all, int root, int tag);
// This rank's block from the whole array that every rank holds. Local.
void fill_from_replicated(int rank, const BlockGeometry& g, const std::function<void(const void*)>& local_from_host,
                          const void* global);

}  // namespace tessera::detail
