// Device waits for a flag that another process sets (a peer on the same node, CUDA IPC), with a
// bound: a peer that dies never sets its flag, and a wait without one would hold the stream, and
// the host behind it, for ever.
#pragma once

#include <cstdint>

#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

// The wait gives up when *abort (mapped host memory, set by the host: the MPI watchdog) is
// non-zero, or once it has waited timeout_ns (0: no deadline); it then stores the rank that was to
// set the flag into *lost_rank (mapped host memory, readable by the host after the device failed)
// and traps, so that the host's next CUDA call fails instead of waiting for ever.
struct DeviceWaitLimit {
  const volatile std::uint32_t* abort = nullptr;  // device address of a mapped host word
  std::int32_t* lost_rank = nullptr;              // device address of a mapped host word
  std::uint64_t timeout_ns = 0;
  constexpr bool armed() const { return abort != nullptr || timeout_ns > 0; }
};

// wait_flag (queue.hpp) under a limit: where it is armed, a one-thread kernel polls the flag
// (acquire, system scope) and gives up as above, naming `peer`; otherwise the stream memory
// operation of wait_flag. cuda only.
void wait_flag(const Queue& queue, const std::uint64_t* flag, std::uint64_t value, const DeviceWaitLimit& limit,
               int peer);

}  // namespace tessera::kernels
