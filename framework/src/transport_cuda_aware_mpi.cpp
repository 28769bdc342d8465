// cuda-aware-mpi: device pointers straight to a CUDA-aware MPI. MPI reads and writes device memory
// outside stream order, so every operation first waits for the work queued on the context's queue.
#include "tessera/kernels/memory.hpp"
#include "transport.hpp"
#include "transport_mpi.hpp"

namespace tessera::detail {
namespace {

class CudaAwareMpiTransport final : public Transport {
 public:
  DeviceCommPath path() const override { return DeviceCommPath::cuda_aware_mpi; }

  Finish ibcast(const Context& ctx, void* data, std::size_t bytes, int root) const override {
    ctx.queue().synchronize();
    return wait_all_later(post_ibcast(data, bytes, root, ctx.comm().get()));
  }

  void allreduce(const Context& ctx, void* data, index_t count, SumType type) const override {
    ctx.queue().synchronize();
    allreduce_host(data, count, type, ctx.comm().get());
  }

  void reduce_scatter_sum(const Context& ctx, const void* send, void* recv, const std::vector<index_t>& recv_counts,
                          SumType type) const override {
    ctx.queue().synchronize();
    reduce_scatter_host(send, recv, recv_counts, type, ctx.comm());
  }

  void alltoallv(const Context& ctx, const void* send, const std::vector<std::size_t>& send_bytes,
                 const std::vector<std::size_t>& send_offsets, void* recv, const std::vector<std::size_t>& recv_bytes,
                 const std::vector<std::size_t>& recv_offsets) const override {
    const kernels::Queue& queue = ctx.queue();
    queue.synchronize();
    exchange_mpi(send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets, ctx.comm(),
                 [&](void* dst, const void* src, std::size_t bytes) { kernels::copy_within(queue, dst, src, bytes); });
  }

  Finish ineighbor_exchange(const Context& ctx, const std::vector<DeviceComm::Message>& sends,
                            const std::vector<DeviceComm::Message>& recvs, const DeviceComm::Staging*) const override {
    copy_to_self(sends, recvs, ctx.rank(), ctx.queue());
    ctx.queue().synchronize();
    return wait_all_later(post_neighbor_mpi(
        sends, recvs, ctx.rank(), ctx.comm().get(), [&](std::size_t i) { return sends[i].data; },
        [&](std::size_t i) { return recvs[i].data; }));
  }
};

}  // namespace

const Transport& cuda_aware_mpi_transport() {
  static const CudaAwareMpiTransport transport;
  return transport;
}

}  // namespace tessera::detail
