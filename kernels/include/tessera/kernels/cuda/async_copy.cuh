// sm_80+ asynchronous global -> shared copies (cp.async), which no register waits for: issued,
// committed as a group, and waited for by the issuing thread (a barrier then makes them visible
// to the block). The sized forms zero-fill: a copy of fewer source bytes than its size fills the
// rest with zeros, which is how the GEMM tiles handle matrix edges without a separate code path.
#pragma once

#include <cstdint>

namespace tessera::kernels::cuda::detail {

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes, bypassing L1 (.cg); src_bytes in [0, 16], the rest zero-filled.
__device__ __forceinline__ void copy_async_16(void* shared_dst, const void* global_src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared_dst)), "l"(global_src),
               "r"(src_bytes)
               : "memory");
}

// 8 bytes through L1 (.ca: the only caching mode that takes 4- and 8-byte copies).
__device__ __forceinline__ void copy_async_8(void* shared_dst, const void* global_src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(shared_address(shared_dst)), "l"(global_src),
               "r"(src_bytes)
               : "memory");
}

// One whole element of 4, 8 or 16 bytes (source and destination aligned to it), through L1.
template <int Bytes>
__device__ __forceinline__ void copy_async(void* shared_dst, const void* global_src) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(shared_address(shared_dst)), "l"(global_src),
               "n"(Bytes)
               : "memory");
}

__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int PendingGroups>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PendingGroups) : "memory");
}

}  // namespace tessera::kernels::cuda::detail
