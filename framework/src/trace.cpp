#include "tessera/framework/trace.hpp"

#include <cstdio>
#include <cstdlib>

#include "tessera/framework/context.hpp"

#if TESSERA_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace tessera::trace::detail {

#if TESSERA_HAVE_NVTX

// NVTX itself loads the tool named by NVTX_INJECTION64_PATH on the first call; without one, every
// call would find nothing to do. Reading the variable once here lets a range skip even formatting
// its name.
const bool tool_attached = std::getenv("NVTX_INJECTION64_PATH") != nullptr;

namespace {

nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("Tessera");
  return handle;
}

void push_text(const char* text) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = text;
  nvtxDomainRangePushEx(domain(), &attributes);
}

}  // namespace

void push(const char* message) { push_text(message); }

void push(const Call& call, const Context& ctx) {
  char text[160];
  if (call.n >= 0)
    std::snprintf(text, sizeof text, "%s (n %lld, rank %d of %d)", call.name, static_cast<long long>(call.n),
                  ctx.rank(), ctx.size());
  else
    std::snprintf(text, sizeof text, "%s (rank %d of %d)", call.name, ctx.rank(), ctx.size());
  push_text(text);
}

void push(const Call& call, const char* phase) {
  char text[160];
  std::snprintf(text, sizeof text, "%s: %s", call.name, phase);
  push_text(text);
}

void pop() { nvtxDomainRangePop(domain()); }

#else

const bool tool_attached = false;
void push(const char*) {}
void push(const Call&, const Context&) {}
void push(const Call&, const char*) {}
void pop() {}

#endif

}  // namespace tessera::trace::detail
