// Memory and copies (memory.hpp, copy_2d.hpp): each call hands the work to the backend the queue
// names; the calls that name no queue, to the build's backend.
#include <cstring>

#include "backend_dispatch.hpp"
#include "memory_backends.hpp"
#include "queue_backends.hpp"
#include "tessera/kernels/copy_2d.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::kernels {

void* allocate(const Queue& q, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  TESSERA_DISPATCH(q, p = cpu::allocate(bytes), p = cuda::allocate(q, bytes));
  return p;
}

void deallocate(const Queue& q, void* ptr) {
  if (!ptr) return;
  TESSERA_DISPATCH(q, cpu::deallocate(ptr), cuda::deallocate(q, ptr));
}

std::size_t memory_capacity(const Queue& q) {
  std::size_t bytes = 0;
  TESSERA_DISPATCH(q, bytes = host_memory_capacity(), bytes = cuda::memory_capacity(q));
  return bytes;
}

void release_cached_memory() {
  cpu::release_cached_memory();
  TESSERA_DISPATCH_BUILD((void)0, cuda::release_cached_memory());
}

std::size_t cached_memory_bytes() {
  std::size_t bytes = cpu::cached_memory_bytes();
  TESSERA_DISPATCH_BUILD((void)0, bytes += cuda::cached_memory_bytes());
  return bytes;
}

// Pinned where the build has CUDA and the machine a usable GPU; plain host memory otherwise.
void* allocate_pinned_host(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  TESSERA_DISPATCH_BUILD(p = cpu::allocate(bytes),
                         p = cuda::device_count() > 0 ? cuda::allocate_pinned_host(bytes) : cpu::allocate(bytes));
  return p;
}

void deallocate_pinned_host(void* ptr) {
  if (!ptr) return;
  TESSERA_DISPATCH_BUILD(cpu::deallocate(ptr),
                         cuda::device_count() > 0 ? cuda::deallocate_pinned_host(ptr) : cpu::deallocate(ptr));
}

void copy_to_host_async(const Queue& q, void* host_dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  TESSERA_DISPATCH(q, cpu::copy(host_dst, src, bytes), cuda::copy_to_host_async(q, host_dst, src, bytes));
}

void copy_from_host_async(const Queue& q, void* dst, const void* host_src, std::size_t bytes) {
  if (bytes == 0) return;
  TESSERA_DISPATCH(q, cpu::copy(dst, host_src, bytes), cuda::copy_from_host_async(q, dst, host_src, bytes));
}

void copy_within_async(const Queue& q, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  TESSERA_DISPATCH(q, cpu::copy(dst, src, bytes), cuda::copy_within_async(q, dst, src, bytes));
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
  TESSERA_DISPATCH(q, cpu::copy_within(dst, src, bytes), cuda::copy_within_async(q, dst, src, bytes);
                   cuda::synchronize(q));
}

void copy_2d(const Queue& q, void* dst, index_t dst_ld, const void* src, index_t src_ld, index_t rows, index_t cols,
             std::size_t element_bytes) {
  TESSERA_ASSERT(rows >= 0 && cols >= 0 && dst_ld >= cols && src_ld >= cols, "copy_2d: bad shape");
  if (rows == 0 || cols == 0) return;
  const std::size_t row_bytes = static_cast<std::size_t>(cols) * element_bytes;
  const std::size_t dst_pitch = static_cast<std::size_t>(dst_ld) * element_bytes;
  const std::size_t src_pitch = static_cast<std::size_t>(src_ld) * element_bytes;
  const auto row_count = static_cast<std::size_t>(rows);
  TESSERA_DISPATCH(q, cpu::copy_2d(dst, dst_pitch, src, src_pitch, row_bytes, row_count),
                   cuda::copy_2d_async(q, dst, dst_pitch, src, src_pitch, row_bytes, row_count));
}

ScratchBuffer::ScratchBuffer(const Queue& q, std::size_t bytes, [[maybe_unused]] OutOfMemory on_out_of_memory)
    : queue_(q), bytes_(bytes) {
  if (bytes == 0) return;
  TESSERA_DISPATCH(q, data_ = cpu::allocate(bytes),
                   data_ = cuda::allocate_scratch(q, bytes, on_out_of_memory == OutOfMemory::leave_empty));
  if (!data_) bytes_ = 0;
}

ScratchBuffer::~ScratchBuffer() {
  if (!data_) return;
  TESSERA_DISPATCH(queue_, cpu::deallocate(data_), cuda::free_scratch(queue_, data_));
}

}  // namespace tessera::kernels
