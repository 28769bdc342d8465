#include "pinned_result.hpp"

#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::detail {

void* pinned_result_slot(std::size_t bytes) {
  TESSERA_ASSERT(bytes <= kPinnedResultBytes, "pinned_result_slot: request larger than the slot");
  // Made on first use; kept until the thread ends (freeing pinned memory at process exit, after
  // the driver may be gone, is left to the driver, as for the block cache).
  thread_local void* slot = kernels::allocate_pinned_host(kPinnedResultBytes);
  return slot;
}

}  // namespace tessera::detail
