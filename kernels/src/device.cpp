// Queues and memory of each backend. Under cpu everything is plain host memory and synchronous.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include <sys/sysinfo.h>

#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "tessera/kernels/cuda/stream_workspace.hpp"
#include "tessera/kernels/cuda_check.hpp"
#endif

namespace tessera::kernels {
namespace {

// 64-byte alignment: whole cache lines, and 16-byte vector loads on any element.
void* allocate_host_aligned(std::size_t bytes) {
  if (bytes > SIZE_MAX - 63) throw OutOfMemory(bytes, "host memory");
  require_host_memory(bytes);
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw OutOfMemory(bytes, "host memory");
  return p;
}

}  // namespace

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
    cuda::detail::release_stream_workspace(cuda_stream(q));
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

#if TESSERA_HAVE_CUDA
namespace {

// Device memory of arrays (DistArray blocks and other long-lived buffers): blocks from cudaMalloc,
// kept in a cache when freed and handed out again for requests of about the same size. Plain
// cudaMalloc memory rather than the stream-ordered pool, because CUDA-aware MPI libraries map it
// with CUDA IPC, which pool memory does not allow by default; cached, because an algorithm that
// returns a new array (filter, scan, rebalance) would otherwise pay a cudaMalloc and a cudaFree per
// call (each 0.1-1 ms per GB, and cudaFree synchronises the device).
//
// Stream order: a freed block records an event on the freeing queue's stream. Reused on the same
// stream it is safe by stream order; reused from another stream, that stream first waits for the
// event. On out-of-memory the cache and the stream-ordered pool are emptied and the allocation is
// tried once more.
class DeviceBlockCache {
 public:
  void* allocate(int device, cudaStream_t stream, std::size_t bytes) {
    const std::size_t size = round_up(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Best fit, wasting at most an eighth of the request.
      auto it = free_.lower_bound({device, size});
      if (it != free_.end() && it->first.first == device && it->first.second <= size + size / 8) {
        Block b = it->second;
        free_.erase(it);
        cached_bytes_ -= b.bytes;
        if (b.stream != stream) TESSERA_CUDA_CHECK(cudaStreamWaitEvent(stream, b.freed, 0));
        in_use_.emplace(b.ptr, b);
        return b.ptr;
      }
    }
    // cudaMalloc allocates on the current device: make it the queue's for the call.
    int current = 0;
    TESSERA_CUDA_CHECK(cudaGetDevice(&current));
    if (current != device) TESSERA_CUDA_CHECK(cudaSetDevice(device));
    void* p = nullptr;
    cudaError_t status = cudaMalloc(&p, size);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      release_all();
      cudaMemPool_t pool = nullptr;
      TESSERA_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
      TESSERA_CUDA_CHECK(cudaDeviceSynchronize());  // pool blocks freed in stream order become free
      TESSERA_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
      status = cudaMalloc(&p, size);
    }
    if (current != device) TESSERA_CUDA_CHECK(cudaSetDevice(current));
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky
      throw OutOfMemory(size, "memory on device " + std::to_string(device));
    }
    TESSERA_CUDA_CHECK(status);
    std::lock_guard<std::mutex> lock(mutex_);
    in_use_.emplace(p, Block{p, size, device, stream, nullptr});
    return p;
  }

  void deallocate(void* ptr, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = in_use_.find(ptr);
    TESSERA_ASSERT(it != in_use_.end(), "kernels::deallocate: pointer not from kernels::allocate");
    Block b = it->second;
    in_use_.erase(it);
    if (!b.freed) TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&b.freed, cudaEventDisableTiming));
    TESSERA_CUDA_CHECK(cudaEventRecord(b.freed, stream));
    b.stream = stream;
    free_.emplace(std::make_pair(b.device, b.bytes), b);
    cached_bytes_ += b.bytes;
  }

  // Returns every cached block to the driver (blocks in use stay).
  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return;
    int current = 0;
    TESSERA_CUDA_CHECK(cudaGetDevice(&current));
    for (auto& [key, b] : free_) {
      TESSERA_CUDA_CHECK(cudaSetDevice(b.device));
      TESSERA_CUDA_CHECK(cudaEventSynchronize(b.freed));
      TESSERA_CUDA_CHECK(cudaEventDestroy(b.freed));
      TESSERA_CUDA_CHECK(cudaFree(b.ptr));
    }
    TESSERA_CUDA_CHECK(cudaSetDevice(current));
    free_.clear();
    cached_bytes_ = 0;
  }

  std::size_t cached_bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_bytes_;
  }

 private:
  struct Block {
    void* ptr;
    std::size_t bytes;
    int device;
    cudaStream_t stream;  // of the last free
    cudaEvent_t freed;    // recorded there at the last free
  };
  // 512-byte granules for small blocks, 2 MiB (the driver's page size for large ones) above 1 MiB.
  static std::size_t round_up(std::size_t bytes) {
    const std::size_t granule = bytes >= (std::size_t(1) << 20) ? (std::size_t(2) << 20) : 512;
    if (bytes > SIZE_MAX - granule) throw OutOfMemory(bytes, "device memory");  // no device has that much
    return (bytes + granule - 1) / granule * granule;
  }

  std::mutex mutex_;
  std::unordered_map<void*, Block> in_use_;
  std::multimap<std::pair<int, std::size_t>, Block> free_;
  std::size_t cached_bytes_ = 0;
};

// Never destroyed: at process exit the driver may already be gone, and it frees everything anyway.
DeviceBlockCache& block_cache() {
  static auto* cache = new DeviceBlockCache;
  return *cache;
}

}  // namespace
#endif

void* allocate(const Queue& q, std::size_t bytes) {
  if (bytes == 0) return nullptr;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) return block_cache().allocate(q.device, cuda_stream(q), bytes);
#endif
  (void)q;
  return allocate_host_aligned(bytes);
}

void require_host_memory(std::size_t bytes, const std::string& what) {
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return;  // unknown: the allocation itself decides
  const long double total = (static_cast<long double>(info.totalram) + static_cast<long double>(info.totalswap)) *
                            static_cast<long double>(info.mem_unit);
  if (static_cast<long double>(bytes) > total) throw OutOfMemory(bytes, what);
}

std::size_t array_bytes(index_t count, std::size_t element_bytes, const char* what) {
  TESSERA_ASSERT(count >= 0, "array_bytes: negative element count");
  if (element_bytes != 0 && static_cast<std::size_t>(count) > SIZE_MAX / element_bytes)
    throw OutOfMemory(SIZE_MAX, std::to_string(count) + " elements of " + std::to_string(element_bytes) + " bytes (" +
                                    what + ")");
  return static_cast<std::size_t>(count) * element_bytes;
}

void deallocate(const Queue& q, void* ptr) {
  if (!ptr) return;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    block_cache().deallocate(ptr, cuda_stream(q));
    return;
  }
#endif
  (void)q;
  std::free(ptr);
}

void release_cached_memory() {
#if TESSERA_HAVE_CUDA
  block_cache().release_all();
#endif
}

std::size_t cached_memory_bytes() {
#if TESSERA_HAVE_CUDA
  return block_cache().cached_bytes();
#else
  return 0;
#endif
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
  return allocate_host_aligned(bytes);
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

void copy_within_async(const Queue& q, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    TESSERA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda_stream(q)));
    return;
  }
#endif
  (void)q;
  std::memcpy(dst, src, bytes);
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

ScratchBuffer::ScratchBuffer(const Queue& q, std::size_t bytes, OutOfMemory on_out_of_memory)
    : queue_(q), bytes_(bytes) {
  if (bytes == 0) return;
#if TESSERA_HAVE_CUDA
  if (q.backend == Backend::cuda) {
    cudaError_t status = cudaMallocAsync(&data_, bytes, cuda_stream(q));
    if (status == cudaErrorMemoryAllocation) {  // cached array blocks may hold what the pool needs
      (void)cudaGetLastError();
      release_cached_memory();
      status = cudaMallocAsync(&data_, bytes, cuda_stream(q));
    }
    if (status == cudaErrorMemoryAllocation && on_out_of_memory == OutOfMemory::leave_empty) {
      (void)cudaGetLastError();  // not sticky
      data_ = nullptr;
      bytes_ = 0;
      return;
    }
    TESSERA_CUDA_CHECK(status);
    return;
  }
#endif
  (void)on_out_of_memory;
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
