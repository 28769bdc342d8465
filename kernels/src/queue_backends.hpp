// The backend halves of queue.hpp (kernels/cpu/queue.cpp, kernels/cpu/device_query.cpp,
// kernels/cuda/queue.cpp and kernels/cuda/device_query.cpp), kept beside the dispatch in
// queue_dispatch.cpp. The cuda halves take the Queue and work on its device, whatever the calling
// thread's current device, except make_queue, which selects the device for the thread.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "tessera/kernels/device_wait.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

namespace cpu {
// The cpu backend's calls are synchronous and it has one queue: these do nothing.
void synchronize();
void destroy_queue();
void queue_wait();

std::array<unsigned char, 16> device_uuid();  // all zero
std::string describe_device();               // "cpu"
}  // namespace cpu

#if TESSERA_HAVE_CUDA
namespace cuda {
int device_count();
CudaVersions versions();
Queue make_queue(int device);
void synchronize(const Queue& queue);
void destroy_queue(Queue& queue);
Queue make_priority_queue(const Queue& queue);
void queue_wait(const Queue& waiting, const Queue& done);
bool queue_flags_available(const Queue& queue);
void write_flag(const Queue& queue, std::uint64_t* flag, std::uint64_t value);
void wait_flag(const Queue& queue, const std::uint64_t* flag, std::uint64_t value);
void wait_flag_limited(const Queue& queue, const std::uint64_t* flag, std::uint64_t value, const DeviceWaitLimit& limit,
                       int peer);

std::array<unsigned char, 16> device_uuid(const Queue& queue);
std::string describe_device(const Queue& queue);
}  // namespace cuda
#endif

}  // namespace tessera::kernels
