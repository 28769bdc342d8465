#include "pings.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::apps::scaling_study {
namespace {

// Backend memory (device memory under cuda) for the device pings, zeroed so that every path moves
// defined bytes; freed on scope exit.
class BackendBuffer {
 public:
  BackendBuffer(const kernels::Queue& queue, std::size_t bytes) : queue_(queue), data_(kernels::allocate(queue, bytes)) {
    const std::vector<unsigned char> zeros(bytes, 0);
    kernels::copy_from_host(queue, data_, zeros.data(), bytes);
  }
  ~BackendBuffer() { kernels::deallocate(queue_, data_); }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
  void* data() const { return data_; }

 private:
  const kernels::Queue& queue_;
  void* data_;
};

}  // namespace

scaling::CollectiveSample ping(const Context& ctx, std::int64_t ping_bytes, Pings which) {
  scaling::CollectiveSample s;
  s.ranks = ctx.size();
  const Communicator& comm = ctx.comm();
  auto slowest_rank = [&](double mine) { return comm.allreduce(mine, ReduceOp::max); };
  auto timed_allreduce = [&](double* buf, index_t count, int iterations) {
    for (int i = 0; i < 2; ++i) comm.allreduce(buf, count, ReduceOp::sum);
    comm.barrier();
    Stopwatch watch;
    for (int i = 0; i < iterations; ++i) comm.allreduce(buf, count, ReduceOp::sum);
    return slowest_rank(watch.seconds() / iterations);
  };
  double one = 1.0;
  if (which.small) s.small_seconds = timed_allreduce(&one, 1, 200);
  const std::int64_t count = std::min<std::int64_t>(ping_bytes / 8, std::int64_t(1) << 28);
  const std::size_t large_bytes = static_cast<std::size_t>(count) * 8;
  s.large_bytes = static_cast<double>(large_bytes);
  if (which.large) {
    std::vector<double> big(static_cast<std::size_t>(count), 1.0);
    s.large_seconds = timed_allreduce(big.data(), count, 5);
  }

  // The device path. Under cuda the broadcasts are stream-ordered (the host may return before the
  // bytes moved), so the queue is drained before the clock stops. The NCCL communicator is built
  // by the constructor (cached on the MPI communicator), outside the clock.
  const kernels::Queue& queue = ctx.queue();
  const DeviceComm device(ctx);
  const BackendBuffer buffer(queue, large_bytes);
  auto timed_bcast = [&](std::size_t bytes, int iterations) {
    for (int i = 0; i < 2; ++i) device.bcast(buffer.data(), bytes, 0);
    queue.synchronize();
    comm.barrier();
    Stopwatch watch;
    for (int i = 0; i < iterations; ++i) device.bcast(buffer.data(), bytes, 0);
    queue.synchronize();
    return slowest_rank(watch.seconds() / iterations);
  };
  constexpr std::size_t small_bytes = 8;
  s.device_small_bytes = static_cast<double>(small_bytes);
  if (which.small) s.device_small_seconds = timed_bcast(small_bytes, 100);
  s.device_large_bytes = static_cast<double>(large_bytes);
  if (which.large) s.device_large_seconds = timed_bcast(large_bytes, 5);
  return s;
}

}  // namespace tessera::apps::scaling_study
