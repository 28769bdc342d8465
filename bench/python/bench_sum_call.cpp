// tessera_bench_sum_call: the time of one call of the sum of n float32 from C++, for comparison with
// the same call from Python (overhead.py runs both): n elements generated once, --calls calls back
// to back per round, each call waiting for its result (the value crosses to the host, as Python's
// does); per round the mean time per call. Printed per size: the line overhead.py reads (the median
// and the fastest round, in microseconds), then the harness's verdict line (the sum checked against
// a host sum of the same elements). Sizes: --n elements, or -b/-e bytes of float32; rounds: -n.
//
//   mpirun -n 1 tessera_bench_sum_call --n 1000000 --calls 2000 --rounds 15 --backend cpu
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "app.hpp"
#include "cli.hpp"
#include "harness.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/runtime.hpp"

int main(int argc, char** argv) {
  using namespace tessera;
  Runtime runtime(argc, argv);
  bench::Harness h("tessera_bench_sum_call",
                   "The time of one call of the sum of n float32 from C++ (overhead.py runs it next to the same\n"
                   "call from Python). -n/--rounds rounds of --calls calls each; the row's samples: each round's\n"
                   "mean time per call.",
                   {.minbytes = 4000000, .maxbytes = 4000000, .stepfactor = 2, .iters = 15, .warmup = 1});
  h.set_root(runtime.world_rank() == 0);
  index_t n = 1000000;
  int calls = 2000;
  std::string backend = "auto";
  h.add_alias("--iters", "--rounds");
  h.add_option({"--n"}, "N", "elements (default 1000000; or -b/-e bytes)",
               [&](std::string_view v) { n = apps::parse_count(v, "--n", 1, index_t(1) << 40); });
  h.add_option({"--calls"}, "K", "calls per round (default 2000)",
               [&](std::string_view v) { calls = static_cast<int>(apps::parse_integer(v, "--calls", 1, 1 << 30)); });
  h.add_option({"--backend"}, "auto|cpu|cuda", "where local work runs (default auto)",
               [&](std::string_view v) { backend = std::string(v); });
  try {
    if (!h.parse(argc, argv)) return 0;
    if (h.sizes_given() && h.given("--n")) throw UsageError("--n and -b/-e: give one or the other");
    const std::vector<index_t> sizes = h.sizes_given() ? h.sizes(sizeof(float)) : std::vector<index_t>{n};
    const Context ctx = runtime.start(parse_backend_choice(backend));
    if (!h.json_path().empty()) apps::for_flag("--json", [&] { io::check_output_file(ctx, h.json_path()); });
    h.configuration()["ranks"] = ctx.size();
    h.configuration()["backend"] = runtime.describe();
    h.configuration()["calls"] = calls;
    h.configuration()["statistic"] = "time_s: per round, the mean time of one call";
    h.set_environment(bench::environment_json(describe_environment(ctx)));
    for (const index_t size : sizes) {
      DistArray<float> x(ctx, size);
      x.generate(1);
      volatile float sink = 0;
      for (int w = 0; w < std::max(h.warmup(), 1); ++w) sink = reduce(x, ReduceOp::sum);
      std::vector<double> per_call;
      for (int r = 0; r < h.iters(); ++r) {
        ctx.comm().barrier();
        const auto start = std::chrono::steady_clock::now();
        for (int c = 0; c < calls; ++c) sink = reduce(x, ReduceOp::sum);
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        per_call.push_back(took.count() / calls);
      }
      // The check: the last sum against a long double sum of the same elements on the host.
      long double local = 0, magnitude = 0;
      for (float v : x.local_to_host()) local += v, magnitude += std::fabs(static_cast<long double>(v));
      const double expected = ctx.comm().allreduce(static_cast<double>(local), ReduceOp::sum);
      const double scale = ctx.comm().allreduce(static_cast<double>(magnitude), ReduceOp::sum);
      const bool right = std::fabs(static_cast<double>(sink) - expected) <=
                         (static_cast<double>(size) + 1) * std::numeric_limits<float>::epsilon() * scale;
      const bench::Stats stats = bench::statistics(bench::slowest_rank(ctx, per_call));
      std::vector<double> sorted = per_call;
      std::sort(sorted.begin(), sorted.end());
      if (ctx.is_root())
        std::printf("cpp sum n=%lld ranks=%d backend=%s median_us=%.3f fastest_us=%.3f\n", static_cast<long long>(size),
                    ctx.size(), to_string(ctx.backend()), sorted[sorted.size() / 2] * 1e6, sorted.front() * 1e6);
      h.row("sum float32 n=" + std::to_string(size))
          .set("n", size)
          .set("calls", calls)
          .set("median_us", sorted[sorted.size() / 2] * 1e6)
          .set("fastest_us", sorted.front() * 1e6)
          .time(stats)
          .verdict(right, "the sum differs from the host's");
    }
    if (!h.json_path().empty()) apps::write_json_report(ctx, h.json_path(), h.report());
    return h.finish(/*written_elsewhere=*/true);
  } catch (const UsageError& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "tessera_bench_sum_call: %s\n", e.what());
    return 2;
  }
}
