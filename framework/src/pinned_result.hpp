// A per-thread pinned host buffer that a device kernel writes its small result into directly
// (pinned memory is mapped for the device under unified addressing): the local phase of the
// scalar reductions then needs no device allocation before the kernel and no device-to-host copy
// after it, only the queue's synchronisation. Internal to the framework.
#pragma once

#include <cstddef>

namespace tessera::detail {

// At least `bytes` (up to kPinnedResultBytes) of pinned host memory, 64-byte aligned, owned by
// the calling thread for its lifetime; only for the cuda backend (it needs a CUDA device).
inline constexpr std::size_t kPinnedResultBytes = 4096;
void* pinned_result_slot(std::size_t bytes);

}  // namespace tessera::detail
