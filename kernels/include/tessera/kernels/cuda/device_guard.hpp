// Makes a device the calling thread's current device for one scope, and restores the previous one
// at scope exit: every call that takes a Queue runs under one (the precompiled operations through
// TESSERA_DISPATCH, the generic ones in cuda/algorithms.cuh), so that kernels launch, grids are
// sized, scratch is taken and cuBLAS handles are chosen on the queue's device whatever device the
// thread had current. A device below 0 (no device) changes nothing.
#pragma once

#include <cuda_runtime.h>

#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda::detail {

class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    if (device < 0) return;
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
