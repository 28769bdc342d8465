// Per-stream workspaces (see stream_workspace.hpp).
#include "tessera/kernels/cuda/stream_workspace.hpp"

#include <algorithm>
#include <bit>
#include <map>
#include <mutex>

#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda::detail {
namespace {

constexpr std::size_t kHeadBytes = 256;
// Enough for the reduce's partials (4 waves of 4 blocks on 132 SMs, 8 bytes each: 17 KiB) and the
// exact sum's (264 blocks x 73 fields x 8 bytes for double: 154 KB; 528 x 16 x 8 for float) on
// current GPUs: one allocation per stream in practice.
constexpr std::size_t kMinScratchBytes = std::size_t(256) << 10;

struct Entry {
  void* base = nullptr;
  std::size_t scratch_bytes = 0;
};

class Registry {
 public:
  StreamWorkspace get(cudaStream_t stream, std::size_t scratch_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& e = entries_[stream];
    if (!e.base || e.scratch_bytes < scratch_bytes) {
      // Stream order makes the swap safe: kernels already queued on `stream` finish with the old
      // block before the free, and the new head is zeroed before any later kernel starts.
      if (e.base) TESSERA_CUDA_CHECK(cudaFreeAsync(e.base, stream));
      e.base = nullptr;
      e.scratch_bytes = 0;
      const std::size_t bytes = std::bit_ceil(std::max(scratch_bytes, kMinScratchBytes));
      cudaError_t status = cudaMallocAsync(&e.base, kHeadBytes + bytes, stream);
      if (status == cudaErrorMemoryAllocation) {  // as ScratchBuffer: cached array blocks may hold it
        (void)cudaGetLastError();
        release_cached_memory();
        status = cudaMallocAsync(&e.base, kHeadBytes + bytes, stream);
      }
      TESSERA_CUDA_CHECK(status);
      TESSERA_CUDA_CHECK(cudaMemsetAsync(e.base, 0, kHeadBytes, stream));
      e.scratch_bytes = bytes;
    }
    return {static_cast<unsigned int*>(e.base), static_cast<char*>(e.base) + kHeadBytes};
  }

  void release(cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(stream);
    if (it == entries_.end()) return;
    if (it->second.base) TESSERA_CUDA_CHECK(cudaFreeAsync(it->second.base, stream));
    entries_.erase(it);
  }

 private:
  std::mutex mutex_;
  // Keyed by the stream alone: a created stream's handle is unique in the process, whatever the
  // device (the special handles, which are per device or per thread, never get here).
  std::map<cudaStream_t, Entry> entries_;
};

// Never destroyed: at process exit the driver may already be gone, and it frees everything anyway.
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

}  // namespace

StreamWorkspace stream_workspace(cudaStream_t stream, std::size_t scratch_bytes) {
  // The null, legacy and per-thread default streams are one handle for many streams (per device,
  // per host thread): no workspace of their own, the pool instead.
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return {};
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    // e.g. the legacy default stream while another thread captures: let the pool path report it.
    (void)cudaGetLastError();
    return {};
  }
  if (capture != cudaStreamCaptureStatusNone) return {};
  return registry().get(stream, scratch_bytes);
}

StreamScratch::StreamScratch(int device, cudaStream_t stream, std::size_t scratch_bytes)
    : workspace_(stream_workspace(stream, scratch_bytes)) {
  if (workspace_.counter) return;
  pool_.emplace(Queue{Backend::cuda, device, reinterpret_cast<StreamHandle>(stream)}, kHeadBytes + scratch_bytes);
  workspace_.counter = pool_->as<unsigned int>();
  workspace_.scratch = static_cast<char*>(pool_->data()) + kHeadBytes;
  TESSERA_CUDA_CHECK(cudaMemsetAsync(workspace_.counter, 0, kHeadBytes, stream));
}

void release_stream_workspace(cudaStream_t stream) { registry().release(stream); }

}  // namespace tessera::kernels::cuda::detail
