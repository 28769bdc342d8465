// How the precompiled local operations hand their work to the backend a queue names: the cpu call
// on a cpu queue, the cuda call otherwise; in a build without CUDA a cuda queue is a usage error,
// not a crash.
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
#define TESSERA_DISPATCH(queue, cpu_call, cuda_call) \
  do {                                               \
    if ((queue).backend == Backend::cpu) {           \
      cpu_call;                                      \
    } else {                                         \
      cuda_call;                                     \
    }                                                \
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
