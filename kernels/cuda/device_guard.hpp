// Makes a queue's device the calling thread's current device for one scope, for the CUDA calls that
// work on the current device (cudaMalloc, cudaFree, stream creation, device-wide synchronisation);
// the previous current device is restored at scope exit. Calls that name a stream or a device need
// no guard. Not a public header.
#pragma once

#include <cuda_runtime.h>

#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda::detail {

class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    TESSERA_CUDA_CHECK(cudaGetDevice(&previous_));  // the thread's current device: what is restored
    if (previous_ != device) TESSERA_CUDA_CHECK(cudaSetDevice(device));
    else previous_ = -1;
  }
  ~ScopedDevice() {
    if (previous_ >= 0) TESSERA_CUDA_CHECK(cudaSetDevice(previous_));
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = -1;  // -1: the device was already current, nothing to restore
};

}  // namespace tessera::kernels::cuda::detail
