// tessera_bench_transpose_distributed: the distributed transpose (and redistribution) per phase,
// with its exchange next to the same all-to-all measured alone. For each global shape and each
// pair of layouts: warm-up calls, then --iters timed calls, each after a barrier; per phase the
// mean per call, the slowest rank's; pack + unpack as a share of the whole; the exchange against
// a bare DeviceComm::alltoallv of the same byte counts per peer between buffers of the same sizes
// (what the framework cannot do faster than); every result checked element by element against
// the generator (element (i, j) of A depends only on the seed and i * cols + j; blocks above 2^24
// elements: a sample of their rows): the row's VALID/INVALID verdict. Flags, statistics and the JSON
// report: the harness (bench/common).
//
//   mpirun -n 4 tessera_bench_transpose_distributed --backend cuda --m 16384 --n 16384
//
// Layout pairs (--pairs): rows:rows (the slab transpose of an FFT: every rank sends every other a
// piece), rows:cols (each rank keeps its piece: no exchange), rows:2d, 2d:2d; a name is rows, cols,
// 2d (MPI_Dims_create's grid) or RxC; a pair prefixed with "=" is a redistribution (B = A).
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app.hpp"
#include "cli.hpp"
#include "harness.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/redistribute.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

struct Options {
  std::string backend = "auto";
  std::string dtype = "float";
  std::vector<index_t> m = {4096}, n = {4096};
  std::vector<std::string> pairs = {"rows:rows", "rows:cols", "rows:2d", "2d:2d", "=rows:cols"};
  int iters = 10;  // from the harness
  int warmup = 2;
};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    out.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

index_t parse_count(const std::string& flag, const std::string& text) {
  return apps::parse_count(text, flag, 0, index_t(1) << 40);
}

// The harness's flags (-b/-e: bytes of a square global matrix, instead of --m/--n; -f, -n, -w,
// --json) and this benchmark's own.
void add_options(bench::Harness& h, Options& o) {
  auto counts = [](std::string_view text, const char* flag) {
    std::vector<index_t> v;
    for (const auto& s : split(std::string(text), ',')) v.push_back(parse_count(flag, s));
    return v;
  };
  h.add_option({"--backend"}, "auto|cpu|cuda", "where local work runs (default auto)",
               [&o](std::string_view v) { o.backend = std::string(v); });
  h.add_option({"--dtype"}, "float|double", "element type (default float)", [&o](std::string_view v) {
    if (v != "float" && v != "double") throw UsageError("--dtype: '" + std::string(v) + "' (expected float or double)");
    o.dtype = std::string(v);
  });
  h.add_option({"--m"}, "LIST", "global rows of A, comma-separated, paired in order with --n (default 4096)",
               [&o, counts](std::string_view v) { o.m = counts(v, "--m"); });
  h.add_option({"--n"}, "LIST", "global columns of A (default 4096)", [&o, counts](std::string_view v) { o.n = counts(v, "--n"); });
  h.add_option({"--pairs"}, "LIST",
               "FROM:TO layout pairs (rows, cols, 2d, RxC); '=' first: redistribute (default "
               "rows:rows,rows:cols,rows:2d,2d:2d,=rows:cols)",
               [&o](std::string_view v) {
                 o.pairs = split(std::string(v), ',');
                 for (const auto& p : o.pairs)
                   if (p.empty() || split(p[0] == '=' ? p.substr(1) : p, ':').size() != 2)
                     throw UsageError("--pairs: '" + p + "' is not FROM:TO");
               });
}

ProcessGrid grid_of(const Context& ctx, const std::string& name) {
  if (name == "rows") return row_block_grid(ctx);
  if (name == "cols") return column_block_grid(ctx);
  if (name == "2d") return ProcessGrid::create(ctx);
  const auto dims = split(name, 'x');
  if (dims.size() != 2) throw UsageError("--pairs: unknown layout '" + name + "' (rows, cols, 2d or RxC)");
  return ProcessGrid::create(ctx, static_cast<int>(parse_count("--pairs", dims[0])), static_cast<int>(parse_count("--pairs", dims[1])));
}

std::string grid_text(const ProcessGrid& g) { return std::to_string(g.rows()) + "x" + std::to_string(g.cols()); }

// The slowest rank's value.
double slowest(const Context& ctx, double v) { return ctx.comm().allreduce(v, ReduceOp::max); }

// The exchange of the transpose alone: the same byte counts per peer (from the same plan), between
// buffers of the sizes the pieces need, 256-byte aligned as the framework places them.
template <class T>
double exchange_alone(const Context& ctx, const DistMatrix<T>& a, const ProcessGrid& to, bool transposed, const Options& o) {
  const int ranks = ctx.size(), me = ctx.rank();
  const auto plan = detail::plan_redistribution(a.rows(), a.cols(), {a.grid().rows(), a.grid().cols()},
                                                {to.rows(), to.cols()}, transposed, me);
  std::vector<std::size_t> send_bytes(static_cast<std::size_t>(ranks), 0), send_offsets = send_bytes,
      recv_bytes = send_bytes, recv_offsets = send_bytes;
  std::size_t send_total = 0, recv_total = 0;
  for (int p = 0; p < ranks; ++p) {
    if (p == me) continue;
    const auto i = static_cast<std::size_t>(p);
    send_bytes[i] = static_cast<std::size_t>(plan.send[i].size()) * sizeof(T);
    send_offsets[i] = send_total;
    send_total = (send_total + send_bytes[i] + 255) / 256 * 256;
    recv_bytes[i] = static_cast<std::size_t>(plan.recv[i].size()) * sizeof(T);
    recv_offsets[i] = recv_total;
    recv_total = (recv_total + recv_bytes[i] + 255) / 256 * 256;
  }
  const kernels::Queue& queue = ctx.queue();
  void* send = send_total ? kernels::allocate(queue, send_total) : nullptr;
  void* recv = recv_total ? kernels::allocate(queue, recv_total) : nullptr;
  const DeviceComm comm(ctx);
  for (int i = 0; i < o.warmup; ++i) comm.alltoallv(send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets);
  double total = 0;
  for (int i = 0; i < o.iters; ++i) {
    ctx.comm().barrier();
    Stopwatch watch;
    comm.alltoallv(send, send_bytes, send_offsets, recv, recv_bytes, recv_offsets);
    queue.synchronize();
    total += watch.seconds();
  }
  if (send) kernels::deallocate(queue, send);
  if (recv) kernels::deallocate(queue, recv);
  return slowest(ctx, total / o.iters);
}

// Elements of b that are not what the generator put at their place in A (or A^T), over all ranks:
// every element of a block up to 2^24 elements, else every k-th row of it (and its last).
template <class T>
long long wrong_elements(const Context& ctx, const DistMatrix<T>& b, index_t a_cols, bool transposed, std::uint64_t seed) {
  const index_t rows = b.local_rows(), cols = b.local_cols();
  const index_t stride = rows * cols <= (index_t(1) << 24) ? 1 : std::max<index_t>(1, rows * cols / (index_t(1) << 24));
  std::vector<T> row(static_cast<std::size_t>(cols));
  std::int64_t wrong = 0;
  for (index_t r = 0; r < rows; r = (r + stride < rows || r == rows - 1) ? r + stride : rows - 1) {
    kernels::copy_to_host(ctx.queue(), row.data(), b.local_data() + r * cols, row.size() * sizeof(T));
    for (index_t c = 0; c < cols; ++c) {
      const index_t i = b.row_offset() + r, j = b.col_offset() + c;
      const index_t in_a = transposed ? j * a_cols + i : i * a_cols + j;
      if (!(row[static_cast<std::size_t>(c)] == counter_value<T>(seed, static_cast<std::uint64_t>(in_a)))) ++wrong;
    }
  }
  return ctx.comm().allreduce(wrong, ReduceOp::sum);
}

template <class T>
long long run_all(const Context& ctx, const Options& o, bench::Harness& h) {
  long long wrong_total = 0;
  const std::uint64_t seed = 2024;
  for (std::size_t s = 0; s < o.m.size(); ++s) {
    for (const std::string& pair_text : o.pairs) {
      const bool transposed = pair_text[0] != '=';
      const auto names = split(transposed ? pair_text : pair_text.substr(1), ':');
      const ProcessGrid from = grid_of(ctx, names[0]), to = grid_of(ctx, names[1]);
      DistMatrix<T> a(from, o.m[s], o.n[s]);
      a.generate(seed);
      DistMatrix<T> b;
      auto call = [&](PhaseTimes* t) { b = transposed ? transpose(a, to, t) : redistribute(a, to, t); };
      for (int i = 0; i < o.warmup; ++i) call(nullptr);
      PhaseTimes sum;
      double elapsed = 0;
      std::vector<double> samples;
      for (int i = 0; i < o.iters; ++i) {
        ctx.comm().barrier();
        Stopwatch watch;
        call(&sum);
        ctx.queue().synchronize();
        samples.push_back(watch.seconds());
        elapsed += samples.back();
      }
      samples = bench::slowest_rank(ctx, samples);
      const double total = slowest(ctx, elapsed / o.iters);
      const double pack = slowest(ctx, sum.local / o.iters), exchange = slowest(ctx, sum.communication / o.iters);
      const double unpack = slowest(ctx, sum.fixup / o.iters), plan = slowest(ctx, sum.host / o.iters);
      const long long wrong = wrong_elements(ctx, b, o.n[s], transposed, seed);
      b = DistMatrix<T>();
      const double alone = exchange_alone(ctx, a, to, transposed, o);
      wrong_total += wrong;
      const double bytes = 2.0 * static_cast<double>(o.m[s]) * static_cast<double>(o.n[s]) * sizeof(T);
      char shape[48];
      std::snprintf(shape, sizeof shape, "%lldx%lld", static_cast<long long>(o.m[s]), static_cast<long long>(o.n[s]));
      if (ctx.is_root()) {
        std::printf("%-12s %-15s %-13s %9.3f %9.3f %9.3f %9.3f %8.3f %6.1f%% %9.3f %6.2f %8.2f %6lld\n",
                    transposed ? "transpose" : "redistribute", shape, (grid_text(from) + "->" + grid_text(to)).c_str(),
                    total * 1e3, pack * 1e3, exchange * 1e3, unpack * 1e3, plan * 1e3,
                    total > 0 ? 100.0 * (pack + unpack) / total : 0.0, alone * 1e3, alone > 0 ? exchange / alone : 0.0,
                    total > 0 ? bytes / total / 1e9 : 0.0, wrong);
        std::fflush(stdout);
      }
      const std::string op = transposed ? "transpose" : "redistribute", grids = grid_text(from) + "->" + grid_text(to);
      bench::Row& row = h.row(op + " " + shape + " " + grids);
      row.set("op", op)
          .set("dtype", o.dtype)
          .set("rows", o.m[s])
          .set("cols", o.n[s])
          .set("grids", grids)
          .set("total_s", total)
          .set("pack_s", pack)
          .set("exchange_s", exchange)
          .set("unpack_s", unpack)
          .set("plan_s", plan)
          .set("alltoall_alone_s", alone)
          .set("gbs", total > 0 ? bytes / total / 1e9 : 0.0)
          .set("wrong", wrong);
      row.time(samples);
      if (exchange > 0 && alone > 0) row.share("alltoall_alone", alone / exchange);
      row.verdict(wrong == 0, std::to_string(wrong) + " wrong elements");
      h.print_pending();
    }
  }
  return wrong_total;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  using namespace tessera;
  Runtime runtime(argc, argv);
  bench::Harness h("tessera_bench_transpose_distributed",
                   "The distributed transpose (and redistribution) per phase, its exchange next to the same\n"
                   "all-to-all alone, under mpirun or srun. Shapes: --m/--n, or square matrices of -b to -e bytes.",
                   {.minbytes = index_t(64) << 20, .maxbytes = index_t(64) << 20, .stepfactor = 4, .iters = 10, .warmup = 2});
  h.set_root(runtime.world_rank() == 0);
  try {
    Options o;
    add_options(h, o);
    if (!h.parse(argc, argv)) return 0;
    if (h.sizes_given() && (h.given("--m") || h.given("--n"))) throw UsageError("--m/--n and -b/-e: give one or the other");
    if (h.sizes_given()) o.m = o.n = h.square_sides(o.dtype == "float" ? sizeof(float) : sizeof(double));
    if (o.m.size() != o.n.size()) throw UsageError("--m and --n: give as many rows as columns");
    o.iters = h.iters();
    o.warmup = h.warmup();
    const Context ctx = runtime.start(parse_backend_choice(o.backend));
    if (!h.json_path().empty()) apps::for_flag("--json", [&] { io::check_output_file(ctx, h.json_path()); });
    h.configuration()["ranks"] = ctx.size();
    h.configuration()["backend"] = runtime.describe();
    h.configuration()["device_path"] = to_string(device_comm_path(ctx));
    h.configuration()["statistic"] = "fields *_s: the slowest rank's mean per call; time_s: each call's slowest rank";
    h.set_environment(bench::environment_json(describe_environment(ctx)));
    if (ctx.is_root()) {
      std::printf("# tessera_bench_transpose_distributed: %s, %s\n# device path: %s, iters %d, warmup %d; times in ms, "
                  "each the slowest rank's mean per call\n",
                  runtime.describe().c_str(), o.dtype.c_str(), to_string(device_comm_path(ctx)), o.iters, o.warmup);
      std::printf("# pack+unp: (pack + unpack) / total; alone: the same alltoallv by itself; xch/alone: exchange / alone\n");
      std::printf("%-12s %-15s %-13s %9s %9s %9s %9s %8s %7s %9s %6s %8s %6s\n", "op", "shape", "grids", "total", "pack",
                  "exchange", "unpack", "plan", "pk+unp", "alone", "ratio", "GB/s", "wrong");
    }
    const long long wrong = o.dtype == "float" ? run_all<float>(ctx, o, h) : run_all<double>(ctx, o, h);
    if (ctx.is_root()) std::printf("# %lld wrong elements\n", wrong);
    if (!h.json_path().empty()) apps::write_json_report(ctx, h.json_path(), h.report());
    return h.finish(/*written_elsewhere=*/true);
  } catch (const UsageError& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "tessera_bench_transpose_distributed: %s\n", e.what());
    return 2;
  }
}
