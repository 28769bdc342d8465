// Checking CUDA runtime calls and kernel launches (host code only; include where CUDA is built).
// A failure reports file:line, the call and the CUDA error text through tessera::fatal, which under
// MPI aborts the whole job.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "tessera/kernels/error.hpp"

#define TESSERA_CUDA_CHECK(call)                                                                     \
  do {                                                                                               \
    const cudaError_t tessera_cuda_status_ = (call);                                                 \
    if (tessera_cuda_status_ != cudaSuccess)                                                         \
      ::tessera::fatal(__FILE__, __LINE__, #call,                                                    \
                       std::string(cudaGetErrorName(tessera_cuda_status_)) + ": " +                 \
                           cudaGetErrorString(tessera_cuda_status_));                                \
  } while (0)

// After a <<<...>>> launch: catches bad launch configurations at once (asynchronous faults surface
// at the next synchronising call, which is checked too).
#define TESSERA_CUDA_CHECK_LAUNCH() TESSERA_CUDA_CHECK(cudaGetLastError())
