// kernels::allocate's block cache under cuda: freed blocks are reused in stream order, data written
// through a reused block is the new owner's, and an allocation that only fits once the cache is
// emptied still succeeds.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "gpu_test_support.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::gpu_test {
namespace {

TEST(MemoryGpu, FreedBlockIsReusedForTheSameSizeAndHoldsTheNewData) {
  const Queue& q = cuda_queue();
  kernels::release_cached_memory();  // blocks cached by earlier tests could also fit
  const index_t n = 1000003;
  auto* a = static_cast<std::int32_t*>(kernels::allocate(q, sizeof(std::int32_t) * n));
  kernels::fill(q, a, n, std::int32_t(7));
  kernels::deallocate(q, a);  // while the fill may still run: reuse must wait for it in stream order
  EXPECT_GE(kernels::cached_memory_bytes(), sizeof(std::int32_t) * n);
  auto* b = static_cast<std::int32_t*>(kernels::allocate(q, sizeof(std::int32_t) * n));
  EXPECT_EQ(static_cast<void*>(a), static_cast<void*>(b)) << "a block of the same size should come from the cache";
  kernels::iota(q, b, n, std::int32_t(0));
  std::vector<std::int32_t> host(static_cast<std::size_t>(n));
  kernels::copy_to_host(q, host.data(), b, sizeof(std::int32_t) * n);
  for (index_t i = 0; i < n; ++i) ASSERT_EQ(host[static_cast<std::size_t>(i)], static_cast<std::int32_t>(i)) << "i=" << i;
  kernels::deallocate(q, b);
}

TEST(MemoryGpu, ReuseFromAnotherStreamWaitsForTheFreeingStream) {
  const Queue& q = cuda_queue();
  Queue other = kernels::make_cuda_queue(q.device);
  kernels::release_cached_memory();
  const index_t n = (index_t(1) << 24) + 1;
  auto* a = static_cast<double*>(kernels::allocate(q, sizeof(double) * n));
  kernels::fill(q, a, n, 1.5);
  kernels::deallocate(q, a);
  auto* b = static_cast<double*>(kernels::allocate(other, sizeof(double) * n));
  ASSERT_EQ(static_cast<void*>(a), static_cast<void*>(b)) << "the test needs the cached block";
  kernels::iota(other, b, n, 0.0);  // must land after the fill on q, or the fill would overwrite it
  std::vector<double> host(static_cast<std::size_t>(n));
  kernels::copy_to_host(other, host.data(), b, sizeof(double) * n);
  q.synchronize();
  for (index_t i = 0; i < n; i += 4099) ASSERT_EQ(host[static_cast<std::size_t>(i)], static_cast<double>(i)) << "i=" << i;
  ASSERT_EQ(host.back(), static_cast<double>(n - 1));
  kernels::deallocate(other, b);
  other.synchronize();
  kernels::destroy_queue(other);
}

TEST(MemoryGpu, AllocationThatNeedsTheCachedMemoryEmptiesTheCache) {
  if (small_mode()) GTEST_SKIP() << "allocates most of the device memory";
  const Queue& q = cuda_queue();
  kernels::release_cached_memory();
  std::size_t free_bytes = 0, total = 0;
  TESSERA_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  // Cache 60% of the free memory, then ask for 70% in another size: only fits after a release.
  const std::size_t mib = std::size_t(1) << 20;
  const std::size_t first = free_bytes / 10 * 6 / mib * mib, second = free_bytes / 10 * 7 / mib * mib;
  void* a = kernels::allocate(q, first);
  kernels::deallocate(q, a);
  EXPECT_GE(kernels::cached_memory_bytes(), first);
  void* b = kernels::allocate(q, second);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(kernels::cached_memory_bytes(), 0u) << "the cached block should have been released";
  kernels::fill(q, reinterpret_cast<float*>(static_cast<char*>(b) + second - 4096), 1024, 0.0f);  // its end is usable
  q.synchronize();
  kernels::deallocate(q, b);
  kernels::release_cached_memory();
  EXPECT_EQ(kernels::cached_memory_bytes(), 0u);
}

}  // namespace
}  // namespace tessera::gpu_test
