// Size checks of memory requests, the same for every backend (memory.hpp).
#include <cstdint>
#include <string>

#include <sys/sysinfo.h>

#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::kernels {

std::size_t host_memory_capacity() {
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return 0;  // unknown
  const long double total = (static_cast<long double>(info.totalram) + static_cast<long double>(info.totalswap)) *
                            static_cast<long double>(info.mem_unit);
  return total >= static_cast<long double>(SIZE_MAX) ? SIZE_MAX : static_cast<std::size_t>(total);
}

void require_host_memory(std::size_t bytes, const std::string& what) {
  const std::size_t total = host_memory_capacity();
  if (total == 0) return;  // unknown: the allocation itself decides
  if (bytes > total) throw OutOfMemory(bytes, what);
}

std::size_t array_bytes(index_t count, std::size_t element_bytes, const char* what) {
  TESSERA_ASSERT(count >= 0, "array_bytes: negative element count");
  if (element_bytes != 0 && static_cast<std::size_t>(count) > SIZE_MAX / element_bytes)
    throw OutOfMemory(SIZE_MAX, std::to_string(count) + " elements of " + std::to_string(element_bytes) + " bytes (" +
                                    what + ")");
  return static_cast<std::size_t>(count) * element_bytes;
}

}  // namespace tessera::kernels
