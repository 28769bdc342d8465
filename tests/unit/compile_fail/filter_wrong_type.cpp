// Must not compile: a predicate that cannot take the array's element type is refused at compile time,
// with a message naming the problem (tests/unit/CMakeLists.txt checks the compiler's output).
#include "tessera/framework/algorithms.hpp"

struct Point {
  float x, y;
};

struct TakesAPoint {
  bool operator()(const Point& p) const { return p.x > p.y; }
};

int main() {
  tessera::DistArray<float> a;
  auto kept = tessera::filter(a, TakesAPoint{});
  return static_cast<int>(kept.global_size());
}
