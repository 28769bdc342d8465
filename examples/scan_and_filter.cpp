// A running maximum (a scan with max) and a filter with a lambda.
//
//   mpiexec -n 3 ./scan_and_filter [N]
//
// The scan combines in index order across threads, blocks and ranks, so any associative operation
// works, also one that does not commute; `init` seeds it. The filter keeps the elements a lambda
// accepts, in order, as a ragged array (each rank keeps its own); rebalance() would even it out.
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "tessera/framework/framework.hpp"

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  const tessera::Context ctx = runtime.start(tessera::BackendChoice::automatic);
  const tessera::index_t n = argc > 1 ? std::atoll(argv[1]) : 1000000;

  // A sawtooth that climbs by one every period of 1000: x[i] = i / 1000 + (i % 1000) / 2000.
  tessera::DistArray<float> x(ctx, n);
  tessera::generate(x, [] TESSERA_HOST_DEVICE(tessera::index_t i) {
    return static_cast<float>(i / 1000) + static_cast<float>(i % 1000) / 2000.0f;
  });

  const auto running_max = tessera::inclusive_scan(x, tessera::maximum{}, -std::numeric_limits<float>::infinity());
  // The elements in the upper half of each tooth (fractional part at least 0.25).
  const auto upper = tessera::filter(x, [] TESSERA_HOST_DEVICE(float v) {
    return v - static_cast<float>(static_cast<long>(v)) >= 0.25f;
  });

  const float last_max = tessera::reduce(running_max, tessera::maximum{});
  const tessera::index_t kept = upper.global_size();
  if (ctx.is_root())
    std::printf("scan_and_filter: n %lld on %d ranks (%s): running maximum ends at %g; %lld elements with a "
                "fractional part >= 0.25\n",
                static_cast<long long>(n), ctx.size(), tessera::to_string(ctx.backend()), last_max,
                static_cast<long long>(kept));
  return 0;
}
