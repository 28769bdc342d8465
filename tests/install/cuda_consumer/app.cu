// A program of one's own, compiled by nvcc against the installed Tessera with the CMakeLists.txt of
// docs/API.md ("Building against Tessera"): a lambda and a struct of its own, run on the GPUs where
// the installed Tessera has CUDA and every rank has one, on the CPU otherwise. Prints the sum of the
// y of points (i, 2i), i < 1000: 999000 (exact in float: every partial sum is an integer below 2^24).
#include <cstdio>

#include "tessera/framework/framework.hpp"

struct Point {
  float x, y;
};

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  const tessera::Context ctx = runtime.start(tessera::BackendChoice::automatic);
  tessera::DistArray<float> x(ctx, 1000);
  x.iota(0.0f);
  const tessera::DistArray<Point> points = tessera::transform(x, [] TESSERA_HOST_DEVICE(float v) { return Point{v, 2 * v}; });
  const float sum_y =
      tessera::transform_reduce(points, [] TESSERA_HOST_DEVICE(const Point& p) { return p.y; }, tessera::plus{}, 0.0f);
  if (ctx.is_root()) std::printf("cuda consumer on %s: sum of y %.1f, expected 999000.0\n", tessera::to_string(ctx.backend()), sum_y);
  return sum_y == 999000.0f ? 0 : 1;
}
