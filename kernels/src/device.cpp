// Queues and memory of each backend. Under cpu everything is plain host memory and synchronous.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "tessera/kernels/cuda_check.hpp"
#endif

namespace tessera::kernels {

#if TESSERA_HAVE_CUDA
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

}  // namespace
#endif

void Queue::synchronize() const {
#if TESSERA_HAVE_CUDA
  if (backend == Backend::cuda) TESSERA_CUDA_CHECK(cudaStreamSynchronize(cuda_stream(*this)));
#endif
}

int cuda_device_count() {
#if TESSERA_HAVE_CUDA
  int count = 0;
  // No driver, no device or a driver too old for this runtime: all mean "no usable GPU here".
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

Queue make_cuda_queue(int device) {
#if TESSERA_HAVE_CUDA
  Queue q;
  q.backend = Backend::cuda;
  q.device = device;
  TESSERA_CUDA_CHECK(cudaSetDevice(device));
  cudaStream_t stream = nullptr;
  TESSERA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  q.stream = reinterpret_cast<StreamHandle>(stream);
  keep_pool_memory(device);
  return q;
#else
  (void)device;
  throw UsageError("the cuda backend was requested, but this build of Tessera has no CUDA support");
#endif
}

void destroy_queue(Queue& q) {
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda && q.stream) {
    TESSERA_CUDA_CHECK(cudaStreamSynchronize(cuda_stream(q)));
    TESSERA_CUDA_CHECK(cudaStreamDestroy(cuda_stream(q)));
  }
#endif
  q.stream = nullptr;
}

std::array<unsigned char, 16> device_uuid(const Queue& q) {
  std::array<unsigned char, 16> uuid{};
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    cudaDeviceProp prop{};
    TESSERA_CUDA_CHECK(cudaGetDeviceProperties(&prop, q.device));
    std::memcpy(uuid.data(), prop.uuid.bytes, uuid.size());
  }
#endif
  (void)q;
  return uuid;
}

std::string describe_device(const Queue& q) {
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    cudaDeviceProp prop{};
    TESSERA_CUDA_CHECK(cudaGetDeviceProperties(&prop, q.device));
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, " (device %d, %d SMs, %.1f GiB, cc %d.%d)", q.device,
                  prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1u << 30), prop.major,
                  prop.minor);
    return std::string(prop.name) + numbers;
  }
#endif
  (void)q;
  return "cpu";
}

void* allocate(const Queue& q, std::size_t bytes) {
  if (bytes == 0) return nullptr;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    void* p = nullptr;
    TESSERA_CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
  }
#endif
  (void)q;
  // 64-byte alignment: whole cache lines, and 16-byte vector loads on any element.
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return p;
}

void deallocate(const Queue& q, void* ptr) {
  if (!ptr) return;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    TESSERA_CUDA_CHECK(cudaFree(ptr));
    return;
  }
#endif
  (void)q;
  std::free(ptr);
}

void* allocate_pinned_host(std::size_t bytes) {
  if (bytes == 0) return nullptr;
#if TESSERA_HAVE_CUDA
  if (cuda_device_count() > 0) {
    void* p = nullptr;
    TESSERA_CUDA_CHECK(cudaMallocHost(&p, bytes));
    return p;
  }
#endif
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return p;
}

void deallocate_pinned_host(void* ptr) {
  if (!ptr) return;
#if TESSERA_HAVE_CUDA
  if (cuda_device_count() > 0) {
    TESSERA_CUDA_CHECK(cudaFreeHost(ptr));
    return;
  }
#endif
  std::free(ptr);
}

void copy_to_host_async(const Queue& q, void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, cuda_stream(q)));
    return;
  }
#endif
  (void)q;
  std::memcpy(host_dst, src, bytes);
}

void copy_from_host_async(const Queue& q, void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, cuda_stream(q)));
    return;
  }
#endif
  (void)q;
  std::memcpy(dst, host_src, bytes);
}

void copy_to_host(const Queue& q, void* host_dst, const void* src, std::size_t bytes) {
  copy_to_host_async(q, host_dst, src, bytes);
  q.synchronize();
}

void copy_from_host(const Queue& q, void* dst, const void* host_src, std::size_t bytes) {
  copy_from_host_async(q, dst, host_src, bytes);
  q.synchronize();
}

void copy_within(const Queue& q, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda_stream(q)));
    q.synchronize();
    return;
  }
#endif
  (void)q;
  std::memmove(dst, src, bytes);
}

ScratchBuffer::ScratchBuffer(const Queue& q, std::size_t bytes) : queue_(q), bytes_(bytes) {
  if (bytes == 0) return;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    TESSERA_CUDA_CHECK(cudaMallocAsync(&data_, bytes, cuda_stream(q)));
    return;
  }
#endif
  data_ = allocate(q, bytes);
}

ScratchBuffer::~ScratchBuffer() {
  if (!data_) return;
#if TESSERA_HAVE_CUDA
  if (queue_.backend == Backend::cuda) {
    TESSERA_CUDA_CHECK(cudaFreeAsync(data_, cuda_stream(queue_)));
    return;
  }
#endif
  deallocate(queue_, data_);
}

}  // namespace tessera::kernels
