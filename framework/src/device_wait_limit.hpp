// The bound on this process's device waits for peers' flags (kernels/device_wait.hpp): the MPI
// watchdog's timeout (TESSERA_MPI_TIMEOUT) as the deadline, and two words of mapped host memory,
// the abort flag the watchdog sets when it fires and the rank a wait that gave up names. A fatal
// error after a device wait gave up (the launch trapped; the next CUDA call fails) is preceded by
// a line naming that rank.
#pragma once

#include "tessera/kernels/device_wait.hpp"

namespace tessera::detail {

// Unarmed (all null and 0: the waits are the plain stream memory operations) when the watchdog is
// off. Otherwise made on the first call (cuda only).
kernels::DeviceWaitLimit device_wait_limit();

}  // namespace tessera::detail
