#include "session.hpp"

#include <cstdio>
#include <cstring>
#include <string_view>

#include <omp.h>

#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/error.hpp"
#if TESSERA_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tessera::python {
namespace {

// Taken by every call where MPI is not MPI_THREAD_MULTIPLE (one thread of the process in MPI at a
// time), and while a session is made.
std::recursive_mutex g_process_lock;

bool mpi_thread_multiple() {
  static const bool multiple = [] {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    return provided == MPI_THREAD_MULTIPLE;
  }();
  return multiple;
}

// The first communication failure of this process ("" while there was none), and the framework's
// own fatal handler (which prints and ends the job), for every other fatal error.
std::mutex g_failure_lock;
std::string g_failure;
FatalHandler g_framework_handler = nullptr;

bool is_communication_failure(std::string_view call, std::string_view what) {
  return call.starts_with("MPI_") || call.starts_with("nccl") ||
         what.find("injected fault (TESSERA_INJECT_FAULT") != std::string_view::npos;
}

[[noreturn]] void python_fatal(const char* file, int line, const char* call, const char* what) {
  if (is_communication_failure(call, what)) {
    int rank = -1, initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::string message = "rank " + std::to_string(rank) + ": " + call + " failed: " + what + " (at " + file + ":" +
                          std::to_string(line) + ")";
    {
      const std::lock_guard<std::mutex> guard(g_failure_lock);
      if (g_failure.empty()) g_failure = message;
    }
    throw CommunicationError(message);
  }
  if (g_framework_handler) g_framework_handler(file, line, call, what);
  std::fprintf(stderr, "tessera: fatal error at %s:%d: %s: %s\n", file, line, call, what);
  std::abort();
}

}  // namespace

void install_fatal_handler() {
  const FatalHandler previous = set_fatal_handler(&python_fatal);
  if (previous != &python_fatal) g_framework_handler = previous;
}

void check_no_communication_failure() {
  const std::lock_guard<std::mutex> guard(g_failure_lock);
  if (!g_failure.empty())
    throw CommunicationError("an earlier communication failed, so no collective can be trusted: " + g_failure);
}

void agree(const Context& ctx, ErrorKind kind, const std::string& message) {
  const Communicator& comm = ctx.comm();
  const int failed = comm.allreduce<std::int32_t>(kind == ErrorKind::none ? comm.size() : comm.rank(), ReduceOp::min);
  if (failed == comm.size()) return;
  struct Record {
    std::int32_t kind;
    char text[1020];
  } record{};
  if (comm.rank() == failed) {
    record.kind = static_cast<std::int32_t>(kind);
    std::snprintf(record.text, sizeof record.text, "%s", message.c_str());
  }
  comm.bcast(reinterpret_cast<char*>(&record), static_cast<index_t>(sizeof record), failed);
  const std::string text = comm.size() > 1 ? "rank " + std::to_string(failed) + ": " + record.text : record.text;
  switch (static_cast<ErrorKind>(record.kind)) {
    case ErrorKind::type: throw TypeError(text);
    case ErrorKind::memory: throw MemoryError(text);
    default: throw UsageError(text);
  }
}

Session::Session(MPI_Comm comm, BackendChoice backend, int threads, int device) {
  install_fatal_handler();
  TESSERA_MPI_CHECK(MPI_Comm_dup(comm, &duplicate_));
  try {
    runtime_ = std::make_unique<Runtime>(duplicate_);
    install_fatal_handler();  // the runtime installs the framework's; ours goes back on top
    context_ = runtime_->start(backend, threads, device);
  } catch (...) {
    runtime_.reset();
    install_fatal_handler();
    MPI_Comm_free(&duplicate_);
    throw;
  }
}

Session::~Session() {
  {
    const Call call(*this, /*check_failure=*/false);
    grids_.clear();
    context_ = Context();
    runtime_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && duplicate_ != MPI_COMM_NULL) MPI_Comm_free(&duplicate_);
  }
  if (python_comm) {
    pybind11::gil_scoped_acquire gil;
    python_comm = pybind11::object();
  }
}

const ProcessGrid& Session::grid(int rows, int cols) {
  if (rows == 0 && cols == 0) {
    int dims[2] = {0, 0};
    MPI_Dims_create(context_.size(), 2, dims);  // arithmetic only: the same grid as ProcessGrid::create's
    rows = dims[0];
    cols = dims[1];
  }
  const auto key = std::make_pair(rows, cols);
  auto it = grids_.find(key);
  if (it == grids_.end()) it = grids_.emplace(key, ProcessGrid::create(context_, rows, cols)).first;
  return it->second;
}

Call::Call(Session& session, bool check_failure) {
  if (PyGILState_Check()) saved_ = PyEval_SaveThread();
  try {
    enter(&session, check_failure);
  } catch (...) {
    if (session_lock_.owns_lock()) session_lock_.unlock();
    if (process_lock_.owns_lock()) process_lock_.unlock();
    if (saved_) PyEval_RestoreThread(saved_);
    throw;
  }
}

Call::Call() {
  if (PyGILState_Check()) saved_ = PyEval_SaveThread();
  try {
    enter(nullptr, true);
  } catch (...) {
    if (process_lock_.owns_lock()) process_lock_.unlock();
    if (saved_) PyEval_RestoreThread(saved_);
    throw;
  }
}

void Call::enter(Session* session, bool check_failure) {
  if (!session || !mpi_thread_multiple()) process_lock_ = std::unique_lock<std::recursive_mutex>(g_process_lock);
  if (!session) {
    if (check_failure) check_no_communication_failure();
    return;
  }
  session_lock_ = std::unique_lock<std::recursive_mutex>(session->mutex());
  if (check_failure) check_no_communication_failure();
  const Context& context = session->context();
  if (context.is_null()) return;  // a session being destroyed
  // OpenMP's thread count is a per-thread setting: the runtime set it in the thread that made the
  // session; a call from another thread takes the same.
  const int threads = session->runtime().cpu_threads();
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
#if TESSERA_HAVE_CUDA
  // A stream belongs to its device: a call from another Python thread makes the device current.
  if (context.backend() == Backend::cuda) {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != context.queue().device) {
      const cudaError_t status = cudaSetDevice(context.queue().device);
      if (status != cudaSuccess) TESSERA_FATAL("cudaSetDevice", cudaGetErrorString(status));
    }
  }
#endif
}

Call::~Call() {
  if (session_lock_.owns_lock()) session_lock_.unlock();
  if (process_lock_.owns_lock()) process_lock_.unlock();
  if (saved_) PyEval_RestoreThread(saved_);
}

}  // namespace tessera::python
