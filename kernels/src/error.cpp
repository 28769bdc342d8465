#include "tessera/kernels/error.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

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

bool built_with_cuda() { return TESSERA_HAVE_CUDA != 0; }
bool built_with_nccl() { return TESSERA_HAVE_NCCL != 0; }

}  // namespace tessera
