// tessera_bench_sum_call: the time of one call of the sum of n float32 from C++, for comparison with
// the same call from Python (overhead.py runs both): n elements generated once, `calls` calls back to
// back per round, each call waiting for its result (the value crosses to the host, as Python's
// does); per round the mean time per call; printed: the median and the fastest round, in
// microseconds.
//
//   mpirun -n 1 tessera_bench_sum_call --n 1000000 --calls 2000 --rounds 15 --backend cpu
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/runtime.hpp"

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  long long n = 1000000;
  int calls = 2000, rounds = 15;
  std::string backend = "auto";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--n") n = std::atoll(argv[i + 1]);
    else if (flag == "--calls") calls = std::atoi(argv[i + 1]);
    else if (flag == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (flag == "--backend") backend = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: tessera_bench_sum_call [--n N] [--calls K] [--rounds R] [--backend auto|cpu|cuda]\n");
      return 2;
    }
  }
  try {
    const tessera::Context ctx = runtime.start(tessera::parse_backend_choice(backend));
    tessera::DistArray<float> x(ctx, n);
    x.generate(1);
    volatile float sink = tessera::reduce(x, tessera::ReduceOp::sum);  // warm-up
    std::vector<double> per_call;
    for (int r = 0; r < rounds; ++r) {
      ctx.comm().barrier();
      const auto start = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; ++c) sink = tessera::reduce(x, tessera::ReduceOp::sum);
      const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
      per_call.push_back(took.count() / calls);
    }
    (void)sink;
    std::sort(per_call.begin(), per_call.end());
    if (ctx.is_root())
      std::printf("cpp sum n=%lld ranks=%d backend=%s median_us=%.3f fastest_us=%.3f\n", n, ctx.size(),
                  tessera::to_string(ctx.backend()), per_call[per_call.size() / 2], per_call.front());
  } catch (const tessera::UsageError& e) {
    std::fprintf(stderr, "tessera_bench_sum_call: %s\n", e.what());
    return 2;
  }
  return 0;
}
