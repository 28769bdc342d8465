// Memory in the backend's space: host memory under cpu, device memory under cuda. Copies between
// backend memory and host memory are ordered on the queue and complete before the call returns
// unless the name says async.
#pragma once

#include <cstddef>
#include <string>

#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

// Memory for arrays. Under cpu: host memory, blocks of 4 MiB and more on transparent huge pages and
// from a cache of freed blocks (release_cached_memory). Under cuda: plain device memory (cudaMalloc, so CUDA-aware MPI can map it),
// from a cache of freed blocks where one of about the size is free: repeated calls that make and
// drop arrays of similar sizes cost no cudaMalloc/cudaFree. Like cudaMallocAsync memory, a block is
// ready in the queue's stream order; deallocate may be called while work on the queue still uses
// the block (its reuse waits for that work), but not after the queue is destroyed (deallocate
// records an event on the queue's stream). Out of memory: the cache is emptied and it retries.
// Cached blocks count as used in cudaMemGetInfo; release_cached_memory() gives them back.
// Throws OutOfMemory when the backend has no room (never returns null for bytes > 0).
void* allocate(const Queue& queue, std::size_t bytes);

// count * element_bytes, or OutOfMemory (naming `what`) when that does not fit in 64 bits.
std::size_t array_bytes(index_t count, std::size_t element_bytes, const char* what = "an array");
void deallocate(const Queue& queue, void* ptr);

// OutOfMemory (naming `what`) when `bytes` exceed this machine's physical memory and swap together:
// no host allocation of that size can be backed, even where the kernel overcommits and would let
// it succeed, only to kill the process when the pages are touched. allocate() checks it for host
// memory; call it before making a std::vector of a size that comes from input.
void require_host_memory(std::size_t bytes, const std::string& what = "host memory");

// The bytes the queue's memory holds in all: under cuda the device's memory (what cudaMemGetInfo
// calls total), under cpu this machine's physical memory and swap (0 where it cannot be read). The
// ranks that share that memory share this much between them.
std::size_t memory_capacity(const Queue& queue);

// Returns the cached, unused blocks of allocate() to the driver (cudaFree) and, under cpu, the
// cached host blocks of 4 MiB and more (freed blocks that size are kept for the next allocation of
// about their size, at most a sixteenth of the machine's memory, 2 GiB at most) to the C library.
void release_cached_memory();
// Bytes held in those caches now.
std::size_t cached_memory_bytes();

// Page-locked host memory where the build has CUDA (faster staging), plain host memory otherwise.
void* allocate_pinned_host(std::size_t bytes);
void deallocate_pinned_host(void* ptr);

// Copies within backend memory, or between backend memory and host memory. Synchronous.
void copy_to_host(const Queue& queue, void* host_dst, const void* src, std::size_t bytes);
void copy_from_host(const Queue& queue, void* dst, const void* host_src, std::size_t bytes);
void copy_within(const Queue& queue, void* dst, const void* src, std::size_t bytes);

// Stream-ordered versions: the caller synchronizes the queue before touching the host side.
void copy_to_host_async(const Queue& queue, void* host_dst, const void* src, std::size_t bytes);
void copy_from_host_async(const Queue& queue, void* dst, const void* host_src, std::size_t bytes);
// Within backend memory; the ranges do not overlap.
void copy_within_async(const Queue& queue, void* dst, const void* src, std::size_t bytes);

// Temporary storage for one operation: stream-ordered pool allocation under cuda
// (cudaMallocAsync / cudaFreeAsync), plain allocation under cpu. Freed at scope exit, in stream order.
// Out of device memory (after emptying allocate()'s block cache and retrying): an error, or, with
// OutOfMemory::leave_empty, an empty buffer (data() == nullptr) for callers that can do without.
class ScratchBuffer {
 public:
  enum class OutOfMemory { fail, leave_empty };
  ScratchBuffer(const Queue& queue, std::size_t bytes, OutOfMemory on_out_of_memory = OutOfMemory::fail);
  ~ScratchBuffer();
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  void* data() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  std::size_t bytes() const { return bytes_; }

 private:
  Queue queue_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace tessera::kernels
