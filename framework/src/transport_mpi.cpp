#include "transport_mpi.hpp"

#include <utility>

#include "tessera/framework/mpi_type.hpp"

namespace tessera::detail {

void wait_all(std::vector<MPI_Request>& requests) {
  if (requests.empty()) return;
  TESSERA_MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  requests.clear();
}

Transport::Finish wait_all_later(std::vector<MPI_Request> requests) {
  auto pending = std::make_shared<std::vector<MPI_Request>>(std::move(requests));
  return [pending] { wait_all(*pending); };
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

MPI_Datatype sum_mpi_type(SumType type) {
  const ElementKind kind =
      type.kind == ElementKind::signed_integer && type.op == ReduceOp::sum ? ElementKind::unsigned_integer : type.kind;
  return predefined_mpi_type(kind, type.bytes);
}

namespace {
MPI_Op mpi_op(SumType type) { return type.op == ReduceOp::sum ? MPI_SUM : type.op == ReduceOp::min ? MPI_MIN : MPI_MAX; }
}  // namespace

void allreduce_host(void* data, index_t count, SumType type, MPI_Comm comm) {
  char* bytes = static_cast<char*>(data);
  for (index_t done = 0; done < count; done += kMpiChunkElements) {
    const int chunk = static_cast<int>(std::min(kMpiChunkElements, count - done));
    TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, bytes + static_cast<std::size_t>(done) * type.bytes, chunk,
                                    sum_mpi_type(type), mpi_op(type), comm));
  }
}

void reduce_scatter_host(const void* send, void* recv, const std::vector<index_t>& counts, SumType type,
                         const Communicator& comm) {
  const auto limit = static_cast<index_t>(mpi_message_limit() / type.bytes);
  const bool one_call = std::all_of(counts.begin(), counts.end(), [&](index_t c) { return c <= limit; });
  if (one_call) {
    std::vector<int> recv_counts(counts.begin(), counts.end());
    TESSERA_MPI_CHECK(MPI_Reduce_scatter(send, recv, recv_counts.data(), sum_mpi_type(type), MPI_SUM, comm.get()));
    return;
  }
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const auto at = [&](index_t elements) { return static_cast<std::size_t>(elements) * type.bytes; };
  index_t offset = 0;
  for (int r = 0; r < comm.size(); ++r) {
    const index_t count = counts[static_cast<std::size_t>(r)];
    for (index_t done = 0; done < count; done += limit) {
      const int chunk = static_cast<int>(std::min(limit, count - done));
      TESSERA_MPI_CHECK(MPI_Reduce(in + at(offset + done), r == comm.rank() ? out + at(done) : nullptr, chunk,
                                   sum_mpi_type(type), MPI_SUM, r, comm.get()));
    }
    offset += count;
  }
}

}  // namespace tessera::detail
