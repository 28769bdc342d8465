#include "pings.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include "measurement.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_array.hpp"
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

std::vector<scaling::CollectiveTiming> time_plan(const Context& ctx, const CollectivePlan& plan, int batches, int calls) {
  std::vector<scaling::CollectiveTiming> out;
  const Communicator& comm = ctx.comm();
  for (const CollectiveCall& call : plan) {
    const index_t bytes = std::max<index_t>(1, static_cast<index_t>(call.bytes));
    std::vector<unsigned char> mine(static_cast<std::size_t>(bytes), 1);
    std::vector<unsigned char> all;
    // An allreduce of the plan's bytes as ceil(bytes / 4) floats; an exscan of one double (exscan_sum is scalar).
    std::vector<float> floats(static_cast<std::size_t>((bytes + 3) / 4), 1.0f);
    std::function<void()> once;
    switch (call.kind) {
      case Collective::allreduce:
        once = [&] { comm.allreduce(floats.data(), static_cast<index_t>(floats.size()), ReduceOp::sum); };
        break;
      case Collective::allgather:
        all.resize(mine.size() * static_cast<std::size_t>(ctx.size()));
        once = [&] { comm.allgather(mine.data(), bytes, all.data()); };
        break;
      case Collective::bcast: once = [&] { comm.bcast(mine.data(), bytes, 0); }; break;
      case Collective::exscan: once = [&] { (void)comm.exscan_sum(1.0); }; break;
      default: continue;  // charged by its formula
    }
    scaling::CollectiveTiming t;
    t.kind = call.kind;
    t.ranks = ctx.size();
    t.bytes = call.bytes;
    for (int i = 0; i < 2; ++i) once();
    for (int b = 0; b < batches; ++b) {
      comm.barrier();
      Stopwatch watch;
      for (int i = 0; i < calls; ++i) once();
      t.batches.push_back(comm.allreduce(watch.seconds() / calls, ReduceOp::max));
    }
    t.seconds = median_interval(t.batches).median;
    out.push_back(t);
  }
  return out;
}

SharingProbe probe_node_sharing(const Context& world, int ranks_on_node, std::int64_t bytes_per_rank, int repeats) {
  SharingProbe probe;
  if (bytes_per_rank <= 0) return probe;
  const index_t per_rank = std::max<index_t>(1, bytes_per_rank / static_cast<index_t>(sizeof(float)));
  for (int k = 1; k <= ranks_on_node; ++k) {
    const Context ctx = world.first(k);
    std::vector<double> times;
    if (!ctx.is_null()) {
      DistArray<float> array(ctx, per_rank * k);
      array.fill(1.0f);
      ctx.queue().synchronize();
      (void)reduce(array, ReduceOp::sum);
      for (int r = 0; r < repeats; ++r) {
        ctx.comm().barrier();
        Stopwatch watch;
        (void)reduce(array, ReduceOp::sum);
        ctx.queue().synchronize();
        times.push_back(ctx.comm().allreduce(watch.seconds(), ReduceOp::max));
      }
    }
    wait_for_all(world);
    if (world.rank() == 0) {
      probe.sharing.active.push_back(k);
      probe.sharing.seconds.push_back(median_interval(times).median);
      probe.repetitions.push_back(times);
    }
  }
  return probe;
}

}  // namespace tessera::apps::scaling_study
