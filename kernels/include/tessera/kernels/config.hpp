// Build-time facts and the annotations shared by host and device code.
#pragma once

#include <cstdint>

#include "tessera/build_config.hpp"

#if defined(__CUDACC__)
#define TESSERA_HOST_DEVICE __host__ __device__
// For the library's small function objects, which the device loops must inline.
#define TESSERA_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#else
#define TESSERA_HOST_DEVICE
#define TESSERA_HOST_DEVICE_INLINE inline
#endif

namespace tessera {

// Every element count, offset and index is 64-bit and signed: sizes above 2^31 are normal here,
// and signed differences (offset - start) stay meaningful.
using index_t = std::int64_t;

// Where a rank's local work and memory live.
enum class Backend { cpu, cuda };

inline const char* to_string(Backend b) { return b == Backend::cpu ? "cpu" : "cuda"; }

// inclusive: out[i] = init op in[0] op ... op in[i];  exclusive: out[i] = init op in[0] ... op in[i-1].
enum class ScanKind { inclusive, exclusive };

inline const char* to_string(ScanKind k) { return k == ScanKind::inclusive ? "inclusive" : "exclusive"; }

// True when this build compiled the CUDA backend (it still needs a GPU at run time to use it).
bool built_with_cuda();
// True when this build links NCCL.
bool built_with_nccl();

}  // namespace tessera
