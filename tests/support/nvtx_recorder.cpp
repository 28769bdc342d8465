// A profiler of NVTX ranges for the tests: a library that NVTX loads through its injection
// interface (NVTX_INJECTION64_PATH=libtessera_nvtx_recorder.so), as Nsight Systems' is loaded. It
// writes each domain made and each range pushed and popped, one line each, to
// $TESSERA_NVTX_RECORD/nvtx.<pid>.log:
//   domain NAME
//   push DOMAIN MESSAGE
//   pop DOMAIN
// where DOMAIN is the domain's name ("-" for NVTX's default domain).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include <nvtx3/nvToolsExt.h>

namespace {

std::mutex lock;
std::FILE* out = nullptr;

struct Domain {
  std::string name;
};

const char* name_of(nvtxDomainHandle_t domain) {
  return domain ? reinterpret_cast<const Domain*>(domain)->name.c_str() : "-";
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  auto* domain = new Domain{name ? name : ""};  // lives as long as the process, as NVTX's do
  const std::lock_guard<std::mutex> guard(lock);
  std::fprintf(out, "domain %s\n", domain->name.c_str());
  std::fflush(out);
  return reinterpret_cast<nvtxDomainHandle_t>(domain);
}

int NVTX_API range_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  const char* message = attributes && attributes->messageType == NVTX_MESSAGE_TYPE_ASCII ? attributes->message.ascii
                                                                                         : "(not ascii)";
  const std::lock_guard<std::mutex> guard(lock);
  std::fprintf(out, "push %s %s\n", name_of(domain), message);
  std::fflush(out);
  return 0;
}

int NVTX_API range_pop(nvtxDomainHandle_t domain) {
  const std::lock_guard<std::mutex> guard(lock);
  std::fprintf(out, "pop %s\n", name_of(domain));
  std::fflush(out);
  return 0;
}

}  // namespace

extern "C" NVTX_DYNAMIC_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const char* dir = std::getenv("TESSERA_NVTX_RECORD");
  if (!dir) return 0;
  const std::string path = std::string(dir) + "/nvtx." + std::to_string(static_cast<long>(getpid())) + ".log";
  out = std::fopen(path.c_str(), "w");
  if (!out) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || !table ||
      size <= NVTX_CBID_CORE2_DomainCreateA)
    return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&domain_create);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&range_push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&range_pop);
  return 1;
}
