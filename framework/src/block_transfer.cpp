// gather_blocks, scatter_blocks and fill_from_replicated (block_transfer.hpp).
#include "block_transfer.hpp"

#include <vector>

namespace tessera::detail {

void gather_blocks(const Communicator& comm, const BlockGeometry& g, const std::function<void(void*)>& local_to_host,
                   void* all, int root, int tag) {
  std::vector<unsigned char> block(g.block_bytes(comm.rank()));
  local_to_host(block.data());
  if (comm.rank() != root) {
    comm.send(block.data(), static_cast<index_t>(block.size()), root, tag);
    return;
  }
  std::vector<unsigned char> incoming;
  for (int p = 0; p < comm.size(); ++p) {
    unsigned char* src = block.data();
    if (p != root) {
      incoming.resize(g.block_bytes(p));
      comm.recv(incoming.data(), static_cast<index_t>(incoming.size()), p, tag);
      src = incoming.data();
    }
    g.copy(p, static_cast<unsigned char*>(all), src, true);
  }
}

void scatter_blocks(const Communicator& comm, const BlockGeometry& g, const std::function<void(const void*)>& local_from_host,
                    const void* all, int root, int tag) {
  if (comm.rank() != root) {
    std::vector<unsigned char> block(g.block_bytes(comm.rank()));
    comm.recv(block.data(), static_cast<index_t>(block.size()), root, tag);
    local_from_host(block.data());
    return;
  }
  std::vector<unsigned char> outgoing;
  auto* whole = static_cast<unsigned char*>(const_cast<void*>(all));  // only read (copy out of it)
  for (int p = 0; p < comm.size(); ++p) {
    outgoing.resize(g.block_bytes(p));
    g.copy(p, whole, outgoing.data(), false);
    if (p == root) local_from_host(outgoing.data());
    else comm.send(outgoing.data(), static_cast<index_t>(outgoing.size()), p, tag);
  }
}

void fill_from_replicated(int rank, const BlockGeometry& g, const std::function<void(const void*)>& local_from_host,
                          const void* global) {
  std::vector<unsigned char> block(g.block_bytes(rank));
  g.copy(rank, static_cast<unsigned char*>(const_cast<void*>(global)), block.data(), false);  // only read
  local_from_host(block.data());
}

}  // namespace tessera::detail
