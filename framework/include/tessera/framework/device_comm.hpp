// Moving backend buffers (device memory under cuda) between the ranks of a context. Which way they
// travel is decided when a DeviceComm is made, from the backend, the build, the MPI library and the
// context (whether ranks of the job share GPUs, which Runtime::start determines):
//   cpu backend                 "mpi-host"        host memory straight to MPI
//   cuda, CUDA-aware MPI        "cuda-aware-mpi"  device pointers straight to MPI (MPIX_Query_cuda_support)
//   cuda, NCCL in the build,    "nccl"            NCCL collectives and grouped send/recv, one NCCL
//   one GPU per rank                              communicator per MPI communicator (bootstrapped over
//                                                 MPI, cached on it as an attribute), on its own stream
//   cuda otherwise              "staged"          through pinned host buffers and MPI
// TESSERA_DEVICE_COMM=auto|cuda-aware-mpi|nccl|staged overrides the choice for the cuda backend (a
// path this build, this MPI or ranks that share GPUs cannot take is a UsageError). Each path is a
// transport of its own inside the library (framework/src/transport_*.cpp). Scalars never come here:
// they travel as plain MPI on the host (tessera::Communicator).
//
// All calls are collective over the context, and stream-ordered under cuda: work queued on the
// context's queue before a call is seen by the transfer, and work queued after a call (or after
// Request::wait) sees its result. Byte counts are 64-bit; MPI messages go in chunks below 2^31.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/element_traits.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/reduce_op.hpp"
#include "tessera/kernels/transform.hpp"

namespace tessera {

class Exchange;

namespace detail {
class Transport;
}

enum class DeviceCommPath { mpi_host, cuda_aware_mpi, nccl, staged };

const char* to_string(DeviceCommPath path);

// The path buffers of ctx's backend take over ctx (the same on every rank of one job): what
// DeviceComm(ctx).path() says, without making the DeviceComm. Reads TESSERA_DEVICE_COMM.
DeviceCommPath device_comm_path(const Context& ctx);

namespace detail {
// What the path depends on, all of it.
struct DeviceCommFacts {
  Backend backend = Backend::cpu;
  std::string_view requested;     // TESSERA_DEVICE_COMM: "" or "auto" (the choice below), or a path's name
  bool mpi_cuda_aware = false;    // MPIX_Query_cuda_support() == 1
  bool built_with_nccl = false;   // tessera::built_with_nccl()
  bool ranks_share_gpus = false;  // Context::ranks_share_gpus(): NCCL refuses two ranks on one device
};
// cpu: mpi-host, whatever is requested. cuda, "auto": cuda-aware-mpi where MPI is CUDA-aware, else
// nccl where the build has it and no two ranks share a GPU, else staged. A path requested by name
// that cannot be taken, or an unknown name, throws UsageError.
DeviceCommPath choose_device_comm_path(const DeviceCommFacts& facts);
// This process's facts for ctx: TESSERA_DEVICE_COMM, the MPI library, the build, the context.
DeviceCommFacts device_comm_facts(const Context& ctx);
// Collective over ctx: the path of `facts` where every rank's facts give one and the same path;
// otherwise a UsageError on every rank (the message of the lowest rank whose facts give no path, or
// one naming the paths that differ), never on some ranks only, which would leave the others waiting
// in their next collective. Runtime::start checks the world context with it.
DeviceCommPath agree_device_comm_path(const Context& ctx, const DeviceCommFacts& facts);
}  // namespace detail

class DeviceComm {
 public:
  // An operation in flight. wait() completes it: under cuda, in stream order (the context's queue
  // waits for it; the host does not block unless the path is host-side).
  class Request {
   public:
    Request() = default;
    Request(Request&&) noexcept = default;
    Request& operator=(Request&&) noexcept = default;
    ~Request();  // waits if still pending, so that no buffer is freed under a transfer
    void wait();
    bool pending() const { return static_cast<bool>(finish_); }

   private:
    friend class DeviceComm;
    std::function<void()> finish_;
  };

  explicit DeviceComm(const Context& ctx);

  DeviceCommPath path() const { return path_; }
  const Context& context() const { return ctx_; }
  // Whether this path moves a message faster from and to 16-byte boundaries (nccl: its copies into
  // and out of its buffers take 16-byte steps only where both addresses allow). Exchange
  // (algorithms/exchange.hpp) sends from the boundary before each run where it does.
  bool prefers_aligned_messages() const;

  // Broadcasts `bytes` bytes of backend memory from root's `data` into every other rank's `data`.
  Request ibcast(void* data, std::size_t bytes, int root) const;
  void bcast(void* data, std::size_t bytes, int root) const { ibcast(data, bytes, root).wait(); }

  // In-place element-wise reduction over the ranks: data[i] becomes x_0[i] op x_1[i] op ... op
  // x_{P-1}[i] on every rank, x_r being rank r's data (in rank order, so op need only be
  // associative). T: any trivially copyable type; op: a TESSERA_HOST_DEVICE callable (T, T) -> T.
  //   plus, minimum, maximum on int32, int64 (sums wrap), float, double: the path's own collective
  //     (NCCL's allreduce; MPI_Allreduce with MPI_SUM / MPI_MIN / MPI_MAX, on device pointers or
  //     staged through host memory);
  //   any other op or type, cpu backend: MPI_Allreduce on host memory with an MPI operation made
  //     from op (commutative where op says so, functional.hpp);
  //   any other op or type, cuda backend: a reduce-scatter and an all-gather of the elements over
  //     the device path, each rank folding its share of the elements with op on the device (the
  //     caller's translation unit compiled by nvcc, as for the other algorithms' user functors).
  // Counted as one allreduce of count elements (collective_plan.hpp).
  template <class T, class Op>
  void allreduce(T* data, index_t count, Op op) const;

  // The sum (allreduce with plus). T: int32_t, int64_t (wrapping), float, double, or any type
  // plus adds.
  template <class T>
  void allreduce_sum(T* data, index_t count) const {
    allreduce(data, count, plus{});
  }

  // Element-wise sum over the ranks, scattered: `send` holds sum(recv_counts) elements, the pieces
  // of rank 0, 1, ... in order; rank r receives the sum over all ranks of its piece, recv_counts[r]
  // elements, in `recv`. Every rank passes the same recv_counts. T: int32_t, int64_t (wrapping), float, double. One
  // MPI_Reduce_scatter (one MPI_Reduce per rank, chunked, where a piece exceeds the message limit),
  // or ncclReduceScatter (pieces of unequal size padded to the largest).
  template <class T>
  void reduce_scatter_sum(const T* send, T* recv, const std::vector<index_t>& recv_counts) const;

  // One message of an exchange: `bytes` bytes of backend memory at `data`, to or from the
  // rank `peer` of the context (this rank included: a message to itself is a copy).
  struct Message {
    int peer = 0;
    void* data = nullptr;
    std::size_t bytes = 0;
  };

  // Personalised exchange: rank r sends send_bytes[p] bytes at send + send_offsets[p] to each rank p
  // and receives recv_bytes[p] bytes from p at recv + recv_offsets[p]. One exchange (grouped
  // send/recv or chunked point-to-point), any sizes above 2^31 bytes.
  void alltoallv(const void* send, const std::vector<std::size_t>& send_bytes,
                 const std::vector<std::size_t>& send_offsets, void* recv, const std::vector<std::size_t>& recv_bytes,
                 const std::vector<std::size_t>& recv_offsets) const;

  // The same exchange as messages, for several arrays at once (keys and values straight from where
  // they lie to where they go, with no packing): `sends` lists what this rank sends, `recvs` what
  // it receives, any number of messages per peer (p's sends to r match r's receives from p in the
  // order both list them, with the same sizes), a message to this rank itself a copy. Every rank
  // calls it; one exchange (grouped send/recv or chunked point-to-point), counted as one alltoallv
  // of every byte sent, this rank's own included. Stream-ordered with the context's queue under
  // cuda, as alltoallv.
  void alltoallv(const std::vector<Message>& sends, const std::vector<Message>& recvs) const;

  // Sends and receives the messages, with only the ranks named (not a collective: each rank lists
  // what it exchanges with its neighbours, and p's sends to r match r's receives from p in the
  // order both list them, with the same sizes). Any sizes; MPI messages go in chunks below 2^31.
  // Under cuda it is stream-ordered with the context's queue: the sends read what work queued on
  // it before the call wrote, and work queued after wait() sees the received data; the buffers
  // stay untouched until then. The transfer proceeds while the caller queues other work (on
  // another queue, or on the host under cpu): mpi-host and cuda-aware-mpi post non-blocking MPI
  // (cuda-aware-mpi waits for the queue first), staged copies the sends to pinned host memory and
  // posts MPI, nccl groups ncclSend / ncclRecv on its stream; wait() completes them.
  //
  // staging: for the staged path, pinned host buffers (kernels::allocate_pinned_host) of at least
  // the bytes of all sends and of all receives to and from other ranks, which a caller that repeats
  // one exchange (a halo exchange per iteration) keeps; otherwise each call takes buffers from the
  // staged path's pool of pinned memory (kept between calls, at most 2 GiB per process).
  struct Staging {
    void* send = nullptr;
    void* recv = nullptr;
    std::size_t send_bytes = 0;
    std::size_t recv_bytes = 0;
  };
  Request ineighbor_exchange(const std::vector<Message>& sends, const std::vector<Message>& recvs,
                             const Staging* staging = nullptr) const;

 private:
  friend class Exchange;
  // allreduce's two halves in the library: the built-in operations on the built-in types, and the
  // reduce-scatter + all-gather of elements of element_bytes bytes around `fold` (which folds the
  // ranks' pieces of this rank's share, laid out one after another in rank order, into `out`).
  void allreduce_builtin(void* data, index_t count, ElementKind kind, std::size_t bytes, ReduceOp op) const;
  using FoldPieces = std::function<void(const void* pieces, int ranks, index_t share, void* out)>;
  void allreduce_folded(void* data, index_t count, std::size_t element_bytes, const FoldPieces& fold) const;
  // The messages of an Exchange, in flight: counted as one collective of `kind` (alltoallv or
  // neighbor_exchange) of `counted_bytes`, the payload its plan charges.
  Request start_exchange(Collective kind, double counted_bytes, const std::vector<Message>& sends,
                         const std::vector<Message>& recvs) const;
  // Asserts that every message names a rank of the context.
  void check_peers(const std::vector<Message>& sends, const std::vector<Message>& recvs, const char* operation) const;

  Context ctx_;
  DeviceCommPath path_ = DeviceCommPath::mpi_host;
  const detail::Transport* transport_ = nullptr;  // the path's, kept for the process or the MPI communicator
};

namespace detail {

// The ranks' pieces of one rank's share folded in rank order: out[i] = p_0[i] op p_1[i] op ...
template <class T, class Op>
struct FoldRankPieces {
  using wrapped_functor = Op;
  const T* pieces;
  int ranks;
  index_t share;
  Op op;
  TESSERA_HOST_DEVICE T operator()(index_t i) const {
    T acc = pieces[i];
    for (int r = 1; r < ranks; ++r) acc = op(acc, pieces[static_cast<index_t>(r) * share + i]);
    return acc;
  }
};

// MPI's side of a user operation on host memory: MPI_Allreduce calls apply(in, inout) with
// inout[i] = in[i] op inout[i] (in from the lower ranks); the op object of the call in flight is
// reached through `current` (an MPI operation is a plain function).
template <class T, class Op>
struct MpiUserOp {
  static inline thread_local const Op* current = nullptr;
  static void apply(void* in, void* inout, int* len, MPI_Datatype*) {
    auto* a = static_cast<const unsigned char*>(in);
    auto* b = static_cast<unsigned char*>(inout);
    for (int i = 0; i < *len; ++i) {
      T x, y;
      std::memcpy(&x, a + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
      std::memcpy(&y, b + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
      const T z = (*current)(x, y);
      std::memcpy(b + static_cast<std::size_t>(i) * sizeof(T), &z, sizeof(T));
    }
  }
};

template <class T, class Op>
inline constexpr bool is_builtin_reduction =
    (std::is_same_v<Op, plus> || std::is_same_v<Op, minimum> || std::is_same_v<Op, maximum>) &&
    (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> ||
     std::is_same_v<T, double>);

}  // namespace detail

template <class T, class Op>
void DeviceComm::allreduce(T* data, index_t count, Op op) const {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceComm::allreduce: the element type must be trivially copyable");
  if constexpr (detail::is_builtin_reduction<T, Op>) {
    (void)op;
    const ReduceOp which = std::is_same_v<Op, plus> ? ReduceOp::sum : std::is_same_v<Op, minimum> ? ReduceOp::min : ReduceOp::max;
    allreduce_builtin(data, count, ElementTraits<T>::kind, sizeof(T), which);
  } else if (ctx_.backend() == Backend::cpu) {
    static_assert(kernels::detail::invocable_r_with<T, Op, const T&, const T&>,
                  "DeviceComm::allreduce: op must take two elements and return one");
    TESSERA_COLLECTIVE(Collective::allreduce, static_cast<double>(count) * sizeof(T));
    if (count <= 0 || ctx_.size() == 1) return;
    if constexpr (kernels::detail::host_callable<Op>) {
      MPI_Datatype element = MPI_DATATYPE_NULL;
      MPI_Op mpi_op = MPI_OP_NULL;
      TESSERA_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &element));
      TESSERA_MPI_CHECK(MPI_Type_commit(&element));
      TESSERA_MPI_CHECK(MPI_Op_create(&detail::MpiUserOp<T, Op>::apply, is_commutative_v<Op> ? 1 : 0, &mpi_op));
      const Op* outer = std::exchange(detail::MpiUserOp<T, Op>::current, &op);
      for (index_t done = 0; done < count; done += kMpiChunkElements) {
        const int chunk = static_cast<int>(std::min(kMpiChunkElements, count - done));
        TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, chunk, element, mpi_op, ctx_.comm().get()));
      }
      detail::MpiUserOp<T, Op>::current = outer;
      TESSERA_MPI_CHECK(MPI_Op_free(&mpi_op));
      TESSERA_MPI_CHECK(MPI_Type_free(&element));
    } else {
      kernels::detail::throw_device_only_functor_on_cpu("DeviceComm::allreduce");
    }
  } else {
    const kernels::Queue queue = ctx_.queue();
    allreduce_folded(data, count, sizeof(T), [&](const void* pieces, int ranks, index_t share, void* out) {
      kernels::transform_index(queue, index_t(0), share, static_cast<T*>(out),
                               detail::FoldRankPieces<T, Op>{static_cast<const T*>(pieces), ranks, share, op});
    });
  }
}

namespace detail {
// The largest MPI message this layer sends in one call; longer transfers go in chunks. 1 GiB by
// default; tests lower it to exercise the chunking on small buffers. Not thread-safe.
std::size_t mpi_message_limit();
void set_mpi_message_limit(std::size_t bytes);
}  // namespace detail

}  // namespace tessera
