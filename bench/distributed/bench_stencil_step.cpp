// tessera_bench_stencil_step: one Jacobi iteration of a distributed 2-D field, in its parts. For each
// block size per rank (weak scaling: the global field grows with the grid), the slowest rank's median
// over --iters timed calls (each after a barrier) of
//   sweep        the stencil over the whole block, no exchange
//   split        the same cells cut as the overlapped step cuts them (the interior, and the frame
//                on the second queue), no exchange: the least an overlapped step can take
//   exchange     the halo exchange alone (the solver's HaloExchange on its path, which TESSERA_HALO
//                chooses: peer-store stores the cells into the neighbours' ghost cells, peer-copy
//                packs them into their receive slots, device-comm packs, sends and unpacks)
//   back-to-back one iteration: the sweep, then the exchange
//   overlapped   one iteration: the edge cells, then their exchange beside the interior sweep (on
//                peer-store the edge cells' sweep stores them straight into the neighbours' ghost
//                cells, at the end of the interior's launch where the path column says "frame
//                last"; on the other paths it writes them where the exchange sends them from)
// and the share of the exchange the overlap hides, (sweep + exchange - overlapped) / exchange; then
// the same per iteration of a run of --run K (each part queued K times back to back, as the solver's
// run_until queues iterations: the host queues the next while the device runs the last, so its
// launch latency leaves the iteration's time), with the share hidden behind the split sweep too,
// (split + exchange - overlapped) / exchange. The two kinds of iteration are checked to give
// bitwise the same field (the row's VALID/INVALID verdict; the harness, bench/common, gives the flags,
// the statistics and the JSON report). One rank per GPU under mpirun (ranks that share a GPU measure the path,
// not the scaling); the cpu backend works too.
//
//   mpirun -np 4 tessera_bench_stencil_step --backend cuda --sizes 1024,4096,8192 --stencil 5 --json out.json
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "app.hpp"
#include "cli.hpp"
#include "harness.hpp"
#include "tessera/framework/algorithms/stencil.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/timer.hpp"

namespace tessera {
namespace {

struct Options {
  std::string backend = "auto";
  std::vector<index_t> sizes;
  int grid_rows = 0, grid_cols = 0;
  StencilShape shape = StencilShape::five_point;
  std::string dtype = "float";
  int ghost = 1;
  int iters = 20;  // from the harness
  int warmup = 3;
  int run = 100;
};

// The harness's flags (-b/-e: bytes of each rank's square block, instead of --sizes; -f, -n, -w,
// --json) and this benchmark's own.
void add_options(bench::Harness& h, Options& o) {
  h.add_option({"--backend"}, "auto|cpu|cuda", "where local work runs (default auto)",
               [&o](std::string_view v) { o.backend = std::string(v); });
  h.add_option({"--sizes"}, "N,N,...", "the block of each rank, N x N cells (default 256,1024 on cpu; 1024,4096,8192 on cuda)",
               [&o](std::string_view v) {
                 o.sizes.clear();
                 for (std::size_t at = 0; at <= v.size();) {
                   const std::size_t comma = std::min(v.find(',', at), v.size());
                   o.sizes.push_back(apps::parse_count(v.substr(at, comma - at), "--sizes", 1, index_t(1) << 31));
                   at = comma + 1;
                 }
               });
  h.add_option({"--grid"}, "RxC", "the process grid (default: the most square)", [&o](std::string_view v) {
    const auto x = v.find('x');
    if (x == std::string_view::npos) throw UsageError("--grid: expected RxC, got '" + std::string(v) + "'");
    o.grid_rows = static_cast<int>(apps::parse_integer(v.substr(0, x), "--grid", 1, 1 << 20));
    o.grid_cols = static_cast<int>(apps::parse_integer(v.substr(x + 1), "--grid", 1, 1 << 20));
  });
  h.add_option({"--stencil"}, "5|9", "the stencil (default 5)", [&o](std::string_view v) {
    if (v == "5") o.shape = StencilShape::five_point;
    else if (v == "9") o.shape = StencilShape::nine_point;
    else throw UsageError("--stencil: expected 5 or 9, got '" + std::string(v) + "'");
  });
  h.add_option({"--dtype"}, "float|double", "element type (default float)", [&o](std::string_view v) {
    if (v != "float" && v != "double") throw UsageError("--dtype: expected float or double");
    o.dtype = std::string(v);
  });
  h.add_option({"--ghost"}, "W", "ghost width (default 1)",
               [&o](std::string_view v) { o.ghost = static_cast<int>(apps::parse_integer(v, "--ghost", 1, 1 << 20)); });
  h.add_option({"--run"}, "K", "iterations of each timed run, whose time per iteration is reported too (default 100; 0: none)",
               [&o](std::string_view v) { o.run = static_cast<int>(apps::parse_integer(v, "--run", 0, 1 << 30)); });
}

struct Result {
  index_t block = 0, rows = 0, cols = 0;
  double sweep = 0, split = 0, exchange = 0, back_to_back = 0, overlapped = 0;  // seconds, slowest rank's median
  // The same per iteration of a run of --run iterations (0 where not run).
  double run_sweep = 0, run_split = 0, run_exchange = 0, run_back_to_back = 0, run_overlapped = 0;
  double halo_bytes = 0;  // sent per rank per exchange, the largest
  int peers = 0;
  std::string halo_path;  // the solver's HaloExchange::path(), and whether the last step went frame last
  bool agree = true;
  std::vector<double> overlapped_samples;  // per call of the overlapped step, the slowest rank's time
};

// The slowest rank's median time of `call` over `iters` calls, each after a barrier: a step of
// tens of microseconds timed from the host, where one call in twenty that the host delays would
// move a mean by more than the overlap saves.
// With `samples`, also each call's slowest rank's time.
template <class Call>
double slowest_median(const Context& ctx, int warmup, int iters, Call&& call, std::vector<double>* samples = nullptr) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    ctx.comm().barrier();
    Stopwatch watch;
    call();
    times.push_back(watch.seconds());
  }
  if (samples) *samples = bench::slowest_rank(ctx, times);
  return ctx.comm().allreduce(apps::median(std::move(times)), ReduceOp::max);
}

template <class T>
Result run(const ProcessGrid& grid, const Options& o, index_t block) {
  const Context& ctx = grid.context();
  Result r;
  r.block = block;
  r.rows = block * grid.rows();
  r.cols = block * grid.cols();
  const StencilWeights<T> w = o.shape == StencilShape::five_point ? StencilWeights<T>::jacobi5() : StencilWeights<T>::jacobi9();
  auto make = [&] {
    Field2D<T> f(grid, r.rows, r.cols, o.ghost);
    f.fill(T(0));
    f.set_outer_ghosts([](index_t i, index_t) { return i < 0 ? T(1) : T(0); });
    return f;
  };
  Field2D<T> u = make();
  JacobiOptions options;
  Jacobi<T> solver(u, w, options);
  tessera::detail::JacobiParts<T> parts(solver);
  r.sweep = slowest_median(ctx, o.warmup, o.iters, [&] { parts.sweep(); });
  r.split = slowest_median(ctx, o.warmup, o.iters, [&] { parts.sweep_split(); });
  r.exchange = slowest_median(ctx, o.warmup, o.iters, [&] { parts.exchange(); });
  r.back_to_back = slowest_median(ctx, o.warmup, o.iters, [&] { parts.step(false); });
  r.overlapped = slowest_median(ctx, o.warmup, o.iters, [&] { parts.step(true); }, &r.overlapped_samples);
  if (o.run > 0) {
    const int warmup = std::min(o.warmup, 1);
    const double k = o.run;
    r.run_sweep = slowest_median(ctx, warmup, o.iters, [&] { parts.sweep(o.run); }) / k;
    r.run_split = slowest_median(ctx, warmup, o.iters, [&] { parts.sweep_split(o.run); }) / k;
    r.run_exchange = slowest_median(ctx, warmup, o.iters, [&] { parts.exchange(o.run); }) / k;
    r.run_back_to_back = slowest_median(ctx, warmup, o.iters, [&] { parts.step(false, o.run); }) / k;
    r.run_overlapped = slowest_median(ctx, warmup, o.iters, [&] { parts.step(true, o.run); }) / k;
  }
  r.halo_bytes = ctx.comm().allreduce(static_cast<double>(solver.halo().bytes_sent()), ReduceOp::max);
  r.peers = ctx.comm().allreduce(solver.halo().peers(), ReduceOp::max);
  r.halo_path = std::string(solver.halo().path()) + (solver.frame_last() ? ", frame last" : "");
  // The two kinds of iteration from the same field: bitwise the same result.
  Field2D<T> a = make(), b = make();
  {
    Jacobi<T> sa(a, w, options), sb(b, w, options);
    for (int k = 0; k < 3; ++k) {
      tessera::detail::JacobiParts<T>(sa).step(true);
      tessera::detail::JacobiParts<T>(sb).step(false);
    }
  }
  const std::vector<T> x = a.local_to_host(), y = b.local_to_host();
  const int same = std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0 ? 1 : 0;
  r.agree = ctx.comm().allreduce(same, ReduceOp::min) == 1;
  return r;
}

double hidden_share(double sweep, double exchange, double overlapped) {
  return exchange > 0 ? (sweep + exchange - overlapped) / exchange : 0;
}

void print_header() {
  std::printf("%12s %14s %10s %10s %11s %11s %13s %11s %8s %11s %6s %11s | ", "block/rank", "global", "sweep us",
              "split us", "exchange us", "b2b us", "overlapped us", "hidden", "Gcell/s", "halo KiB", "peers",
              "% of sweep");
  std::printf("%9s %9s %9s %9s %9s %9s %9s %6s  %s\n", "run: swp", "split", "exch", "b2b", "ovl", "hidden",
              "v. split", "agree", "halo path");
}

void print_row(const Result& r) {
  const double cells = static_cast<double>(r.rows) * static_cast<double>(r.cols);
  std::printf("%12s %14s %10.1f %10.1f %11.1f %11.1f %13.1f %10.1f%% %8.2f %11.1f %6d %10.1f%% | ",
              (std::to_string(r.block) + "^2").c_str(), (std::to_string(r.rows) + "x" + std::to_string(r.cols)).c_str(),
              r.sweep * 1e6, r.split * 1e6, r.exchange * 1e6, r.back_to_back * 1e6, r.overlapped * 1e6,
              100 * hidden_share(r.sweep, r.exchange, r.overlapped), cells / r.overlapped / 1e9, r.halo_bytes / 1024,
              r.peers, 100 * r.sweep / r.overlapped);
  std::printf("%9.1f %9.1f %9.1f %9.1f %9.1f %8.1f%% %8.1f%% %6s  %s\n", r.run_sweep * 1e6, r.run_split * 1e6,
              r.run_exchange * 1e6, r.run_back_to_back * 1e6, r.run_overlapped * 1e6,
              100 * hidden_share(r.run_sweep, r.run_exchange, r.run_overlapped),
              100 * hidden_share(r.run_split, r.run_exchange, r.run_overlapped), r.agree ? "yes" : "NO",
              r.halo_path.c_str());
  std::fflush(stdout);
}

// The harness's row: the fields, the overlapped step's time per call (slowest rank), its share of
// the sweep alone (sweep / overlapped), VALID when both kinds of iteration agree bitwise.
void add_row(bench::Harness& h, const Result& r) {
  bench::Row& row = h.row("block=" + std::to_string(r.block) + " global=" + std::to_string(r.rows) + "x" +
                          std::to_string(r.cols));
  row.set("block", r.block)
      .set("rows", r.rows)
      .set("cols", r.cols)
      .set("sweep_s", r.sweep)
      .set("split_s", r.split)
      .set("exchange_s", r.exchange)
      .set("back_to_back_s", r.back_to_back)
      .set("overlapped_s", r.overlapped)
      .set("run_sweep_s", r.run_sweep)
      .set("run_split_s", r.run_split)
      .set("run_exchange_s", r.run_exchange)
      .set("run_back_to_back_s", r.run_back_to_back)
      .set("run_overlapped_s", r.run_overlapped)
      .set("halo_bytes", r.halo_bytes)
      .set("peers", r.peers)
      .set("halo_path", r.halo_path)
      .set("agree", r.agree);
  row.time(r.overlapped_samples).share("sweep_alone", r.overlapped > 0 ? r.sweep / r.overlapped : 0.0);
  row.verdict(r.agree, "overlapped and back-to-back iterations differ");
  h.print_pending();
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  Runtime runtime(argc, argv);
  bench::Harness h("tessera_bench_stencil_step",
                   "One Jacobi iteration of a distributed 2-D field in its parts (sweep, exchange, back to back,\n"
                   "overlapped), weak scaling: each rank's block is --sizes N x N cells, or from -b to -e bytes.",
                   {.minbytes = index_t(256) << 10, .maxbytes = index_t(4) << 20, .stepfactor = 4, .iters = 20, .warmup = 3});
  h.set_root(runtime.world_rank() == 0);
  try {
    Options o;
    add_options(h, o);
    if (!h.parse(argc, argv)) return 0;
    if (h.sizes_given() && h.given("--sizes")) throw UsageError("--sizes and -b/-e: give one or the other");
    o.iters = h.iters();
    o.warmup = h.warmup();
    const Context ctx = runtime.start(parse_backend_choice(o.backend));
    if (!h.json_path().empty()) apps::for_flag("--json", [&] { io::check_output_file(ctx, h.json_path()); });
    if (h.sizes_given()) o.sizes = h.square_sides(o.dtype == "float" ? sizeof(float) : sizeof(double));
    if (o.sizes.empty())
      o.sizes = ctx.backend() == Backend::cuda ? std::vector<index_t>{1024, 4096, 8192} : std::vector<index_t>{256, 1024};
    const ProcessGrid grid = ProcessGrid::create(ctx, o.grid_rows, o.grid_cols);
    h.configuration()["ranks"] = ctx.size();
    h.configuration()["backend"] = runtime.describe();
    h.configuration()["device_path"] = to_string(device_comm_path(ctx));
    h.configuration()["grid"] = std::to_string(grid.rows()) + "x" + std::to_string(grid.cols());
    h.configuration()["stencil"] = to_string(o.shape);
    h.configuration()["dtype"] = o.dtype;
    h.configuration()["ghost"] = o.ghost;
    h.configuration()["run"] = o.run;
    h.configuration()["statistic"] =
        "fields *_s: the slowest rank's median over iters calls (run_*: of calls of run iterations, per iteration); "
        "time_s: the overlapped step, each call's slowest rank";
    h.set_environment(bench::environment_json(describe_environment(ctx)));
    if (ctx.is_root()) {
      std::printf("# tessera_bench_stencil_step: %s\n"
                  "# device path %s, grid %dx%d, %s %s, ghost %d, iters %d, warmup %d, run %d\n",
                  runtime.describe().c_str(), to_string(device_comm_path(ctx)), grid.rows(), grid.cols(),
                  to_string(o.shape), o.dtype.c_str(), o.ghost, o.iters, o.warmup, o.run);
      print_header();
    }
    for (index_t block : o.sizes) {
      const Result r = o.dtype == "float" ? run<float>(grid, o, block) : run<double>(grid, o, block);
      if (ctx.is_root()) print_row(r);
      add_row(h, r);
    }
    if (!h.json_path().empty()) apps::write_json_report(ctx, h.json_path(), h.report());
    return h.finish(/*written_elsewhere=*/true);
  } catch (const UsageError& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "tessera_bench_stencil_step: %s\n", e.what());
    return 2;
  }
}
