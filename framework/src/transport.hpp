// The ways backend buffers travel between ranks, one per file with the same shape (as nccl-tests
// keeps one collective per file): transport_mpi_host.cpp, transport_cuda_aware_mpi.cpp,
// transport_staged.cpp and transport_nccl.cpp (only in builds with NCCL) each implement every
// operation of Transport for their path. DeviceComm picks one when it is made and forwards to it;
// it does the checks and the fault points that are the same on every path, and the early returns
// (nothing to move, one rank), so a transport sees only real transfers between two or more ranks
// (the neighbour exchange excepted: its messages to the rank itself are copies on every path).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tessera/framework/context.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/element_traits.hpp"
#include "tessera/kernels/reduce_op.hpp"

namespace tessera::detail {

// The element type of a reduction over the ranks (int32_t, int64_t, float, double) and its built-in
// operation, so that the transports need no templates: integers are summed as the unsigned type of
// their size (wrapping); min and max compare them as the signed type they are.
struct SumType {
  ElementKind kind = ElementKind::floating_point;
  std::size_t bytes = 0;
  ReduceOp op = ReduceOp::sum;

  template <class T>
  static constexpr SumType of(ReduceOp op = ReduceOp::sum) {
    return {ElementTraits<T>::kind, ElementTraits<T>::bytes, op};
  }
};

class Transport {
 public:
  // Completes an operation in flight (DeviceComm::Request::wait); empty when nothing is left to do.
  using Finish = std::function<void()>;

  virtual ~Transport() = default;
  virtual DeviceCommPath path() const = 0;
  // Whether messages from and to 16-byte boundaries travel faster (DeviceComm::prefers_aligned_messages).
  virtual bool prefers_aligned_messages() const { return false; }

  // The operations of DeviceComm, with its semantics (device_comm.hpp), on buffers of ctx's backend.
  // bytes > 0 and two or more ranks.
  virtual Finish ibcast(const Context& ctx, void* data, std::size_t bytes, int root) const = 0;
  // count > 0 and two or more ranks: in place, with type.op.
  virtual void allreduce(const Context& ctx, void* data, index_t count, SumType type) const = 0;
  // A non-zero total and two or more ranks.
  virtual void reduce_scatter_sum(const Context& ctx, const void* send, void* recv, const std::vector<index_t>& recv_counts,
                                  SumType type) const = 0;
  // One count and one offset per rank (any number of ranks).
  virtual void alltoallv(const Context& ctx, const void* send, const std::vector<std::size_t>& send_bytes,
                         const std::vector<std::size_t>& send_offsets, void* recv, const std::vector<std::size_t>& recv_bytes,
                         const std::vector<std::size_t>& recv_offsets) const = 0;
  // At least one message; every peer a rank of ctx.
  virtual Finish ineighbor_exchange(const Context& ctx, const std::vector<DeviceComm::Message>& sends,
                                    const std::vector<DeviceComm::Message>& recvs,
                                    const DeviceComm::Staging* staging) const = 0;
};

// The transport of each path, for the contexts of one process. mpi-host, cuda-aware-mpi and staged
// keep no state (one object each, for the whole process); nccl keeps an NCCL communicator per MPI
// communicator (made on first use, collectively, and kept as long as the MPI communicator).
const Transport& mpi_host_transport();
const Transport& cuda_aware_mpi_transport();
const Transport& staged_transport();
#if TESSERA_HAVE_NCCL
const Transport& nccl_transport(const Context& ctx);
// The NCCL library's version, "2.28.3".
std::string nccl_version();
#endif

// The messages a rank sends itself pair with the ones it receives from itself, in order: each is a
// copy within backend memory, queued on `queue`.
void copy_to_self(const std::vector<DeviceComm::Message>& sends, const std::vector<DeviceComm::Message>& recvs, int me,
                  const kernels::Queue& queue);

}  // namespace tessera::detail
