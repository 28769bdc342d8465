// Queues and device queries (queue.hpp): each call hands the work to the backend the queue names.
#include "backend_dispatch.hpp"
#include "queue_backends.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

int cuda_device_count() {
  int count = 0;
  TESSERA_DISPATCH_BUILD(count = 0, count = cuda::device_count());
  return count;
}

CudaVersions cuda_versions() {
  CudaVersions v;
  TESSERA_DISPATCH_BUILD((void)0, v = cuda::versions());
  return v;
}

Queue make_cuda_queue([[maybe_unused]] int device) {
  Queue q;
  TESSERA_DISPATCH_BUILD(detail::no_cuda_backend(), q = cuda::make_queue(device));
  return q;
}

void Queue::synchronize() const { TESSERA_DISPATCH(*this, cpu::synchronize(), cuda::synchronize(*this)); }

void destroy_queue(Queue& q) {
  TESSERA_DISPATCH(q, cpu::destroy_queue(), cuda::destroy_queue(q));
  q.stream = nullptr;
}

Queue make_priority_queue(const Queue& queue) {
  Queue q = queue;
  TESSERA_DISPATCH(queue, (void)0, q = cuda::make_priority_queue(queue));
  return q;
}

void queue_wait(const Queue& waiting, [[maybe_unused]] const Queue& done) {
  TESSERA_DISPATCH(waiting, cpu::queue_wait(), cuda::queue_wait(waiting, done));
}

bool queue_flags_available(const Queue& q) {
  bool available = false;
  TESSERA_DISPATCH(q, available = false, available = cuda::queue_flags_available(q));
  return available;
}

void write_flag(const Queue& q, [[maybe_unused]] std::uint64_t* flag, [[maybe_unused]] std::uint64_t value) {
  TESSERA_DISPATCH(q, TESSERA_FATAL("write_flag", "the cpu backend has no device flags"),
                   cuda::write_flag(q, flag, value));
}

void wait_flag(const Queue& q, [[maybe_unused]] const std::uint64_t* flag, [[maybe_unused]] std::uint64_t value) {
  TESSERA_DISPATCH(q, TESSERA_FATAL("wait_flag", "the cpu backend has no device flags"),
                   cuda::wait_flag(q, flag, value));
}

void wait_flag(const Queue& q, [[maybe_unused]] const std::uint64_t* flag, [[maybe_unused]] std::uint64_t value,
               [[maybe_unused]] const DeviceWaitLimit& limit, [[maybe_unused]] int peer) {
  if (!limit.armed()) return wait_flag(q, flag, value);
  TESSERA_DISPATCH(q, TESSERA_FATAL("wait_flag", "the cpu backend has no device flags"),
                   cuda::wait_flag_limited(q, flag, value, limit, peer));
}

std::array<unsigned char, 16> device_uuid(const Queue& q) {
  std::array<unsigned char, 16> uuid{};
  TESSERA_DISPATCH(q, uuid = cpu::device_uuid(), uuid = cuda::device_uuid(q));
  return uuid;
}

std::string describe_device(const Queue& q) {
  std::string description;
  TESSERA_DISPATCH(q, description = cpu::describe_device(), description = cuda::describe_device(q));
  return description;
}

}  // namespace tessera::kernels
