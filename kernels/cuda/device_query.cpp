// What the cuda backend says about a queue's device: its UUID, a one-line description and its memory.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "../src/memory_backends.hpp"
#include "../src/queue_backends.hpp"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda {

std::array<unsigned char, 16> device_uuid(const Queue& q) {
  std::array<unsigned char, 16> uuid{};
  cudaDeviceProp prop{};
  TESSERA_CUDA_CHECK(cudaGetDeviceProperties(&prop, q.device));
  std::memcpy(uuid.data(), prop.uuid.bytes, uuid.size());
  return uuid;
}

std::string describe_device(const Queue& q) {
  cudaDeviceProp prop{};
  TESSERA_CUDA_CHECK(cudaGetDeviceProperties(&prop, q.device));
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, " (device %d, %d SMs, %.1f GiB, cc %d.%d)", q.device,
                prop.multiProcessorCount, static_cast<double>(prop.totalGlobalMem) / (1u << 30), prop.major,
                prop.minor);
  return std::string(prop.name) + numbers;
}

CudaVersions versions() {
  CudaVersions v;
  if (cudaRuntimeGetVersion(&v.runtime) != cudaSuccess) v.runtime = 0;
  if (cudaDriverGetVersion(&v.driver) != cudaSuccess) v.driver = 0;  // no driver: 0, not an error
  return v;
}

std::size_t memory_capacity(const Queue& q) {
  cudaDeviceProp prop{};
  TESSERA_CUDA_CHECK(cudaGetDeviceProperties(&prop, q.device));
  return prop.totalGlobalMem;
}

}  // namespace tessera::kernels::cuda
