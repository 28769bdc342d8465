// scaling: strong and weak scaling of one distributed operation from a single launch of P ranks.
// Each point runs on the sub-communicator of the first p ranks (the others wait, asleep, at a world
// barrier), once per round, in rounds until the 95% interval of each point's median is known; a
// projection whose model misses a held-out point beyond --max-fit-error is withheld. The analysis
// (Amdahl, Karp-Flatt, Gustafson, the cost model and its projection) lives in
// framework/scaling.hpp and is explained in docs/SCALING.md. The command line, number parsing, timing
// over repeats and the JSON writer are the apps' shared ones (apps/common).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "app.hpp"
#include "cli.hpp"
#include "json.hpp"
#include "tessera/build_config.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/scaling.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/queue.hpp"
#include "two_level.hpp"

namespace sc = tessera::scaling;
namespace apps = tessera::apps;
using tessera::index_t;
using tessera::UsageError;
using apps::Json;

namespace {

// ------------------------------------------------------------------------------------------------
// Command line

struct Options {
  sc::Op op = sc::Op::sum;
  std::vector<sc::Mode> modes{sc::Mode::strong};
  std::optional<index_t> n, n_per_rank;
  std::vector<int> ranks;  // empty: powers of two up to P, and P
  int repeat = 3;          // timed calls per point per round
  int warmup = 1;
  int rounds = 6;          // rounds over all points, at least ...
  int max_rounds = 12;     // ... and at most, while some point's spread is above max_spread
  double max_spread = 0.2;     // a point is noisy when its 95% interval is wider than this x its median
  double max_fit_error = 0.25; // a fit or model check off by more than this (relative) is not used
  std::string json, csv;
  std::string backend = "auto";
  tessera::io::DType dtype = tessera::io::DType::float32;
  index_t panel_width = 512;
  index_t ping_bytes = index_t(4) << 20;
  std::uint64_t seed = 42;
  bool probe_gpus = false;
  int threads = 0;  // OpenMP threads per rank; 0: OMP_NUM_THREADS, else the runtime's choice
  bool quiet = false;
  bool help = false;
  bool version = false;
};

std::vector<int> parse_rank_list(std::string_view text, int world_size) {
  if (text.empty()) throw UsageError("--ranks: empty list");
  std::vector<int> ranks;
  for (std::size_t begin = 0;;) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view item = text.substr(begin, comma - begin);
    if (item.empty()) throw UsageError("--ranks: empty entry in '" + std::string(text) + "'");
    const auto p = apps::parse_integer(item, "--ranks", 1, std::numeric_limits<int>::max());
    if (p > world_size)
      throw UsageError("--ranks: " + std::string(item) + " ranks asked for, but the job has only " +
                       std::to_string(world_size));
    ranks.push_back(static_cast<int>(p));
    if (comma == text.size()) break;
    begin = comma + 1;
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

void add_options(apps::ArgParser& p, Options& o, int world_size) {
  p.add_option("--op", "sum|scan|filter|matmul", "the operation measured (default sum)",
               [&o](std::string_view v) { o.op = sc::parse_op(std::string(v)); });
  p.add_option("--mode", "strong|weak|both", "which scaling study (default strong)", [&o](std::string_view v) {
    if (v == "strong") o.modes = {sc::Mode::strong};
    else if (v == "weak") o.modes = {sc::Mode::weak};
    else if (v == "both") o.modes = {sc::Mode::strong, sc::Mode::weak};
    else throw UsageError("--mode: unknown mode '" + std::string(v) + "' (expected strong, weak or both)");
  });
  p.add_option("--n", "N",
               "strong scaling: global elements (matmul: matrix side) (default 2^22; matmul 512)",
               [&o](std::string_view v) { o.n = apps::parse_size(v, "--n"); });
  p.add_option("--n-per-rank", "N",
               "weak scaling: elements per rank (matmul: side at 1 rank, grows as p^(1/3))\n" +
                   std::string(34, ' ') + "(default 2^20; matmul 256)",
               [&o](std::string_view v) { o.n_per_rank = apps::parse_size(v, "--n-per-rank"); });
  p.add_option("--ranks", "1,2,4,...", "sub-communicator sizes to measure (default: 1, 2, 4, ... up to P, and P)",
               [&o, world_size](std::string_view v) { o.ranks = parse_rank_list(v, world_size); });
  p.add_option("--repeat", "R", "timed calls per point in each round; a round's time is their median (default 3)",
               [&o](std::string_view v) { o.repeat = static_cast<int>(apps::parse_integer(v, "--repeat", 1, 1000000)); });
  p.add_option("--rounds", "K",
               "rounds over all points, at least (default 6); a point's time is the median over rounds",
               [&o](std::string_view v) { o.rounds = static_cast<int>(apps::parse_integer(v, "--rounds", 1, 100000)); });
  p.add_option("--max-rounds", "K", "more rounds, up to K, while a point is noisy (default 12, at least --rounds)",
               [&o](std::string_view v) { o.max_rounds = static_cast<int>(apps::parse_integer(v, "--max-rounds", 1, 100000)); });
  p.add_option("--max-spread", "F",
               "a point whose 95% interval of the median is wider than F x the median is noisy (default 0.2)",
               [&o](std::string_view v) {
                 o.max_spread = apps::parse_real(v, "--max-spread");
                 if (!(o.max_spread >= 0) || !std::isfinite(o.max_spread))
                   throw UsageError("--max-spread: '" + std::string(v) + "' is not a non-negative number");
               });
  p.add_option("--max-fit-error", "F",
               "no projection when the model misses a held-out point by more than F (relative),\n" +
                   std::string(34, ' ') + "and a fit off by more than F is marked as not describing the points (default 0.25)",
               [&o](std::string_view v) {
                 o.max_fit_error = apps::parse_real(v, "--max-fit-error");
                 if (!(o.max_fit_error >= 0) || !std::isfinite(o.max_fit_error))
                   throw UsageError("--max-fit-error: '" + std::string(v) + "' is not a non-negative number");
               });
  p.add_option("--warmup", "W", "untimed repetitions before the timed ones (default 1)",
               [&o](std::string_view v) { o.warmup = static_cast<int>(apps::parse_integer(v, "--warmup", 0, 1000000)); });
  p.add_option("--json", "FILE", "write the JSON report to FILE", [&o](std::string_view v) { o.json = v; });
  p.add_option("--csv", "FILE", "write one CSV row per measured point to FILE", [&o](std::string_view v) { o.csv = v; });
  p.add_option("--backend", "auto|cpu|cuda", "where local work runs (default auto)", [&o](std::string_view v) {
    tessera::parse_backend_choice(v);  // refuses what it does not know, naming it
    o.backend = v;
  });
  apps::add_threads_option(p, &o.threads);
  p.add_option("--dtype", "float32|float64|int32|int64", "element type (default float32)", [&o](std::string_view v) {
    const auto dtype = tessera::io::parse_dtype(v);
    if (!dtype)
      throw UsageError("--dtype: unknown type '" + std::string(v) + "' (expected float32, float64, int32 or int64)");
    o.dtype = *dtype;
  });
  p.add_option("--panel-width", "B", "matmul: SUMMA panel width (default 512)", [&o](std::string_view v) {
    o.panel_width = apps::parse_integer(v, "--panel-width", 1, std::numeric_limits<index_t>::max());
  });
  p.add_option("--ping-bytes", "BYTES", "size of the bandwidth-bound allreduce ping (default 4M)",
               [&o](std::string_view v) {
                 o.ping_bytes = apps::parse_size(v, "--ping-bytes");
                 if (o.ping_bytes < 8)
                   throw UsageError("--ping-bytes: '" + std::string(v) + "' is less than one double (8 bytes)");
               });
  p.add_option("--seed", "S", "generator seed: element i depends on (S, i) only (default 42)",
               [&o](std::string_view v) { o.seed = apps::parse_unsigned(v, "--seed"); });
  p.add_switch("--quiet", "no progress lines on stderr", &o.quiet);
  p.add_switch("--probe-gpus",
               "print each rank's host, node-local rank, CUDA_VISIBLE_DEVICES, the GPU the runtime\n" +
                   std::string(34, ' ') + "binds (local_rank % visible devices), its CPUs and OpenMP threads, then exit",
               &o.probe_gpus);
  p.add_switch("--help", "print this help", &o.help);
  p.add_switch("--version", "print the version", &o.version);
}

// Throws UsageError for bad input. argv is the same on every rank, so every rank reaches the same
// verdict without talking to the others.
Options parse(apps::ArgParser& parser, int argc, char** argv, int world_size) {
  Options o;
  add_options(parser, o, world_size);
  // -h, the one short flag scaling has always taken; ArgParser knows only --flags.
  if (argc == 2 && std::string_view(argv[1]) == "-h") {
    o.help = true;
    return o;
  }
  parser.parse(argc, argv);
  if (o.help || o.version) return o;
  const bool matmul = o.op == sc::Op::matmul;
  if (matmul && (o.dtype == tessera::io::DType::int32 || o.dtype == tessera::io::DType::int64))
    throw UsageError(std::string("--dtype ") + tessera::io::to_string(o.dtype) + ": matmul runs on float32 or float64 only");
  if (parser.given("--max-rounds") && o.max_rounds < o.rounds)
    throw UsageError("--max-rounds: " + std::to_string(o.max_rounds) + " is less than --rounds " + std::to_string(o.rounds));
  o.max_rounds = std::max(o.max_rounds, o.rounds);
  if (!o.n) o.n = matmul ? 512 : index_t(1) << 22;
  if (!o.n_per_rank) o.n_per_rank = matmul ? 256 : index_t(1) << 20;
  if (o.ranks.empty()) {
    for (int p = 1; p < world_size; p *= 2) o.ranks.push_back(p);
    o.ranks.push_back(world_size);
  }
  return o;
}

int element_bytes(tessera::io::DType dtype) { return static_cast<int>(tessera::io::size_of(dtype)); }

// The collectives the measured operation makes, as its algorithm declares them (collective_plan.hpp):
// what the cost model charges. matmul's panels are charged by summa_overlap instead.
tessera::CollectivePlan operation_plan(sc::Op op, tessera::io::DType dtype) {
  return tessera::io::dispatch(dtype, [&]<class T>() -> tessera::CollectivePlan {
    switch (op) {
      case sc::Op::sum: return tessera::reduce_plan<T>(tessera::ReduceOp::sum);
      case sc::Op::scan: return tessera::scan_plan<T>();
      case sc::Op::filter: return tessera::filter_plan<T>();
      case sc::Op::matmul: return {};
    }
    return {};
  });
}

// ------------------------------------------------------------------------------------------------
// Waiting without burning a core: ranks outside a point's sub-communicator (and those done early)
// sleep between tests of a non-blocking barrier, so that on an oversubscribed node they do not
// steal cycles from the ranks being measured, as a spinning MPI_Barrier would.

void sleepy_world_barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  TESSERA_MPI_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &request));
  for (;;) {
    int done = 0;
    TESSERA_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// ------------------------------------------------------------------------------------------------
// One measured point.

struct PointResult {
  int ranks = 1;
  index_t size = 0;              // global elements, or matrix side
  apps::TimingSummary timing;    // medians of the slowest rank's wall and phase times
  double other = 0;              // wall time outside the phases (max(0, time - phases))
  double checksum = 0;
};

// The median of samples and a distribution-free confidence interval for it: [x_(k), x_(n+1-k)] of
// the sorted samples, with the largest k whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least
// 95%. Below 6 samples no k reaches 95%: then k = 1 (min and max), and `level` says the coverage.
struct MedianInterval {
  double median = 0, low = 0, high = 0, level = 0;
};

MedianInterval median_interval(std::vector<double> x) {
  MedianInterval m;
  if (x.empty()) return m;
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  m.median = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
  // below[j] = P(B <= j), B ~ Binomial(n, 1/2), in logs for large n.
  auto log_choose = [n](std::size_t i) {
    return std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1);
  };
  std::size_t k = 1;
  double below = 0;  // P(B <= k - 1)
  double level = 1 - 2 * std::exp(log_choose(0) - double(n) * std::log(2.0));
  for (std::size_t next = 2; next <= n / 2; ++next) {
    below += std::exp(log_choose(next - 2) - double(n) * std::log(2.0));
    const double b = below + std::exp(log_choose(next - 1) - double(n) * std::log(2.0));
    if (1 - 2 * b < 0.95) break;
    k = next;
    level = 1 - 2 * b;
  }
  m.low = x[k - 1];
  m.high = x[n - k];
  m.level = std::max(0.0, level);
  return m;
}

// One point measured in every round (rank 0's record), and its summary over the rounds.
struct PointSeries {
  int ranks = 1;
  index_t size = 0;
  std::vector<PointResult> rounds;  // in the order they ran

  std::vector<double> times() const {
    std::vector<double> t;
    for (const auto& r : rounds) t.push_back(r.timing.total);
    return t;
  }
  MedianInterval interval() const { return median_interval(times()); }
  double time() const { return interval().median; }
  // Relative width of the 95% interval of the median.
  double spread() const {
    const MedianInterval m = interval();
    return m.median > 0 ? (m.high - m.low) / m.median : 0;
  }
  // The round whose time is the median (the lower middle one for an even count): its phases add up
  // to at most that time, hence to at most the median.
  const PointResult& median_round() const {
    std::vector<std::size_t> order(rounds.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return rounds[a].timing.total < rounds[b].timing.total; });
    return rounds[order[(order.size() - 1) / 2]];
  }
};

// Runs `call` warmup + repeat times on ctx (the apps' shared measure: per repeat the slowest rank,
// then medians). call(PhaseTimes*) performs one complete operation.
template <class Call>
void time_repeats(const tessera::Context& ctx, const Options& o, Call&& call, PointResult& point) {
  apps::CommonOptions repeats;
  repeats.repeat = o.repeat;
  repeats.warmup = o.warmup;
  point.timing = apps::measure(ctx, repeats, call);
  point.other = std::max(0.0, point.timing.total - point.timing.phases.total());
}

template <class T>
void run_vector_point(const tessera::Context& ctx, const Options& o, PointResult& point) {
  tessera::DistArray<T> array(ctx, point.size);
  array.generate(o.seed);
  switch (o.op) {
    case sc::Op::sum: {
      T result{};
      time_repeats(ctx, o, [&](tessera::PhaseTimes* t) { result = tessera::reduce(array, tessera::ReduceOp::sum, t); },
                   point);
      point.checksum = static_cast<double>(result);
      break;
    }
    case sc::Op::scan: {
      // The output is allocated once, outside the timing: cudaMalloc / cudaFree of a gigabyte cost
      // about a millisecond each, as much as the scan itself, and would pose as serial work.
      tessera::DistArray<T> out(ctx, array.partition());
      time_repeats(ctx, o,
                   [&](tessera::PhaseTimes* t) {
                     tessera::scan(array, out, tessera::ScanKind::inclusive, t);
                     ctx.queue().synchronize();
                   },
                   point);
      // The last element of an inclusive scan is the total.
      if (point.size > 0) {
        const int owner = out.partition().owner(point.size - 1);
        double last = 0;
        if (ctx.rank() == owner) last = static_cast<double>(out.local_to_host().back());
        point.checksum = ctx.comm().bcast_value(last, owner);
      }
      break;
    }
    case sc::Op::filter: {
      tessera::DistArray<T> kept;
      time_repeats(ctx, o,
                   [&](tessera::PhaseTimes* t) {
                     kept = tessera::filter(array, tessera::greater_than<T>(T(0)), t);
                     ctx.queue().synchronize();
                   },
                   point);
      point.checksum = static_cast<double>(kept.global_size());
      break;
    }
    case sc::Op::matmul: break;
  }
}

template <class T>
void run_matmul_point(const tessera::Context& ctx, const Options& o, PointResult& point) {
  const auto grid = tessera::ProcessGrid::create(ctx);
  tessera::DistMatrix<T> a(grid, point.size, point.size), b(grid, point.size, point.size);
  a.generate(o.seed);
  b.generate(o.seed + 1);
  tessera::MatmulOptions options;
  options.panel_width = o.panel_width;
  tessera::DistMatrix<T> c;
  time_repeats(ctx, o,
               [&](tessera::PhaseTimes* t) {
                 c = tessera::matmul(a, b, options, t);
                 ctx.queue().synchronize();
               },
               point);
  double local_sum = 0;
  for (T v : c.local_to_host()) local_sum += static_cast<double>(v);
  point.checksum = ctx.comm().allreduce(local_sum, tessera::ReduceOp::sum);
}

void run_point(const tessera::Context& ctx, const Options& o, PointResult& point) {
  tessera::io::dispatch(o.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      if (o.op == sc::Op::matmul) return run_matmul_point<T>(ctx, o, point);
    }
    run_vector_point<T>(ctx, o, point);
  });
}

// Backend memory (device memory under cuda) for the device pings, zeroed so that every path moves
// defined bytes; freed on scope exit.
class BackendBuffer {
 public:
  BackendBuffer(const tessera::kernels::Queue& queue, std::size_t bytes)
      : queue_(queue), data_(tessera::kernels::allocate(queue, bytes)) {
    const std::vector<unsigned char> zeros(bytes, 0);
    tessera::kernels::copy_from_host(queue, data_, zeros.data(), bytes);
  }
  ~BackendBuffer() { tessera::kernels::deallocate(queue_, data_); }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;
  void* data() const { return data_; }

 private:
  const tessera::kernels::Queue& queue_;
  void* data_;
};

// The pings that give the network models their latency and bandwidth on this communicator, on the
// two paths data takes (docs/SCALING.md):
//   host MPI   an allreduce of one 8-byte value (many iterations, latency-bound) and of ping_bytes:
//              the path of the scalar collectives of sum, scan and filter;
//   DeviceComm a broadcast of 8 bytes and of ping_bytes of backend memory from rank 0: the path of
//              SUMMA's panels (NCCL, CUDA-aware MPI or staged under cuda; host MPI under cpu).
sc::CollectiveSample ping(const tessera::Context& ctx, const Options& o) {
  sc::CollectiveSample s;
  s.ranks = ctx.size();
  MPI_Comm comm = ctx.comm().get();
  auto slowest_rank = [&](double mine) {
    double slowest = 0;
    TESSERA_MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm));
    return slowest;
  };
  auto timed = [&](void* buf, int count, int iterations) {
    for (int i = 0; i < 2; ++i) TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_DOUBLE, MPI_SUM, comm));
    TESSERA_MPI_CHECK(MPI_Barrier(comm));
    tessera::Stopwatch watch;
    for (int i = 0; i < iterations; ++i)
      TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_DOUBLE, MPI_SUM, comm));
    return slowest_rank(watch.seconds() / iterations);
  };
  double one = 1.0;
  s.small_seconds = timed(&one, 1, 200);
  // Below 2^31 elements by construction (--ping-bytes is a buffer, not a data set).
  const index_t count = std::min<index_t>(o.ping_bytes / 8, index_t(1) << 28);
  const std::size_t large_bytes = static_cast<std::size_t>(count) * 8;
  {
    std::vector<double> big(static_cast<std::size_t>(count), 1.0);
    s.large_bytes = static_cast<double>(large_bytes);
    s.large_seconds = timed(big.data(), static_cast<int>(count), 5);
  }

  // The device path. Under cuda the broadcasts are stream-ordered (the host may return before the
  // bytes moved), so the queue is drained before the clock stops. The NCCL communicator is built
  // by the constructor (cached on the MPI communicator), outside the clock.
  const tessera::kernels::Queue& queue = ctx.queue();
  const tessera::DeviceComm device(ctx);
  auto timed_bcast = [&](void* buf, std::size_t bytes, int iterations) {
    for (int i = 0; i < 2; ++i) device.bcast(buf, bytes, 0);
    queue.synchronize();
    TESSERA_MPI_CHECK(MPI_Barrier(comm));
    tessera::Stopwatch watch;
    for (int i = 0; i < iterations; ++i) device.bcast(buf, bytes, 0);
    queue.synchronize();
    return slowest_rank(watch.seconds() / iterations);
  };
  constexpr std::size_t small_bytes = 8;
  const BackendBuffer buffer(queue, large_bytes);
  s.device_small_bytes = static_cast<double>(small_bytes);
  s.device_small_seconds = timed_bcast(buffer.data(), small_bytes, 100);
  s.device_large_bytes = static_cast<double>(large_bytes);
  s.device_large_seconds = timed_bcast(buffer.data(), large_bytes, 5);
  return s;
}


// ------------------------------------------------------------------------------------------------
// Analysis and reports (rank 0).

struct ModeReport {
  sc::Mode mode;
  index_t size_arg = 0;
  std::vector<PointSeries> points;
};

// JSON has no NaN or infinity: the report writes them as null (Karp-Flatt at one rank, say), which
// is what its readers (check_scaling_json.py, gather_scaling.py) expect.
Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
Json number(int v) { return Json(v); }

template <class T>
Json array_of(const std::vector<T>& values) {
  Json a = Json::array();
  for (const T& v : values) a.push_back(number(v));
  return a;
}

// Per point: the median time, and the median round's phases with the rest of the median as host work.
std::vector<sc::Measurement> measurements(const ModeReport& r) {
  std::vector<sc::Measurement> m;
  for (const auto& p : r.points) {
    const auto& t = p.median_round().timing;
    const double time = p.time();
    m.push_back({p.ranks, time, t.phases.local + t.phases.fixup, t.phases.communication,
                 std::max(0.0, time - t.phases.local - t.phases.fixup - t.phases.communication)});
  }
  return m;
}

// The two smallest rank counts measured: the model check fits on them and predicts the rest.
std::vector<int> check_fit_ranks(const std::vector<int>& ranks) {
  std::vector<int> r(ranks.begin(), ranks.begin() + std::min<std::size_t>(2, ranks.size()));
  return r;
}

// "[0.81, 1.02]"
std::string interval_text(double low, double high) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%.3g, %.3g]", low, high);
  return buf;
}

Json interval_json(double low, double high) {
  Json a = Json::array();
  a.push_back(number(low));
  a.push_back(number(high));
  return a;
}

Json mode_json(const Options& o, const ModeReport& r, const std::vector<sc::CollectiveSample>& samples, FILE* text) {
  const bool strong = r.mode == sc::Mode::strong;
  const bool matmul = o.op == sc::Op::matmul;
  const char* dtype = tessera::io::to_string(o.dtype);
  const auto& pts = r.points;
  const MedianInterval first = pts.front().interval();
  const double t_first = first.median;
  const int p_first = pts.front().ranks;
  const double base = strong ? p_first : 1;  // T(1) stands for p_first T(p_first) in strong scaling
  std::vector<int> ranks;
  std::vector<double> times, scaled;
  for (const auto& p : pts) {
    ranks.push_back(p.ranks);
    times.push_back(p.time());
    scaled.push_back(sc::scaled_speedup(t_first, p.time(), p.ranks) / (strong ? 1 : p_first));
  }

  Json j = Json::object();
  j[strong ? "n" : "n_per_rank"] = r.size_arg;
  j["max_spread"] = number(o.max_spread);
  j["max_fit_error"] = number(o.max_fit_error);
  std::fprintf(text, "\n%s scaling of %s (%s, %s %lld): per point the median over %zu rounds of %d calls each, and its 95%% interval\n",
               sc::to_string(r.mode), sc::to_string(o.op), dtype, strong ? "n" : "n per rank",
               static_cast<long long>(r.size_arg), pts.front().rounds.size(), o.repeat);
  std::fprintf(text, "%6s %14s %12s %23s %7s %9s %9s %19s %8s %12s %12s %12s %12s\n", "ranks", "size", "time[s]",
               "95% interval [s]", "spread", strong ? "speedup" : "scaled_S", "effic.", "effic. interval", "karp_fl",
               "local[s]", "comm[s]", "fixup[s]", "host[s]");
  Json points = Json::array();
  int noisy = 0;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    const MedianInterval m = p.interval();
    const PointResult& mid = p.median_round();
    const auto& t = mid.timing;
    const double time = m.median;
    const double s = strong ? t_first * base / time : scaled[i];
    const double eff = strong ? s / p.ranks : t_first / time;
    // The efficiency's interval from the two times' intervals (the first point's own is exactly 1).
    double eff_low = 1, eff_high = 1;
    if (i > 0) {
      eff_low = first.low / m.high * (strong ? base / p.ranks : 1);
      eff_high = first.high / m.low * (strong ? base / p.ranks : 1);
    }
    const bool is_noisy = p.spread() > o.max_spread;
    noisy += is_noisy ? 1 : 0;
    // Karp-Flatt is undefined at one rank (and not a weak-scaling metric): NaN, written as null.
    const double kf = strong ? sc::karp_flatt(s, p.ranks).value_or(std::nan("")) : std::nan("");
    char kf_text[32] = "-";
    if (!std::isnan(kf)) std::snprintf(kf_text, sizeof kf_text, "%.4f", kf);
    const double other = std::max(0.0, time - t.phases.total());
    Json point = Json::object();
    point["ranks"] = p.ranks;
    point["size"] = p.size;
    point["time_s"] = number(time);
    point["time_ci95_s"] = interval_json(m.low, m.high);
    point["ci_level"] = number(m.level);
    const std::vector<double> round_times = p.times();
    point["time_min_s"] = number(*std::min_element(round_times.begin(), round_times.end()));
    point["time_max_s"] = number(*std::max_element(round_times.begin(), round_times.end()));
    point["rounds"] = static_cast<int>(p.rounds.size());
    point["round_times_s"] = array_of(round_times);
    point["spread"] = number(p.spread());
    point["noisy"] = is_noisy;
    point[strong ? "speedup" : "scaled_speedup"] = number(s);
    point["efficiency"] = number(eff);
    point["efficiency_interval"] = interval_json(eff_low, eff_high);
    if (strong) point["karp_flatt"] = number(kf);
    Json phases = Json::object();
    phases["local"] = number(t.phases.local);
    phases["communication"] = number(t.phases.communication);
    phases["fixup"] = number(t.phases.fixup);
    phases["host"] = number(t.phases.host);
    phases["other"] = number(other);
    point["phases_s"] = phases;
    point["checksum"] = number(mid.checksum);
    points.push_back(point);
    std::fprintf(text, "%6d %14lld %12.6g %23s %6.0f%%%s %9.3f %9.3f %19s %8s %12.4g %12.4g %12.4g %12.4g\n", p.ranks,
                 static_cast<long long>(p.size), time, interval_text(m.low, m.high).c_str(), 100 * p.spread(),
                 is_noisy ? "!" : " ", s, eff, interval_text(eff_low, eff_high).c_str(), kf_text, t.phases.local,
                 t.phases.communication, t.phases.fixup, t.phases.host + other);
  }
  j["points"] = points;
  j["noisy_points"] = noisy;
  if (noisy)
    std::fprintf(text,
                 "! %d point%s noisy: the 95%% interval of the median is wider than %.0f%% of it after %zu rounds; read "
                 "speedups and fits with that interval in mind (a quieter machine, more --max-rounds or larger sizes "
                 "narrow it)\n",
                 noisy, noisy == 1 ? " is" : "s are", 100 * o.max_spread, pts.front().rounds.size());

  Json fit_json = Json::object();
  if (strong) {
    const auto fit = sc::fit_amdahl(ranks, times);
    fit_json["valid"] = fit.valid;
    if (fit.valid) {
      const bool describes = fit.residual_max <= o.max_fit_error;
      fit_json["serial_fraction"] = number(fit.serial_fraction);
      fit_json["t1_s"] = number(fit.t1);
      fit_json["residual_rms"] = number(fit.residual_rms);
      fit_json["residual_max"] = number(fit.residual_max);
      fit_json["fitted_time_s"] = array_of(fit.fitted);
      fit_json["describes_points"] = describes;
      std::fprintf(text, "Amdahl fit: serial fraction s = %.4g, T(1) = %.4g s, relative residual rms %.3g, max %.3g\n",
                   fit.serial_fraction, fit.t1, fit.residual_rms, fit.residual_max);
      if (!describes)
        std::fprintf(text,
                     "Amdahl fit: does not describe these points (a fitted time is %.0f%% off, more than %.0f%%): s is "
                     "not the serial fraction of this operation here\n",
                     100 * fit.residual_max, 100 * o.max_fit_error);
    } else {
      std::fprintf(text, "Amdahl fit: needs two distinct rank counts\n");
    }
    j["amdahl"] = fit_json;
  } else {
    const auto fit = sc::fit_gustafson(ranks, scaled);
    fit_json["valid"] = fit.valid;
    if (fit.valid) {
      std::vector<double> predicted;
      double worst = 0;
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        predicted.push_back(fit.predict(ranks[i]));
        worst = std::max(worst, std::abs(predicted.back() - scaled[i]) / scaled[i]);
      }
      const bool describes = worst <= o.max_fit_error;
      fit_json["serial_fraction"] = number(fit.serial_fraction);
      fit_json["residual_rms"] = number(fit.residual_rms);
      fit_json["residual_max_relative"] = number(worst);
      fit_json["fitted_scaled_speedup"] = array_of(predicted);
      fit_json["describes_points"] = describes;
      std::fprintf(text, "Gustafson fit: serial fraction s = %.4g (scaled speedup p - s (p - 1)), residual rms %.3g, max %.0f%%\n",
                   fit.serial_fraction, fit.residual_rms, 100 * worst);
      if (!describes)
        std::fprintf(text, "Gustafson fit: does not describe these points (a fitted speedup is %.0f%% off, more than %.0f%%)\n",
                     100 * worst, 100 * o.max_fit_error);
    }
    j["gustafson"] = fit_json;
  }

  // The model check: fit on the two smallest points (network included), predict the others.
  const auto meas = measurements(r);
  const int eb = element_bytes(o.dtype);
  const auto fit_ranks = check_fit_ranks(ranks);
  std::vector<sc::CollectiveSample> check_samples;
  for (const auto& s : samples)
    if (s.ranks <= fit_ranks.back()) check_samples.push_back(s);
  const auto check_model =
      sc::fit_cost_model(o.op, r.mode, r.size_arg, eb, o.panel_width, operation_plan(o.op, o.dtype), sc::fit_network(check_samples),
                         sc::fit_device_network(check_samples), meas, fit_ranks);
  Json check = Json::object();
  check["fit_ranks"] = array_of(fit_ranks);
  Json predictions = Json::array();
  double worst = 0;
  int worst_ranks = 0;
  for (const auto& m : meas) {
    if (std::find(fit_ranks.begin(), fit_ranks.end(), m.ranks) != fit_ranks.end()) continue;
    const double predicted = check_model.predict(m.ranks).total();
    const double error = (predicted - m.time) / m.time;
    if (std::abs(error) >= worst) worst_ranks = m.ranks;
    worst = std::max(worst, std::abs(error));
    Json q = Json::object();
    q["ranks"] = m.ranks;
    q["predicted_s"] = number(predicted);
    q["measured_s"] = number(m.time);
    q["relative_error"] = number(error);
    predictions.push_back(q);
    std::fprintf(text, "model check: fitted on ranks %d,%d, predicts %d ranks: %.4g s, measured %.4g s, error %+.1f%%\n",
                 fit_ranks.front(), fit_ranks.back(), m.ranks, predicted, m.time, 100 * error);
  }
  const bool held_out = predictions.dump() != "[]";
  const bool check_passed = held_out && worst <= o.max_fit_error;
  check["points"] = predictions;
  check["max_abs_relative_error"] = number(worst);
  check["threshold"] = number(o.max_fit_error);
  check["passed"] = held_out ? Json(check_passed) : Json();
  j["model_check"] = check;

  // The model of record: fitted on every point; projected past the machine when the check allows.
  const auto model = sc::fit_cost_model(o.op, r.mode, r.size_arg, eb, o.panel_width, operation_plan(o.op, o.dtype), sc::fit_network(samples),
                                        sc::fit_device_network(samples), meas, ranks);
  Json model_json = Json::object();
  model_json["fit_ranks"] = array_of(model.fitted_on);
  model_json["local_overhead_s"] = number(model.local_overhead);
  model_json["local_rate"] = number(model.local_rate());
  model_json["local_rate_unit"] = std::string(model.work_unit()) + "/s";
  model_json["host_s"] = number(model.host);
  model_json["latency_s"] = number(model.network.latency);
  model_json["bandwidth_Bps"] = number(model.network.bandwidth);
  model_json["device_latency_s"] = number(model.device_network.latency);
  model_json["device_bandwidth_Bps"] = number(model.device_network.bandwidth);
  // Which network the op's collectives were charged to, and whether communication overlaps work.
  model_json["network_path"] = matmul ? "device" : "host";
  model_json["overlap"] = matmul ? "summa: max(panel GEMM, next panel broadcast) per step" : "none";
  // The collectives charged per call: the operation's declared plan (matmul: SUMMA's panels).
  Json collectives = Json::array();
  for (const tessera::CollectiveCall& call : model.plan) {
    Json c = Json::object();
    c["kind"] = std::string(tessera::to_string(call.kind));
    c["bytes"] = number(call.bytes);
    collectives.push_back(c);
  }
  model_json["collectives"] = collectives;
  j["model"] = model_json;
  const sc::NetworkModel& charged = matmul ? model.device_network : model.network;
  std::fprintf(text,
               "model: local = %.3g s + work / %.3g %s/s, %s network: latency %.3g s per tree round, bandwidth %.3g B/s%s, "
               "host %.3g s\n",
               model.local_overhead, model.local_rate(), model.work_unit(), matmul ? "device" : "host",
               charged.latency, charged.bandwidth,
               matmul ? " (broadcast of panel s+1 overlapped with GEMM of panel s)" : "", model.host);
  if (!matmul) std::fprintf(text, "collectives per call: %s\n", tessera::describe(model.plan).c_str());

  Json projection = Json::array();
  if (held_out && !check_passed) {
    char why[256];
    std::snprintf(why, sizeof why,
                  "the model fitted on ranks %d,%d misses %d ranks by %.0f%%, more than %.0f%%", fit_ranks.front(),
                  fit_ranks.back(), worst_ranks, 100 * worst, 100 * o.max_fit_error);
    j["projection_status"] = "withheld";
    j["projection_note"] = std::string(why);
    std::fprintf(text, "projection (%s): withheld: %s; the model does not describe this machine well enough to "
                 "project from it\n", sc::to_string(r.mode), why);
    j["projection"] = projection;
    return j;
  }
  std::vector<int> proj_ranks = ranks;
  for (int p : sc::default_projection_ranks())
    if (p > ranks.back()) proj_ranks.push_back(p);
  const double extrapolation = static_cast<double>(proj_ranks.back()) / ranks.back();
  char note[256];
  if (held_out)
    std::snprintf(note, sizeof note,
                  "checked: the model fitted on ranks %d,%d predicts the other points within %.0f%% (limit %.0f%%); "
                  "%d ranks are %.0fx the largest measured (%d)",
                  fit_ranks.front(), fit_ranks.back(), 100 * worst, 100 * o.max_fit_error, proj_ranks.back(),
                  extrapolation, ranks.back());
  else
    std::snprintf(note, sizeof note,
                  "unchecked: no measured point was held out of the fit (run more rank counts to check it); "
                  "%d ranks are %.0fx the largest measured (%d)",
                  proj_ranks.back(), extrapolation, ranks.back());
  j["projection_status"] = held_out ? "checked" : "unchecked";
  j["projection_note"] = std::string(note);
  j["projection_extrapolation"] = number(extrapolation);
  std::fprintf(text, "projection (%s; %s):\n%6s %12s %10s %9s %12s %12s %12s %12s %12s  %s\n", sc::to_string(r.mode),
               note, "ranks", "time[s]", strong ? "speedup" : "scaled_S", "effic.", "local", "latency", "bandwidth",
               "host", "hidden", "dominant");
  for (const auto& p : sc::project(model, proj_ranks)) {
    Json q = Json::object();
    q["ranks"] = p.ranks;
    q["time_s"] = number(p.time);
    q[strong ? "speedup" : "scaled_speedup"] = number(p.speedup);
    q["efficiency"] = number(p.efficiency);
    Json terms = Json::object();
    terms["local"] = number(p.terms.local);
    terms["latency"] = number(p.terms.latency);
    terms["bandwidth"] = number(p.terms.bandwidth);
    terms["host"] = number(p.terms.host);
    q["terms_s"] = terms;
    // Outside terms_s, which add up to time_s: what ran in the shadow of the critical path.
    q["hidden_s"] = number(p.terms.hidden);
    q["dominant"] = p.dominant;
    projection.push_back(q);
    std::fprintf(text, "%6d %12.4g %10.2f %9.3f %12.4g %12.4g %12.4g %12.4g %12.4g  %s\n", p.ranks, p.time, p.speedup,
                 p.efficiency, p.terms.local, p.terms.latency, p.terms.bandwidth, p.terms.host, p.terms.hidden,
                 p.dominant.c_str());
  }
  j["projection"] = projection;
  return j;
}

// Output files appear complete or not at all: written to FILE.partial, renamed at the end.
bool write_file(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << text;
    if (!out.flush()) return false;
  }
  return std::rename(partial.c_str(), path.c_str()) == 0;
}

// Every rank learns whether rank 0 could create each output file, before any measurement runs.
void check_outputs_writable(const Options& o, int world_rank) {
  for (const auto& [flag, path] : {std::pair<std::string, std::string>{"--json", o.json}, {"--csv", o.csv}}) {
    if (path.empty()) continue;
    int ok = 1;
    if (world_rank == 0) {
      const std::string partial = path + ".partial";
      std::ofstream probe(partial);
      ok = probe ? 1 : 0;
      probe.close();
      std::remove(partial.c_str());
    }
    TESSERA_MPI_CHECK(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (!ok) throw UsageError(flag + ": cannot write '" + path + "'");
  }
}

// ------------------------------------------------------------------------------------------------

// The GPU each rank would drive: local_rank % visible devices, where the visible count is what
// CUDA reports or, on a machine without GPUs (Slurm's fake gres in tests), the length of
// CUDA_VISIBLE_DEVICES; and the CPUs and OpenMP threads it has. Printed in rank order by rank 0.
int probe_gpus(const tessera::Runtime& runtime, int threads_requested) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string cvd = env ? env : "";
  std::vector<std::string> ids;
  std::stringstream in(cvd);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) ids.push_back(item);
  int visible = tessera::kernels::cuda_device_count();
  const char* source = "cuda";
  if (visible == 0) {
    visible = static_cast<int>(ids.size());
    source = "CUDA_VISIBLE_DEVICES";
  }
  const int device = visible > 0 ? runtime.local_rank() % visible : -1;
  const std::string gpu = device < 0 ? "none" : device < static_cast<int>(ids.size()) ? ids[device] : std::to_string(device);
  // The CPUs: the affinity mask, what Slurm gave the step on this node and per task, and the OpenMP
  // threads the runtime would use (OMP_NUM_THREADS where set).
  auto env_or = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v && *v ? v : "unset");
  };
  const auto threads = runtime.plan_cpu_threads(threads_requested);
  char line[768];
  std::snprintf(line, sizeof line,
                "gpu-probe rank=%d host=%s local_rank=%d local_size=%d cuda_visible_devices=%s visible=%d (%s) "
                "device=%d gpu=%s cpus=%d slurm_cpus_on_node=%s slurm_cpus_per_task=%s omp_num_threads=%s threads=%d",
                runtime.world_rank(), runtime.hostname().c_str(), runtime.local_rank(), runtime.local_size(),
                cvd.empty() ? "unset" : cvd.c_str(), visible, source, device, gpu.c_str(), runtime.mask_cores(),
                env_or("SLURM_CPUS_ON_NODE").c_str(), env_or("SLURM_CPUS_PER_TASK").c_str(),
                env_or("OMP_NUM_THREADS").c_str(), threads.threads);
  std::vector<char> all(runtime.world_rank() == 0 ? sizeof line * runtime.world_size() : 0);
  TESSERA_MPI_CHECK(MPI_Gather(line, sizeof line, MPI_CHAR, all.data(), sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD));
  if (runtime.world_rank() == 0)
    for (int r = 0; r < runtime.world_size(); ++r) std::printf("%s\n", all.data() + r * sizeof line);
  std::fflush(stdout);
  return 0;
}

int run(tessera::Runtime& runtime, int argc, char** argv) {
  apps::ArgParser parser("tessera-scaling",
                         "Strong and weak scaling of one distributed operation over the sub-communicators of one "
                         "launch,\nwith the Amdahl, Karp-Flatt and Gustafson analysis and the cost-model projection "
                         "(docs/SCALING.md).\nSizes (--n, --n-per-rank, --ping-bytes) take 1000000, 1e6, 2^20, 64M, 1G.");
  const Options o = parse(parser, argc, argv, runtime.world_size());
  const bool root = runtime.world_rank() == 0;
  if (o.help) {
    if (root) std::fputs(parser.help_text().c_str(), stdout);
    return apps::kExitOk;
  }
  if (o.version) {
    if (root)
      std::printf("tessera-scaling (Tessera) %s, cuda %d, nccl %d, parallel hdf5 %d\n", apps::version_text().c_str(),
                  TESSERA_HAVE_CUDA, TESSERA_HAVE_NCCL, TESSERA_HDF5_PARALLEL);
    return apps::kExitOk;
  }
  if (o.probe_gpus) return probe_gpus(runtime, o.threads);
  check_outputs_writable(o, runtime.world_rank());
  const tessera::Context world = runtime.start(tessera::parse_backend_choice(o.backend), o.threads);
  if (root && !o.quiet) std::fprintf(stderr, "tessera-scaling: %s\n", runtime.describe().c_str());

  // Progress: the pings, then every point once per round (at least --rounds rounds).
  std::size_t total_points = o.ranks.size() * (1 + o.modes.size() * static_cast<std::size_t>(o.rounds));
  std::size_t done = 0;
  tessera::Stopwatch elapsed;
  auto progress = [&](const std::string& what) {
    ++done;
    if (root && !o.quiet)
      std::fprintf(stderr, "tessera-scaling: [%zu/%zu] %s done; %zu left; %.1f s elapsed\n", done, total_points, what.c_str(),
                   total_points - done, elapsed.seconds());
  };

  // Sub-communicators once: each point of each mode reuses them.
  std::vector<tessera::Context> contexts;
  for (int p : o.ranks) contexts.push_back(world.first(p));

  std::vector<sc::CollectiveSample> samples;
  for (std::size_t i = 0; i < o.ranks.size(); ++i) {
    sc::CollectiveSample s;
    if (!contexts[i].is_null()) s = ping(contexts[i], o);
    if (root) samples.push_back(s);
    sleepy_world_barrier();
    progress("collectives at " + std::to_string(o.ranks[i]) + " ranks");
  }

  // The two levels of the network: collectives within one node and among the nodes (two_level.hpp).
  const auto layout = apps::two_level::discover_layout(world);
  const auto level_samples = apps::two_level::measure(world, layout, o.ping_bytes);

  // Every point runs once per round, in an order that rotates from round to round, so that a slow
  // spell of the machine (other jobs, a descheduled rank) lands on all points alike and shows as
  // spread instead of as one point's bias. Rounds go on past --rounds, up to --max-rounds, while a
  // point's 95% interval is wider than --max-spread of its median.
  std::vector<ModeReport> reports;
  std::vector<std::pair<std::size_t, std::size_t>> slots;  // (mode, rank count) of each point
  for (std::size_t m = 0; m < o.modes.size(); ++m) {
    const sc::Mode mode = o.modes[m];
    ModeReport report{mode, mode == sc::Mode::strong ? *o.n : *o.n_per_rank, {}};
    for (std::size_t i = 0; i < o.ranks.size(); ++i) {
      PointSeries series;
      series.ranks = o.ranks[i];
      series.size = sc::problem_at(o.op, mode, report.size_arg, element_bytes(o.dtype), series.ranks).size;
      // A block whose byte count does not fit in 64 bits is refused here, alike on every rank (an
      // allocation that merely fails is one line and status 2 from the failing rank, in main).
      const long double elements = o.op == sc::Op::matmul
                                       ? static_cast<long double>(series.size) * series.size / series.ranks
                                       : std::ceil(static_cast<long double>(series.size) / series.ranks);
      if (elements * element_bytes(o.dtype) >= 0x1p64L)
        throw UsageError(std::string(mode == sc::Mode::strong ? "--n" : "--n-per-rank") + ": the " +
                         sc::to_string(mode) + "-scaling point at " + std::to_string(series.ranks) +
                         " rank(s) needs more than 2^64 bytes per rank");
      report.points.push_back(series);
      slots.emplace_back(m, i);
    }
    reports.push_back(std::move(report));
  }
  for (int round = 1;; ++round) {
    for (std::size_t k = 0; k < slots.size(); ++k) {
      const auto [m, i] = slots[(k + static_cast<std::size_t>(round - 1)) % slots.size()];
      PointSeries& series = reports[m].points[i];
      PointResult point;
      point.ranks = series.ranks;
      point.size = series.size;
      if (!contexts[i].is_null()) run_point(contexts[i], o, point);
      if (root) series.rounds.push_back(point);
      sleepy_world_barrier();
      progress("round " + std::to_string(round) + ": " + sc::to_string(reports[m].mode) + " at " +
               std::to_string(point.ranks) + " ranks");
    }
    int more = 0;
    if (root && round < o.max_rounds) {
      more = round < o.rounds ? 1 : 0;
      for (const auto& report : reports)
        for (const auto& series : report.points)
          if (series.spread() > o.max_spread) more = 1;
    }
    TESSERA_MPI_CHECK(MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (!more) break;
    if (round >= o.rounds) total_points += slots.size();
  }
  if (!root) return 0;

  Json j = Json::object();
  j["app"] = "tessera-scaling";
  apps::add_provenance(j, runtime);
  j["op"] = sc::to_string(o.op);
  j["dtype"] = tessera::io::to_string(o.dtype);
  j["backend"] = tessera::to_string(world.backend());
  j["threads"] = apps::threads_json(runtime);
  j["world_size"] = runtime.world_size();
  j["host"] = runtime.hostname();
  j["runtime"] = runtime.describe();
  j["repeat"] = o.repeat;
  j["warmup"] = o.warmup;
  j["rounds"] = static_cast<int>(reports.front().points.front().rounds.size());
  j["min_rounds"] = o.rounds;
  j["max_rounds"] = o.max_rounds;
  j["seed"] = static_cast<unsigned long long>(o.seed);
  if (o.op == sc::Op::matmul) j["panel_width"] = o.panel_width;
  if (const char* job = std::getenv("SLURM_JOB_ID")) j["slurm_job_id"] = job;
  j["ranks"] = array_of(o.ranks);
  Json collectives = Json::array();
  const char* device_path = tessera::to_string(tessera::device_comm_path(world.backend()));
  std::printf("tessera-scaling: %s, %s\ncollectives (slowest rank, per call): host MPI allreduce; DeviceComm broadcast of "
              "backend memory (%s)\n%6s %14s %14s %14s %14s %14s %14s\n",
              sc::to_string(o.op), runtime.describe().c_str(), device_path, "ranks", "host 8 B [s]", "host large [s]",
              "large [B]", "dev small [s]", "dev large [s]", "dev large [B]");
  for (const auto& s : samples) {
    Json c = Json::object();
    c["ranks"] = s.ranks;
    c["allreduce_8B_s"] = number(s.small_seconds);
    c["allreduce_large_s"] = number(s.large_seconds);
    c["large_bytes"] = number(s.large_bytes);
    c["device_bcast_small_s"] = number(s.device_small_seconds);
    c["device_small_bytes"] = number(s.device_small_bytes);
    c["device_bcast_large_s"] = number(s.device_large_seconds);
    c["device_large_bytes"] = number(s.device_large_bytes);
    collectives.push_back(c);
    std::printf("%6d %14.4g %14.4g %14.4g %14.4g %14.4g %14.4g\n", s.ranks, s.small_seconds, s.large_seconds,
                s.large_bytes, s.device_small_seconds, s.device_large_seconds, s.device_large_bytes);
  }
  j["collectives"] = collectives;
  const auto net = sc::fit_network(samples);
  const auto device_net = sc::fit_device_network(samples);
  Json network = Json::object();
  // latency_s and bandwidth_Bps: the host path (kept under their old names); device_*: DeviceComm.
  network["latency_s"] = number(net.latency);
  network["bandwidth_Bps"] = number(net.bandwidth);
  network["path"] = tessera::to_string(tessera::DeviceCommPath::mpi_host);
  network["device_latency_s"] = number(device_net.latency);
  network["device_bandwidth_Bps"] = number(device_net.bandwidth);
  network["device_path"] = device_path;
  j["network"] = network;
  std::printf("network model: host MPI (scalar collectives): latency %.4g s per tree round, bandwidth %.4g B/s; "
              "device %s (backend buffers, matmul panels): latency %.4g s per tree round, bandwidth %.4g B/s\n",
              net.latency, net.bandwidth, device_path, device_net.latency, device_net.bandwidth);
  for (const auto& r : reports) j[sc::to_string(r.mode)] = mode_json(o, r, samples, stdout);
  apps::two_level::Study study{o.op, element_bytes(o.dtype), o.panel_width, operation_plan(o.op, o.dtype), samples, {}};
  for (const auto& r : reports) study.modes.push_back({r.mode, r.size_arg, measurements(r)});
  j["two_level"] = apps::two_level::report(layout, level_samples, study, stdout);
  std::fflush(stdout);

  int status = 0;
  if (!o.json.empty() && !write_file(o.json, j.dump(2) + "\n")) {
    std::fprintf(stderr, "tessera-scaling: error: --json: cannot write '%s'\n", o.json.c_str());
    status = 1;
  }
  if (!o.csv.empty()) {
    std::ostringstream csv;
    csv << "op,mode,ranks,size,round,time_s,local_s,communication_s,fixup_s,host_s,other_s,checksum\n";
    csv.precision(17);
    for (const auto& r : reports)
      for (const auto& p : r.points)
        for (std::size_t k = 0; k < p.rounds.size(); ++k) {
          const auto& t = p.rounds[k].timing;
          csv << sc::to_string(o.op) << ',' << sc::to_string(r.mode) << ',' << p.ranks << ',' << p.size << ',' << k + 1
              << ',' << t.total << ',' << t.phases.local << ',' << t.phases.communication << ',' << t.phases.fixup
              << ',' << t.phases.host << ',' << p.rounds[k].other << ',' << p.rounds[k].checksum << '\n';
        }
    if (!write_file(o.csv, csv.str())) {
      std::fprintf(stderr, "tessera-scaling: error: --csv: cannot write '%s'\n", o.csv.c_str());
      status = 1;
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  // The apps' error policy (apps/common/app.hpp): bad input, found alike on every rank, is one line
  // on rank 0 and exit status 2; anything else may be on one rank only, so it ends the whole job
  // rather than leave the other ranks waiting in a collective.
  try {
    return run(runtime, argc, argv);
  } catch (const UsageError& e) {
    if (runtime.world_rank() == 0) {
      std::fprintf(stderr, "tessera-scaling: %s\n", e.what());
      std::fflush(stderr);
    }
    return apps::kExitUsage;
  } catch (const std::bad_alloc& e) {
    // A point that does not fit in memory, maybe on this rank only: one line from this rank, and the
    // whole job ends with the usage status.
    std::fprintf(stderr, "tessera-scaling: out of memory on rank %d: %s (lower --n or --n-per-rank)\n",
                 runtime.world_rank(),
                 dynamic_cast<const tessera::OutOfMemory*>(&e) ? e.what() : "cannot allocate host memory");
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, apps::kExitUsage);
    return apps::kExitUsage;
  } catch (const std::exception& e) {
    tessera::fatal(__FILE__, __LINE__, "scaling", e.what());
  }
}
