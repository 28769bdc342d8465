// Launch-shape facts about the current device, read once per device and cached: every dispatch
// sizes its grid from these (SM count, occupancy), never from a compile-time guess.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels::cuda::detail {

inline cudaStream_t to_cuda(StreamHandle s) { return reinterpret_cast<cudaStream_t>(s); }

struct DeviceInfo {
  int ordinal = 0;
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
  int max_smem_optin = 0;  // bytes of shared memory one thread block may opt into
  int max_smem_per_sm = 0;  // bytes of shared memory of one SM at the largest carveout
  int reserved_smem_per_block = 0;  // bytes the system keeps of each resident block's share
};

inline const DeviceInfo& current_device_info() {
  constexpr int kMaxDevices = 64;
  static std::array<DeviceInfo, kMaxDevices> cache{};
  static std::array<std::once_flag, kMaxDevices> once;
  int device = 0;
  TESSERA_CUDA_CHECK(cudaGetDevice(&device));
  TESSERA_ASSERT(device >= 0 && device < kMaxDevices, "device ordinal out of the cached range");
  std::call_once(once[device], [device] {
    DeviceInfo& info = cache[device];
    info.ordinal = device;
    TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, device));
    TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&info.cc_major, cudaDevAttrComputeCapabilityMajor, device));
    TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&info.cc_minor, cudaDevAttrComputeCapabilityMinor, device));
    TESSERA_CUDA_CHECK(
        cudaDeviceGetAttribute(&info.max_smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    TESSERA_CUDA_CHECK(
        cudaDeviceGetAttribute(&info.max_smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    TESSERA_CUDA_CHECK(
        cudaDeviceGetAttribute(&info.reserved_smem_per_block, cudaDevAttrReservedSharedMemoryPerBlock, device));
  });
  return cache[device];
}

// Resident thread blocks per SM of `kernel` at this block size and dynamic shared memory, cached
// per (kernel, device, block size, dynamic shared memory): the occupancy calculator costs
// microseconds, a launch should not.
template <auto Kernel>
int blocks_per_sm(int block_threads, std::size_t dynamic_smem = 0) {
  struct Entry {
    int device;
    int threads;
    std::size_t smem;
    int blocks;
  };
  static std::mutex mutex;
  static std::vector<Entry> cache;
  const DeviceInfo& info = current_device_info();
  {
    const std::lock_guard<std::mutex> lock(mutex);
    for (const Entry& e : cache)
      if (e.device == info.ordinal && e.threads == block_threads && e.smem == dynamic_smem) return e.blocks;
  }
  int blocks = 0;
  TESSERA_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, block_threads, dynamic_smem));
  TESSERA_ASSERT(blocks > 0, "kernel cannot be resident on this device at the chosen block size");
  const std::lock_guard<std::mutex> lock(mutex);
  cache.push_back({info.ordinal, block_threads, dynamic_smem, blocks});
  return blocks;
}

// The smallest shared-memory carveout, in percent of info.max_smem_per_sm (the unit of
// cudaFuncAttributePreferredSharedMemoryCarveout), that keeps `blocks` resident thread blocks of
// `block_bytes` shared memory each (static + dynamic); the rest of the SM's memory stays L1, where a
// global load's data lands (the driver rounds a carveout up to the next size the SM supports).
inline int fitted_carveout_percent(const DeviceInfo& info, std::size_t block_bytes, int blocks) {
  const std::size_t need = static_cast<std::size_t>(blocks) * (block_bytes + static_cast<std::size_t>(info.reserved_smem_per_block));
  const auto max = static_cast<std::size_t>(info.max_smem_per_sm);
  if (max == 0 || need >= max) return 100;
  return static_cast<int>((100 * need + max - 1) / max);
}

template <class T>
__host__ __device__ constexpr T ceil_div(T a, T b) { return (a + b - 1) / b; }

__host__ __device__ inline bool is_aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace tessera::kernels::cuda::detail
