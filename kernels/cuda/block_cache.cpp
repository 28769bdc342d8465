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
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "../src/memory_backends.hpp"
#include "tessera/kernels/cuda/device_guard.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::kernels::cuda {
namespace {

class DeviceBlockCache {
 public:
  void* allocate(const Queue& q, std::size_t bytes) {
    const int device = q.device;
    const auto stream = reinterpret_cast<cudaStream_t>(q.stream);
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
    void* p = nullptr;
    cudaError_t status = cudaSuccess;
    {
      const detail::ScopedDevice on_device(device);  // cudaMalloc allocates on the current device
      status = cudaMalloc(&p, size);
      if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        release_all();
        cudaMemPool_t pool = nullptr;
        TESSERA_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
        TESSERA_CUDA_CHECK(cudaDeviceSynchronize());  // pool blocks freed in stream order become free
        TESSERA_CUDA_CHECK(cudaMemPoolTrimTo(pool, 0));
        status = cudaMalloc(&p, size);
      }
    }
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky
      throw OutOfMemory(size, "memory on device " + std::to_string(device));
    }
    TESSERA_CUDA_CHECK(status);
    std::lock_guard<std::mutex> lock(mutex_);
    in_use_.emplace(p, Block{p, size, device, stream, nullptr});
    return p;
  }

  void deallocate(const Queue& q, void* ptr) {
    const auto stream = reinterpret_cast<cudaStream_t>(q.stream);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = in_use_.find(ptr);
    TESSERA_ASSERT(it != in_use_.end(), "kernels::deallocate: pointer not from kernels::allocate");
    Block b = it->second;
    in_use_.erase(it);
    if (!b.freed) {
      const detail::ScopedDevice on_device(b.device);  // an event belongs to the current device
      TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&b.freed, cudaEventDisableTiming));
    }
    TESSERA_CUDA_CHECK(cudaEventRecord(b.freed, stream));
    b.stream = stream;
    free_.emplace(std::make_pair(b.device, b.bytes), b);
    cached_bytes_ += b.bytes;
  }

  // Returns every cached block to the driver (blocks in use stay).
  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [key, b] : free_) {
      const detail::ScopedDevice on_device(b.device);  // cudaFree of another device's block
      TESSERA_CUDA_CHECK(cudaEventSynchronize(b.freed));
      TESSERA_CUDA_CHECK(cudaEventDestroy(b.freed));
      TESSERA_CUDA_CHECK(cudaFree(b.ptr));
    }
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

void* allocate(const Queue& q, std::size_t bytes) { return block_cache().allocate(q, bytes); }

void deallocate(const Queue& q, void* ptr) { block_cache().deallocate(q, ptr); }

void release_cached_memory() { block_cache().release_all(); }

std::size_t cached_memory_bytes() { return block_cache().cached_bytes(); }

}  // namespace tessera::kernels::cuda
