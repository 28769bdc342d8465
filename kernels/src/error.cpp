#include "tessera/kernels/error.hpp"

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "tessera/kernels/config.hpp"

namespace tessera {
namespace {

void default_fatal_handler(const char* file, int line, const char* call, const char* what) {
  std::fprintf(stderr, "tessera: fatal error at %s:%d: %s: %s\n", file, line, call, what);
  std::fflush(stderr);
  std::abort();
}

std::atomic<FatalHandler> g_handler{&default_fatal_handler};

}  // namespace

FatalHandler set_fatal_handler(FatalHandler handler) {
  return g_handler.exchange(handler ? handler : &default_fatal_handler);
}

void fatal(const char* file, int line, const char* call, const std::string& what) {
  g_handler.load()(file, line, call, what.c_str());
  std::abort();  // a handler that returns still ends the process
}

OutOfMemory::OutOfMemory(std::size_t bytes, std::string where)
    : bytes_(bytes), where_(std::move(where)) {
  message_ = bytes == SIZE_MAX ? "the byte count of " + where_ + " does not fit in 64 bits"
                               : "cannot allocate " + format_bytes(static_cast<double>(bytes)) + " (" +
                                     std::to_string(bytes) + " bytes) of " + where_;
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) {
    bytes /= 1024;
    ++u;
  }
  char text[64];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return text;
}

bool built_with_cuda() { return TESSERA_HAVE_CUDA != 0; }
bool built_with_nccl() { return TESSERA_HAVE_NCCL != 0; }

}  // namespace tessera
