// Priority queues and the ordering of one queue after another (queue.hpp).
#include "tessera/kernels/queue.hpp"

#include <array>

#include "tessera/kernels/error.hpp"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels/cuda_check.hpp"
#endif

namespace tessera::kernels {

Queue make_priority_queue(const Queue& queue) {
  if (queue.backend != Backend::cuda) return queue;
#if TESSERA_HAVE_CUDA
  Queue q = queue;
  TESSERA_CUDA_CHECK(cudaSetDevice(queue.device));
  int least = 0, greatest = 0;  // numerically, the greatest priority is the lowest number
  TESSERA_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t stream = nullptr;
  TESSERA_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
  q.stream = reinterpret_cast<StreamHandle>(stream);
  return q;
#else
  return queue;
#endif
}

void queue_wait(const Queue& waiting, const Queue& done) {
  if (waiting.backend != Backend::cuda || waiting.stream == done.stream) return;
#if TESSERA_HAVE_CUDA
  // One event per host thread and device, recorded again at every call: a stream's wait refers to
  // the record made before it, so a later record does not disturb waits already queued.
  constexpr int kMaxDevices = 64;
  thread_local std::array<cudaEvent_t, kMaxDevices> events{};
  TESSERA_ASSERT(done.device >= 0 && done.device < kMaxDevices, "queue_wait: device ordinal out of range");
  cudaEvent_t& event = events[static_cast<std::size_t>(done.device)];
  if (!event) TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  TESSERA_CUDA_CHECK(cudaEventRecord(event, reinterpret_cast<cudaStream_t>(done.stream)));
  TESSERA_CUDA_CHECK(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(waiting.stream), event, 0));
#endif
}

}  // namespace tessera::kernels
