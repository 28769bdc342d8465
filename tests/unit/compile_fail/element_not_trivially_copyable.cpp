// Must not compile: an array of an element type that is not trivially copyable (std::string) is
// refused at compile time, with a message naming the problem (tests/unit/CMakeLists.txt checks the
// compiler's output).
#include <string>

#include "tessera/framework/algorithms.hpp"

int main() {
  tessera::DistArray<std::string> names;
  return static_cast<int>(names.global_size());
}
