// The backend halves of memory.hpp and copy_2d.hpp (kernels/cpu/{memory,copy}.cpp and
// kernels/cuda/{block_cache,pinned_memory,scratch,copy}.cpp), kept beside the dispatch in
// memory_dispatch.cpp. Byte counts of zero never reach them.
#pragma once

#include <cstddef>

#include "tessera/kernels/memory.hpp"

namespace tessera::kernels {

// This machine's physical memory and swap in bytes (0 where unknown): memory_size.cpp.
std::size_t host_memory_capacity();

namespace cpu {
// Host memory, 64-byte aligned: arrays, scratch and (in a build or on a machine without a GPU)
// staging buffers.
void* allocate(std::size_t bytes);
void deallocate(void* ptr);
// Freed blocks of 4 MiB and more are cached for reuse (memory.cpp); these empty and count the cache.
void release_cached_memory();
std::size_t cached_memory_bytes();

void copy(void* dst, const void* src, std::size_t bytes);       // the ranges do not overlap
void copy_within(void* dst, const void* src, std::size_t bytes);  // they may overlap
void copy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
             std::size_t rows);
}  // namespace cpu

#if TESSERA_HAVE_CUDA
namespace cuda {
// Array memory from the block cache (see allocate() in memory.hpp).
void* allocate(const Queue& queue, std::size_t bytes);
void deallocate(const Queue& queue, void* ptr);
void release_cached_memory();
std::size_t cached_memory_bytes();
std::size_t memory_capacity(const Queue& queue);  // the device's total memory

// Page-locked host memory (cudaMallocHost).
void* allocate_pinned_host(std::size_t bytes);
void deallocate_pinned_host(void* ptr);

// Stream-ordered pool memory; null only when out of memory and `leave_empty`.
void* allocate_scratch(const Queue& queue, std::size_t bytes, bool leave_empty);
void free_scratch(const Queue& queue, void* ptr);

void copy_to_host_async(const Queue& queue, void* host_dst, const void* src, std::size_t bytes);
void copy_from_host_async(const Queue& queue, void* dst, const void* host_src, std::size_t bytes);
void copy_within_async(const Queue& queue, void* dst, const void* src, std::size_t bytes);
void copy_2d_async(const Queue& queue, void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                   std::size_t row_bytes, std::size_t rows);
}  // namespace cuda
#endif

}  // namespace tessera::kernels
