// MPI on host-addressable memory (host memory, device memory under CUDA-aware MPI, or the staged
// path's pinned buffers): the pieces the mpi-host, cuda-aware-mpi and staged transports share.
// Every message stays below detail::mpi_message_limit() bytes (or kMpiChunkElements elements for
// the allreduce); longer transfers go in chunks.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "tessera/framework/comm.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "transport.hpp"

namespace tessera::detail {

// post(offset, chunk) for each piece of `bytes` bytes, every piece below the message limit.
template <class Post>
void for_each_chunk(std::size_t bytes, Post&& post) {
  const std::size_t limit = mpi_message_limit();
  for (std::size_t done = 0; done < bytes; done += limit) post(done, static_cast<int>(std::min(limit, bytes - done)));
}

void wait_all(std::vector<MPI_Request>& requests);

// A Finish that waits for the requests.
Transport::Finish wait_all_later(std::vector<MPI_Request> requests);

// MPI_Ibcast of `bytes` bytes in chunks.
std::vector<MPI_Request> post_ibcast(void* data, std::size_t bytes, int root, MPI_Comm comm);

// The MPI type a reduction of `type` runs in: for a sum, an integer as the unsigned type of its size,
// so that MPI's addition wraps like reduce_combine's; otherwise the type itself.
MPI_Datatype sum_mpi_type(SumType type);

// In-place MPI_Allreduce (type.op: MPI_SUM, MPI_MIN or MPI_MAX) of `count` elements, in chunks of
// kMpiChunkElements.
void allreduce_host(void* data, index_t count, SumType type, MPI_Comm comm);

// One MPI_Reduce_scatter where every piece is within the message limit, else each rank's piece
// reduced to it in chunks (one MPI_Reduce per chunk).
void reduce_scatter_host(const void* send, void* recv, const std::vector<index_t>& counts, SumType type,
                         const Communicator& comm);

// Point-to-point exchange, all receives posted before the sends; messages between one pair keep
// their order (MPI's non-overtaking rule), so every chunk carries the same tag. The part a rank
// sends itself goes through self(dst, src, bytes). Returns when everything has arrived.
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

// Posts the receives, then the sends, of every message to another rank, in chunks below the message
// limit (one tag: MPI keeps the order of messages between a pair). send_address(i) and
// recv_address(i) give the memory MPI moves for the i-th message of its list.
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

}  // namespace tessera::detail
