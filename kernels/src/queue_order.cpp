// Priority queues and the ordering of one queue after another (queue.hpp).
#include "tessera/kernels/queue.hpp"
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
  cudaEvent_t event;
  TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  TESSERA_CUDA_CHECK(cudaEventRecord(event, reinterpret_cast<cudaStream_t>(done.stream)));
  TESSERA_CUDA_CHECK(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(waiting.stream), event, 0));
  TESSERA_CUDA_CHECK(cudaEventDestroy(event));  // released once the wait has consumed it
#endif
}

}  // namespace tessera::kernels
