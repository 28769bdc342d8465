#include "halo_peer_copy.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>

#include "device_wait_limit.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/error.hpp"

#if TESSERA_HAVE_CUDA
#include <cuda.h>  // the driver's types only: its functions come from cudaGetDriverEntryPointByVersion
#include <cuda_runtime.h>

#include <mutex>

#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"
#endif

namespace tessera::detail {

void allocate_halo_buffers(const Context& ctx, const std::function<void()>& allocate, const std::function<void()>& release) {
  std::size_t missing = 0;
  try {
    allocate();
  } catch (const OutOfMemory& e) {
    missing = std::clamp<std::size_t>(e.bytes(), 1, static_cast<std::size_t>(INT64_MAX));
  }
  if (const auto worst = ctx.comm().allreduce(static_cast<std::int64_t>(missing), ReduceOp::max); worst > 0) {
    release();
    throw OutOfMemory(static_cast<std::size_t>(worst), "the halo exchange's buffers");
  }
}

#if TESSERA_HAVE_CUDA

namespace {

constexpr int kCloseTag = 2;  // "nothing of yours is mapped here any more"
constexpr int kExportTag = 3;
constexpr int kOffsetsTag = 4;

cudaStream_t stream_of(const Context& ctx) { return reinterpret_cast<cudaStream_t>(ctx.queue().stream); }

// What a rank exports to each neighbour: its receive allocation, its flags, and which pair of
// flags is that neighbour's.
struct Exported {
  cudaIpcMemHandle_t memory;
  cudaIpcMemHandle_t flags;
  std::uint64_t slot_bytes;
  std::int32_t has_memory;
  std::int32_t pair;
};

// Why a rank cannot take the path, ordered so that the largest over the ranks is the one to report.
enum Reason : int { kOk = 0, kOtherNode = 1, kCannotExport = 2, kCannotMap = 3, kNoFlags = 4 };

const char* reason_text(int reason) {
  switch (reason) {
    case kOtherNode: return "a neighbour is on another node";
    case kCannotExport: return "this GPU's memory or events cannot be shared with another process (CUDA IPC)";
    case kCannotMap: return "a neighbour's GPU memory cannot be mapped here (CUDA IPC)";
    case kNoFlags: return "a GPU cannot order work by flags in memory (stream memory operations)";
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

// kOk where every one of `ranks` is on this rank's node, agreed over ctx (collective).
int agree_on_node(const Context& ctx, const std::vector<int>& ranks) {
  const int me = ctx.rank();
  const Communicator node = ctx.comm().split_node(me);
  const int node_id = node.allreduce(me, ReduceOp::min);  // the lowest rank of each node names it
  const std::vector<int> node_of = ctx.comm().allgather(node_id);
  int reason = kOk;
  for (const int rank : ranks)
    if (node_of[static_cast<std::size_t>(rank)] != node_id) reason = kOtherNode;
  return agree_max(ctx, reason);
}

}  // namespace

struct PeerCopy::Peer {
  int rank = 0;
  std::vector<DeviceComm::Message> messages;  // this rank's sends to it, in order
  std::vector<std::size_t> index;             // of each among all of this rank's sends
  std::vector<std::uint64_t> offsets;         // where each lands in its slot
  bool receives_from = false;                 // it sends to this rank
  char* mapped = nullptr;                     // its receive allocation, mapped here (this rank sends to it)
  std::size_t slot_bytes = 0;
  std::uint64_t* flags = nullptr;  // its flags, mapped here
  int pair = 0;                    // this rank's pair among them: [2 pair] copied, [2 pair + 1] drained

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
    for (std::size_t j = 0; j < sends.size(); ++j)
      if (sends[j].peer == rank) {
        peer.messages.push_back(sends[j]);
        peer.index.push_back(j);
      }
    peer.receives_from = std::any_of(recvs.begin(), recvs.end(), [&](const DeviceComm::Message& m) { return m.peer == rank; });
    pc->peers_.push_back(std::move(peer));
  }

  int reason = agree_on_node(ctx, std::vector<int>(neighbours.begin(), neighbours.end()));
  if (reason != kOk) {
    *why_not = reason_text(reason);
    return nullptr;
  }

  if ((reason = agree_max(ctx, kernels::queue_flags_available(ctx.queue()) ? kOk : kNoFlags)) != kOk) {
    *why_not = reason_text(reason);
    return nullptr;
  }

  // The flags, zero, and everything queued before done before any neighbour may write into this
  // rank's memory (the allocator hands out blocks that served earlier work on this queue): it
  // writes only after the agreements below.
  const kernels::Queue& q = ctx.queue();
  TESSERA_CUDA_CHECK(cudaSetDevice(q.device));
  const std::size_t n = pc->peers_.size();
  const std::size_t flag_bytes = std::max<std::size_t>(2 * n, 1) * sizeof(std::uint64_t);
  pc->flags_ = static_cast<std::uint64_t*>(kernels::allocate(q, flag_bytes));
  TESSERA_CUDA_CHECK(cudaMemsetAsync(pc->flags_, 0, flag_bytes, stream_of(ctx)));
  q.synchronize();
  pc->handshake_ = ctx.comm().split(0, me);

  // Export (where the platform has no CUDA IPC, every rank learns it here and takes another path),
  // then receive the neighbours' exports and where this rank's messages land.
  Exported base;
  std::memset(&base, 0, sizeof base);  // no uninitialised padding goes out
  bool exported = ipc_call(cudaIpcGetMemHandle(&base.flags, pc->flags_));
  if (exported && receive) {
    exported = ipc_call(cudaIpcGetMemHandle(&base.memory, receive));
    base.has_memory = 1;
  }
  base.slot_bytes = slot_bytes;
  std::vector<Exported> mine(n, base);
  for (std::size_t i = 0; i < n; ++i) mine[i].pair = static_cast<std::int32_t>(i);  // neighbour i writes pair i here
  if ((reason = agree_max(ctx, exported ? kOk : kCannotExport)) != kOk) {
    *why_not = reason_text(reason);
    return nullptr;  // the destructor frees what was made, with the neighbours
  }
  std::vector<Exported> theirs(n);
  std::vector<std::vector<std::uint64_t>> my_offsets(n);
  std::vector<MPI_Request> requests;
  const MPI_Comm comm = pc->handshake_.get();
  for (std::size_t i = 0; i < n; ++i) {
    Peer& p = pc->peers_[i];
    for (const DeviceComm::Message& m : recvs)
      if (m.peer == p.rank) my_offsets[i].push_back(static_cast<std::uint64_t>(static_cast<char*>(m.data) - pc->receive_));
    p.offsets.resize(p.messages.size());
    requests.resize(requests.size() + 4);
    MPI_Request* r = &requests[requests.size() - 4];
    TESSERA_MPI_CHECK(MPI_Isend(&mine[i], sizeof(Exported), MPI_BYTE, p.rank, kExportTag, comm, &r[0]));
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
    p.pair = theirs[i].pair;
    void* flags = nullptr;
    if (cudaIpcOpenMemHandle(&flags, theirs[i].flags, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) reason = kCannotMap;
    p.flags = static_cast<std::uint64_t*>(flags);
    if (reason == kOk && p.sends_bytes()) {
      void* mapped = nullptr;
      if (!theirs[i].has_memory ||
          cudaIpcOpenMemHandle(&mapped, theirs[i].memory, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess)
        reason = kCannotMap;
      p.mapped = static_cast<char*>(mapped);
    }
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
  pc->claim_implied_ =
      std::all_of(pc->peers_.begin(), pc->peers_.end(), [](const Peer& p) { return !p.mapped || p.receives_from; });
  for (std::size_t slot = 0; slot < 2; ++slot) {
    pc->places_[slot].assign(sends.size(), nullptr);
    for (const Peer& p : pc->peers_)
      for (std::size_t j = 0; j < p.messages.size() && p.mapped; ++j)
        pc->places_[slot][p.index[j]] = p.mapped + slot * p.slot_bytes + p.offsets[j];
  }
  return pc;
}

PeerCopy::~PeerCopy() {
  // Nothing of this rank's queue refers to a neighbour any more once it is idle; then each closes
  // what it mapped and says so, and only after every neighbour has, the flags go (the receive
  // allocation goes with its owner, after this).
  ctx_.queue().synchronize();
  for (Peer& p : peers_) {
    if (p.mapped) TESSERA_CUDA_CHECK(cudaIpcCloseMemHandle(p.mapped));
    if (p.flags) TESSERA_CUDA_CHECK(cudaIpcCloseMemHandle(p.flags));
  }
  if (!handshake_.is_null()) {
    std::vector<MPI_Request> requests;
    for (Peer& p : peers_) {
      requests.resize(requests.size() + 2);
      TESSERA_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, p.rank, kCloseTag, handshake_.get(), &requests[requests.size() - 2]));
      TESSERA_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, p.rank, kCloseTag, handshake_.get(), &requests.back()));
    }
    TESSERA_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  }
  if (flags_) kernels::deallocate(ctx_.queue(), flags_);
}

void PeerCopy::claim() {
  TESSERA_ASSERT(!started_, "peer copy: an exchange was started before the last one drained");
  // Slot k % 2 last held exchange k - 2, drained once the receiver's count reaches k - 1. Where
  // every receiver also sends to this rank, that is already so once this queue has passed the
  // finish of exchange k - 1: the receiver's queue set its `drained` count to k - 1 before its
  // `copied` count to k, which finish waited for (a flag's write follows a system-wide fence).
  if (exchanges_ >= 2 && !claim_implied_) {
    const kernels::DeviceWaitLimit limit = device_wait_limit();
    for (std::size_t i = 0; i < peers_.size(); ++i)
      if (peers_[i].mapped) kernels::wait_flag(ctx_.queue(), flags_ + 2 * i + 1, exchanges_ - 1, limit, peers_[i].rank);
  }
  started_ = true;
}

void PeerCopy::publish() {
  TESSERA_ASSERT(started_ && !published_, "peer copy: publish without claim");
  for (const Peer& p : peers_)
    if (p.mapped) kernels::write_flag(ctx_.queue(), p.flags + 2 * p.pair, exchanges_ + 1);
  published_ = true;
}

void PeerCopy::finish() {
  TESSERA_ASSERT(published_, "peer copy: finish without start");
  const kernels::Queue& q = ctx_.queue();
  const kernels::DeviceWaitLimit limit = device_wait_limit();
  for (std::size_t i = 0; i < peers_.size(); ++i)
    if (peers_[i].receives_from) kernels::wait_flag(q, flags_ + 2 * i, exchanges_ + 1, limit, peers_[i].rank);
}

void PeerCopy::drained() {
  TESSERA_ASSERT(started_, "peer copy: drained without start");
  const kernels::Queue& q = ctx_.queue();
  for (const Peer& p : peers_)
    if (p.receives_from) kernels::write_flag(q, p.flags + 2 * p.pair + 1, exchanges_ + 1);
  ++exchanges_;
  started_ = published_ = false;
}


// ---- PeerStores ---------------------------------------------------------------------------------

namespace {

constexpr int kStoresExportTag = 1;
constexpr int kStoresSlotTag = 2;
constexpr int kStoresCloseTag = 3;

// What a rank exports to each neighbour: its two fields and its flags, and where in each field's
// allocation the block's origin lies.
struct FieldsExported {
  cudaIpcMemHandle_t field[2];
  cudaIpcMemHandle_t flags;
  std::uint64_t origin_bytes[2];  // from the allocation's start
  std::int64_t ld;
  char device[16];  // the GPU's UUID
};

// The start of the allocation holding p (CUDA IPC maps whole allocations).
const char* allocation_start(const void* p) {
  static CUresult (*range)(CUdeviceptr*, std::size_t*, CUdeviceptr) = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      range = reinterpret_cast<decltype(range)>(fn);
    else
      (void)cudaGetLastError();
  });
  CUdeviceptr base = 0;
  std::size_t bytes = 0;
  if (!range || range(&base, &bytes, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS) return nullptr;
  return reinterpret_cast<const char*>(base);
}

}  // namespace

struct PeerStores::Neighbour {
  int rank = 0;
  GlobalRectangle send;  // this rank's cells in its ghosts (global)
  char* mapped[2] = {nullptr, nullptr};  // its fields' allocations, mapped here
  std::uint64_t* mapped_flags = nullptr;
  int slot = 0;  // this rank's flag among its flags
};

std::unique_ptr<PeerStores> PeerStores::make(const Context& ctx, const FieldLayout& layout, StencilForm shape,
                                             std::array<const void*, 2> origins, std::size_t element_bytes,
                                             std::string* why_not) {
  if (ctx.backend() != Backend::cuda) {
    *why_not = "it needs the cuda backend";
    return nullptr;
  }
  if (ctx.size() == 1) {
    *why_not = "one rank has no neighbours";
    return nullptr;
  }
  const kernels::Queue& q = ctx.queue();
  std::unique_ptr<PeerStores> ps(new PeerStores);
  ps->ctx_ = ctx;
  ps->origins_ = origins;

  // The neighbours, in rank order: the ranks whose ghosts hold cells of this block. The halo is
  // symmetric (a rank's ghosts hold a neighbour's cells where the neighbour's hold its own), so
  // they are also the ranks this block's ghosts hear from.
  for (int pr = 0; pr < layout.grid_rows; ++pr)
    for (int pc = 0; pc < layout.grid_cols; ++pc) {
      const int rank = layout.rank_of(pr, pc);
      if (rank == ctx.rank()) continue;
      const GlobalRectangle out = halo_piece(layout, shape, pr, pc, layout.process_row, layout.process_col);
      const GlobalRectangle in = halo_piece(layout, shape, layout.process_row, layout.process_col, pr, pc);
      TESSERA_ASSERT(out.empty() == in.empty(), "peer stores: a neighbour's ghosts and this rank's do not match");
      if (out.empty()) continue;
      Neighbour n;
      n.rank = rank;
      n.send = out;
      ps->neighbours_.push_back(std::move(n));
    }
  std::vector<int> ranks;
  for (const Neighbour& n : ps->neighbours_) ranks.push_back(n.rank);
  int reason = agree_on_node(ctx, ranks);
  if (reason == kOk) reason = agree_max(ctx, kernels::queue_flags_available(q) ? kOk : kNoFlags);
  if (reason != kOk) {
    *why_not = reason_text(reason);
    return nullptr;
  }

  // The flags, zero, and everything queued before on this GPU (the fields' contents, written on
  // whichever queue) done before any neighbour may write into this rank's memory: it writes only
  // after the agreement below.
  TESSERA_CUDA_CHECK(cudaSetDevice(q.device));
  const std::size_t n = ps->neighbours_.size();
  ps->flags_ = static_cast<std::uint64_t*>(kernels::allocate(q, std::max<std::size_t>(n, 1) * sizeof(std::uint64_t)));
  TESSERA_CUDA_CHECK(cudaMemsetAsync(ps->flags_, 0, std::max<std::size_t>(n, 1) * sizeof(std::uint64_t), stream_of(ctx)));
  TESSERA_CUDA_CHECK(cudaDeviceSynchronize());
  ps->handshake_ = ctx.comm().split(0, ctx.rank());

  FieldsExported mine;
  std::memset(&mine, 0, sizeof mine);  // no uninitialised padding goes out
  bool exported = ipc_call(cudaIpcGetMemHandle(&mine.flags, ps->flags_));
  for (int f = 0; f < 2 && exported; ++f) {
    const char* start = allocation_start(origins[static_cast<std::size_t>(f)]);
    exported = start != nullptr && ipc_call(cudaIpcGetMemHandle(&mine.field[f], const_cast<char*>(start)));
    if (exported) mine.origin_bytes[f] = static_cast<std::uint64_t>(static_cast<const char*>(origins[static_cast<std::size_t>(f)]) - start);
  }
  mine.ld = layout.ld;
  cudaDeviceProp prop{};
  TESSERA_CUDA_CHECK(cudaGetDeviceProperties(&prop, q.device));
  std::memcpy(mine.device, prop.uuid.bytes, sizeof mine.device);
  if ((reason = agree_max(ctx, exported ? kOk : kCannotExport)) != kOk) {
    *why_not = reason_text(reason);
    return nullptr;  // the destructor frees what was made, with the neighbours
  }
  std::vector<FieldsExported> theirs(n);
  std::vector<int> their_slot_of_mine(n), slot_of_theirs(n);
  std::vector<MPI_Request> requests(4 * n);
  const MPI_Comm comm = ps->handshake_.get();
  for (std::size_t i = 0; i < n; ++i) {
    const int rank = ps->neighbours_[i].rank;
    slot_of_theirs[i] = static_cast<int>(i);  // neighbour i writes flag i here
    TESSERA_MPI_CHECK(MPI_Isend(&mine, sizeof mine, MPI_BYTE, rank, kStoresExportTag, comm, &requests[4 * i]));
    TESSERA_MPI_CHECK(MPI_Irecv(&theirs[i], sizeof(FieldsExported), MPI_BYTE, rank, kStoresExportTag, comm, &requests[4 * i + 1]));
    TESSERA_MPI_CHECK(MPI_Isend(&slot_of_theirs[i], 1, MPI_INT, rank, kStoresSlotTag, comm, &requests[4 * i + 2]));
    TESSERA_MPI_CHECK(MPI_Irecv(&their_slot_of_mine[i], 1, MPI_INT, rank, kStoresSlotTag, comm, &requests[4 * i + 3]));
  }
  TESSERA_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));

  reason = kOk;
  for (std::size_t i = 0; i < n && reason == kOk; ++i) {
    Neighbour& nb = ps->neighbours_[i];
    nb.slot = their_slot_of_mine[i];
    for (int f = 0; f < 2 && reason == kOk; ++f) {
      void* mapped = nullptr;
      if (cudaIpcOpenMemHandle(&mapped, theirs[i].field[f], cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) reason = kCannotMap;
      nb.mapped[f] = static_cast<char*>(mapped);
    }
    void* flags = nullptr;
    if (reason == kOk && cudaIpcOpenMemHandle(&flags, theirs[i].flags, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess)
      reason = kCannotMap;
    nb.mapped_flags = static_cast<std::uint64_t*>(flags);
    if (reason != kOk) (void)cudaGetLastError();  // not a sticky error: clear it for the next call
  }
  if ((reason = agree_max(ctx, reason)) != kOk) {
    *why_not = reason_text(reason);
    return nullptr;  // the destructor closes what was opened, with the neighbours
  }

  ps->others_only_ = std::none_of(theirs.begin(), theirs.end(), [&](const FieldsExported& t) {
    return std::memcmp(t.device, mine.device, sizeof mine.device) == 0;
  });

  // Each neighbour's rectangles: from this block, into its field of the same index.
  const auto bytes = static_cast<index_t>(element_bytes);
  for (std::size_t i = 0; i < n; ++i) {
    const Neighbour& nb = ps->neighbours_[i];
    const int their_row = nb.rank / layout.grid_cols, their_col = nb.rank % layout.grid_cols;
    const index_t their_row0 = layout.row_partition.offset(their_row), their_col0 = layout.col_partition.offset(their_col);
    const GlobalRectangle& g = nb.send;
    const kernels::Rectangle from{(g.row - layout.row_offset()) * layout.ld + (g.col - layout.col_offset()), layout.ld,
                                  g.rows, g.cols};
    const index_t at = (g.row - their_row0) * theirs[i].ld + (g.col - their_col0);
    for (int f = 0; f < 2; ++f)
      ps->copies_[static_cast<std::size_t>(f)].push_back(
          {from, nb.mapped[f] + static_cast<index_t>(theirs[i].origin_bytes[f]) + at * bytes, theirs[i].ld});
  }
  return ps;
}

PeerStores::~PeerStores() {
  // Nothing of this rank's GPU refers to a neighbour once it is idle (the frame's stores may run on
  // another queue than the context's); then each closes what it mapped and says so, and only after
  // every neighbour has, the flags go (the fields go with their owners, after this).
  TESSERA_CUDA_CHECK(cudaSetDevice(ctx_.queue().device));
  TESSERA_CUDA_CHECK(cudaDeviceSynchronize());
  for (Neighbour& nb : neighbours_) {
    for (char* m : nb.mapped)
      if (m) TESSERA_CUDA_CHECK(cudaIpcCloseMemHandle(m));
    if (nb.mapped_flags) TESSERA_CUDA_CHECK(cudaIpcCloseMemHandle(nb.mapped_flags));
  }
  if (!handshake_.is_null()) {
    std::vector<MPI_Request> requests(2 * neighbours_.size());
    for (std::size_t i = 0; i < neighbours_.size(); ++i) {
      TESSERA_MPI_CHECK(MPI_Isend(nullptr, 0, MPI_BYTE, neighbours_[i].rank, kStoresCloseTag, handshake_.get(), &requests[2 * i]));
      TESSERA_MPI_CHECK(MPI_Irecv(nullptr, 0, MPI_BYTE, neighbours_[i].rank, kStoresCloseTag, handshake_.get(), &requests[2 * i + 1]));
    }
    TESSERA_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  }
  if (flags_) kernels::deallocate(ctx_.queue(), flags_);
}

int PeerStores::field(const void* origin) const {
  TESSERA_ASSERT(origin == origins_[0] || origin == origins_[1], "peer stores: a field that was not mapped");
  return origin == origins_[0] ? 0 : 1;
}

void PeerStores::wait(const kernels::Queue& queue) const {
  if (frames_ == 0) return;
  // Under the watchdog, each wait gives up (naming the neighbour) once TESSERA_MPI_TIMEOUT passes or
  // the watchdog fires: a neighbour that died never sets its flag.
  const kernels::DeviceWaitLimit limit = device_wait_limit();
  for (std::size_t i = 0; i < neighbours_.size(); ++i)
    kernels::wait_flag(queue, flags_ + i, frames_ * kernels::kFrameFlagStep, limit, neighbours_[i].rank);
}

void PeerStores::signal(const kernels::Queue& queue) {
  for (const Neighbour& nb : neighbours_)
    kernels::write_flag(queue, nb.mapped_flags + nb.slot, (frames_ + 1) * kernels::kFrameFlagStep);
  ++frames_;
}

kernels::FrameFlags PeerStores::flags() const {
  TESSERA_ASSERT(neighbours_.size() <= static_cast<std::size_t>(kernels::FrameFlags::kMax),
                 "peer stores: more neighbours than a sweep's flags hold");
  kernels::FrameFlags flags;
  flags.limit = device_wait_limit();
  for (std::size_t i = 0; i < neighbours_.size(); ++i) {
    flags.wait_peer[flags.waits] = neighbours_[i].rank;
    flags.wait[flags.waits++] = flags_ + i;
    flags.set[flags.sets++] = neighbours_[i].mapped_flags + neighbours_[i].slot;
  }
  flags.wait_value = frames_ * kernels::kFrameFlagStep;
  return flags;
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
void PeerCopy::claim() {}
void PeerCopy::publish() {}
void PeerCopy::finish() {}
void PeerCopy::drained() {}

struct PeerStores::Neighbour {};

std::unique_ptr<PeerStores> PeerStores::make(const Context& ctx, const FieldLayout&, StencilForm, std::array<const void*, 2>,
                                             std::size_t, std::string* why_not) {
  *why_not = ctx.backend() != Backend::cuda ? "it needs the cuda backend" : "this build has no CUDA";
  return nullptr;
}

PeerStores::~PeerStores() = default;
int PeerStores::field(const void*) const { return 0; }
void PeerStores::wait(const kernels::Queue&) const {}
void PeerStores::signal(const kernels::Queue&) {}
kernels::FrameFlags PeerStores::flags() const { return {}; }

#endif

}  // namespace tessera::detail
