// What the cpu backend says about its device: no UUID, and the name "cpu".
#include "../src/queue_backends.hpp"

namespace tessera::kernels::cpu {

std::array<unsigned char, 16> device_uuid() { return {}; }

std::string describe_device() { return "cpu"; }

}  // namespace tessera::kernels::cpu
