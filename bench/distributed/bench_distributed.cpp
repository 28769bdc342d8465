// tessera_bench_distributed: the distributed algorithms measured the way nccl-tests and the OSU
// benchmarks measure collectives. For each algorithm and each size per rank (nccl-tests' -b/-e/-f in
// bytes, or --min/--max in elements; multiplied by the step factor, 2 by default):
// warm-up calls outside the timing; then --iters timed calls, each after a barrier; per size the
// time (the per-rank mean over the iterations) as min / avg / max over ranks, the bandwidth, each
// phase's time (the mean over --iters further calls that ask for phase times), a count of wrong
// results against an independent host computation, and the path device buffers take between ranks.
// The harness (bench/common) gives the flags, the per-call statistics (the slowest rank's time per
// call), one VALID/INVALID line per row, the closing summary line and the JSON report.
// One rank per GPU under mpirun; the cpu backend works too.
//
//   mpirun -np 2 tessera_bench_distributed --backend cuda -b 4M -e 1G -f 2 -n 20 --json out.json
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "app.hpp"
#include "cli.hpp"
#include "harness.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/exact_sum.hpp"

namespace tessera {
namespace {

struct Options {
  std::string backend = "auto";
  std::string dtype = "float";
  std::vector<std::string> algorithms = {"reduce", "reproducible_sum", "scan", "filter", "matmul"};
  index_t matmul_min = 256;  // global N of square N x N matrices
  index_t matmul_max = 1024;
  bool check = true;
  bool no_check = false;
  int iters = 20;   // from the harness
  int warmup = 5;
};

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  std::stringstream ss{std::string(text)};
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The harness's flags (-b/-e/-f in bytes per rank, or --min/--max in elements per rank, -n, -w,
// --json) and this benchmark's own.
void add_options(bench::Harness& h, Options& o) {
  h.allow_element_sizes(index_t(1) << 10, index_t(1) << 22);
  h.add_option({"--backend"}, "auto|cpu|cuda", "where local work runs (default auto)",
               [&o](std::string_view v) { o.backend = std::string(v); });
  h.add_option({"--dtype"}, "float|double", "element type (default float)", [&o](std::string_view v) {
    if (v != "float" && v != "double") throw UsageError("--dtype: '" + std::string(v) + "' (expected float or double)");
    o.dtype = std::string(v);
  });
  h.add_option({"--algo"}, "LIST", "of reduce,reproducible_sum,scan,filter,matmul (default all)", [&o](std::string_view v) {
    o.algorithms = split(v);
    for (const auto& a : o.algorithms)
      if (a != "reduce" && a != "reproducible_sum" && a != "scan" && a != "filter" && a != "matmul")
        throw UsageError("--algo: unknown algorithm '" + a + "'");
  });
  h.add_option({"--matmul-min"}, "N", "side of the smallest square matrices (global; default 256)",
               [&o](std::string_view v) { o.matmul_min = apps::parse_count(v, "--matmul-min", 1, index_t(1) << 40); });
  h.add_option({"--matmul-max"}, "N", "side of the largest (default 1024)",
               [&o](std::string_view v) { o.matmul_max = apps::parse_count(v, "--matmul-max", 1, index_t(1) << 40); });
  h.add_option({"-c", "--check"}, "0|1", "check results against a host computation (default 1)", [&o](std::string_view v) {
    if (v != "0" && v != "1") throw UsageError("-c/--check: '" + std::string(v) + "' (expected 0 or 1)");
    o.check = v == "1";
  });
  h.add_switch({"--no-check"}, "the same as -c 0", &o.no_check);
}

struct Result {
  std::string algorithm, dtype, path;
  index_t elements_per_rank = 0;  // matmul: global N
  double size_bytes = 0;          // the input block per rank (matmul: 0)
  double bytes = 0;               // per rank: memory traffic floor (matmul: 0)
  double time_min = 0, time_avg = 0, time_max = 0;  // seconds
  double algbw = 0, busbw = 0;    // GB/s per rank (busbw where it applies, else 0)
  double gflops = 0;              // matmul only, all ranks together
  PhaseTimes phases;              // mean per call, averaged over ranks
  long long wrong = 0;
  std::vector<double> samples;    // per timed call, the slowest rank's time
};

// Runs `op` warmup times, then iters timed calls without phase times (barrier before each; the time
// ends when the call's queued device work does), then iters calls with phase times for the phases.
// The time is the call's as a program makes it: a call asked for its phase times also waits for
// their events at its end (PhaseClock), which costs a round trip to the device.
void measure(const Context& ctx, const Options& o, Result& r, const std::function<void(PhaseTimes*)>& op) {
  for (int i = 0; i < o.warmup; ++i) op(nullptr);
  ctx.queue().synchronize();
  double elapsed = 0;
  std::vector<double> samples;
  for (int i = 0; i < o.iters; ++i) {
    ctx.comm().barrier();
    Stopwatch watch;
    op(nullptr);
    ctx.queue().synchronize();
    samples.push_back(watch.seconds());
    elapsed += samples.back();
  }
  r.samples = bench::slowest_rank(ctx, samples);
  PhaseTimes sum;
  for (int i = 0; i < o.iters; ++i) {
    ctx.comm().barrier();
    op(&sum);
  }
  const double mean = elapsed / o.iters;
  const auto& comm = ctx.comm();
  r.time_min = comm.allreduce(mean, ReduceOp::min);
  r.time_max = comm.allreduce(mean, ReduceOp::max);
  r.time_avg = comm.allreduce(mean, ReduceOp::sum) / ctx.size();
  auto average = [&](double v) { return comm.allreduce(v / o.iters, ReduceOp::sum) / ctx.size(); };
  r.phases.local = average(sum.local);
  r.phases.communication = average(sum.communication);
  r.phases.fixup = average(sum.fixup);
  r.phases.host = average(sum.host);
  r.algbw = r.bytes / r.time_avg / 1e9;
}

template <class T>
long double host_sum(const std::vector<T>& v) {
  long double s = 0;
  for (T x : v) s += x;
  return s;
}

template <class T>
std::vector<Result> run_arrays(const Context& ctx, const Options& o, index_t per_rank) {
  std::vector<Result> results;
  const std::string path = to_string(device_comm_path(ctx));
  const index_t n = per_rank * ctx.size();
  const std::uint64_t seed = 20261122;
  DistArray<T> input(ctx, n);
  input.generate(seed);
  const bool wants_host_copy = o.check;
  const std::vector<T> host_block = wants_host_copy ? input.local_to_host() : std::vector<T>{};
  auto want = [&](const char* a) { return std::find(o.algorithms.begin(), o.algorithms.end(), a) != o.algorithms.end(); };
  auto base = [&](const char* name, double bytes) {
    Result r;
    r.algorithm = name;
    r.dtype = o.dtype;
    r.path = path;
    r.elements_per_rank = per_rank;
    r.size_bytes = static_cast<double>(per_rank) * sizeof(T);
    r.bytes = bytes;
    return r;
  };
  const double block_bytes = static_cast<double>(input.local_bytes());
  // Independent reference for sums: long double per rank on the host, then the ranks' partials.
  long double abs_sum = 0;
  for (T x : host_block) abs_sum += std::fabs(static_cast<long double>(x));
  const double reference_sum =
      o.check ? ctx.comm().allreduce(static_cast<double>(host_sum(host_block)), ReduceOp::sum) : 0.0;
  const double reference_abs = o.check ? ctx.comm().allreduce(static_cast<double>(abs_sum), ReduceOp::sum) : 0.0;

  if (want("reduce")) {
    Result r = base("reduce_sum", block_bytes);
    T value{};
    measure(ctx, o, r, [&](PhaseTimes* t) { value = reduce(input, ReduceOp::sum, t); });
    if (o.check) {
      const double tolerance = (static_cast<double>(n) + 1) * std::numeric_limits<T>::epsilon() * reference_abs;
      r.wrong = std::fabs(static_cast<double>(value) - reference_sum) > tolerance ? 1 : 0;
    }
    results.push_back(r);
  }
  if (want("reproducible_sum")) {
    Result r = base("reproducible_sum", block_bytes);
    std::vector<T> values;
    measure(ctx, o, r, [&](PhaseTimes* t) { values.push_back(reproducible_sum(input, t)); });
    // Every call must give the same bits; and those bits must be the host's exact sum (host
    // superaccumulator over host copies: independent of the device kernel under cuda).
    for (T v : values) r.wrong += std::memcmp(&v, &values.front(), sizeof(T)) != 0 ? 1 : 0;
    if (o.check) {
      kernels::ExactAccumulator<T> acc, total;
      kernels::exact_sum_clear(acc);
      for (T x : host_block) kernels::exact_sum_add(acc, x);
      kernels::exact_sum_normalize(acc);
      TESSERA_MPI_CHECK(MPI_Allreduce(&acc, &total, kernels::ExactAccumulator<T>::kFields, MPI_INT64_T, MPI_SUM,
                                      ctx.comm().get()));
      const T expected = kernels::exact_sum_round(total);
      r.wrong += std::memcmp(&expected, &values.front(), sizeof(T)) != 0 ? 1 : 0;
      // ... and within half an ulp of T (plus the long double reference's own error) of the plain sum.
      if (std::fabs(static_cast<double>(expected) - reference_sum) >
          std::numeric_limits<T>::epsilon() * std::fabs(reference_sum) +
              (static_cast<double>(n) + 1) * std::numeric_limits<double>::epsilon() * reference_abs)
        ++r.wrong;
    }
    results.push_back(r);
  }
  if (want("scan")) {
    Result r = base("inclusive_scan", 3 * block_bytes);  // the 3N floor: read, read, write
    DistArray<T> out(ctx, input.partition());
    measure(ctx, o, r, [&](PhaseTimes* t) { scan(input, out, ScanKind::inclusive, t); });
    if (o.check) {
      const auto got = out.local_to_host();
      const double carry = ctx.comm().exscan_sum(static_cast<double>(host_sum(host_block)));
      long double running = carry, running_abs = std::fabs(carry);
      for (std::size_t i = 0; i < got.size(); ++i) {
        running += host_block[i];
        running_abs += std::fabs(static_cast<long double>(host_block[i]));
        const long double tolerance =
            (static_cast<long double>(input.global_offset() + static_cast<index_t>(i)) + 2 + ctx.size()) *
            std::numeric_limits<T>::epsilon() * running_abs;
        if (std::fabs(static_cast<long double>(got[i]) - running) > tolerance) ++r.wrong;
      }
      r.wrong = ctx.comm().allreduce(static_cast<std::int64_t>(r.wrong), ReduceOp::sum);
    }
    results.push_back(r);
  }
  if (want("filter")) {
    const Predicate<T> keep = greater_than<T>(T(0));  // about half of the generated values
    const index_t host_kept = o.check ? static_cast<index_t>(std::count_if(host_block.begin(), host_block.end(), keep)) : 0;
    Result r = base("filter", block_bytes);
    DistArray<T> kept;
    measure(ctx, o, r, [&](PhaseTimes* t) { kept = filter(input, keep, t); });
    r.bytes = block_bytes + static_cast<double>(kept.local_bytes());  // read all, write the kept
    r.algbw = r.bytes / r.time_avg / 1e9;
    Result rb = base("rebalance", 0);
    DistArray<T> balanced;
    measure(ctx, o, rb, [&](PhaseTimes* t) { balanced = rebalance(kept, t); });
    // Bytes that leave this rank; all-to-all bus bandwidth as nccl-tests counts it: (P-1)/P.
    const index_t moved = kept.local_size() -
                          std::max<index_t>(0, std::min(kept.global_offset() + kept.local_size(),
                                                        balanced.global_offset() + balanced.local_size()) -
                                                   std::max(kept.global_offset(), balanced.global_offset()));
    rb.bytes = static_cast<double>(moved) * sizeof(T);
    rb.algbw = static_cast<double>(kept.local_bytes()) / rb.time_avg / 1e9;
    rb.busbw = rb.algbw * (ctx.size() - 1) / ctx.size();
    if (o.check) {
      r.wrong = std::abs(kept.local_size() - host_kept);
      const auto got = balanced.local_to_host();
      rb.wrong = std::count_if(got.begin(), got.end(), [&](T x) { return !keep(x); });
      rb.wrong += balanced.global_size() != kept.global_size() ? 1 : 0;
      r.wrong = ctx.comm().allreduce(static_cast<std::int64_t>(r.wrong), ReduceOp::sum);
      rb.wrong = ctx.comm().allreduce(static_cast<std::int64_t>(rb.wrong), ReduceOp::sum);
    }
    results.push_back(r);
    results.push_back(rb);
  }
  return results;
}

template <class T>
Result run_matmul(const Context& ctx, const Options& o, index_t size) {
  const ProcessGrid grid = ProcessGrid::create(ctx);
  DistMatrix<T> a(grid, size, size), b(grid, size, size);
  const std::uint64_t seed_a = 11, seed_b = 12;
  a.generate(seed_a);
  b.generate(seed_b);
  Result r;
  r.algorithm = "matmul_summa";
  r.dtype = o.dtype;
  r.path = to_string(device_comm_path(ctx));
  r.elements_per_rank = size;
  DistMatrix<T> c;
  MatmulOptions options;
  options.engine = GemmEngine::vendor;
  measure(ctx, o, r, [&](PhaseTimes* t) { c = matmul(a, b, options, t); });
  r.algbw = 0;
  r.gflops = 2.0 * std::pow(static_cast<double>(size), 3) / r.time_avg / 1e9;
  if (o.check && c.local_rows() > 0 && c.local_cols() > 0) {
    // Up to 16 entries of this rank's block, each recomputed on the host from the generator.
    const auto block = c.local_to_host();
    for (int s = 0; s < 16; ++s) {
      const index_t i = (s * 7919) % c.local_rows(), j = (s * 104729) % c.local_cols();
      const index_t gi = c.row_offset() + i, gj = c.col_offset() + j;
      long double exact = 0, magnitude = 0;
      for (index_t l = 0; l < size; ++l) {
        const long double term = static_cast<long double>(counter_value<T>(seed_a, static_cast<std::uint64_t>(gi * size + l))) *
                                 counter_value<T>(seed_b, static_cast<std::uint64_t>(l * size + gj));
        exact += term;
        magnitude += std::fabs(term);
      }
      const long double tolerance = (size + 1) * std::numeric_limits<T>::epsilon() * magnitude;
      if (std::fabs(block[static_cast<std::size_t>(i * c.local_cols() + j)] - exact) > tolerance) ++r.wrong;
    }
  }
  r.wrong = ctx.comm().allreduce(static_cast<std::int64_t>(r.wrong), ReduceOp::sum);
  return r;
}

void print_header() {
  std::printf("# %-16s %6s %12s %12s %12s %10s %10s %10s %9s %9s %9s %9s %9s %9s %7s %s\n", "algorithm", "dtype",
              "size(B)", "elems/rank", "traffic(B)", "min(us)", "avg(us)", "max(us)", "GB/s", "busGB/s", "local", "comm",
              "fixup", "host", "wrong", "path");
}

void print(const Result& r) {
  const bool mm = r.algorithm == "matmul_summa";
  std::printf("  %-16s %6s %12.0f %12lld %12.0f %10.1f %10.1f %10.1f %9.2f %9.2f %9.1f %9.1f %9.1f %9.1f %7lld %s%s\n",
              r.algorithm.c_str(), r.dtype.c_str(), r.size_bytes, static_cast<long long>(r.elements_per_rank), r.bytes,
              r.time_min * 1e6, r.time_avg * 1e6, r.time_max * 1e6, mm ? r.gflops : r.algbw, r.busbw,
              r.phases.local * 1e6, r.phases.communication * 1e6, r.phases.fixup * 1e6, r.phases.host * 1e6, r.wrong,
              r.path.c_str(), mm ? "  (N global; GB/s column: GFLOP/s)" : "");
  std::fflush(stdout);
}

// The harness's row for a result: its fields, the slowest rank's time per call, and VALID when it
// was checked and nothing was wrong.
void add_row(bench::Harness& h, const Options& o, const Result& r) {
  char label[160];
  std::snprintf(label, sizeof label, "%s %s %s=%lld", r.algorithm.c_str(), r.dtype.c_str(),
                r.algorithm == "matmul_summa" ? "N" : "n_per_rank", static_cast<long long>(r.elements_per_rank));
  bench::Row& row = h.row(label);
  row.set("algorithm", r.algorithm)
      .set("dtype", r.dtype)
      .set("path", r.path)
      .set("elements_per_rank", r.elements_per_rank)
      .set("size_bytes", r.size_bytes)
      .set("bytes_per_rank", r.bytes)
      .set("time_min_s", r.time_min)
      .set("time_avg_s", r.time_avg)
      .set("time_max_s", r.time_max)
      .set("algbw_GBps", r.algbw)
      .set("busbw_GBps", r.busbw)
      .set("gflops", r.gflops)
      .set("phase_local_s", r.phases.local)
      .set("phase_communication_s", r.phases.communication)
      .set("phase_fixup_s", r.phases.fixup)
      .set("phase_host_s", r.phases.host)
      .set("wrong", r.wrong);
  row.time(r.samples);
  if (!o.check) row.verdict(false, "not checked (-c 0)");
  else row.verdict(r.wrong == 0, std::to_string(r.wrong) + " wrong values");
  h.print_pending();
}

template <class T>
std::vector<Result> run_all(const Context& ctx, const Options& o, bench::Harness& h) {
  std::vector<Result> results;
  for (const index_t per_rank : h.sizes(sizeof(T)))
    for (const Result& r : run_arrays<T>(ctx, o, per_rank)) {
      if (ctx.is_root()) print(r);
      add_row(h, o, r);
      results.push_back(r);
    }
  if (std::find(o.algorithms.begin(), o.algorithms.end(), "matmul") != o.algorithms.end())
    for (index_t size = o.matmul_min; size <= o.matmul_max; size *= 2) {
      results.push_back(run_matmul<T>(ctx, o, size));
      if (ctx.is_root()) print(results.back());
      add_row(h, o, results.back());
    }
  return results;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  Runtime runtime(argc, argv);
  bench::Harness h("tessera_bench_distributed",
                    "The distributed algorithms measured as nccl-tests and OSU measure collectives, under mpirun or\n"
                    "srun with one rank per GPU. Sizes per rank: -b/-e bytes or --min/--max elements (default 1K to 4M\n"
                    "elements); the matmul rows are square matrices of --matmul-min to --matmul-max (global side).",
                    {.minbytes = 4096, .maxbytes = index_t(16) << 20, .stepfactor = 2, .iters = 20, .warmup = 5});
  h.set_root(runtime.world_rank() == 0);
  try {
    Options o;
    add_options(h, o);
    if (!h.parse(argc, argv)) return 0;
    if (o.no_check) o.check = false;
    if (o.matmul_max < o.matmul_min) throw UsageError("--matmul-min/--matmul-max: need min <= max");
    o.iters = h.iters();
    o.warmup = h.warmup();
    const Context ctx = runtime.start(parse_backend_choice(o.backend));
    if (!h.json_path().empty()) apps::for_flag("--json", [&] { io::check_output_file(ctx, h.json_path()); });
    h.configuration()["ranks"] = ctx.size();
    h.configuration()["backend"] = runtime.describe();
    h.configuration()["device_path"] = to_string(device_comm_path(ctx));
    h.configuration()["dtype"] = o.dtype;
    h.configuration()["check"] = o.check;
    h.set_environment(bench::environment_json(describe_environment(ctx)));
    if (ctx.is_root()) {
      std::printf("# tessera_bench_distributed: %s\n# device path: %s, iters %d, warmup %d, check %s\n",
                  runtime.describe().c_str(), to_string(device_comm_path(ctx)), o.iters, o.warmup,
                  o.check ? "on" : "off");
      print_header();
    }
    const std::vector<Result> results = o.dtype == "float" ? run_all<float>(ctx, o, h) : run_all<double>(ctx, o, h);
    if (!h.json_path().empty()) apps::write_json_report(ctx, h.json_path(), h.report());
    double bandwidth = 0;
    int with_bandwidth = 0;
    for (const Result& r : results)
      if (r.algbw > 0) bandwidth += r.algbw, ++with_bandwidth;
    // Before the harness's summary line: nccl-tests' "Avg bus bandwidth".
    if (ctx.is_root())
      std::printf("# average bandwidth %.3f GB/s over the %d rows with one\n",
                  with_bandwidth ? bandwidth / with_bandwidth : 0.0, with_bandwidth);
    return h.finish(/*written_elsewhere=*/true);
  } catch (const UsageError& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "tessera_bench_distributed: %s\n", e.what());
    return 2;
  }
}
