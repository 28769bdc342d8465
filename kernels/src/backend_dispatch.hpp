// How the precompiled local operations hand their work to the backend a queue names: the cpu call
// on a cpu queue, the cuda call otherwise; in a build without CUDA a cuda queue is a usage error,
// not a crash. Calls that name no queue (device counts, the array cache, pinned memory) take the
// cuda call where the build has CUDA and the cpu call otherwise (TESSERA_DISPATCH_BUILD). The
// backend halves are declared in cpu/cpu_backend.hpp, cuda/cuda_backend.hpp and the *_backends.hpp
// beside each dispatch; a cuda half that queues work takes the Queue (its device and stream) first,
// and runs with the queue's device current.
#pragma once

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels::detail {

[[noreturn]] inline void no_cuda_backend() {
  throw UsageError("the cuda backend was requested, but this build of Tessera has no CUDA support");
}

}  // namespace tessera::kernels::detail

#if TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/device_guard.hpp"

// The cuda call runs with the queue's device current (and the thread's own restored after it).
#define TESSERA_DISPATCH(queue, cpu_call, cuda_call)                                    \
  do {                                                                                  \
    if ((queue).backend == Backend::cpu) {                                              \
      cpu_call;                                                                         \
    } else {                                                                            \
      const ::tessera::kernels::cuda::detail::ScopedDevice on_queue_device_((queue).device); \
      cuda_call;                                                                        \
    }                                                                                   \
  } while (0)
#else
#define TESSERA_DISPATCH(queue, cpu_call, cuda_call)     \
  do {                                                   \
    if ((queue).backend == Backend::cpu) {               \
      cpu_call;                                          \
    } else {                                             \
      ::tessera::kernels::detail::no_cuda_backend();     \
    }                                                    \
  } while (0)
#endif

#if TESSERA_HAVE_CUDA
#define TESSERA_DISPATCH_BUILD(cpu_call, cuda_call) \
  do {                                              \
    cuda_call;                                      \
  } while (0)
#else
#define TESSERA_DISPATCH_BUILD(cpu_call, cuda_call) \
  do {                                              \
    cpu_call;                                       \
  } while (0)
#endif
