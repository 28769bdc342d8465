#include "tessera/framework/detail/result_on_host.hpp"

#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::detail {

void* pinned_result_slot(std::size_t bytes) {
  TESSERA_ASSERT(bytes <= kPinnedResultBytes, "pinned_result_slot: request larger than the slot");
  // Made on first use and never freed: 4 KiB per thread that used it. A thread_local destructor
  // would call cudaFreeHost at process exit, when the driver may be gone (the block cache is never
  // destroyed for the same reason); the driver frees it with the process.
  thread_local void* slot = kernels::allocate_pinned_host(kPinnedResultBytes);
  return slot;
}

}  // namespace tessera::detail
