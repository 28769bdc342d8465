// Timing. Stopwatch: host wall clock. PhaseClock: the time of each phase of one distributed call,
// taken only when the caller asks for it and without blocking the host between phases.
#pragma once

#include <chrono>
#include <vector>

#include "tessera/kernels/queue.hpp"

namespace tessera {

class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void restart() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // Seconds since the last lap (or start), and starts a new lap.
  double lap() {
    const auto now = Clock::now();
    const double s = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return s;
  }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

// The phases of one call, in order: end_phase(slot) closes the current phase and names the slot its
// seconds are added to (none when slot is null); finish() adds them.
//
// Untimed (timed == false): records nothing and never waits; the call's device work stays queued
// in stream order, and the host blocks only where a value must reach it.
// Timed, under cuda: each phase boundary is an event recorded on the queue, so that a phase lasts
// from the completion of the work queued before its start to the completion of the work queued
// before its end (a host-side phase, such as a collective on the host, lasts about as long as the
// host spends in it). finish() waits for the last event, once, and reads the elapsed times; the
// host does not block at the boundaries.
// Timed, under cpu (whose calls return when their work is done): host wall clock per phase.
//
// The slots must outlive finish(). A clock destroyed without finish() (an exception unwinding)
// adds nothing.
class PhaseClock {
 public:
  PhaseClock(const kernels::Queue& queue, bool timed);
  ~PhaseClock();
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;

  bool timed() const { return timed_; }
  void end_phase(double* slot);
  void finish();

 private:
  struct Boundary {
    double* slot;
    void* event;     // cudaEvent_t under cuda
    double seconds;  // the phase's wall time under cpu
  };
  void release_events();

  kernels::Queue queue_;
  bool timed_;
  bool on_device_ = false;  // timed with events (cuda backend)
  void* start_event_ = nullptr;
  Stopwatch watch_;
  std::vector<Boundary> boundaries_;
};

}  // namespace tessera
