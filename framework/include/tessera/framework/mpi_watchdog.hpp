// A rank stuck in MPI ends itself. TESSERA_MPI_TIMEOUT=SECONDS arms a watchdog thread that
// watches every MPI call made through TESSERA_MPI_CHECK (all of the framework's collectives,
// sends and receives, and the apps' own): when one call has not returned for SECONDS, the thread
// prints
//   tessera: rank R on HOST: MPI call not returned after S s (TESSERA_MPI_TIMEOUT=S): CALL at FILE:LINE;
//   a rank or node of this job is lost or stuck; ending this rank
// and ends the process with status 70. The launcher (srun --kill-on-bad-exit, mpirun) then ends
// the rest of the job. Where the call waits for one known rank (a peer-copy token, WaitingFor
// below), the line says "waiting for rank P". Before it ends the process, the thread runs the abort
// hooks (add_watchdog_abort_hook): the NCCL communicators are aborted (ncclCommAbort) and device
// waits for peers' flags are told to give up (device_wait.hpp).
//
// Why: when a peer's node is lost without its processes exiting (its link cut, its slurmd gone),
// or a peer died and the launcher does not end the step, Open MPI prints "peer unexpectedly
// disconnected" and the other ranks wait in the collective for ever. Unset or 0: no watchdog.
// Choose SECONDS above the longest time one rank may legitimately wait for another inside one
// call (load imbalance, a serial HDF5 write passing its token): a collective waits for the
// slowest rank's local work.
#pragma once

namespace tessera::detail {

// Reads TESSERA_MPI_TIMEOUT and starts the watchdog thread if it is set; called by Runtime once
// MPI is initialised. A malformed value is a fatal error naming the variable.
void start_mpi_watchdog();
// Stops and joins the thread (Runtime's destructor, after MPI_Finalize).
void stop_mpi_watchdog();
// The timeout in seconds, 0 when disarmed.
double mpi_watchdog_timeout();

// Called by the watchdog thread, in the order added, when it fires and before it ends the process
// (so: from another thread than the one stuck; what a hook does must be safe there). At most 64.
using WatchdogAbortHook = void (*)(void* data);
void add_watchdog_abort_hook(WatchdogAbortHook hook, void* data);
void remove_watchdog_abort_hook(WatchdogAbortHook hook, void* data);

// For its lifetime, the watched calls of this thread wait for world-or-context rank `peer` (one
// neighbour's message): the watchdog's line names it.
class WaitingFor {
 public:
  explicit WaitingFor(int peer) noexcept;
  ~WaitingFor();
  WaitingFor(const WaitingFor&) = delete;
  WaitingFor& operator=(const WaitingFor&) = delete;

 private:
  int previous_;
};

// Marks one MPI call as in progress for the lifetime of the object (the watched calls are made by
// the main thread: MPI_THREAD_FUNNELED). Costs a relaxed load when the watchdog is off.
class MpiCallWatch {
 public:
  MpiCallWatch(const char* call, const char* file, int line) noexcept;
  ~MpiCallWatch();
  MpiCallWatch(const MpiCallWatch&) = delete;
  MpiCallWatch& operator=(const MpiCallWatch&) = delete;

 private:
  bool watching_ = false;
};

}  // namespace tessera::detail
