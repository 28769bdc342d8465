// The stencils' block-level pieces (device_stencil.cuh describes the family): the flags of the
// frame-last sweep at system scope and its wait under a limit; the mbarriers, bulk copies and
// volatile shared-memory loads of the ring of rows (sm_90).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/async_copy.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/device_wait.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels::cuda::detail {

// ---- flags at system scope, and waits under a limit ----------------------------------------------

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ std::uint64_t load_acquire_system(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void add_release_system(std::uint64_t* p, std::uint64_t v) {
  asm volatile("red.release.sys.global.add.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}
#endif

__device__ __forceinline__ std::uint64_t global_time_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// A wait under a limit (queue.hpp, DeviceWaitLimit) that has expired or been aborted: names the
// peer in host memory and traps (the launch fails; the host's next CUDA call reports it).
__device__ __forceinline__ void check_wait_limit(const DeviceWaitLimit& limit, int peer, std::uint64_t started) {
  if (!limit.armed()) return;
  const bool aborted = limit.abort != nullptr && *limit.abort != 0;
  if (aborted || (limit.timeout_ns > 0 && global_time_ns() - started > limit.timeout_ns)) {
    if (limit.lost_rank) {
      *reinterpret_cast<volatile std::int32_t*>(limit.lost_rank) = peer;
      __threadfence_system();
    }
    __trap();
  }
}

// ---- the ring of rows (sm_90) ------------------------------------------------------------------------

// The mbarrier / bulk-copy instructions the ring uses: async_copy.cuh.

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Loads from a ring slot that the compiler may neither repeat nor move: a slot's contents change
// under the bulk copies, which it does not see.
__device__ __forceinline__ void load_shared(float& v, unsigned a) {
  asm volatile("ld.volatile.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(a) : "memory");
}
__device__ __forceinline__ void load_shared(double& v, unsigned a) {
  asm volatile("ld.volatile.shared.f64 %0, [%1];\n" : "=d"(v) : "r"(a) : "memory");
}
__device__ __forceinline__ void load_shared_vector(float (&v)[4], unsigned a) {
  asm volatile("ld.volatile.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
               : "r"(a)
               : "memory");
}
__device__ __forceinline__ void load_shared_vector(double (&v)[2], unsigned a) {
  asm volatile("ld.volatile.shared.v2.f64 {%0, %1}, [%2];\n" : "=d"(v[0]), "=d"(v[1]) : "r"(a) : "memory");
}
// The same for any other element of 4 or 8 bytes (an int, a complex<float>, a struct of two floats),
// through words of its size. (Floats and doubles keep their own loads above: through words, the
// float 5-point sweep's ring kernel took 56 registers instead of 48, ptxas sm_90.)
template <class T>
  requires(sizeof(T) == 4 || sizeof(T) == 8)
__device__ __forceinline__ void load_shared(T& v, unsigned a) {
  if constexpr (sizeof(T) == 4) {
    unsigned w;
    asm volatile("ld.volatile.shared.u32 %0, [%1];\n" : "=r"(w) : "r"(a) : "memory");
    __builtin_memcpy(&v, &w, sizeof v);
  } else {
    unsigned long long w;
    asm volatile("ld.volatile.shared.u64 %0, [%1];\n" : "=l"(w) : "r"(a) : "memory");
    __builtin_memcpy(&v, &w, sizeof v);
  }
}
template <class T>
  requires(sizeof(T) == 4 || sizeof(T) == 8)
__device__ __forceinline__ void load_shared_vector(T (&v)[16 / sizeof(T)], unsigned a) {
  if constexpr (sizeof(T) == 4) {
    unsigned w[4];
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "r"(a)
                 : "memory");
    __builtin_memcpy(v, w, sizeof w);
  } else {
    unsigned long long w[2];
    asm volatile("ld.volatile.shared.v2.u64 {%0, %1}, [%2];\n" : "=l"(w[0]), "=l"(w[1]) : "r"(a) : "memory");
    __builtin_memcpy(v, w, sizeof w);
  }
}
#endif

// One 16-byte store of 16 / sizeof(T) elements of 4 or 8 bytes to global memory at p (16-byte
// aligned), whatever the compiler knows of p (a pointer a cell body gives, which it may not prove
// aligned, would otherwise be stored element by element).
template <class T>
  requires(sizeof(T) == 4 || sizeof(T) == 8)
__device__ __forceinline__ void store_global_vector(T* p, const T (&v)[16 / sizeof(T)]) {
  if constexpr (sizeof(T) == 4) {
    unsigned w[4];
    __builtin_memcpy(w, v, sizeof w);
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3])
                 : "memory");
  } else {
    unsigned long long w[2];
    __builtin_memcpy(w, v, sizeof w);
    asm volatile("st.global.v2.u64 [%0], {%1, %2};\n" ::"l"(p), "l"(w[0]), "l"(w[1]) : "memory");
  }
}

}  // namespace tessera::kernels::cuda::detail
