// Mean and variance of a distributed array in one pass, with a struct accumulator.
//
// Each element becomes a one-element summary {count 1, mean x, m2 0}; summaries combine by Chan,
// Golub and LeVeque's parallel formula, which is associative and commutative (up to rounding), so
// transform_reduce may fold them in any grouping: inside a thread, across the GPU's thread blocks,
// and across ranks. The same functors run on the CPU and on the GPU.
//
//   mpiexec -n 3 ./mean_variance [N]
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tessera/framework/framework.hpp"

struct Moments {
  double count = 0;
  double mean = 0;
  double m2 = 0;  // sum of squared deviations from the mean
};

struct ToMoments {
  TESSERA_HOST_DEVICE Moments operator()(double x) const { return Moments{1, x, 0}; }
};

struct Combine {
  static constexpr bool commutative = true;  // lets the fastest reduction reorder the summaries
  TESSERA_HOST_DEVICE Moments operator()(const Moments& a, const Moments& b) const {
    if (a.count == 0) return b;
    if (b.count == 0) return a;
    const double count = a.count + b.count;
    const double delta = b.mean - a.mean;
    return Moments{count, a.mean + delta * (b.count / count), a.m2 + b.m2 + delta * delta * (a.count * b.count / count)};
  }
};

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  const tessera::Context ctx = runtime.start(tessera::BackendChoice::automatic);
  const tessera::index_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;

  // x[i] = i mod 10: mean 4.5 and variance 8.25 when n is a multiple of 10.
  tessera::DistArray<double> x(ctx, n);
  tessera::generate(x, [] TESSERA_HOST_DEVICE(tessera::index_t i) { return double(i % 10); });

  const Moments m = tessera::transform_reduce(x, ToMoments{}, Combine{}, Moments{});
  const double variance = m.count > 0 ? m.m2 / m.count : 0;
  if (ctx.is_root())
    std::printf("mean_variance: n %lld on %d ranks (%s): mean %.12g, variance %.12g\n", static_cast<long long>(n),
                ctx.size(), tessera::to_string(ctx.backend()), m.mean, variance);
  return 0;
}
