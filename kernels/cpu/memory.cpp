// Memory of the cpu backend: plain host memory, aligned to whole cache lines.
#include <cstdint>
#include <cstdlib>

#include "../src/memory_backends.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::kernels::cpu {

// 64-byte alignment: whole cache lines, and 16-byte vector loads on any element.
void* allocate(std::size_t bytes) {
  if (bytes > SIZE_MAX - 63) throw OutOfMemory(bytes, "host memory");
  require_host_memory(bytes);
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw OutOfMemory(bytes, "host memory");
  return p;
}

void deallocate(void* ptr) { std::free(ptr); }

}  // namespace tessera::kernels::cpu
