// device_wait_limit.hpp: the mapped words, the watchdog's hook that sets the abort flag, and the
// fatal handler that names the rank a device wait gave up on.
#include "device_wait_limit.hpp"

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdio>
#include <mutex>

#include "tessera/build_config.hpp"
#include "tessera/framework/mpi_watchdog.hpp"
#include "tessera/kernels/error.hpp"

#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels/cuda_check.hpp"
#endif

namespace tessera::detail {

#if TESSERA_HAVE_CUDA
namespace {

struct Words {
  std::uint32_t abort;
  std::int32_t lost_rank;
};
Words* g_words = nullptr;  // mapped host memory, for the life of the process
kernels::DeviceWaitLimit g_limit;
FatalHandler g_previous = nullptr;

// The watchdog's hook: every device wait for a peer gives up; the first to do so names its peer,
// which this says (a second at most: the device may be past its waits, or gone).
void abort_device_waits(void*) {
  reinterpret_cast<volatile std::uint32_t*>(&g_words->abort)[0] = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (int i = 0; i < 100; ++i) {
    const std::int32_t lost = reinterpret_cast<volatile std::int32_t*>(&g_words->lost_rank)[0];
    if (lost >= 0) {
      std::fprintf(stderr, "tessera: the device was waiting for rank %d's flags: rank %d (or its node) is lost or stuck\n",
                   static_cast<int>(lost), static_cast<int>(lost));
      std::fflush(stderr);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void name_lost_rank(const char* file, int line, const char* call, const char* what) {
  const std::int32_t lost = reinterpret_cast<volatile std::int32_t*>(&g_words->lost_rank)[0];
  if (lost >= 0) {
    std::fprintf(stderr,
                 "tessera: a device wait for rank %d's flags gave up (TESSERA_MPI_TIMEOUT=%g s passed, or the MPI "
                 "watchdog fired): rank %d (or its node) is lost or stuck\n",
                 static_cast<int>(lost), mpi_watchdog_timeout(), static_cast<int>(lost));
    std::fflush(stderr);
  }
  g_previous(file, line, call, what);
}

}  // namespace

kernels::DeviceWaitLimit device_wait_limit() {
  const double timeout = mpi_watchdog_timeout();
  if (timeout <= 0) return {};
  static std::once_flag once;
  std::call_once(once, [timeout] {
    void* host = nullptr;
    TESSERA_CUDA_CHECK(cudaHostAlloc(&host, sizeof(Words), cudaHostAllocMapped | cudaHostAllocPortable));
    g_words = static_cast<Words*>(host);
    g_words->abort = 0;
    g_words->lost_rank = -1;
    void* device = nullptr;
    TESSERA_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
    auto* d = static_cast<Words*>(device);
    g_limit.abort = &d->abort;
    g_limit.lost_rank = &d->lost_rank;
    g_limit.timeout_ns = static_cast<std::uint64_t>(timeout * 1e9);
    add_watchdog_abort_hook(abort_device_waits, nullptr);
    g_previous = set_fatal_handler(name_lost_rank);
  });
  return g_limit;
}
#else
kernels::DeviceWaitLimit device_wait_limit() { return {}; }
#endif

}  // namespace tessera::detail
