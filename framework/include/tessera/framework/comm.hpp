// Typed MPI on host memory: the scalar collectives of the global phase (Allreduce of partials,
// Allgather of totals and counts, Exscan) and large-count broadcasts. Every call is checked, is a
// fault-injection site and counts itself (collective_plan.hpp). Device buffers cross ranks through the device path
// (framework/device_comm.hpp), never through these functions.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/fault.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/mpi_type.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/reduce_op.hpp"

namespace tessera {

class Communicator {
 public:
  // Wraps MPI_COMM_WORLD or another communicator the caller keeps alive (not freed here).
  static Communicator borrow(MPI_Comm comm);
  // Takes ownership: MPI_Comm_free when the last copy goes (if MPI is still initialized).
  static Communicator adopt(MPI_Comm comm);

  Communicator() = default;  // the null communicator: this rank is not a member

  bool is_null() const { return !state_; }
  MPI_Comm get() const;
  int rank() const { return rank_; }
  int size() const { return size_; }

  // True when `other` has the same ranks in the same order (MPI_IDENT or MPI_CONGRUENT).
  bool congruent(const Communicator& other) const;

  // MPI_Comm_split. A rank that passes color < 0 gets the null communicator.
  Communicator split(int color, int key) const;
  // The first `ranks` ranks of this communicator (in rank order); null on the others.
  Communicator first(int ranks) const;
  // The ranks of this communicator on this rank's node (those that can share memory:
  // MPI_Comm_split_type with MPI_COMM_TYPE_SHARED), ordered by key.
  Communicator split_node(int key) const;

  void barrier() const;
  // The same barrier, waited for without spinning: a non-blocking barrier tested every `poll`,
  // asleep in between, so that ranks waiting on an oversubscribed node leave its cores to the ranks
  // at work (a blocking MPI_Barrier polls at full speed in most MPI libraries).
  void barrier_sleeping(std::chrono::microseconds poll) const;

  // op over all ranks; every rank gets the result. Integer sums wrap like reduce_combine. T: the
  // arithmetic types int8..int64, uint8..uint64, float, double.
  template <class T>
  T allreduce(T value, ReduceOp op) const;
  // The same element-wise over data[0, count), in place: one collective (counts above 2^31 go in
  // chunks, each its own MPI call).
  template <class T>
  void allreduce(T* data, index_t count, ReduceOp op) const;

  // Sum of `value` over ranks 0 .. rank-1; 0 on rank 0 (where MPI_Exscan leaves it undefined).
  template <class T>
  T exscan_sum(T value) const;

  // Every rank's value, in rank order. Any trivially copyable T (see mpi_type.hpp).
  template <class T>
  std::vector<T> allgather(const T& value) const;

  // Every rank's count elements of host memory, in rank order: all holds size() * count elements.
  // size() * count must fit an int.
  template <class T>
  void allgather(const T* mine, index_t count, T* all) const;

  // count elements of host memory to each rank and count from each (send and recv hold size() *
  // count elements, in rank order): MPI_Alltoall. size() * count must fit an int.
  template <class T>
  void alltoall(const T* send, index_t count, T* recv) const;

  // Broadcasts count elements of host memory from root; counts above 2^31 go in chunks.
  template <class T>
  void bcast(T* data, index_t count, int root) const;

  template <class T>
  T bcast_value(T value, int root) const {
    bcast(&value, 1, root);
    return value;
  }

  // Rank `root`'s text on every rank (its length, then its bytes); the others' `text` is not read.
  std::string bcast_string(const std::string& text, int root) const;

  // Point-to-point of host memory, any count (chunked under the 2^31 limit of an int count).
  template <class T>
  void send(const T* data, index_t count, int dest, int tag) const;
  template <class T>
  void recv(T* data, index_t count, int source, int tag) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  int rank_ = -1;
  int size_ = 0;
};

// Elements per MPI call when a count may exceed what an int can hold.
inline constexpr index_t kMpiChunkElements = index_t(1) << 30;

template <class T>
void Communicator::bcast(T* data, index_t count, int root) const {
  TESSERA_COLLECTIVE(Collective::bcast, static_cast<double>(count) * sizeof(T));
  for (index_t done = 0; done < count; done += kMpiChunkElements) {
    const int chunk = static_cast<int>(std::min(kMpiChunkElements, count - done));
    TESSERA_MPI_CHECK(MPI_Bcast(data + done, chunk, mpi_type<T>(), root, get()));
  }
}

template <class T>
void Communicator::send(const T* data, index_t count, int dest, int tag) const {
  for (index_t done = 0; done < count; done += kMpiChunkElements) {
    const int chunk = static_cast<int>(std::min(kMpiChunkElements, count - done));
    TESSERA_MPI_CHECK(MPI_Send(data + done, chunk, mpi_type<T>(), dest, tag, get()));
  }
}

template <class T>
void Communicator::recv(T* data, index_t count, int source, int tag) const {
  for (index_t done = 0; done < count; done += kMpiChunkElements) {
    const int chunk = static_cast<int>(std::min(kMpiChunkElements, count - done));
    TESSERA_MPI_CHECK(MPI_Recv(data + done, chunk, mpi_type<T>(), source, tag, get(), MPI_STATUS_IGNORE));
  }
}

template <class T>
std::vector<T> Communicator::allgather(const T& value) const {
  TESSERA_COLLECTIVE(Collective::allgather, sizeof(T));
  std::vector<T> all(static_cast<std::size_t>(size_));
  TESSERA_MPI_CHECK(MPI_Allgather(&value, 1, mpi_type<T>(), all.data(), 1, mpi_type<T>(), get()));
  return all;
}

template <class T>
void Communicator::allgather(const T* mine, index_t count, T* all) const {
  TESSERA_COLLECTIVE(Collective::allgather, static_cast<double>(count) * sizeof(T));
  TESSERA_ASSERT(count >= 0 && count * size_ <= index_t(INT_MAX), "allgather: size() * count must fit an int");
  TESSERA_MPI_CHECK(MPI_Allgather(mine, static_cast<int>(count), mpi_type<T>(), all, static_cast<int>(count), mpi_type<T>(), get()));
}

// An all-to-all of equal counts is counted as the alltoallv it is a case of.
template <class T>
void Communicator::alltoall(const T* send, index_t count, T* recv) const {
  TESSERA_COLLECTIVE(Collective::alltoallv, static_cast<double>(count) * size_ * sizeof(T));
  TESSERA_ASSERT(count >= 0 && count * size_ <= index_t(INT_MAX), "alltoall: size() * count must fit an int");
  TESSERA_MPI_CHECK(MPI_Alltoall(send, static_cast<int>(count), mpi_type<T>(), recv, static_cast<int>(count), mpi_type<T>(), get()));
}

}  // namespace tessera
