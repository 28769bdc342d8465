// Where a piece of local work runs, and in what order: the backend, and under CUDA the device and
// the stream. Every local operation takes a Queue; the backend behind it decides how the work runs
// (the Kokkos idea of an execution space, reduced to what this project needs).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "tessera/kernels/config.hpp"

struct CUstream_st;

namespace tessera::kernels {

using StreamHandle = CUstream_st*;  // cudaStream_t, without pulling CUDA headers into host code

struct Queue {
  Backend backend = Backend::cpu;
  int device = -1;                // CUDA device ordinal; -1 under cpu
  StreamHandle stream = nullptr;  // CUDA stream; ignored under cpu

  // Waits until all work queued so far has finished (no-op under cpu, whose calls are synchronous).
  void synchronize() const;
};

// CUDA devices this process can see (0 where the build has no CUDA or there is no usable GPU).
int cuda_device_count();

// The CUDA runtime the build links and the driver of this machine, as CUDA numbers them
// (1000 major + 10 minor: 13000 is 13.0); 0 where the build has no CUDA or the machine no driver.
struct CudaVersions {
  int runtime = 0;
  int driver = 0;
};
CudaVersions cuda_versions();

// Selects the device for this host thread and makes a non-blocking stream on it.
Queue make_cuda_queue(int device);
void destroy_queue(Queue& queue);

// The device's 16-byte UUID (all zero under cpu): tells whether two ranks drive the same GPU, which
// ordinals cannot (each rank may see a different subset of the devices).
std::array<unsigned char, 16> device_uuid(const Queue& queue);

// A short description of the device ("NVIDIA H100 80GB HBM3, 132 SMs, 79.1 GiB") or "cpu".
std::string describe_device(const Queue& queue);

// A second queue on `queue`'s device whose work the device starts ahead of other streams' waiting
// work (the highest stream priority): for the short passes that others wait for, such as the
// boundary cells of a stencil whose exchange overlaps the interior. Under cpu, a copy of `queue`.
// Release it with destroy_queue.
Queue make_priority_queue(const Queue& queue);

// Work queued on `waiting` after this call starts only once all work queued on `done` so far has
// finished (an event); neither host thread blocks. No effect under cpu or when both are one stream.
void queue_wait(const Queue& waiting, const Queue& done);

// Flags that order work across processes on one node without their hosts: a flag is a
// std::uint64_t in memory of the queue's device, or of another GPU mapped into this process (CUDA
// IPC). write_flag sets it to `value` once the queue's earlier work is done, that work's writes
// (those into mapped memory too) visible before it; wait_flag holds the queue's later work until
// the flag is at least `value`. Neither runs on an SM nor blocks the host (stream memory
// operations). cuda only: queue_flags_available says whether the queue's device can.
bool queue_flags_available(const Queue& queue);
void write_flag(const Queue& queue, std::uint64_t* flag, std::uint64_t value);
void wait_flag(const Queue& queue, const std::uint64_t* flag, std::uint64_t value);

}  // namespace tessera::kernels
