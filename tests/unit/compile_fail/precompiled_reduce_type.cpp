// Must not compile: the precompiled reduce(array, ReduceOp) of an element type the library has not
// precompiled (int16) is refused at compile time, with a message that names the types it takes and
// the call that takes any type (tests/unit/CMakeLists.txt checks the compiler's output).
#include <cstdint>

#include "tessera/framework/algorithms.hpp"

int main() {
  tessera::DistArray<std::int16_t> a;
  return tessera::reduce(a, tessera::ReduceOp::sum);
}
