#include "transport.hpp"

#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::detail {

void copy_to_self(const std::vector<DeviceComm::Message>& sends, const std::vector<DeviceComm::Message>& recvs, int me,
                  const kernels::Queue& queue) {
  std::size_t next = 0;
  for (const DeviceComm::Message& r : recvs) {
    if (r.peer != me) continue;
    while (next < sends.size() && sends[next].peer != me) ++next;
    TESSERA_ASSERT(next < sends.size() && sends[next].bytes == r.bytes,
                   "neighbour exchange: the messages a rank sends itself do not match the ones it receives");
    if (r.bytes) kernels::copy_within_async(queue, r.data, sends[next].data, r.bytes);
    ++next;
  }
  while (next < sends.size() && sends[next].peer != me) ++next;
  TESSERA_ASSERT(next == sends.size(), "neighbour exchange: a message to this rank itself is never received");
}

}  // namespace tessera::detail
