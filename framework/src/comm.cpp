#include "tessera/framework/comm.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>

#include "tessera/framework/fault.hpp"
#include "tessera/framework/mpi_check.hpp"

namespace tessera {

namespace detail {

MPI_Datatype contiguous_bytes_type(std::size_t bytes) {
  static std::mutex mutex;
  static std::map<std::size_t, MPI_Datatype> types;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = types.find(bytes);
  if (it != types.end()) return it->second;
  TESSERA_ASSERT(bytes <= static_cast<std::size_t>(INT32_MAX), "contiguous_bytes_type: element larger than 2 GiB");
  MPI_Datatype type = MPI_DATATYPE_NULL;
  TESSERA_MPI_CHECK(MPI_Type_contiguous(static_cast<int>(bytes), MPI_BYTE, &type));
  TESSERA_MPI_CHECK(MPI_Type_commit(&type));
  types.emplace(bytes, type);
  return type;
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}
}  // namespace detail

struct Communicator::State {
  MPI_Comm comm = MPI_COMM_NULL;
  bool owned = false;
  ~State() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned && !finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};

Communicator Communicator::borrow(MPI_Comm comm) {
  Communicator c;
  if (comm == MPI_COMM_NULL) return c;
  c.state_ = std::make_shared<State>();
  c.state_->comm = comm;
  c.state_->owned = false;
  TESSERA_MPI_CHECK(MPI_Comm_rank(comm, &c.rank_));
  TESSERA_MPI_CHECK(MPI_Comm_size(comm, &c.size_));
  return c;
}

Communicator Communicator::adopt(MPI_Comm comm) {
  Communicator c = borrow(comm);
  if (c.state_) {
    c.state_->owned = true;
    // Errors come back as codes, so that TESSERA_MPI_CHECK reports them with file:line.
    TESSERA_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  }
  return c;
}

MPI_Comm Communicator::get() const { return state_ ? state_->comm : MPI_COMM_NULL; }

std::string Communicator::bcast_string(const std::string& text, int root) const {
  std::string out = rank_ == root ? text : std::string();
  out.resize(static_cast<std::size_t>(bcast_value(static_cast<index_t>(out.size()), root)));
  bcast(out.data(), static_cast<index_t>(out.size()), root);
  return out;
}

Communicator Communicator::split(int color, int key) const {
  TESSERA_ASSERT(!is_null(), "split of a null communicator");
  MPI_Comm out = MPI_COMM_NULL;
  TESSERA_MPI_CHECK(MPI_Comm_split(get(), color < 0 ? MPI_UNDEFINED : color, key, &out));
  return adopt(out);
}

Communicator Communicator::first(int ranks) const {
  TESSERA_ASSERT(ranks >= 1 && ranks <= size_, "first(ranks): ranks must be in [1, size]");
  return split(rank_ < ranks ? 0 : -1, rank_);
}

Communicator Communicator::split_node(int key) const {
  TESSERA_ASSERT(!is_null(), "split_node of a null communicator");
  MPI_Comm out = MPI_COMM_NULL;
  TESSERA_MPI_CHECK(MPI_Comm_split_type(get(), MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, &out));
  return adopt(out);
}

bool Communicator::congruent(const Communicator& other) const {
  if (is_null() || other.is_null()) return is_null() && other.is_null();
  int result = MPI_UNEQUAL;
  TESSERA_MPI_CHECK(MPI_Comm_compare(get(), other.get(), &result));
  return result == MPI_IDENT || result == MPI_CONGRUENT;
}

void Communicator::barrier() const {
  TESSERA_FAULT_POINT("barrier");
  TESSERA_MPI_CHECK(MPI_Barrier(get()));
}

void Communicator::barrier_sleeping(std::chrono::microseconds poll) const {
  TESSERA_FAULT_POINT("barrier");
  MPI_Request request = MPI_REQUEST_NULL;
  TESSERA_MPI_CHECK(MPI_Ibarrier(get(), &request));
  for (;;) {
    int done = 0;
    TESSERA_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(poll);
  }
}

namespace {

template <class T>
MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

// MPI_MIN / MPI_MAX on floats do not promise NaN propagation, and signed integer MPI_SUM may
// overflow inside the library: both go through reduce_combine, the rule the local phase uses.
template <class T, ReduceOp Op>
void combine_typed(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = reduce_combine(Op, a[i], b[i]);
}

template <class T>
MPI_Op combine_op(ReduceOp op) {
  // Created once per (T, op) and kept until MPI_Finalize frees them.
  static MPI_Op ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  const int i = static_cast<int>(op);
  if (ops[i] == MPI_OP_NULL) {
    MPI_User_function* fn = op == ReduceOp::sum   ? &combine_typed<T, ReduceOp::sum>
                            : op == ReduceOp::min ? &combine_typed<T, ReduceOp::min>
                                                  : &combine_typed<T, ReduceOp::max>;
    TESSERA_MPI_CHECK(MPI_Op_create(fn, /*commute=*/1, &ops[i]));
  }
  return ops[i];
}

}  // namespace

template <class T>
T Communicator::allreduce(T value, ReduceOp op) const {
  TESSERA_COLLECTIVE(Collective::allreduce, sizeof(T));
  T result{};
  const bool builtin_ok = std::is_floating_point_v<T> ? op == ReduceOp::sum : op != ReduceOp::sum;
  const MPI_Op mop = builtin_ok ? mpi_op<T>(op) : combine_op<T>(op);
  TESSERA_MPI_CHECK(MPI_Allreduce(&value, &result, 1, mpi_type<T>(), mop, get()));
  return result;
}

template <class T>
void Communicator::allreduce(T* data, index_t count, ReduceOp op) const {
  TESSERA_COLLECTIVE(Collective::allreduce, static_cast<double>(count) * sizeof(T));
  const bool builtin_ok = std::is_floating_point_v<T> ? op == ReduceOp::sum : op != ReduceOp::sum;
  const MPI_Op mop = builtin_ok ? mpi_op<T>(op) : combine_op<T>(op);
  for (index_t done = 0; done < count; done += kMpiChunkElements) {
    const int chunk = static_cast<int>(std::min(kMpiChunkElements, count - done));
    TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + done, chunk, mpi_type<T>(), mop, get()));
  }
}

template <class T>
T Communicator::exscan_sum(T value) const {
  TESSERA_COLLECTIVE(Collective::exscan, sizeof(T));
  T result{};
  const MPI_Op mop = std::is_floating_point_v<T> ? MPI_SUM : combine_op<T>(ReduceOp::sum);
  TESSERA_MPI_CHECK(MPI_Exscan(&value, &result, 1, mpi_type<T>(), mop, get()));
  return rank_ == 0 ? T(0) : result;
}

#define TESSERA_COMM_INSTANTIATE(T)                                                  \
  template T Communicator::allreduce<T>(T, ReduceOp) const;                          \
  template void Communicator::allreduce<T>(T*, index_t, ReduceOp) const;             \
  template T Communicator::exscan_sum<T>(T) const;

TESSERA_COMM_INSTANTIATE(std::int8_t)
TESSERA_COMM_INSTANTIATE(std::int16_t)
TESSERA_COMM_INSTANTIATE(std::int32_t)
TESSERA_COMM_INSTANTIATE(std::int64_t)
TESSERA_COMM_INSTANTIATE(std::uint8_t)
TESSERA_COMM_INSTANTIATE(std::uint16_t)
TESSERA_COMM_INSTANTIATE(std::uint32_t)
TESSERA_COMM_INSTANTIATE(std::uint64_t)
TESSERA_COMM_INSTANTIATE(float)
TESSERA_COMM_INSTANTIATE(double)

}  // namespace tessera
