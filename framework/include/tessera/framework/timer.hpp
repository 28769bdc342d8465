// Wall-clock timing of phases. A phase that queued device work ends with a queue synchronisation,
// so that its time includes the work, not only the launch.
#pragma once

#include <chrono>

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

// Adds the time of each phase to a slot, synchronising the queue at the phase's end first.
// With a null slot it still synchronises (phases are ordered anyway: the global phase needs the
// local result on the host), but records nothing.
class PhaseClock {
 public:
  explicit PhaseClock(const kernels::Queue& queue) : queue_(queue) {}
  void end_phase(double* slot) {
    queue_.synchronize();
    const double s = watch_.lap();
    if (slot) *slot += s;
  }

 private:
  const kernels::Queue& queue_;
  Stopwatch watch_;
};

}  // namespace tessera
