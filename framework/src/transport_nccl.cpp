// nccl: NCCL collectives and grouped send/recv on device buffers, on a stream of NCCL's own beside
// the context's queue (ordered with it through events). One NCCL communicator per group of
// processes: bootstrapped over MPI on an MPI communicator's first use and kept as an attribute of
// it, and shared by every later MPI communicator of the same processes in the same order on the
// same device (a process grid's row or column, a duplicate, a slab's column that spans every
// rank), because an NCCL communicator costs a collective initialisation of 0.1 s to seconds while
// algorithms make process grids per call (an FFT plan, a redistribution). Each lives until
// MPI_Finalize (an attribute of MPI_COMM_SELF, whose delete callback MPI_Finalize runs first,
// drops them), so a program that makes and frees grids in a loop initialises each group's once.
// Built only where NCCL is.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/mpi_watchdog.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"
#include "transport.hpp"

#define TESSERA_NCCL_CHECK(call)                                                                    \
  do {                                                                                              \
    const ncclResult_t tessera_nccl_status_ = (call);                                               \
    if (tessera_nccl_status_ != ncclSuccess)                                                        \
      ::tessera::fatal(__FILE__, __LINE__, #call, std::string("NCCL: ") + ncclGetErrorString(tessera_nccl_status_)); \
  } while (0)

namespace tessera::detail {
namespace {

cudaStream_t compute_stream(const Context& ctx) { return reinterpret_cast<cudaStream_t>(ctx.queue().stream); }

// `to` waits for everything queued on `from` so far.
void stream_wait(cudaStream_t to, cudaStream_t from) {
  cudaEvent_t event;
  TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  TESSERA_CUDA_CHECK(cudaEventRecord(event, from));
  TESSERA_CUDA_CHECK(cudaStreamWaitEvent(to, event, 0));
  TESSERA_CUDA_CHECK(cudaEventDestroy(event));  // released once the wait has consumed it
}

// A Finish that makes `compute` wait for everything queued on `from` so far, without blocking the host.
Transport::Finish stream_wait_later(cudaStream_t compute, cudaStream_t from) {
  cudaEvent_t done;
  TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  TESSERA_CUDA_CHECK(cudaEventRecord(done, from));
  return [compute, done] {
    TESSERA_CUDA_CHECK(cudaStreamWaitEvent(compute, done, 0));
    TESSERA_CUDA_CHECK(cudaEventDestroy(done));
  };
}

// The NCCL type a sum runs in: an integer as the unsigned type of its size (the same bits as a
// wrapping signed sum), a floating-point type as itself.
ncclDataType_t nccl_sum_type(SumType type) {
  TESSERA_ASSERT(type.bytes == 4 || type.bytes == 8, "nccl_sum_type: 4- and 8-byte elements only");
  if (type.kind == ElementKind::floating_point) return type.bytes == 4 ? ncclFloat32 : ncclFloat64;
  if (type.op != ReduceOp::sum && type.kind == ElementKind::signed_integer) return type.bytes == 4 ? ncclInt32 : ncclInt64;
  return type.bytes == 4 ? ncclUint32 : ncclUint64;
}

ncclRedOp_t nccl_op(SumType type) {
  return type.op == ReduceOp::sum ? ncclSum : type.op == ReduceOp::min ? ncclMin : ncclMax;
}

class NcclTransport final : public Transport {
 public:
  // The MPI watchdog aborts the communicator when it fires (a peer lost: NCCL's kernels would
  // otherwise wait for it for ever).
  NcclTransport(ncclComm_t comm, cudaStream_t stream) : comm_(comm), stream_(stream) {
    add_watchdog_abort_hook(abort_comm, this);
  }

  // Errors here cannot be reported usefully (MPI may be finalizing); the process is ending.
  ~NcclTransport() override {
    remove_watchdog_abort_hook(abort_comm, this);
    if (comm_) (void)ncclCommDestroy(comm_);
    if (stream_) (void)cudaStreamDestroy(stream_);
  }

  static void abort_comm(void* self) {
    auto* t = static_cast<NcclTransport*>(self);
    if (t->comm_) (void)ncclCommAbort(t->comm_);
  }

  DeviceCommPath path() const override { return DeviceCommPath::nccl; }
  bool prefers_aligned_messages() const override { return true; }

  Finish ibcast(const Context& ctx, void* data, std::size_t bytes, int root) const override {
    stream_wait(stream_, compute_stream(ctx));  // the root's data, and the receivers' buffer free to reuse
    TESSERA_NCCL_CHECK(ncclBroadcast(data, data, bytes, ncclChar, root, comm_, stream_));
    return stream_wait_later(compute_stream(ctx), stream_);
  }

  void allreduce(const Context& ctx, void* data, index_t count, SumType type) const override {
    const cudaStream_t compute = compute_stream(ctx);
    stream_wait(stream_, compute);
    TESSERA_NCCL_CHECK(
        ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_sum_type(type), nccl_op(type), comm_, stream_));
    stream_wait(compute, stream_);
  }

  void reduce_scatter_sum(const Context& ctx, const void* send, void* recv, const std::vector<index_t>& recv_counts,
                          SumType type) const override {
    const cudaStream_t compute = compute_stream(ctx);
    const index_t largest = *std::max_element(recv_counts.begin(), recv_counts.end());
    const bool equal = std::all_of(recv_counts.begin(), recv_counts.end(), [&](index_t c) { return c == largest; });
    if (equal) {
      stream_wait(stream_, compute);
      TESSERA_NCCL_CHECK(ncclReduceScatter(send, recv, static_cast<std::size_t>(largest), nccl_sum_type(type), ncclSum,
                                           comm_, stream_));
      stream_wait(compute, stream_);
      return;
    }
    // Unequal pieces: each padded to the largest, in a buffer of ranks x largest (the padding is
    // reduced too, and dropped), then this rank's piece copied out.
    const std::size_t ranks = recv_counts.size();
    const std::size_t piece_bytes = static_cast<std::size_t>(largest) * type.bytes;
    kernels::ScratchBuffer padded_send(ctx.queue(), piece_bytes * ranks);
    kernels::ScratchBuffer padded_recv(ctx.queue(), piece_bytes);
    TESSERA_CUDA_CHECK(cudaMemsetAsync(padded_send.data(), 0, piece_bytes * ranks, compute));
    const char* in = static_cast<const char*>(send);
    std::size_t offset = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
      const std::size_t bytes = static_cast<std::size_t>(recv_counts[r]) * type.bytes;
      if (bytes)
        TESSERA_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(padded_send.data()) + r * piece_bytes, in + offset, bytes,
                                           cudaMemcpyDeviceToDevice, compute));
      offset += bytes;
    }
    stream_wait(stream_, compute);
    TESSERA_NCCL_CHECK(ncclReduceScatter(padded_send.data(), padded_recv.data(), static_cast<std::size_t>(largest),
                                         nccl_sum_type(type), ncclSum, comm_, stream_));
    stream_wait(compute, stream_);
    const std::size_t mine = static_cast<std::size_t>(recv_counts[static_cast<std::size_t>(ctx.rank())]) * type.bytes;
    if (mine) TESSERA_CUDA_CHECK(cudaMemcpyAsync(recv, padded_recv.data(), mine, cudaMemcpyDeviceToDevice, compute));
    // The buffers are freed in the compute stream's order, after the copy.
  }

  void alltoallv(const Context& ctx, const void* send, const std::vector<std::size_t>& send_bytes,
                 const std::vector<std::size_t>& send_offsets, void* recv, const std::vector<std::size_t>& recv_bytes,
                 const std::vector<std::size_t>& recv_offsets) const override {
    const cudaStream_t compute = compute_stream(ctx);
    stream_wait(stream_, compute);
    const std::size_t ranks = send_bytes.size();
    const auto me = static_cast<std::size_t>(ctx.rank());
    TESSERA_NCCL_CHECK(ncclGroupStart());
    for (std::size_t p = 0; p < ranks; ++p) {
      if (p == me) continue;
      if (send_bytes[p])
        TESSERA_NCCL_CHECK(ncclSend(static_cast<const char*>(send) + send_offsets[p], send_bytes[p], ncclChar,
                                    static_cast<int>(p), comm_, stream_));
      if (recv_bytes[p])
        TESSERA_NCCL_CHECK(ncclRecv(static_cast<char*>(recv) + recv_offsets[p], recv_bytes[p], ncclChar,
                                    static_cast<int>(p), comm_, stream_));
    }
    TESSERA_NCCL_CHECK(ncclGroupEnd());
    if (send_bytes[me])
      TESSERA_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(recv) + recv_offsets[me],
                                         static_cast<const char*>(send) + send_offsets[me], send_bytes[me],
                                         cudaMemcpyDeviceToDevice, stream_));
    stream_wait(compute, stream_);
  }

  Finish ineighbor_exchange(const Context& ctx, const std::vector<DeviceComm::Message>& sends,
                            const std::vector<DeviceComm::Message>& recvs, const DeviceComm::Staging*) const override {
    const int me = ctx.rank();
    const cudaStream_t compute = compute_stream(ctx);
    stream_wait(stream_, compute);
    kernels::Queue on_comm_stream = ctx.queue();
    on_comm_stream.stream = reinterpret_cast<kernels::StreamHandle>(stream_);
    copy_to_self(sends, recvs, me, on_comm_stream);
    TESSERA_NCCL_CHECK(ncclGroupStart());
    for (const DeviceComm::Message& m : sends)
      if (m.peer != me && m.bytes) TESSERA_NCCL_CHECK(ncclSend(m.data, m.bytes, ncclChar, m.peer, comm_, stream_));
    for (const DeviceComm::Message& m : recvs)
      if (m.peer != me && m.bytes) TESSERA_NCCL_CHECK(ncclRecv(m.data, m.bytes, ncclChar, m.peer, comm_, stream_));
    TESSERA_NCCL_CHECK(ncclGroupEnd());
    return stream_wait_later(compute, stream_);
  }

 private:
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;  // NCCL work runs here, beside the compute stream (overlap), at the highest priority
};

using SharedTransport = std::shared_ptr<NcclTransport>;

int delete_attribute(MPI_Comm, int, void* value, void*) {
  delete static_cast<SharedTransport*>(value);
  return MPI_SUCCESS;
}

// Who an NCCL communicator serves: the ranks in MPI_COMM_WORLD of an MPI communicator's processes,
// in its order, and the device; empty where a process lies outside MPI_COMM_WORLD (not shared then).
std::vector<int> group_key(MPI_Comm comm, int device) {
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  TESSERA_MPI_CHECK(MPI_Comm_group(comm, &group));
  TESSERA_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  int size = 0;
  TESSERA_MPI_CHECK(MPI_Group_size(group, &size));
  std::vector<int> ranks(static_cast<std::size_t>(size)), key(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) ranks[static_cast<std::size_t>(i)] = i;
  TESSERA_MPI_CHECK(MPI_Group_translate_ranks(group, size, ranks.data(), world, key.data()));
  TESSERA_MPI_CHECK(MPI_Group_free(&group));
  TESSERA_MPI_CHECK(MPI_Group_free(&world));
  if (std::find(key.begin(), key.end(), MPI_UNDEFINED) != key.end()) return {};
  key.push_back(device);
  return key;
}

// The NCCL communicators of this process, by group_key, until MPI_Finalize.
using LiveTransports = std::map<std::vector<int>, SharedTransport>;

int delete_live_transports(MPI_Comm, int, void* value, void*) {
  delete static_cast<LiveTransports*>(value);
  return MPI_SUCCESS;
}

LiveTransports& live_transports() {
  static LiveTransports* live = [] {
    auto* map = new LiveTransports;
    int self_keyval = MPI_KEYVAL_INVALID;
    TESSERA_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_live_transports, &self_keyval, nullptr));
    TESSERA_MPI_CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, map));
    return map;
  }();
  return *live;
}

int keyval() {
  static int keyval = MPI_KEYVAL_INVALID;
  if (keyval == MPI_KEYVAL_INVALID)
    TESSERA_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_attribute, &keyval, nullptr));
  return keyval;
}

}  // namespace

const Transport& nccl_transport(const Context& ctx) {
  MPI_Comm comm = ctx.comm().get();
  void* value = nullptr;
  int found = 0;
  TESSERA_MPI_CHECK(MPI_Comm_get_attr(comm, keyval(), &value, &found));
  if (found) return **static_cast<SharedTransport*>(value);
  // Share the NCCL communicator of the same group where every rank holds one (they all do, unless
  // a rank's process lies outside MPI_COMM_WORLD: the ranks agree first, cheaply).
  const std::vector<int> key = group_key(comm, ctx.queue().device);
  SharedTransport transport;
  if (!key.empty())
    if (auto it = live_transports().find(key); it != live_transports().end()) transport = it->second;
  int every_rank_has_one = transport ? 1 : 0;
  TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &every_rank_has_one, 1, MPI_INT, MPI_MIN, comm));
  if (!every_rank_has_one) {
    ncclUniqueId id;
    if (ctx.rank() == 0) TESSERA_NCCL_CHECK(ncclGetUniqueId(&id));
    TESSERA_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
    TESSERA_CUDA_CHECK(cudaSetDevice(ctx.queue().device));
    // NCCL's kernels run on a stream of the highest priority: the block scheduler starts them on the
    // next free SM rather than after every block of the compute the transfer overlaps (a sweep or a
    // GEMM queued before it), which would otherwise leave the transfer until that compute's end.
    const auto stream = reinterpret_cast<cudaStream_t>(kernels::make_priority_queue(ctx.queue()).stream);
    ncclComm_t nccl_comm = nullptr;
    TESSERA_NCCL_CHECK(ncclCommInitRank(&nccl_comm, ctx.size(), id, ctx.rank()));
    transport = std::make_shared<NcclTransport>(nccl_comm, stream);
    if (!key.empty()) live_transports()[key] = transport;
  }
  TESSERA_MPI_CHECK(MPI_Comm_set_attr(comm, keyval(), new SharedTransport(transport)));
  return *transport;
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "";
  // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace tessera::detail
