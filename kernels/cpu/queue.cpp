// Queues of the cpu backend: its calls run on the calling thread and finish before they return, so
// there is nothing to wait for, order or release.
#include "../src/queue_backends.hpp"

namespace tessera::kernels::cpu {

void synchronize() {}

void destroy_queue() {}

void queue_wait() {}

}  // namespace tessera::kernels::cpu
