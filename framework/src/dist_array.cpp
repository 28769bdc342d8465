// The precompiled DistArray of the apps' element types (the template: dist_array.hpp), and the
// memory check of a run's plan.
#include "tessera/framework/dist_array.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera {

template class DistArray<std::int32_t>;
template class DistArray<std::int64_t>;
template class DistArray<float>;
template class DistArray<double>;

void require_memory(const Context& ctx, std::size_t bytes, const std::string& what) {
  // The ranks of this node, and among them those whose memory is this rank's (the same GPU; under
  // cpu the node's host memory).
  struct Share {
    std::array<unsigned char, 16> device;  // all zero under cpu
    std::uint64_t bytes;
  };
  const Share mine{kernels::device_uuid(ctx.queue()), static_cast<std::uint64_t>(bytes)};
  const Communicator node = ctx.comm().split_node(ctx.rank());
  long double shared = 0;
  int sharing = 0;
  for (const Share& other : node.allgather(mine))
    if (other.device == mine.device) {
      shared += static_cast<long double>(other.bytes);
      ++sharing;
    }
  const std::size_t capacity = kernels::memory_capacity(ctx.queue());
  const bool over = capacity > 0 && shared > static_cast<long double>(capacity);
  const int failed = ctx.comm().allreduce<std::int32_t>(over ? ctx.rank() : ctx.size(), ReduceOp::min);
  if (failed == ctx.size()) return;
  char message[512] = {};
  if (ctx.rank() == failed) {
    const char* memory = ctx.backend() == Backend::cpu ? "host memory and swap" : "GPU memory";
    std::snprintf(message, sizeof message, "out of memory: %s per rank; rank %d's %s of %s %s%s", format_bytes(static_cast<double>(bytes)).c_str(),
                  failed, memory, format_bytes(static_cast<double>(capacity)).c_str(), sharing > 1 ? "is shared by " : "cannot hold it",
                  sharing > 1 ? (std::to_string(sharing) + " ranks, which need " + format_bytes(static_cast<double>(shared))).c_str() : "");
  }
  ctx.comm().bcast(message, sizeof message, failed);
  throw UsageError(what + ": " + message);
}

}  // namespace tessera
