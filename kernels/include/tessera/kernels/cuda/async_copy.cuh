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

// sm_90 bulk copies (cp.async.bulk) counted on mbarriers: a barrier's phase completes when its
// arrivals and its expected transaction bytes have all come in.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// After a thread initialised the block's mbarriers, before a barrier publishes them to the block.
__device__ __forceinline__ void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// One arrival on bar (no transaction bytes); release semantics: this thread's earlier writes are
// seen by the threads its phase's completion releases.
__device__ __forceinline__ void mbarrier_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the phase of the given parity has completed.
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// bytes (a multiple of 16) from global src to shared dst (both 16-byte aligned), counted on bar.
__device__ __forceinline__ void bulk_copy_to_shared(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// Makes bar's phase wait for this thread's cp.async copies (copy_async) issued so far.
__device__ __forceinline__ void mbarrier_track_copies(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Orders this thread's (and, after a barrier, the block's) generic-proxy accesses to shared memory
// before the bulk copies it issues next.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
#endif

}  // namespace tessera::kernels::cuda::detail
