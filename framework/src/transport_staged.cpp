// staged: device buffers copied to pinned host memory (from the pool of transport_pinned_pool.hpp,
// or the caller's Staging buffers), moved by MPI there, and copied back to the device.
#include <cstring>
#include <utility>

#include "tessera/kernels/memory.hpp"
#include "transport.hpp"
#include "transport_mpi.hpp"
#include "transport_pinned_pool.hpp"

namespace tessera::detail {
namespace {

class StagedTransport final : public Transport {
 public:
  DeviceCommPath path() const override { return DeviceCommPath::staged; }

  Finish ibcast(const Context& ctx, void* data, std::size_t bytes, int root) const override {
    const kernels::Queue queue = ctx.queue();
    std::shared_ptr<char> host = pinned_buffer(bytes);
    if (ctx.rank() == root) kernels::copy_to_host(queue, host.get(), data, bytes);
    auto requests = std::make_shared<std::vector<MPI_Request>>(post_ibcast(host.get(), bytes, root, ctx.comm().get()));
    const bool receiver = ctx.rank() != root;
    return [requests, host, queue, data, bytes, receiver] {
      wait_all(*requests);
      if (receiver) kernels::copy_from_host(queue, data, host.get(), bytes);
    };
  }

  void allreduce(const Context& ctx, void* data, index_t count, SumType type) const override {
    const std::size_t bytes = static_cast<std::size_t>(count) * type.bytes;
    std::shared_ptr<char> host = pinned_buffer(bytes);
    kernels::copy_to_host(ctx.queue(), host.get(), data, bytes);
    allreduce_host(host.get(), count, type, ctx.comm().get());
    kernels::copy_from_host(ctx.queue(), data, host.get(), bytes);
  }

  void reduce_scatter_sum(const Context& ctx, const void* send, void* recv, const std::vector<index_t>& recv_counts,
                          SumType type) const override {
    index_t total = 0;
    for (index_t c : recv_counts) total += c;
    const std::size_t send_bytes = static_cast<std::size_t>(total) * type.bytes;
    const std::size_t recv_bytes = static_cast<std::size_t>(recv_counts[static_cast<std::size_t>(ctx.rank())]) * type.bytes;
    std::shared_ptr<char> host_send = pinned_buffer(send_bytes);
    std::shared_ptr<char> host_recv = pinned_buffer(std::max(recv_bytes, type.bytes));
    kernels::copy_to_host(ctx.queue(), host_send.get(), send, send_bytes);
    reduce_scatter_host(host_send.get(), host_recv.get(), recv_counts, type, ctx.comm());
    if (recv_bytes) kernels::copy_from_host(ctx.queue(), recv, host_recv.get(), recv_bytes);
  }

  void alltoallv(const Context& ctx, const void* send, const std::vector<std::size_t>& send_bytes,
                 const std::vector<std::size_t>& send_offsets, void* recv, const std::vector<std::size_t>& recv_bytes,
                 const std::vector<std::size_t>& recv_offsets) const override {
    // One pinned buffer for what leaves and one for what arrives; then the usual host exchange.
    const kernels::Queue& queue = ctx.queue();
    const std::size_t ranks = send_bytes.size();
    std::size_t send_total = 0, recv_total = 0;
    for (std::size_t p = 0; p < ranks; ++p) {
      send_total = std::max(send_total, send_offsets[p] + send_bytes[p]);
      recv_total = std::max(recv_total, recv_offsets[p] + recv_bytes[p]);
    }
    std::shared_ptr<char> host_send = pinned_buffer(send_total);
    std::shared_ptr<char> host_recv = pinned_buffer(recv_total);
    if (send_total) kernels::copy_to_host(queue, host_send.get(), send, send_total);
    exchange_mpi(host_send.get(), send_bytes, send_offsets, host_recv.get(), recv_bytes, recv_offsets, ctx.comm(),
                 [](void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); });
    // Only the received ranges are written back: the rest of `recv` keeps its contents.
    for (std::size_t p = 0; p < ranks; ++p)
      if (recv_bytes[p])
        kernels::copy_from_host(queue, static_cast<char*>(recv) + recv_offsets[p],
                                static_cast<const char*>(host_recv.get()) + recv_offsets[p], recv_bytes[p]);
  }

  Finish ineighbor_exchange(const Context& ctx, const std::vector<DeviceComm::Message>& sends,
                            const std::vector<DeviceComm::Message>& recvs,
                            const DeviceComm::Staging* staging) const override {
    // One pinned buffer for what leaves and one for what arrives, each message at its offset.
    const int me = ctx.rank();
    const kernels::Queue queue = ctx.queue();
    std::vector<std::size_t> send_at(sends.size()), recv_at(recvs.size());
    std::size_t send_total = 0, recv_total = 0;
    for (std::size_t i = 0; i < sends.size(); ++i)
      if (sends[i].peer != me) send_at[i] = std::exchange(send_total, send_total + sends[i].bytes);
    for (std::size_t i = 0; i < recvs.size(); ++i)
      if (recvs[i].peer != me) recv_at[i] = std::exchange(recv_total, recv_total + recvs[i].bytes);
    auto pinned = [](void* given, std::size_t given_bytes, std::size_t bytes) {
      if (given && given_bytes >= bytes) return std::shared_ptr<char>(static_cast<char*>(given), [](char*) {});
      return pinned_buffer(bytes);
    };
    std::shared_ptr<char> host_send = pinned(staging ? staging->send : nullptr, staging ? staging->send_bytes : 0, send_total);
    std::shared_ptr<char> host_recv = pinned(staging ? staging->recv : nullptr, staging ? staging->recv_bytes : 0, recv_total);
    for (std::size_t i = 0; i < sends.size(); ++i)
      if (sends[i].peer != me && sends[i].bytes)
        kernels::copy_to_host_async(queue, host_send.get() + send_at[i], sends[i].data, sends[i].bytes);
    copy_to_self(sends, recvs, me, queue);
    queue.synchronize();
    auto requests = std::make_shared<std::vector<MPI_Request>>(post_neighbor_mpi(
        sends, recvs, me, ctx.comm().get(), [&](std::size_t i) { return host_send.get() + send_at[i]; },
        [&](std::size_t i) { return host_recv.get() + recv_at[i]; }));
    return [requests, host_send, host_recv, recvs, recv_at, queue, me] {
      wait_all(*requests);
      for (std::size_t i = 0; i < recvs.size(); ++i)
        if (recvs[i].peer != me && recvs[i].bytes)
          kernels::copy_from_host_async(queue, recvs[i].data, host_recv.get() + recv_at[i], recvs[i].bytes);
      queue.synchronize();  // the pinned buffers go with this closure
    };
  }
};

}  // namespace

const Transport& staged_transport() {
  static const StagedTransport transport;
  return transport;
}

}  // namespace tessera::detail
