// Queues of the cuda backend: a non-blocking stream on one device.
#include <cuda.h>  // the driver's types only: its functions come from cudaGetDriverEntryPointByVersion
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>

#include "../src/queue_backends.hpp"
#include "tessera/kernels/cuda/device_guard.hpp"
#include "tessera/kernels/cuda/stream_workspace.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::kernels::cuda {
namespace {

cudaStream_t cuda_stream(const Queue& q) { return reinterpret_cast<cudaStream_t>(q.stream); }

// Keeps freed pool memory for reuse instead of returning it to the driver at each synchronisation,
// so that per-call scratch buffers cost a pointer bump after the first call.
void keep_pool_memory(int device) {
  cudaMemPool_t pool = nullptr;
  TESSERA_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  std::uint64_t threshold = UINT64_MAX;
  TESSERA_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
}

// The driver's stream memory operations, found through the runtime (no link to libcuda, which a
// machine without a GPU driver lacks); null where the driver has none.
struct StreamMemoryOps {
  CUresult (*write64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int) = nullptr;
  CUresult (*wait64)(CUstream, CUdeviceptr, cuuint64_t, unsigned int) = nullptr;
  CUresult (*attribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
};

const StreamMemoryOps& stream_memory_ops() {
  static StreamMemoryOps ops;
  static std::once_flag once;
  std::call_once(once, [] {
    auto find = [](const char* symbol, auto& fn) {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult found{};
      if (cudaGetDriverEntryPointByVersion(symbol, &p, 12000, cudaEnableDefault, &found) == cudaSuccess &&
          found == cudaDriverEntryPointSuccess)
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
      else
        (void)cudaGetLastError();
    };
    find("cuStreamWriteValue64", ops.write64);
    find("cuStreamWaitValue64", ops.wait64);
    find("cuDeviceGetAttribute", ops.attribute);
  });
  return ops;
}

void check_driver(CUresult status, const char* call) {
  if (status != CUDA_SUCCESS) TESSERA_FATAL(call, "CUresult " + std::to_string(static_cast<int>(status)));
}

}  // namespace

bool queue_flags_available(const Queue& q) {
  const StreamMemoryOps& ops = stream_memory_ops();
  if (!ops.write64 || !ops.wait64 || !ops.attribute) return false;
  int can = 0;
  if (ops.attribute(&can, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, static_cast<CUdevice>(q.device)) != CUDA_SUCCESS)
    return false;
  return can != 0;
}

// The write's default carries a memory barrier: the stream's earlier writes are visible first.
void write_flag(const Queue& q, std::uint64_t* flag, std::uint64_t value) {
  check_driver(stream_memory_ops().write64(reinterpret_cast<CUstream>(q.stream), reinterpret_cast<CUdeviceptr>(flag),
                                           value, CU_STREAM_WRITE_VALUE_DEFAULT),
               "cuStreamWriteValue64");
}

void wait_flag(const Queue& q, const std::uint64_t* flag, std::uint64_t value) {
  check_driver(stream_memory_ops().wait64(reinterpret_cast<CUstream>(q.stream), reinterpret_cast<CUdeviceptr>(flag),
                                          value, CU_STREAM_WAIT_VALUE_GEQ),
               "cuStreamWaitValue64");
}

int device_count() {
  int count = 0;
  // No driver, no device or a driver too old for this runtime: all mean "no usable GPU here".
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

// The one call that changes the thread's current device, as queue.hpp promises: work the caller
// launches itself (the generic kernels) then goes to the queue's device.
Queue make_queue(int device) {
  Queue q;
  q.backend = Backend::cuda;
  q.device = device;
  TESSERA_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t stream = nullptr;
  TESSERA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  q.stream = reinterpret_cast<StreamHandle>(stream);
  keep_pool_memory(device);
  return q;
}

void synchronize(const Queue& q) { TESSERA_CUDA_CHECK(cudaStreamSynchronize(cuda_stream(q))); }

void destroy_queue(Queue& q) {
  if (!q.stream) return;
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(cuda_stream(q)));
  detail::release_stream_workspace(cuda_stream(q));
  TESSERA_CUDA_CHECK(cudaStreamDestroy(cuda_stream(q)));
}

Queue make_priority_queue(const Queue& queue) {
  Queue q = queue;
  const detail::ScopedDevice on_device(queue.device);  // the priority range and the stream are per device
  int least = 0, greatest = 0;  // numerically, the greatest priority is the lowest number
  TESSERA_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t stream = nullptr;
  TESSERA_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
  q.stream = reinterpret_cast<StreamHandle>(stream);
  return q;
}

void queue_wait(const Queue& waiting, const Queue& done) {
  if (waiting.stream == done.stream) return;
  // One event per host thread and device, recorded again at every call: a stream's wait refers to
  // the record made before it, so a later record does not disturb waits already queued.
  constexpr int kMaxDevices = 64;
  thread_local std::array<cudaEvent_t, kMaxDevices> events{};
  TESSERA_ASSERT(done.device >= 0 && done.device < kMaxDevices, "queue_wait: device ordinal out of range");
  cudaEvent_t& event = events[static_cast<std::size_t>(done.device)];
  if (!event) {
    const detail::ScopedDevice on_device(done.device);  // an event belongs to the current device
    TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }
  TESSERA_CUDA_CHECK(cudaEventRecord(event, cuda_stream(done)));
  TESSERA_CUDA_CHECK(cudaStreamWaitEvent(cuda_stream(waiting), event, 0));
}

}  // namespace tessera::kernels::cuda
