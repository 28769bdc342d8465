// A session: the framework's runtime over a duplicate of the caller's mpi4py communicator, its
// context (backend, device, queue) and the process grids made on it. tessera.init makes one; every
// array holds its session, so that the queue and communicators outlive the arrays that use them.
// Several sessions (over different communicators, or the same one twice) may coexist.
//
// Errors: the exception types C++ code throws for Python (errors.cpp turns them into ValueError,
// TypeError, MemoryError, OSError and tessera.CommunicationError), and the guard every call into
// the framework runs under.
#pragma once

#include <pybind11/pybind11.h>
#include <mpi.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/runtime.hpp"

namespace tessera::python {

// A failed MPI (or NCCL) call on this rank, or a fault injected with TESSERA_INJECT_FAULT: the
// communicators can no longer be trusted, and every later call raises it again at once.
class CommunicationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Raised as TypeError: an element type an operation does not take, an object that is not an array.
class TypeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Raised as MemoryError with this message (OutOfMemory and std::bad_alloc are raised so too).
class MemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Session {
 public:
  // Collective over `comm`: duplicates it, joins the runtime over the duplicate and starts the
  // backend (BackendChoice, OpenMP threads (0: the runtime's choice), device ordinal (-1: the
  // node-local rank's), as Runtime::start takes them).
  Session(MPI_Comm comm, BackendChoice backend, int threads, int device);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Context& context() const { return context_; }
  const Runtime& runtime() const { return *runtime_; }
  // The mpi4py communicator the session was made from (what tessera.Context.comm returns).
  pybind11::object python_comm;
  // The rows x cols grid over the session's ranks (0 x 0: MPI_Dims_create's), made once.
  // Collective the first time a shape is asked for.
  const ProcessGrid& grid(int rows, int cols);
  // Calls on this session take it (Call).
  std::recursive_mutex& mutex() { return mutex_; }

 private:
  std::recursive_mutex mutex_;
  MPI_Comm duplicate_ = MPI_COMM_NULL;
  std::unique_ptr<Runtime> runtime_;
  Context context_;
  std::map<std::pair<int, int>, ProcessGrid> grids_;
};

// The guard of every call that enters the framework: releases the GIL where this thread holds it
// (collectives and kernels run while other Python threads do), takes the session's lock, makes the
// session's GPU current and its OpenMP thread count this thread's, and raises CommunicationError at
// once where an earlier call failed so.
//
// Calls on one session run one at a time; calls on different sessions run at the same time where
// MPI gives MPI_THREAD_MULTIPLE (mpi4py asks for it), else one at a time in the whole process. The
// locks are recursive: a Python callback inside a call (with_gil) may free arrays, which takes the
// lock again.
class Call {
 public:
  // check_failure false: for releasing memory, which goes on after a communication failure.
  explicit Call(Session& session, bool check_failure = true);
  // The process-wide lock alone (making a session).
  Call();
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // Runs f with the GIL held (for a Python callback inside a call); the lock stays taken, which
  // cannot deadlock: a thread that waits for the lock has released the GIL first.
  template <class F>
  decltype(auto) with_gil(F&& f) const {
    if (!saved_) {
      pybind11::gil_scoped_acquire gil;
      return f();
    }
    struct Reacquire {
      PyThreadState*& saved;
      explicit Reacquire(PyThreadState*& s) : saved(s) { PyEval_RestoreThread(saved); }
      ~Reacquire() { saved = PyEval_SaveThread(); }
    } gil(saved_);
    return f();
  }

 private:
  void enter(Session* session, bool check_failure);
  mutable PyThreadState* saved_ = nullptr;  // null where the thread did not hold the GIL
  std::unique_lock<std::recursive_mutex> process_lock_;
  std::unique_lock<std::recursive_mutex> session_lock_;
};

// Throws CommunicationError when a communication failure was recorded (Call does this).
void check_no_communication_failure();

// Installs the package's fatal-error handler: a failed MPI or NCCL call, or an injected fault,
// throws CommunicationError (and is recorded); any other fatal error (a CUDA fault, a broken
// invariant) ends the job as the framework's own handler does. Called after each Runtime is made.
void install_fatal_handler();

// Collective over ctx: every rank passes its own outcome of a step whose inputs differ between
// ranks (empty `message`: it went well). Where some rank failed, every rank throws the error of the
// lowest such rank, of its kind, its message naming the rank.
enum class ErrorKind { none, value, type, memory };
void agree(const Context& ctx, ErrorKind kind, const std::string& message);

}  // namespace tessera::python
