// Must not compile: a reduction whose operation takes the elements' type where the accumulator is
// another (float elements mapped to double, an op of floats) is refused at compile time, with a
// message naming the problem (tests/unit/CMakeLists.txt checks the compiler's output).
#include "tessera/framework/algorithms.hpp"

struct Point {
  float x, y;
};
struct ToPoint {
  TESSERA_HOST_DEVICE Point operator()(float v) const { return Point{v, v}; }
};
struct AddFloats {
  TESSERA_HOST_DEVICE float operator()(float a, float b) const { return a + b; }
};

int main() {
  tessera::DistArray<float> a;
  const Point sum = tessera::transform_reduce(a, ToPoint{}, AddFloats{}, Point{0, 0});
  return static_cast<int>(sum.x);
}
