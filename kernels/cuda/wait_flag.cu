// wait_flag under a limit (queue.hpp, DeviceWaitLimit): one thread polls the flag that another
// process sets, and gives up (naming the peer, then trapping) when the host aborts the wait or the
// deadline passes. The stream memory operation of wait_flag cannot be given either.
#include <cuda_runtime.h>

#include <cstdint>

#include "../src/queue_backends.hpp"
#include "tessera/kernels/cuda/device_stencil.cuh"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda {
namespace {

__global__ void wait_flag_kernel(const std::uint64_t* flag, std::uint64_t value, DeviceWaitLimit limit, int peer) {
  const std::uint64_t started = detail::global_time_ns();
  for (;;) {
    std::uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];\n" : "=l"(v) : "l"(flag) : "memory");
    if (v >= value) return;
    detail::check_wait_limit(limit, peer, started);
    __nanosleep(200);
  }
}

}  // namespace

void wait_flag_limited(const Queue& q, const std::uint64_t* flag, std::uint64_t value, const DeviceWaitLimit& limit,
                       int peer) {
  wait_flag_kernel<<<1, 1, 0, reinterpret_cast<cudaStream_t>(q.stream)>>>(flag, value, limit, peer);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda
