// Tunings per architecture. Every operation of the CUDA backend keeps its constants in one file of
// this folder (tuning/<operation>.cuh), as CUB keeps them in its tuning_*.cuh: a tuning struct per
// operation, chosen by element type or size, that the operation's dispatch and kernels read, and
// nothing else.
//
// A tuning holds two kinds of value:
//  - the launch shape (threads per block, items per thread, tile size, minimum resident blocks,
//    waves, shared memory): the host sizes the grid with it and the kernel walks its tile with it,
//    so both must see the same number. The host cannot tell which architecture's code of a kernel
//    runs (a translation unit built for compute_80 alone runs its PTX, compiled by the driver, on
//    an sm_90 device), so a launch shape is one for every architecture. A launch shape that must
//    differ per architecture needs the kernel's own compiled architecture on the host
//    (cudaFuncGetAttributes' ptxVersion), as CUB's dispatch reads it.
//  - values that only device code reads (the look-back's sleeps): one policy per tuned
//    architecture, chosen at compile time in each device pass of a translation unit with
//    __CUDA_ARCH__ (kDeviceArch below; a tuning's `Device` member names the policy of that pass).
//    One binary built for several architectures (CMAKE_CUDA_ARCHITECTURES, 80 and 90 by default)
//    thus runs each architecture's own values.
// A device newer than the newest tuned architecture runs the newest tuning; one older than sm_80 runs
// sm_80's.
//
// Plain C++ (no device code), like the tuning files that need nothing from the device headers.
#pragma once

namespace tessera::kernels::cuda::detail {

// The architectures with tunings of their own (__CUDA_ARCH__ values).
inline constexpr int kTunedArchs[] = {800, 900};

// The tuned architecture whose values a device of compute capability `arch` (__CUDA_ARCH__ form,
// 10 * major + minor, times 10) runs.
constexpr int tuned_arch(int arch) { return arch >= 900 ? 900 : 800; }

#if defined(__CUDA_ARCH__)
// The tuned architecture of the device pass being compiled.
inline constexpr int kDeviceArch = tuned_arch(__CUDA_ARCH__);
#else
// The host pass compiles no device code; the newest tuning stands in so that names resolve.
inline constexpr int kDeviceArch = kTunedArchs[sizeof(kTunedArchs) / sizeof(kTunedArchs[0]) - 1];
#endif

}  // namespace tessera::kernels::cuda::detail
