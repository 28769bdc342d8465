#include "tessera/framework/device_comm.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/fault.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "transport.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_CUDA_AWARE_SUPPORT and MPIX_Query_cuda_support
#endif

namespace tessera {

const char* to_string(DeviceCommPath path) {
  switch (path) {
    case DeviceCommPath::mpi_host: return "mpi-host";
    case DeviceCommPath::cuda_aware_mpi: return "cuda-aware-mpi";
    case DeviceCommPath::nccl: return "nccl";
    case DeviceCommPath::staged: return "staged";
  }
  return "?";
}

namespace detail {
namespace {
std::size_t g_message_limit = std::size_t(1) << 30;
}
std::size_t mpi_message_limit() { return g_message_limit; }
void set_mpi_message_limit(std::size_t bytes) {
  TESSERA_ASSERT(bytes >= 1 && bytes <= (std::size_t(1) << 30), "MPI message limit outside [1, 2^30] bytes");
  g_message_limit = bytes;
}

DeviceCommPath choose_device_comm_path(const DeviceCommFacts& facts) {
  if (facts.backend == Backend::cpu) return DeviceCommPath::mpi_host;
  const std::string wanted = facts.requested.empty() ? "auto" : std::string(facts.requested);
  if (wanted == "auto") {
    if (facts.mpi_cuda_aware) return DeviceCommPath::cuda_aware_mpi;
    if (facts.built_with_nccl && !facts.ranks_share_gpus) return DeviceCommPath::nccl;
    return DeviceCommPath::staged;
  }
  if (wanted == "staged") return DeviceCommPath::staged;
  if (wanted == "nccl") {
    if (!facts.built_with_nccl) throw UsageError("TESSERA_DEVICE_COMM=nccl, but this build of Tessera has no NCCL");
    if (facts.ranks_share_gpus)
      throw UsageError("TESSERA_DEVICE_COMM=nccl, but ranks share GPUs (more ranks than devices); NCCL needs one GPU per rank");
    return DeviceCommPath::nccl;
  }
  if (wanted == "cuda-aware-mpi") {
    if (!facts.mpi_cuda_aware) throw UsageError("TESSERA_DEVICE_COMM=cuda-aware-mpi, but this MPI is not CUDA-aware");
    return DeviceCommPath::cuda_aware_mpi;
  }
  throw UsageError("TESSERA_DEVICE_COMM='" + wanted + "': expected auto, cuda-aware-mpi, nccl or staged");
}
}  // namespace detail

namespace {

bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

// The transport of `path` over ctx; the only place that looks at the path.
const detail::Transport& transport_for(DeviceCommPath path, const Context& ctx) {
  switch (path) {
    case DeviceCommPath::mpi_host: return detail::mpi_host_transport();
    case DeviceCommPath::cuda_aware_mpi: return detail::cuda_aware_mpi_transport();
    case DeviceCommPath::staged: return detail::staged_transport();
    case DeviceCommPath::nccl:
#if TESSERA_HAVE_NCCL
      return detail::nccl_transport(ctx);
#else
      break;
#endif
  }
  (void)ctx;
  TESSERA_FATAL("DeviceComm", std::string("path not available in this build: ") + to_string(path));
}

}  // namespace

detail::DeviceCommFacts detail::device_comm_facts(const Context& ctx) {
  const char* env = ctx.backend() == Backend::cpu ? nullptr : std::getenv("TESSERA_DEVICE_COMM");
  return {.backend = ctx.backend(),
          .requested = env ? env : "",
          .mpi_cuda_aware = ctx.backend() == Backend::cuda && mpi_is_cuda_aware(),
          .built_with_nccl = built_with_nccl(),
          .ranks_share_gpus = ctx.ranks_share_gpus()};
}

DeviceCommPath detail::agree_device_comm_path(const Context& ctx, const DeviceCommFacts& facts) {
  DeviceCommPath path = DeviceCommPath::mpi_host;
  std::string error;
  try {
    path = choose_device_comm_path(facts);
  } catch (const UsageError& e) {
    error = e.what();
  }
  // The lowest rank without a path (size where none), and the smallest and largest path chosen.
  const int size = ctx.size();
  int agreed[3] = {error.empty() ? size : ctx.rank(), error.empty() ? static_cast<int>(path) : size,
                   error.empty() ? -static_cast<int>(path) : 0};
  TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, agreed, 3, MPI_INT, MPI_MIN, ctx.comm().get()));
  if (agreed[0] < size) {
    char text[512] = {};
    if (ctx.rank() == agreed[0]) std::snprintf(text, sizeof text, "%s", error.c_str());
    TESSERA_MPI_CHECK(MPI_Bcast(text, sizeof text, MPI_CHAR, agreed[0], ctx.comm().get()));
    throw UsageError(text);
  }
  if (agreed[1] != -agreed[2])
    throw UsageError(std::string("TESSERA_DEVICE_COMM: the ranks would take different paths (") +
                     to_string(static_cast<DeviceCommPath>(agreed[1])) + " and " +
                     to_string(static_cast<DeviceCommPath>(-agreed[2])) + "); set it alike on every rank");
  return path;
}

DeviceCommPath device_comm_path(const Context& ctx) { return detail::choose_device_comm_path(detail::device_comm_facts(ctx)); }

DeviceComm::DeviceComm(const Context& ctx) : ctx_(ctx) {
  TESSERA_ASSERT(!ctx_.is_null(), "DeviceComm on a null context");
  path_ = device_comm_path(ctx_);
  transport_ = &transport_for(path_, ctx_);
}

DeviceComm::Request::~Request() {
  if (finish_) wait();
}

void DeviceComm::Request::wait() {
  if (!finish_) return;
  auto finish = std::move(finish_);
  finish_ = nullptr;
  finish();
}

DeviceComm::Request DeviceComm::ibcast(void* data, std::size_t bytes, int root) const {
  TESSERA_COLLECTIVE(Collective::bcast, bytes);
  Request request;
  if (bytes == 0 || ctx_.size() == 1) return request;
  request.finish_ = transport_->ibcast(ctx_, data, bytes, root);
  return request;
}

void DeviceComm::allreduce_builtin(void* data, index_t count, ElementKind kind, std::size_t bytes, ReduceOp op) const {
  TESSERA_COLLECTIVE(Collective::allreduce, static_cast<double>(count) * static_cast<double>(bytes));
  if (count <= 0 || ctx_.size() == 1) return;
  transport_->allreduce(ctx_, data, count, detail::SumType{kind, bytes, op});
}

void DeviceComm::allreduce_folded(void* data, index_t count, std::size_t element_bytes, const FoldPieces& fold) const {
  TESSERA_COLLECTIVE(Collective::allreduce, static_cast<double>(count) * static_cast<double>(element_bytes));
  if (count <= 0 || ctx_.size() == 1) return;
  const int ranks = ctx_.size(), me = ctx_.rank();
  const Partition shares = Partition::block(count, ranks);
  const index_t share = shares.local_size(me);
  const kernels::Queue& queue = ctx_.queue();
  // kernels::allocate, not the stream-ordered pool: CUDA-aware MPI receives into it.
  void* pieces = kernels::allocate(queue, static_cast<std::size_t>(share) * static_cast<std::size_t>(ranks) * element_bytes);
  auto* bytes = static_cast<char*>(data);
  auto at = [&](index_t element) { return bytes + static_cast<std::size_t>(element) * element_bytes; };
  auto run = [&](const std::vector<Message>& sends, const std::vector<Message>& recvs) {
    Request request;
    request.finish_ = transport_->ineighbor_exchange(ctx_, sends, recvs, nullptr);
    request.wait();
  };
  try {
    // Reduce-scatter: each rank's share of my elements goes to it; the ranks' pieces of my share
    // come here, one after another in rank order, and are folded in that order.
    std::vector<Message> sends, recvs;
    for (int p = 0; p < ranks; ++p) {
      const std::size_t piece = static_cast<std::size_t>(shares.local_size(p)) * element_bytes;
      if (piece) sends.push_back({p, at(shares.offset(p)), piece});
      if (share)
        recvs.push_back({p, static_cast<char*>(pieces) + static_cast<std::size_t>(p) * static_cast<std::size_t>(share) * element_bytes,
                         static_cast<std::size_t>(share) * element_bytes});
    }
    run(sends, recvs);
    if (share) fold(pieces, ranks, share, at(shares.offset(me)));
    // All-gather: my folded share to every other rank, theirs into place.
    sends.clear();
    recvs.clear();
    for (int p = 0; p < ranks; ++p) {
      if (p == me) continue;
      if (share) sends.push_back({p, at(shares.offset(me)), static_cast<std::size_t>(share) * element_bytes});
      const std::size_t theirs = static_cast<std::size_t>(shares.local_size(p)) * element_bytes;
      if (theirs) recvs.push_back({p, at(shares.offset(p)), theirs});
    }
    run(sends, recvs);
  } catch (...) {
    kernels::deallocate(queue, pieces);
    throw;
  }
  kernels::deallocate(queue, pieces);
}

template <class T>
void DeviceComm::reduce_scatter_sum(const T* send, T* recv, const std::vector<index_t>& recv_counts) const {
  const auto ranks = static_cast<std::size_t>(ctx_.size());
  TESSERA_ASSERT(recv_counts.size() == ranks, "reduce_scatter_sum: one count per rank expected");
  index_t total = 0;
  for (index_t c : recv_counts) {
    TESSERA_ASSERT(c >= 0, "reduce_scatter_sum: negative count");
    total += c;
  }
  TESSERA_COLLECTIVE(Collective::reduce_scatter, static_cast<double>(total) * sizeof(T));
  if (total == 0) return;
  if (ranks == 1) {
    if (send != recv) kernels::copy_within(ctx_.queue(), recv, send, static_cast<std::size_t>(total) * sizeof(T));
    return;
  }
  transport_->reduce_scatter_sum(ctx_, send, recv, recv_counts, detail::SumType::of<T>());
}

void DeviceComm::alltoallv(const void* send, const std::vector<std::size_t>& send_bytes,
                           const std::vector<std::size_t>& send_offsets, void* recv,
                           const std::vector<std::size_t>& recv_bytes,
                           const std::vector<std::size_t>& recv_offsets) const {
  double sent = 0;
  for (std::size_t b : send_bytes) sent += static_cast<double>(b);
  TESSERA_COLLECTIVE(Collective::alltoallv, sent);
  const auto ranks = static_cast<std::size_t>(ctx_.size());
  TESSERA_ASSERT(send_bytes.size() == ranks && send_offsets.size() == ranks && recv_bytes.size() == ranks &&
                     recv_offsets.size() == ranks,
                 "alltoallv: one count and one offset per rank expected");
  transport_->alltoallv(ctx_, send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets);
}

void DeviceComm::check_peers(const std::vector<Message>& sends, const std::vector<Message>& recvs,
                             const char* operation) const {
  for (const std::vector<Message>* list : {&sends, &recvs})
    for (const Message& m : *list)
      TESSERA_ASSERT(m.peer >= 0 && m.peer < ctx_.size(), std::string(operation) + ": no such rank");
}

void DeviceComm::alltoallv(const std::vector<Message>& sends, const std::vector<Message>& recvs) const {
  double sent = 0;
  for (const Message& m : sends) sent += static_cast<double>(m.bytes);
  TESSERA_COLLECTIVE(Collective::alltoallv, sent);
  check_peers(sends, recvs, "alltoallv");
  if (sends.empty() && recvs.empty()) return;
  Request request;
  request.finish_ = transport_->ineighbor_exchange(ctx_, sends, recvs, nullptr);
  request.wait();
}

bool DeviceComm::prefers_aligned_messages() const { return transport_->prefers_aligned_messages(); }

DeviceComm::Request DeviceComm::start_exchange(Collective kind, double counted_bytes, const std::vector<Message>& sends,
                                               const std::vector<Message>& recvs) const {
  TESSERA_COLLECTIVE(kind, counted_bytes);
  check_peers(sends, recvs, "exchange");
  Request request;
  if (sends.empty() && recvs.empty()) return request;
  request.finish_ = transport_->ineighbor_exchange(ctx_, sends, recvs, nullptr);
  return request;
}

DeviceComm::Request DeviceComm::ineighbor_exchange(const std::vector<Message>& sends, const std::vector<Message>& recvs,
                                                   const Staging* staging) const {
  const int me = ctx_.rank();
  check_peers(sends, recvs, "neighbour exchange");
  double sent = 0;
  for (const Message& m : sends)
    if (m.peer != me) sent += static_cast<double>(m.bytes);
  TESSERA_COLLECTIVE(Collective::neighbor_exchange, sent);
  Request request;
  if (sends.empty() && recvs.empty()) return request;
  request.finish_ = transport_->ineighbor_exchange(ctx_, sends, recvs, staging);
  return request;
}


template void DeviceComm::reduce_scatter_sum<std::int32_t>(const std::int32_t*, std::int32_t*, const std::vector<index_t>&) const;
template void DeviceComm::reduce_scatter_sum<std::int64_t>(const std::int64_t*, std::int64_t*, const std::vector<index_t>&) const;
template void DeviceComm::reduce_scatter_sum<float>(const float*, float*, const std::vector<index_t>&) const;
template void DeviceComm::reduce_scatter_sum<double>(const double*, double*, const std::vector<index_t>&) const;

}  // namespace tessera
