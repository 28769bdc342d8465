#include "tessera/framework/device_comm.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/fault.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/element_traits.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_CUDA_AWARE_SUPPORT and MPIX_Query_cuda_support
#endif

#if TESSERA_HAVE_CUDA
#include <cuda_runtime.h>

#include "tessera/kernels/cuda_check.hpp"
#endif
#if TESSERA_HAVE_NCCL
#include <nccl.h>

#define TESSERA_NCCL_CHECK(call)                                                                    \
  do {                                                                                              \
    const ncclResult_t tessera_nccl_status_ = (call);                                               \
    if (tessera_nccl_status_ != ncclSuccess)                                                        \
      ::tessera::fatal(__FILE__, __LINE__, #call, std::string("NCCL: ") + ncclGetErrorString(tessera_nccl_status_)); \
  } while (0)
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

namespace {

// Pinned host memory for the staged path, kept between calls: cudaMallocHost locks its pages one
// by one, which every staged exchange, broadcast and allreduce paid before (three ranks sharing an
// H100, the 8192^2 float transpose's exchange: 114 ms with a fresh buffer per call, 24-27 ms from
// the pool). Buffers go back to the pool when their last user lets go, and the next request that
// fits takes the smallest of them. The pool keeps at most kPooledBytes in all (the smallest buffers
// leave first); a request larger than that is allocated and freed per call. It lives until the
// process ends (never destroyed: the CUDA runtime may be gone by then).
class PinnedPool {
 public:
  static constexpr std::size_t kPooledBytes = std::size_t(2) << 30;

  static PinnedPool& instance() {
    static PinnedPool* pool = new PinnedPool;
    return *pool;
  }

  std::shared_ptr<char> take(std::size_t bytes) {
    if (bytes == 0) return {};
    // Rounded up to a power of two (at least 64 KiB), so that sizes that vary a little reuse a buffer.
    std::size_t rounded = std::size_t(1) << 16;
    while (rounded < bytes && rounded <= kPooledBytes) rounded <<= 1;
    if (rounded > kPooledBytes)
      return std::shared_ptr<char>(static_cast<char*>(kernels::allocate_pinned_host(bytes)), kernels::deallocate_pinned_host);
    Buffer buffer{};
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      auto best = free_.end();
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
      if (best != free_.end()) {
        buffer = *best;
        pooled_ -= best->bytes;
        free_.erase(best);
      }
    }
    if (!buffer.data) buffer = {static_cast<char*>(kernels::allocate_pinned_host(rounded)), rounded};
    return std::shared_ptr<char>(buffer.data, [this, buffer](char*) { give_back(buffer); });
  }

 private:
  struct Buffer {
    char* data = nullptr;
    std::size_t bytes = 0;
  };

  void give_back(Buffer buffer) {
    std::vector<Buffer> evicted;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(buffer);
      pooled_ += buffer.bytes;
      while (pooled_ > kPooledBytes) {
        auto smallest = std::min_element(free_.begin(), free_.end(),
                                         [](const Buffer& a, const Buffer& b) { return a.bytes < b.bytes; });
        pooled_ -= smallest->bytes;
        evicted.push_back(*smallest);
        free_.erase(smallest);
      }
    }
    for (const Buffer& b : evicted) kernels::deallocate_pinned_host(b.data);
  }

  std::mutex mutex_;
  std::vector<Buffer> free_;
  std::size_t pooled_ = 0;  // bytes of the buffers in free_
};

std::shared_ptr<char> pinned_buffer(std::size_t bytes) { return PinnedPool::instance().take(bytes); }

}  // namespace

namespace detail {
namespace {
std::size_t g_message_limit = std::size_t(1) << 30;
}
std::size_t mpi_message_limit() { return g_message_limit; }
void set_mpi_message_limit(std::size_t bytes) {
  TESSERA_ASSERT(bytes >= 1 && bytes <= (std::size_t(1) << 30), "MPI message limit outside [1, 2^30] bytes");
  g_message_limit = bytes;
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

bool g_ranks_share_gpus = false;

DeviceCommPath decide_cuda_path() {
  const char* env = std::getenv("TESSERA_DEVICE_COMM");
  const std::string wanted = env && *env ? env : "auto";
  const bool aware = mpi_is_cuda_aware();
  const bool nccl = TESSERA_HAVE_NCCL != 0;
  if (wanted == "auto") {
    if (aware) return DeviceCommPath::cuda_aware_mpi;
    if (nccl && !g_ranks_share_gpus) return DeviceCommPath::nccl;
    return DeviceCommPath::staged;
  }
  if (wanted == "staged") return DeviceCommPath::staged;
  if (wanted == "nccl") {
    if (!nccl) throw UsageError("TESSERA_DEVICE_COMM=nccl, but this build of Tessera has no NCCL");
    if (g_ranks_share_gpus)
      throw UsageError("TESSERA_DEVICE_COMM=nccl, but ranks share GPUs (more ranks than devices); NCCL needs one GPU per rank");
    return DeviceCommPath::nccl;
  }
  if (wanted == "cuda-aware-mpi") {
    if (!aware) throw UsageError("TESSERA_DEVICE_COMM=cuda-aware-mpi, but this MPI is not CUDA-aware");
    return DeviceCommPath::cuda_aware_mpi;
  }
  throw UsageError("TESSERA_DEVICE_COMM='" + wanted + "': expected auto, cuda-aware-mpi, nccl or staged");
}

// Chunked host-side MPI on bytes: every piece stays below the int count limit.
template <class Post>
void for_each_chunk(std::size_t bytes, Post&& post) {
  const std::size_t limit = detail::mpi_message_limit();
  for (std::size_t done = 0; done < bytes; done += limit) post(done, static_cast<int>(std::min(limit, bytes - done)));
}

std::vector<MPI_Request> post_ibcast(void* data, std::size_t bytes, int root, MPI_Comm comm) {
  std::vector<MPI_Request> requests;
  for_each_chunk(bytes, [&](std::size_t offset, int chunk) {
    MPI_Request r;
    TESSERA_MPI_CHECK(MPI_Ibcast(static_cast<char*>(data) + offset, chunk, MPI_BYTE, root, comm, &r));
    requests.push_back(r);
  });
  return requests;
}

void wait_all(std::vector<MPI_Request>& requests) {
  if (requests.empty()) return;
  TESSERA_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  requests.clear();
}

// Point-to-point exchange of host-addressable memory (host, or device under CUDA-aware MPI), all
// receives posted before the sends; messages between one pair keep their order (MPI's
// non-overtaking rule), so every chunk carries the same tag. The copy to self goes through `self`.
template <class SelfCopy>
void exchange_mpi(const void* send, const std::vector<std::size_t>& send_bytes, const std::vector<std::size_t>& send_offsets,
                  void* recv, const std::vector<std::size_t>& recv_bytes, const std::vector<std::size_t>& recv_offsets,
                  const Communicator& comm, SelfCopy&& self) {
  constexpr int kTag = 7201;
  const int me = comm.rank();
  std::vector<MPI_Request> requests;
  for (int p = 0; p < comm.size(); ++p) {
    if (p == me) continue;
    char* base = static_cast<char*>(recv) + recv_offsets[static_cast<std::size_t>(p)];
    for_each_chunk(recv_bytes[static_cast<std::size_t>(p)], [&](std::size_t offset, int chunk) {
      MPI_Request r;
      TESSERA_MPI_CHECK(MPI_Irecv(base + offset, chunk, MPI_BYTE, p, kTag, comm.get(), &r));
      requests.push_back(r);
    });
  }
  for (int p = 0; p < comm.size(); ++p) {
    if (p == me) continue;
    const char* base = static_cast<const char*>(send) + send_offsets[static_cast<std::size_t>(p)];
    for_each_chunk(send_bytes[static_cast<std::size_t>(p)], [&](std::size_t offset, int chunk) {
      MPI_Request r;
      TESSERA_MPI_CHECK(MPI_Isend(base + offset, chunk, MPI_BYTE, p, kTag, comm.get(), &r));
      requests.push_back(r);
    });
  }
  const auto m = static_cast<std::size_t>(me);
  TESSERA_ASSERT(send_bytes[m] == recv_bytes[m], "alltoallv: a rank sends itself a different size than it receives");
  if (send_bytes[m])
    self(static_cast<char*>(recv) + recv_offsets[m], static_cast<const char*>(send) + send_offsets[m], send_bytes[m]);
  wait_all(requests);
}

template <class T>
MPI_Datatype sum_type() {
  // Integer sums travel as unsigned, so that MPI's addition wraps like reduce_combine's.
  if constexpr (ElementTraits<T>::kind == ElementKind::signed_integer)
    return detail::predefined_mpi_type(ElementKind::unsigned_integer, ElementTraits<T>::bytes);
  else return mpi_type<T>();
}

template <class T>
void allreduce_host(T* data, index_t count, MPI_Comm comm) {
  for (index_t done = 0; done < count; done += kMpiChunkElements) {
    const int chunk = static_cast<int>(std::min(kMpiChunkElements, count - done));
    TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, chunk, sum_type<T>(), MPI_SUM, comm));
  }
}

}  // namespace

void detail::set_ranks_share_gpus(bool shared) { g_ranks_share_gpus = shared; }

DeviceCommPath device_comm_path(Backend backend) {
  if (backend == Backend::cpu) return DeviceCommPath::mpi_host;
  static std::once_flag once;
  static DeviceCommPath decided = DeviceCommPath::staged;
  std::call_once(once, [] { decided = decide_cuda_path(); });
  return decided;
}

// ---------------------------------------------------------------------------------------------
// NCCL: one communicator per MPI communicator, made on first use and kept as an attribute of the
// MPI communicator, so that it lives exactly as long as that communicator (the attribute's delete
// callback destroys it when MPI_Comm_free or MPI_Finalize drops the MPI communicator).
struct DeviceComm::NcclState {
#if TESSERA_HAVE_NCCL
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // NCCL work runs here, beside the compute stream: overlap
#endif
};

#if TESSERA_HAVE_NCCL
namespace {

int nccl_delete_attribute(MPI_Comm, int, void* value, void*) {
  auto* state = static_cast<DeviceComm::NcclState*>(value);
  // Errors here cannot be reported usefully (MPI may be finalizing); the process is ending.
  if (state->comm) (void)ncclCommDestroy(state->comm);
  if (state->stream) (void)cudaStreamDestroy(state->stream);
  delete state;
  return MPI_SUCCESS;
}

int nccl_keyval() {
  static int keyval = MPI_KEYVAL_INVALID;
  if (keyval == MPI_KEYVAL_INVALID)
    TESSERA_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, nccl_delete_attribute, &keyval, nullptr));
  return keyval;
}

DeviceComm::NcclState* nccl_state_for(const Context& ctx) {
  MPI_Comm comm = ctx.comm().get();
  void* value = nullptr;
  int found = 0;
  TESSERA_MPI_CHECK(MPI_Comm_get_attr(comm, nccl_keyval(), &value, &found));
  if (found) return static_cast<DeviceComm::NcclState*>(value);
  ncclUniqueId id;
  if (ctx.rank() == 0) TESSERA_NCCL_CHECK(ncclGetUniqueId(&id));
  TESSERA_MPI_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm));
  auto* state = new DeviceComm::NcclState;
  TESSERA_CUDA_CHECK(cudaSetDevice(ctx.queue().device));
  TESSERA_CUDA_CHECK(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking));
  TESSERA_NCCL_CHECK(ncclCommInitRank(&state->comm, ctx.size(), id, ctx.rank()));
  TESSERA_MPI_CHECK(MPI_Comm_set_attr(comm, nccl_keyval(), state));
  return state;
}

cudaStream_t compute_stream(const Context& ctx) { return reinterpret_cast<cudaStream_t>(ctx.queue().stream); }

// `to` waits for everything queued on `from` so far.
void stream_wait(cudaStream_t to, cudaStream_t from) {
  cudaEvent_t event;
  TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  TESSERA_CUDA_CHECK(cudaEventRecord(event, from));
  TESSERA_CUDA_CHECK(cudaStreamWaitEvent(to, event, 0));
  TESSERA_CUDA_CHECK(cudaEventDestroy(event));  // released once the wait has consumed it
}

// The NCCL type a sum of T runs in: an integer as the unsigned type of its size (the same bits as a
// wrapping signed sum), a floating-point type as itself.
template <class T>
ncclDataType_t nccl_sum_type() {
  using Traits = ElementTraits<T>;
  static_assert(Traits::bytes == 4 || Traits::bytes == 8, "nccl_sum_type: 4- and 8-byte elements only");
  if constexpr (Traits::kind == ElementKind::floating_point) return Traits::bytes == 4 ? ncclFloat32 : ncclFloat64;
  else return Traits::bytes == 4 ? ncclUint32 : ncclUint64;
}

}  // namespace
#endif

DeviceComm::DeviceComm(const Context& ctx) : ctx_(ctx), path_(device_comm_path(ctx.backend())) {
  TESSERA_ASSERT(!ctx_.is_null(), "DeviceComm on a null context");
#if TESSERA_HAVE_NCCL
  if (path_ == DeviceCommPath::nccl) nccl_ = nccl_state_for(ctx_);
#endif
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
  const MPI_Comm comm = ctx_.comm().get();
  switch (path_) {
    case DeviceCommPath::cuda_aware_mpi:
      ctx_.queue().synchronize();  // MPI reads device memory outside stream order
      [[fallthrough]];
    case DeviceCommPath::mpi_host: {
      auto requests = std::make_shared<std::vector<MPI_Request>>(post_ibcast(data, bytes, root, comm));
      request.finish_ = [requests] { wait_all(*requests); };
      return request;
    }
    case DeviceCommPath::staged: {
      const kernels::Queue queue = ctx_.queue();
      std::shared_ptr<char> host = pinned_buffer(bytes);
      if (ctx_.rank() == root) kernels::copy_to_host(queue, host.get(), data, bytes);
      auto requests = std::make_shared<std::vector<MPI_Request>>(post_ibcast(host.get(), bytes, root, comm));
      const bool receiver = ctx_.rank() != root;
      request.finish_ = [requests, host, queue, data, bytes, receiver] {
        wait_all(*requests);
        if (receiver) kernels::copy_from_host(queue, data, host.get(), bytes);
      };
      return request;
    }
    case DeviceCommPath::nccl: {
#if TESSERA_HAVE_NCCL
      const cudaStream_t compute = compute_stream(ctx_);
      const cudaStream_t comm_stream = nccl_->stream;
      stream_wait(comm_stream, compute);  // the root's data, and the receivers' buffer free to reuse
      TESSERA_NCCL_CHECK(ncclBroadcast(data, data, bytes, ncclChar, root, nccl_->comm, comm_stream));
      cudaEvent_t done;
      TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      TESSERA_CUDA_CHECK(cudaEventRecord(done, comm_stream));
      request.finish_ = [compute, done] {
        TESSERA_CUDA_CHECK(cudaStreamWaitEvent(compute, done, 0));
        TESSERA_CUDA_CHECK(cudaEventDestroy(done));
      };
      return request;
#else
      break;
#endif
    }
  }
  TESSERA_FATAL("DeviceComm::ibcast", std::string("path not available in this build: ") + to_string(path_));
}

template <class T>
void DeviceComm::allreduce_sum(T* data, index_t count) const {
  TESSERA_COLLECTIVE(Collective::allreduce, static_cast<double>(count) * sizeof(T));
  if (count == 0 || ctx_.size() == 1) return;
  const MPI_Comm comm = ctx_.comm().get();
  switch (path_) {
    case DeviceCommPath::cuda_aware_mpi:
      ctx_.queue().synchronize();
      [[fallthrough]];
    case DeviceCommPath::mpi_host: allreduce_host(data, count, comm); return;
    case DeviceCommPath::staged: {
      const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
      std::shared_ptr<char> host = pinned_buffer(bytes);
      kernels::copy_to_host(ctx_.queue(), host.get(), data, bytes);
      allreduce_host(reinterpret_cast<T*>(host.get()), count, comm);
      kernels::copy_from_host(ctx_.queue(), data, host.get(), bytes);
      return;
    }
    case DeviceCommPath::nccl: {
#if TESSERA_HAVE_NCCL
      const cudaStream_t compute = compute_stream(ctx_);
      stream_wait(nccl_->stream, compute);
      TESSERA_NCCL_CHECK(ncclAllReduce(data, data, static_cast<std::size_t>(count), nccl_sum_type<T>(), ncclSum,
                                       nccl_->comm, nccl_->stream));
      stream_wait(compute, nccl_->stream);
      return;
#else
      break;
#endif
    }
  }
  TESSERA_FATAL("DeviceComm::allreduce_sum", std::string("path not available in this build: ") + to_string(path_));
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
  const kernels::Queue queue = ctx_.queue();
  auto copy_backend = [&](void* dst, const void* src, std::size_t bytes) { kernels::copy_within(queue, dst, src, bytes); };
  switch (path_) {
    case DeviceCommPath::cuda_aware_mpi:
      queue.synchronize();
      [[fallthrough]];
    case DeviceCommPath::mpi_host:
      exchange_mpi(send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets, ctx_.comm(), copy_backend);
      return;
    case DeviceCommPath::staged: {
      // One pinned buffer for what leaves and one for what arrives; then the usual host exchange.
      std::size_t send_total = 0, recv_total = 0;
      for (std::size_t p = 0; p < ranks; ++p) {
        send_total = std::max(send_total, send_offsets[p] + send_bytes[p]);
        recv_total = std::max(recv_total, recv_offsets[p] + recv_bytes[p]);
      }
      std::shared_ptr<char> host_send = pinned_buffer(send_total);
      std::shared_ptr<char> host_recv = pinned_buffer(recv_total);
      if (send_total) kernels::copy_to_host(queue, host_send.get(), send, send_total);
      exchange_mpi(host_send.get(), send_bytes, send_offsets, host_recv.get(), recv_bytes, recv_offsets, ctx_.comm(),
                   [](void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); });
      // Only the received ranges are written back: the rest of `recv` keeps its contents.
      for (std::size_t p = 0; p < ranks; ++p)
        if (recv_bytes[p])
          kernels::copy_from_host(queue, static_cast<char*>(recv) + recv_offsets[p],
                                  static_cast<const char*>(host_recv.get()) + recv_offsets[p], recv_bytes[p]);
      return;
    }
    case DeviceCommPath::nccl: {
#if TESSERA_HAVE_NCCL
      const cudaStream_t compute = compute_stream(ctx_);
      const cudaStream_t comm_stream = nccl_->stream;
      stream_wait(comm_stream, compute);
      const std::size_t me = static_cast<std::size_t>(ctx_.rank());
      TESSERA_NCCL_CHECK(ncclGroupStart());
      for (std::size_t p = 0; p < ranks; ++p) {
        if (p == me) continue;
        if (send_bytes[p])
          TESSERA_NCCL_CHECK(ncclSend(static_cast<const char*>(send) + send_offsets[p], send_bytes[p], ncclChar,
                                      static_cast<int>(p), nccl_->comm, comm_stream));
        if (recv_bytes[p])
          TESSERA_NCCL_CHECK(ncclRecv(static_cast<char*>(recv) + recv_offsets[p], recv_bytes[p], ncclChar,
                                      static_cast<int>(p), nccl_->comm, comm_stream));
      }
      TESSERA_NCCL_CHECK(ncclGroupEnd());
      if (send_bytes[me])
        TESSERA_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(recv) + recv_offsets[me],
                                           static_cast<const char*>(send) + send_offsets[me], send_bytes[me],
                                           cudaMemcpyDeviceToDevice, comm_stream));
      stream_wait(compute, comm_stream);
      return;
#else
      break;
#endif
    }
  }
  TESSERA_FATAL("DeviceComm::alltoallv", std::string("path not available in this build: ") + to_string(path_));
}

namespace {

// The messages a rank sends itself pair with the ones it receives from itself, in order: each is a
// copy within backend memory, queued on `stream_queue`.
void copy_to_self(const std::vector<DeviceComm::Message>& sends, const std::vector<DeviceComm::Message>& recvs, int me,
                  const kernels::Queue& stream_queue) {
  std::size_t next = 0;
  for (const DeviceComm::Message& r : recvs) {
    if (r.peer != me) continue;
    while (next < sends.size() && sends[next].peer != me) ++next;
    TESSERA_ASSERT(next < sends.size() && sends[next].bytes == r.bytes,
                   "neighbour exchange: the messages a rank sends itself do not match the ones it receives");
    if (r.bytes) kernels::copy_within_async(stream_queue, r.data, sends[next].data, r.bytes);
    ++next;
  }
  while (next < sends.size() && sends[next].peer != me) ++next;
  TESSERA_ASSERT(next == sends.size(), "neighbour exchange: a message to this rank itself is never received");
}

// Posts the receives, then the sends, of every message to another rank, in chunks below the MPI
// count limit (one tag: MPI keeps the order of messages between a pair). address(i, message) gives
// the memory MPI moves for the i-th message of its list.
template <class SendAddress, class RecvAddress>
std::vector<MPI_Request> post_neighbor_mpi(const std::vector<DeviceComm::Message>& sends,
                                           const std::vector<DeviceComm::Message>& recvs, int me, MPI_Comm comm,
                                           SendAddress&& send_address, RecvAddress&& recv_address) {
  constexpr int kTag = 7401;
  std::vector<MPI_Request> requests;
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    if (recvs[i].peer == me) continue;
    char* base = static_cast<char*>(recv_address(i));
    for_each_chunk(recvs[i].bytes, [&](std::size_t offset, int chunk) {
      MPI_Request r;
      TESSERA_MPI_CHECK(MPI_Irecv(base + offset, chunk, MPI_BYTE, recvs[i].peer, kTag, comm, &r));
      requests.push_back(r);
    });
  }
  for (std::size_t i = 0; i < sends.size(); ++i) {
    if (sends[i].peer == me) continue;
    const char* base = static_cast<const char*>(send_address(i));
    for_each_chunk(sends[i].bytes, [&](std::size_t offset, int chunk) {
      MPI_Request r;
      TESSERA_MPI_CHECK(MPI_Isend(base + offset, chunk, MPI_BYTE, sends[i].peer, kTag, comm, &r));
      requests.push_back(r);
    });
  }
  return requests;
}

}  // namespace

DeviceComm::Request DeviceComm::ineighbor_exchange(const std::vector<Message>& sends, const std::vector<Message>& recvs,
                                                   const Staging* staging) const {
  const int me = ctx_.rank();
  for (const Message& m : sends) TESSERA_ASSERT(m.peer >= 0 && m.peer < ctx_.size(), "neighbour exchange: no such rank");
  for (const Message& m : recvs) TESSERA_ASSERT(m.peer >= 0 && m.peer < ctx_.size(), "neighbour exchange: no such rank");
  double sent = 0;
  for (const Message& m : sends)
    if (m.peer != me) sent += static_cast<double>(m.bytes);
  TESSERA_COLLECTIVE(Collective::neighbor_exchange, sent);
  const kernels::Queue queue = ctx_.queue();
  const MPI_Comm comm = ctx_.comm().get();
  Request request;
  if (sends.empty() && recvs.empty()) return request;
  switch (path_) {
    case DeviceCommPath::mpi_host:
    case DeviceCommPath::cuda_aware_mpi: {
      copy_to_self(sends, recvs, me, queue);
      if (path_ == DeviceCommPath::cuda_aware_mpi) queue.synchronize();  // MPI reads device memory outside stream order
      auto requests = std::make_shared<std::vector<MPI_Request>>(post_neighbor_mpi(
          sends, recvs, me, comm, [&](std::size_t i) { return sends[i].data; }, [&](std::size_t i) { return recvs[i].data; }));
      request.finish_ = [requests] { wait_all(*requests); };
      return request;
    }
    case DeviceCommPath::staged: {
      // One pinned buffer for what leaves and one for what arrives, each message at its offset.
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
          sends, recvs, me, comm, [&](std::size_t i) { return host_send.get() + send_at[i]; },
          [&](std::size_t i) { return host_recv.get() + recv_at[i]; }));
      request.finish_ = [requests, host_send, host_recv, recvs, recv_at, queue, me] {
        wait_all(*requests);
        for (std::size_t i = 0; i < recvs.size(); ++i)
          if (recvs[i].peer != me && recvs[i].bytes)
            kernels::copy_from_host_async(queue, recvs[i].data, host_recv.get() + recv_at[i], recvs[i].bytes);
        queue.synchronize();  // the pinned buffers go with this closure
      };
      return request;
    }
    case DeviceCommPath::nccl: {
#if TESSERA_HAVE_NCCL
      const cudaStream_t compute = compute_stream(ctx_);
      const cudaStream_t comm_stream = nccl_->stream;
      stream_wait(comm_stream, compute);
      kernels::Queue on_comm_stream = queue;
      on_comm_stream.stream = reinterpret_cast<kernels::StreamHandle>(comm_stream);
      copy_to_self(sends, recvs, me, on_comm_stream);
      TESSERA_NCCL_CHECK(ncclGroupStart());
      for (const Message& m : sends)
        if (m.peer != me && m.bytes) TESSERA_NCCL_CHECK(ncclSend(m.data, m.bytes, ncclChar, m.peer, nccl_->comm, comm_stream));
      for (const Message& m : recvs)
        if (m.peer != me && m.bytes) TESSERA_NCCL_CHECK(ncclRecv(m.data, m.bytes, ncclChar, m.peer, nccl_->comm, comm_stream));
      TESSERA_NCCL_CHECK(ncclGroupEnd());
      cudaEvent_t done;
      TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      TESSERA_CUDA_CHECK(cudaEventRecord(done, comm_stream));
      request.finish_ = [compute, done] {
        TESSERA_CUDA_CHECK(cudaStreamWaitEvent(compute, done, 0));
        TESSERA_CUDA_CHECK(cudaEventDestroy(done));
      };
      return request;
#else
      break;
#endif
    }
  }
  TESSERA_FATAL("DeviceComm::ineighbor_exchange", std::string("path not available in this build: ") + to_string(path_));
}

template void DeviceComm::allreduce_sum<std::int32_t>(std::int32_t*, index_t) const;
template void DeviceComm::allreduce_sum<std::int64_t>(std::int64_t*, index_t) const;
template void DeviceComm::allreduce_sum<float>(float*, index_t) const;
template void DeviceComm::allreduce_sum<double>(double*, index_t) const;

}  // namespace tessera

// ---------------------------------------------------------------------------------------------
// reduce_scatter_sum

namespace tessera {
namespace {

// Host-addressable memory (host, or device under CUDA-aware MPI): one MPI_Reduce_scatter where every
// piece is within the message limit, else each rank's piece reduced to it in chunks.
template <class T>
void reduce_scatter_host(const T* send, T* recv, const std::vector<index_t>& counts, const Communicator& comm) {
  const auto limit = static_cast<index_t>(detail::mpi_message_limit() / sizeof(T));
  const bool one_call = std::all_of(counts.begin(), counts.end(), [&](index_t c) { return c <= limit; });
  if (one_call) {
    std::vector<int> recv_counts(counts.begin(), counts.end());
    TESSERA_MPI_CHECK(MPI_Reduce_scatter(send, recv, recv_counts.data(), sum_type<T>(), MPI_SUM, comm.get()));
    return;
  }
  index_t offset = 0;
  for (int r = 0; r < comm.size(); ++r) {
    const index_t count = counts[static_cast<std::size_t>(r)];
    for (index_t done = 0; done < count; done += limit) {
      const int chunk = static_cast<int>(std::min(limit, count - done));
      TESSERA_MPI_CHECK(MPI_Reduce(send + offset + done, r == comm.rank() ? recv + done : nullptr, chunk, sum_type<T>(),
                                   MPI_SUM, r, comm.get()));
    }
    offset += count;
  }
}

}  // namespace

template <class T>
void DeviceComm::reduce_scatter_sum(const T* send, T* recv, const std::vector<index_t>& recv_counts) const {
  const auto ranks = static_cast<std::size_t>(ctx_.size());
  TESSERA_ASSERT(recv_counts.size() == ranks, "reduce_scatter_sum: one count per rank expected");
  const auto me = static_cast<std::size_t>(ctx_.rank());
  index_t total = 0;
  index_t largest = 0;
  for (index_t c : recv_counts) {
    TESSERA_ASSERT(c >= 0, "reduce_scatter_sum: negative count");
    total += c;
    largest = std::max(largest, c);
  }
  TESSERA_COLLECTIVE(Collective::reduce_scatter, static_cast<double>(total) * sizeof(T));
  const kernels::Queue queue = ctx_.queue();
  if (total == 0) return;
  if (ranks == 1) {
    if (send != recv) kernels::copy_within(queue, recv, send, static_cast<std::size_t>(total) * sizeof(T));
    return;
  }
  switch (path_) {
    case DeviceCommPath::cuda_aware_mpi:
      queue.synchronize();
      [[fallthrough]];
    case DeviceCommPath::mpi_host: reduce_scatter_host(send, recv, recv_counts, ctx_.comm()); return;
    case DeviceCommPath::staged: {
      const std::size_t send_bytes = static_cast<std::size_t>(total) * sizeof(T);
      const std::size_t recv_bytes = static_cast<std::size_t>(recv_counts[me]) * sizeof(T);
      std::shared_ptr<char> host_send = pinned_buffer(send_bytes);
      std::shared_ptr<char> host_recv = pinned_buffer(std::max<std::size_t>(recv_bytes, sizeof(T)));
      kernels::copy_to_host(queue, host_send.get(), send, send_bytes);
      reduce_scatter_host(reinterpret_cast<const T*>(host_send.get()), reinterpret_cast<T*>(host_recv.get()), recv_counts,
                          ctx_.comm());
      if (recv_bytes) kernels::copy_from_host(queue, recv, host_recv.get(), recv_bytes);
      return;
    }
    case DeviceCommPath::nccl: {
#if TESSERA_HAVE_NCCL
      const cudaStream_t compute = compute_stream(ctx_);
      const cudaStream_t comm_stream = nccl_->stream;
      const bool equal = std::all_of(recv_counts.begin(), recv_counts.end(), [&](index_t c) { return c == largest; });
      if (equal) {
        stream_wait(comm_stream, compute);
        TESSERA_NCCL_CHECK(ncclReduceScatter(send, recv, static_cast<std::size_t>(largest), nccl_sum_type<T>(), ncclSum,
                                             nccl_->comm, comm_stream));
        stream_wait(compute, comm_stream);
        return;
      }
      // Unequal pieces: each padded to the largest, in a buffer of ranks x largest (the padding is
      // reduced too, and dropped), then this rank's piece copied out.
      const std::size_t piece_bytes = static_cast<std::size_t>(largest) * sizeof(T);
      kernels::ScratchBuffer padded_send(queue, piece_bytes * ranks);
      kernels::ScratchBuffer padded_recv(queue, piece_bytes);
      TESSERA_CUDA_CHECK(cudaMemsetAsync(padded_send.data(), 0, piece_bytes * ranks, compute));
      index_t offset = 0;
      for (std::size_t r = 0; r < ranks; ++r) {
        if (recv_counts[r])
          TESSERA_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(padded_send.data()) + r * piece_bytes, send + offset,
                                             static_cast<std::size_t>(recv_counts[r]) * sizeof(T),
                                             cudaMemcpyDeviceToDevice, compute));
        offset += recv_counts[r];
      }
      stream_wait(comm_stream, compute);
      TESSERA_NCCL_CHECK(ncclReduceScatter(padded_send.data(), padded_recv.data(), static_cast<std::size_t>(largest),
                                           nccl_sum_type<T>(), ncclSum, nccl_->comm, comm_stream));
      stream_wait(compute, comm_stream);
      if (recv_counts[me])
        TESSERA_CUDA_CHECK(cudaMemcpyAsync(recv, padded_recv.data(), static_cast<std::size_t>(recv_counts[me]) * sizeof(T),
                                           cudaMemcpyDeviceToDevice, compute));
      return;  // the buffers are freed in the compute stream's order, after the copy
#else
      break;
#endif
    }
  }
  TESSERA_FATAL("DeviceComm::reduce_scatter_sum", std::string("path not available in this build: ") + to_string(path_));
}

template void DeviceComm::reduce_scatter_sum<std::int32_t>(const std::int32_t*, std::int32_t*, const std::vector<index_t>&) const;
template void DeviceComm::reduce_scatter_sum<std::int64_t>(const std::int64_t*, std::int64_t*, const std::vector<index_t>&) const;
template void DeviceComm::reduce_scatter_sum<float>(const float*, float*, const std::vector<index_t>&) const;
template void DeviceComm::reduce_scatter_sum<double>(const double*, double*, const std::vector<index_t>&) const;

}  // namespace tessera
