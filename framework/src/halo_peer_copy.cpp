#include "halo_peer_copy.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/error.hpp"

#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels/cuda_check.hpp"
#endif

namespace tessera::detail {

#if TESSERA_HAVE_CUDA

namespace {

constexpr int kTokenTag = 1;  // "copied for this exchange is recorded"
constexpr int kCloseTag = 2;  // "nothing of yours is mapped here any more"
constexpr int kExportTag = 3;
constexpr int kOffsetsTag = 4;

cudaStream_t stream_of(const Context& ctx) { return reinterpret_cast<cudaStream_t>(ctx.queue().stream); }

// What a rank exports to each neighbour: its receive allocation and its two events.
struct Exported {
  cudaIpcMemHandle_t memory;
  cudaIpcEventHandle_t copied;
  cudaIpcEventHandle_t drained;
  std::uint64_t slot_bytes;
  std::int32_t has_memory;
};

// Why a rank cannot take the path, ordered so that the largest over the ranks is the one to report.
enum Reason : int { kOk = 0, kOtherNode = 1, kCannotExport = 2, kCannotMap = 3 };

const char* reason_text(int reason) {
  switch (reason) {
    case kOtherNode: return "a neighbour is on another node";
    case kCannotExport: return "this GPU's memory or events cannot be shared with another process (CUDA IPC)";
    case kCannotMap: return "a neighbour's GPU memory cannot be mapped here (CUDA IPC)";
    default: return "";
  }
}

// A CUDA call that may fail where CUDA IPC is not available: its error cleared (not sticky), and
// reported as false.
bool ipc_call(cudaError_t status) {
  if (status == cudaSuccess) return true;
  (void)cudaGetLastError();
  return false;
}

int agree_max(const Context& ctx, int value) { return ctx.comm().allreduce(value, ReduceOp::max); }

}  // namespace

struct PeerCopy::Peer {
  int rank = 0;
  std::vector<DeviceComm::Message> messages;  // this rank's sends to it, in order
  std::vector<std::uint64_t> offsets;         // where each lands in its slot
  bool receives_from = false;                 // it sends to this rank
  char* mapped = nullptr;                     // its receive allocation, mapped here (this rank sends to it)
  std::size_t slot_bytes = 0;
  cudaEvent_t copied = nullptr;   // its events, opened here: copied where it sends to this rank,
  cudaEvent_t drained = nullptr;  // drained where this rank sends to it
  MPI_Request token = MPI_REQUEST_NULL;

  bool sends_bytes() const {
    return std::any_of(messages.begin(), messages.end(), [](const DeviceComm::Message& m) { return m.bytes > 0; });
  }
};

std::unique_ptr<PeerCopy> PeerCopy::make(const Context& ctx, const std::vector<DeviceComm::Message>& sends,
                                         const std::vector<DeviceComm::Message>& recvs, void* receive,
                                         std::size_t slot_bytes, std::string* why_not) {
  if (ctx.backend() != Backend::cuda) {
    *why_not = "it needs the cuda backend";
    return nullptr;
  }
  if (ctx.size() == 1) {
    *why_not = "one rank has no neighbours";
    return nullptr;
  }
  const int me = ctx.rank();
  std::unique_ptr<PeerCopy> pc(new PeerCopy);
  pc->ctx_ = ctx;
  pc->slot_bytes_ = slot_bytes;
  pc->receive_ = static_cast<char*>(receive);

  // The neighbours, in rank order, and what goes to each.
  std::set<int> neighbours;
  for (const std::vector<DeviceComm::Message>* list : {&sends, &recvs})
    for (const DeviceComm::Message& m : *list) {
      TESSERA_ASSERT(m.peer != me, "peer copy: a message of a rank to itself");
      neighbours.insert(m.peer);
    }
  for (const int rank : neighbours) {
    Peer peer;
    peer.rank = rank;
    for (const DeviceComm::Message& m : sends)
      if (m.peer == rank) peer.messages.push_back(m);
    peer.receives_from = std::any_of(recvs.begin(), recvs.end(), [&](const DeviceComm::Message& m) { return m.peer == rank; });
    pc->peers_.push_back(std::move(peer));
  }

  // Every neighbour on this node: the lowest rank of each node names it.
  const Communicator node = ctx.comm().split_node(me);
  const int node_id = node.allreduce(me, ReduceOp::min);
  const std::vector<int> node_of = ctx.comm().allgather(node_id);
  int reason = kOk;
  for (const Peer& p : pc->peers_)
    if (node_of[static_cast<std::size_t>(p.rank)] != node_id) reason = kOtherNode;
  if ((reason = agree_max(ctx, reason)) != kOk) {
    *why_not = reason_text(reason);
    return nullptr;
  }

  // Export (where the platform has no CUDA IPC, every rank learns it here and takes another path),
  // then receive the neighbours' exports and where this rank's messages land.
  TESSERA_CUDA_CHECK(cudaSetDevice(ctx.queue().device));
  pc->tokens_ = ctx.comm().split(0, me);
  Exported mine;
  std::memset(&mine, 0, sizeof mine);  // no uninitialised padding goes out
  cudaEvent_t copied = nullptr, drained = nullptr;
  bool exported = ipc_call(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming | cudaEventInterprocess));
  pc->copied_ = copied;
  exported = exported && ipc_call(cudaEventCreateWithFlags(&drained, cudaEventDisableTiming | cudaEventInterprocess));
  pc->drained_ = drained;
  exported = exported && ipc_call(cudaIpcGetEventHandle(&mine.copied, copied)) &&
             ipc_call(cudaIpcGetEventHandle(&mine.drained, drained));
  if (exported && receive) {
    exported = ipc_call(cudaIpcGetMemHandle(&mine.memory, receive));
    mine.has_memory = 1;
  }
  mine.slot_bytes = slot_bytes;
  if ((reason = agree_max(ctx, exported ? kOk : kCannotExport)) != kOk) {
    *why_not = reason_text(reason);
    return nullptr;  // the destructor destroys what was made, with the neighbours
  }
  // The receive slots may have served other work on this rank's queue before (the allocator
  // reuses blocks in the order of the queue that freed them): `drained` recorded once here, before
  // the agreement below, makes the first copies into them wait for that work.
  TESSERA_CUDA_CHECK(cudaEventRecord(drained, stream_of(ctx)));
  const std::size_t n = pc->peers_.size();
  std::vector<Exported> theirs(n);
  std::vector<std::vector<std::uint64_t>> my_offsets(n);
  std::vector<MPI_Request> requests;
  const MPI_Comm comm = pc->tokens_.get();
  for (std::size_t i = 0; i < n; ++i) {
    Peer& p = pc->peers_[i];
    for (const DeviceComm::Message& m : recvs)
      if (m.peer == p.rank) my_offsets[i].push_back(static_cast<std::uint64_t>(static_cast<char*>(m.data) - pc->receive_));
    p.offsets.resize(p.messages.size());
    requests.resize(requests.size() + 4);
    MPI_Request* r = &requests[requests.size() - 4];
    TESSERA_MPI_CHECK(MPI_Isend(&mine, sizeof mine, MPI_BYTE, p.rank, kExportTag, comm, &r[0]));
    TESSERA_MPI_CHECK(MPI_Irecv(&theirs[i], sizeof(Exported), MPI_BYTE, p.rank, kExportTag, comm, &r[1]));
    TESSERA_MPI_CHECK(MPI_Isend(my_offsets[i].data(), static_cast<int>(my_offsets[i].size()), MPI_UINT64_T, p.rank,
                                kOffsetsTag, comm, &r[2]));
    TESSERA_MPI_CHECK(MPI_Irecv(p.offsets.data(), static_cast<int>(p.offsets.size()), MPI_UINT64_T, p.rank, kOffsetsTag,
                                comm, &r[3]));
  }
  TESSERA_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));

  // Map what this rank needs; a failure (another GPU without peer access, devices hidden from this
  // process) is agreed, and then every rank takes another path.
  reason = kOk;
  for (std::size_t i = 0; i < n && reason == kOk; ++i) {
    Peer& p = pc->peers_[i];
    p.slot_bytes = theirs[i].slot_bytes;
    if (p.sends_bytes()) {
      void* mapped = nullptr;
      if (!theirs[i].has_memory ||
          cudaIpcOpenMemHandle(&mapped, theirs[i].memory, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess ||
          cudaIpcOpenEventHandle(&p.drained, theirs[i].drained) != cudaSuccess)
        reason = kCannotMap;
      p.mapped = static_cast<char*>(mapped);
    }
    if (reason == kOk && p.receives_from && cudaIpcOpenEventHandle(&p.copied, theirs[i].copied) != cudaSuccess)
      reason = kCannotMap;
    if (reason != kOk) (void)cudaGetLastError();  // not a sticky error: clear it for the next call
  }
  if ((reason = agree_max(ctx, reason)) != kOk) {
    *why_not = reason_text(reason);
    return nullptr;  // the destructor closes what was opened, with the neighbours
  }
  for (std::size_t i = 0; i < n; ++i) {
    const Peer& p = pc->peers_[i];
    for (std::size_t j = 0; j < p.messages.size(); ++j)
      TESSERA_ASSERT(p.offsets[j] + p.messages[j].bytes <= p.slot_bytes,
                     "peer copy: a message does not fit the receiver's slot (the sends and receives disagree)");
  }
  return pc;
}

PeerCopy::~PeerCopy() {
  // Nothing of this rank's queue refers to a neighbour any more once it is idle; then each closes
  // what it mapped and says so, and only after every neighbour has, the events go (the receive
  // allocation goes with its owner, after this).
  ctx_.queue().synchronize();
  for (Peer& p : peers_) {
    if (p.mapped) TESSERA_CUDA_CHECK(cudaIpcCloseMemHandle(p.mapped));
    if (p.copied) TESSERA_CUDA_CHECK(cudaEventDestroy(p.copied));
    if (p.drained) TESSERA_CUDA_CHECK(cudaEventDestroy(p.drained));
  }
  if (!tokens_.is_null()) {
    // An exchange started and never finished: its tokens are received first, in the order sent.
    if (awaiting_tokens_)
      for (Peer& p : peers_)
        TESSERA_MPI_CHECK(MPI_Recv(nullptr, 0, MPI_BYTE, p.rank, kTokenTag, tokens_.get(), MPI_STATUS_IGNORE));
    std::vector<MPI_Request> requests;
    for (Peer& p : peers_) {
      requests.resize(requests.size() + 2);
      TESSERA_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, p.rank, kCloseTag, tokens_.get(), &requests[requests.size() - 2]));
      TESSERA_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, p.rank, kCloseTag, tokens_.get(), &requests.back()));
    }
    for (Peer& p : peers_)
      if (p.token != MPI_REQUEST_NULL) requests.push_back(p.token);
    TESSERA_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  }
  if (copied_) TESSERA_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(copied_)));
  if (drained_) TESSERA_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(drained_)));
}

void PeerCopy::start() {
  TESSERA_ASSERT(!started_, "peer copy: an exchange was started before the last one drained");
  const cudaStream_t stream = stream_of(ctx_);
  const std::size_t slot = exchanges_ % 2;
  for (Peer& p : peers_) {
    if (!p.mapped) continue;
    TESSERA_CUDA_CHECK(cudaStreamWaitEvent(stream, p.drained, 0));
    for (std::size_t j = 0; j < p.messages.size(); ++j)
      if (p.messages[j].bytes)
        TESSERA_CUDA_CHECK(cudaMemcpyAsync(p.mapped + slot * p.slot_bytes + p.offsets[j], p.messages[j].data,
                                           p.messages[j].bytes, cudaMemcpyDeviceToDevice, stream));
  }
  TESSERA_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(copied_), stream));
  for (Peer& p : peers_) {
    TESSERA_MPI_CHECK(MPI_Wait(&p.token, MPI_STATUS_IGNORE));  // the last exchange's zero bytes
    TESSERA_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, p.rank, kTokenTag, tokens_.get(), &p.token));
  }
  started_ = awaiting_tokens_ = true;
}

void PeerCopy::finish() {
  TESSERA_ASSERT(started_, "peer copy: finish without start");
  const cudaStream_t stream = stream_of(ctx_);
  for (Peer& p : peers_) {
    TESSERA_MPI_CHECK(MPI_Recv(nullptr, 0, MPI_BYTE, p.rank, kTokenTag, tokens_.get(), MPI_STATUS_IGNORE));
    if (p.copied) TESSERA_CUDA_CHECK(cudaStreamWaitEvent(stream, p.copied, 0));
  }
  awaiting_tokens_ = false;
}

void PeerCopy::drained() {
  TESSERA_ASSERT(started_, "peer copy: drained without start");
  TESSERA_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(drained_), stream_of(ctx_)));
  ++exchanges_;
  started_ = false;
}

#else  // no CUDA in this build: the path is never taken

struct PeerCopy::Peer {};

std::unique_ptr<PeerCopy> PeerCopy::make(const Context& ctx, const std::vector<DeviceComm::Message>&,
                                         const std::vector<DeviceComm::Message>&, void*, std::size_t,
                                         std::string* why_not) {
  *why_not = ctx.backend() != Backend::cuda ? "it needs the cuda backend" : "this build has no CUDA";
  return nullptr;
}

PeerCopy::~PeerCopy() = default;
void PeerCopy::start() {}
void PeerCopy::finish() {}
void PeerCopy::drained() {}

#endif

}  // namespace tessera::detail
