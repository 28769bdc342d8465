// A small device buffer kept per (device, stream), so that a short pass needs neither a pool
// allocation nor a memset before its kernel.
//
// Why: timed from an idle GPU (a cudaEvent before the call, as a latency-bound caller sees it),
// what the host does before the first launch is device time. On an H200 the reduce of 2^28 floats
// ran its kernel in 242-243 us like CUB's, but the call took 247.5 us against CUB's 245.8: the
// cudaMallocAsync of its partials (~2.3 us before the launch) and the memset of its counter
// (~1 us) - CUB's caller hands it temporary storage allocated once. With this workspace the call
// measured 243.9 us, and 9.3 us instead of 11.3 at 2^20.
//
// Users: the reduce (partials and its last-block counter) and the exact sum (per-block partials).
// Layout: a 256-byte head whose first unsigned int is a counter, then `scratch_bytes` of scratch.
// Contract of every user: the counter is zero when a kernel starts and zero again when it ends
// (the last thread block resets it); the scratch is written before it is read. Uses on one stream
// are ordered by that stream, so they never overlap; different streams have different workspaces.
// One host thread per stream: a second thread growing the workspace could free the block the
// first is about to launch on. The null, legacy and per-thread default streams, which stand for
// many streams, get none, nor does a stream while it is captured into a CUDA graph (a captured
// kernel would keep the pointer; the graph may be launched elsewhere): callers fall back to the
// pool. A stream destroyed other than by destroy_queue keeps its entry (a handle the driver may
// hand out again only once the stream's work is done).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <optional>

#include "tessera/kernels/memory.hpp"

namespace tessera::kernels::cuda::detail {

struct StreamWorkspace {
  unsigned int* counter = nullptr;  // zero between uses
  void* scratch = nullptr;          // at least the bytes asked for, 256-byte aligned
};

// The workspace of the current device's `stream`, grown (in stream order) to hold `scratch_bytes`;
// an empty one (null pointers) while `stream` is capturing.
StreamWorkspace stream_workspace(cudaStream_t stream, std::size_t scratch_bytes);

// What a pass uses: the stream's workspace, or, while the stream is capturing, the same layout in
// pool memory (a ScratchBuffer, freed in stream order with this object) with the counter zeroed in
// stream order. `device` is the current device, the stream's.
class StreamScratch {
 public:
  StreamScratch(int device, cudaStream_t stream, std::size_t scratch_bytes);
  unsigned int* counter() const { return workspace_.counter; }
  void* scratch() const { return workspace_.scratch; }

 private:
  StreamWorkspace workspace_;
  std::optional<ScratchBuffer> pool_;
};

// Frees the workspace of `stream`, if any; the stream must be idle (destroy_queue calls this after
// its synchronisation, before the stream is destroyed and its handle can be reused).
void release_stream_workspace(cudaStream_t stream);

}  // namespace tessera::kernels::cuda::detail
