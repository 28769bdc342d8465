// Copies of the cpu backend: memcpy on the calling thread.
#include <cstring>

#include "../src/memory_backends.hpp"

namespace tessera::kernels::cpu {

void copy(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

void copy_within(void* dst, const void* src, std::size_t bytes) { std::memmove(dst, src, bytes); }

void copy_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
             std::size_t rows) {
  for (std::size_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch, row_bytes);
}

}  // namespace tessera::kernels::cpu
