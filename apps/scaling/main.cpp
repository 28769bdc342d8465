// scaling: strong and weak scaling of one distributed operation from a single launch of P ranks.
// Each point runs on the sub-communicator of the first p ranks (the others wait, asleep, at a world
// barrier); the analysis (Amdahl, Karp-Flatt, Gustafson, the cost model and its projection) lives in
// framework/scaling.hpp and is explained in docs/SCALING.md.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "json_writer.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/scaling.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/queue.hpp"

namespace sc = tessera::scaling;
using tessera::index_t;
using tessera::UsageError;

namespace {

// ------------------------------------------------------------------------------------------------
// Command line

struct Options {
  sc::Op op = sc::Op::sum;
  std::vector<sc::Mode> modes{sc::Mode::strong};
  std::optional<index_t> n, n_per_rank;
  std::vector<int> ranks;  // empty: powers of two up to P, and P
  int repeat = 5;
  int warmup = 1;
  std::string json, csv;
  std::string backend = "auto";
  std::string dtype = "float32";
  index_t panel_width = 512;
  index_t ping_bytes = index_t(4) << 20;
  std::uint64_t seed = 42;
  bool probe_gpus = false;
  bool quiet = false;
};

const char* kUsage =
    "usage: scaling [--op sum|scan|filter|matmul] [--mode strong|weak|both] [--n N] [--n-per-rank N]\n"
    "               [--ranks 1,2,4,...] [--repeat R] [--warmup W] [--json FILE] [--csv FILE]\n"
    "               [--backend auto|cpu|cuda] [--dtype float32|float64|int32|int64] [--panel-width B]\n"
    "               [--ping-bytes BYTES] [--seed S] [--quiet] [--probe-gpus]\n"
    "  --n           strong scaling: global elements (matmul: the side of the square matrices)\n"
    "  --n-per-rank  weak scaling: elements per rank (matmul: the side at 1 rank; it grows as p^(1/3))\n"
    "  --ranks       sub-communicator sizes to measure (default: 1, 2, 4, ... up to P, and P)\n"
    "  --probe-gpus  print, per rank, host, node-local rank, CUDA_VISIBLE_DEVICES and the GPU the\n"
    "                runtime binds (local_rank % visible devices), then exit\n";

index_t parse_count(const std::string& flag, const std::string& text, index_t min) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < min)
    throw UsageError(flag + ": expected an integer >= " + std::to_string(min) + ", got '" + text + "'");
  return v;
}

std::vector<int> parse_rank_list(const std::string& text, int world_size) {
  std::vector<int> ranks;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const index_t p = parse_count("--ranks", item, 1);
    if (p > world_size)
      throw UsageError("--ranks: " + item + " ranks asked for, but the job has only " + std::to_string(world_size));
    ranks.push_back(static_cast<int>(p));
  }
  if (ranks.empty()) throw UsageError("--ranks: empty list");
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

Options parse(int argc, char** argv, int world_size) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(arg + ": missing value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      throw UsageError("");
    } else if (arg == "--op") {
      o.op = sc::parse_op(next());
    } else if (arg == "--mode") {
      const std::string m = next();
      if (m == "strong") o.modes = {sc::Mode::strong};
      else if (m == "weak") o.modes = {sc::Mode::weak};
      else if (m == "both") o.modes = {sc::Mode::strong, sc::Mode::weak};
      else throw UsageError("--mode: unknown mode '" + m + "' (expected strong, weak or both)");
    } else if (arg == "--n") {
      o.n = parse_count(arg, next(), 0);
    } else if (arg == "--n-per-rank") {
      o.n_per_rank = parse_count(arg, next(), 0);
    } else if (arg == "--ranks") {
      o.ranks = parse_rank_list(next(), world_size);
    } else if (arg == "--repeat") {
      o.repeat = static_cast<int>(parse_count(arg, next(), 1));
    } else if (arg == "--warmup") {
      o.warmup = static_cast<int>(parse_count(arg, next(), 0));
    } else if (arg == "--json") {
      o.json = next();
    } else if (arg == "--csv") {
      o.csv = next();
    } else if (arg == "--backend") {
      o.backend = next();
      tessera::parse_backend_choice(o.backend);
    } else if (arg == "--dtype") {
      o.dtype = next();
      if (o.dtype != "float32" && o.dtype != "float64" && o.dtype != "int32" && o.dtype != "int64")
        throw UsageError("--dtype: unknown type '" + o.dtype + "' (expected float32, float64, int32 or int64)");
    } else if (arg == "--panel-width") {
      o.panel_width = parse_count(arg, next(), 1);
    } else if (arg == "--ping-bytes") {
      o.ping_bytes = parse_count(arg, next(), 8);
    } else if (arg == "--seed") {
      o.seed = static_cast<std::uint64_t>(parse_count(arg, next(), 0));
    } else if (arg == "--quiet") {
      o.quiet = true;
    } else if (arg == "--probe-gpus") {
      o.probe_gpus = true;
    } else {
      throw UsageError("unknown option '" + arg + "'");
    }
  }
  if (o.op == sc::Op::matmul && (o.dtype == "int32" || o.dtype == "int64"))
    throw UsageError("--dtype " + o.dtype + ": matmul runs on float32 or float64 only");
  const bool matmul = o.op == sc::Op::matmul;
  if (!o.n) o.n = matmul ? 512 : index_t(1) << 22;
  if (!o.n_per_rank) o.n_per_rank = matmul ? 256 : index_t(1) << 20;
  if (o.ranks.empty()) {
    for (int p = 1; p < world_size; p *= 2) o.ranks.push_back(p);
    o.ranks.push_back(world_size);
  }
  return o;
}

int element_bytes(const std::string& dtype) { return dtype == "float64" || dtype == "int64" ? 8 : 4; }

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

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// ------------------------------------------------------------------------------------------------
// One measured point.

struct PointResult {
  int ranks = 1;
  index_t size = 0;  // global elements, or matrix side
  double time = 0, time_min = 0, time_max = 0;
  tessera::PhaseTimes phases;  // medians of the slowest rank's phase times
  double other = 0;            // wall time outside the phases (max(0, time - phases))
  double checksum = 0;
};

// Runs `call` warmup + repeat times on ctx and returns, per repeat, the slowest rank's wall time and
// phase times. call(PhaseTimes*) performs one complete operation (device work finished).
template <class Call>
void time_repeats(const tessera::Context& ctx, const Options& o, Call&& call, PointResult& point) {
  for (int w = 0; w < o.warmup; ++w) call(nullptr);
  std::vector<double> time, local, comm, fixup, host;
  for (int r = 0; r < o.repeat; ++r) {
    ctx.comm().barrier();
    tessera::PhaseTimes phases;
    tessera::Stopwatch watch;
    call(&phases);
    double mine[5] = {watch.seconds(), phases.local, phases.communication, phases.fixup, phases.host};
    double slowest[5];
    TESSERA_MPI_CHECK(MPI_Allreduce(mine, slowest, 5, MPI_DOUBLE, MPI_MAX, ctx.comm().get()));
    time.push_back(slowest[0]);
    local.push_back(slowest[1]);
    comm.push_back(slowest[2]);
    fixup.push_back(slowest[3]);
    host.push_back(slowest[4]);
  }
  point.time = median(time);
  point.time_min = *std::min_element(time.begin(), time.end());
  point.time_max = *std::max_element(time.begin(), time.end());
  point.phases.local = median(local);
  point.phases.communication = median(comm);
  point.phases.fixup = median(fixup);
  point.phases.host = median(host);
  point.other = std::max(0.0, point.time - point.phases.total());
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
      tessera::DistArray<T> out;
      time_repeats(ctx, o,
                   [&](tessera::PhaseTimes* t) {
                     out = tessera::inclusive_scan(array, t);
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
  if (o.op == sc::Op::matmul) {
    if (o.dtype == "float64") run_matmul_point<double>(ctx, o, point);
    else run_matmul_point<float>(ctx, o, point);
    return;
  }
  if (o.dtype == "float32") run_vector_point<float>(ctx, o, point);
  else if (o.dtype == "float64") run_vector_point<double>(ctx, o, point);
  else if (o.dtype == "int32") run_vector_point<std::int32_t>(ctx, o, point);
  else run_vector_point<std::int64_t>(ctx, o, point);
}

// The ping collectives that give the network model its latency and bandwidth on this communicator:
// an allreduce of one 8-byte value (many iterations, latency-bound) and of ping_bytes (bandwidth).
sc::CollectiveSample ping(const tessera::Context& ctx, const Options& o) {
  sc::CollectiveSample s;
  s.ranks = ctx.size();
  MPI_Comm comm = ctx.comm().get();
  auto timed = [&](void* buf, int count, int iterations) {
    for (int i = 0; i < 2; ++i) TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_DOUBLE, MPI_SUM, comm));
    TESSERA_MPI_CHECK(MPI_Barrier(comm));
    tessera::Stopwatch watch;
    for (int i = 0; i < iterations; ++i)
      TESSERA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_DOUBLE, MPI_SUM, comm));
    double mine = watch.seconds() / iterations, slowest = 0;
    TESSERA_MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm));
    return slowest;
  };
  double one = 1.0;
  s.small_seconds = timed(&one, 1, 200);
  // Below 2^31 elements by construction (--ping-bytes is a buffer, not a data set).
  const index_t count = std::min<index_t>(o.ping_bytes / 8, index_t(1) << 28);
  std::vector<double> big(static_cast<std::size_t>(count), 1.0);
  s.large_bytes = static_cast<double>(count) * 8;
  s.large_seconds = timed(big.data(), static_cast<int>(count), 5);
  return s;
}

// ------------------------------------------------------------------------------------------------
// Analysis and reports (rank 0).

struct ModeReport {
  sc::Mode mode;
  index_t size_arg = 0;
  std::vector<PointResult> points;
};

std::vector<sc::Measurement> measurements(const ModeReport& r) {
  std::vector<sc::Measurement> m;
  for (const auto& p : r.points)
    m.push_back({p.ranks, p.time, p.phases.local + p.phases.fixup, p.phases.communication, p.phases.host + p.other});
  return m;
}

// The two smallest rank counts measured: the model check fits on them and predicts the rest.
std::vector<int> check_fit_ranks(const std::vector<int>& ranks) {
  std::vector<int> r(ranks.begin(), ranks.begin() + std::min<std::size_t>(2, ranks.size()));
  return r;
}

void write_mode(tessera::scaling_app::JsonWriter& j, const Options& o, const ModeReport& r,
                const std::vector<sc::CollectiveSample>& samples, FILE* text) {
  const bool strong = r.mode == sc::Mode::strong;
  const auto& pts = r.points;
  const double t_base = pts.front().time * (strong ? pts.front().ranks : 1);  // T(1), or its ideal stand-in
  std::vector<int> ranks;
  std::vector<double> times, scaled;
  for (const auto& p : pts) {
    ranks.push_back(p.ranks);
    times.push_back(p.time);
    scaled.push_back(sc::scaled_speedup(pts.front().time, p.time, p.ranks) / (strong ? 1 : pts.front().ranks));
  }

  j.key(sc::to_string(r.mode));
  j.begin_object();
  j.field(strong ? "n" : "n_per_rank", static_cast<long long>(r.size_arg));
  std::fprintf(text, "\n%s scaling of %s (%s, %s %lld)\n", sc::to_string(r.mode), sc::to_string(o.op), o.dtype.c_str(),
               strong ? "n" : "n per rank", static_cast<long long>(r.size_arg));
  std::fprintf(text, "%6s %14s %12s %9s %9s %8s %12s %12s %12s %12s\n", "ranks", "size", "time[s]",
               strong ? "speedup" : "scaled_S", "effic.", "karp_fl", "local[s]", "comm[s]", "fixup[s]", "host[s]");
  j.key("points");
  j.begin_array();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    const double s = strong ? t_base / p.time : scaled[i];
    const double eff = strong ? s / p.ranks : pts.front().time / p.time;
    // Karp-Flatt is undefined at one rank (and not a weak-scaling metric): NaN, written as null.
    const double kf = strong ? sc::karp_flatt(s, p.ranks).value_or(std::nan("")) : std::nan("");
    char kf_text[32] = "-";
    if (!std::isnan(kf)) std::snprintf(kf_text, sizeof kf_text, "%.4f", kf);
    j.begin_object();
    j.field("ranks", p.ranks);
    j.field("size", static_cast<long long>(p.size));
    j.field("time_s", p.time);
    j.field("time_min_s", p.time_min);
    j.field("time_max_s", p.time_max);
    j.field(strong ? "speedup" : "scaled_speedup", s);
    j.field("efficiency", eff);
    if (strong) j.field("karp_flatt", kf);
    j.key("phases_s");
    j.begin_object();
    j.field("local", p.phases.local);
    j.field("communication", p.phases.communication);
    j.field("fixup", p.phases.fixup);
    j.field("host", p.phases.host);
    j.field("other", p.other);
    j.end_object();
    j.field("checksum", p.checksum);
    j.end_object();
    std::fprintf(text, "%6d %14lld %12.6g %9.3f %9.3f %8s %12.4g %12.4g %12.4g %12.4g\n", p.ranks,
                 static_cast<long long>(p.size), p.time, s, eff,
                 kf_text, p.phases.local, p.phases.communication,
                 p.phases.fixup, p.phases.host + p.other);
  }
  j.end_array();

  if (strong) {
    const auto fit = sc::fit_amdahl(ranks, times);
    j.key("amdahl");
    j.begin_object();
    j.field("valid", fit.valid);
    if (fit.valid) {
      j.field("serial_fraction", fit.serial_fraction);
      j.field("t1_s", fit.t1);
      j.field("residual_rms", fit.residual_rms);
      j.field("residual_max", fit.residual_max);
      j.array("fitted_time_s", fit.fitted);
      std::fprintf(text, "Amdahl fit: serial fraction s = %.4g, T(1) = %.4g s, relative residual rms %.3g, max %.3g\n",
                   fit.serial_fraction, fit.t1, fit.residual_rms, fit.residual_max);
    } else {
      std::fprintf(text, "Amdahl fit: needs two distinct rank counts\n");
    }
    j.end_object();
  } else {
    const auto fit = sc::fit_gustafson(ranks, scaled);
    j.key("gustafson");
    j.begin_object();
    j.field("valid", fit.valid);
    if (fit.valid) {
      j.field("serial_fraction", fit.serial_fraction);
      j.field("residual_rms", fit.residual_rms);
      std::vector<double> predicted;
      for (int p : ranks) predicted.push_back(fit.predict(p));
      j.array("fitted_scaled_speedup", predicted);
      std::fprintf(text, "Gustafson fit: serial fraction s = %.4g (scaled speedup p - s (p - 1)), residual rms %.3g\n",
                   fit.serial_fraction, fit.residual_rms);
    }
    j.end_object();
  }

  // The model check: fit on the two smallest points (network included), predict the others.
  const auto meas = measurements(r);
  const int eb = element_bytes(o.dtype);
  const auto fit_ranks = check_fit_ranks(ranks);
  std::vector<sc::CollectiveSample> check_samples;
  for (const auto& s : samples)
    if (s.ranks <= fit_ranks.back()) check_samples.push_back(s);
  const auto check_model = sc::fit_cost_model(o.op, r.mode, r.size_arg, eb, o.panel_width,
                                              sc::fit_network(check_samples), meas, fit_ranks);
  j.key("model_check");
  j.begin_object();
  j.array("fit_ranks", fit_ranks);
  j.key("points");
  j.begin_array();
  double worst = 0;
  for (const auto& m : meas) {
    if (std::find(fit_ranks.begin(), fit_ranks.end(), m.ranks) != fit_ranks.end()) continue;
    const double predicted = check_model.predict(m.ranks).total();
    const double error = (predicted - m.time) / m.time;
    worst = std::max(worst, std::abs(error));
    j.begin_object();
    j.field("ranks", m.ranks);
    j.field("predicted_s", predicted);
    j.field("measured_s", m.time);
    j.field("relative_error", error);
    j.end_object();
    std::fprintf(text, "model check: fitted on ranks %d,%d, predicts %d ranks: %.4g s, measured %.4g s, error %+.1f%%\n",
                 fit_ranks.front(), fit_ranks.back(), m.ranks, predicted, m.time, 100 * error);
  }
  j.end_array();
  j.field("max_abs_relative_error", worst);
  j.end_object();

  // The model of record: fitted on every point; projected past the machine.
  const auto model = sc::fit_cost_model(o.op, r.mode, r.size_arg, eb, o.panel_width, sc::fit_network(samples), meas, ranks);
  j.key("model");
  j.begin_object();
  j.array("fit_ranks", model.fitted_on);
  j.field("local_overhead_s", model.local_overhead);
  j.field("local_rate", model.local_rate());
  j.field("local_rate_unit", std::string(model.work_unit()) + "/s");
  j.field("host_s", model.host);
  j.field("latency_s", model.network.latency);
  j.field("bandwidth_Bps", model.network.bandwidth);
  j.end_object();
  std::fprintf(text, "model: local = %.3g s + work / %.3g %s/s, latency %.3g s per tree round, bandwidth %.3g B/s, host %.3g s\n",
               model.local_overhead, model.local_rate(), model.work_unit(), model.network.latency,
               model.network.bandwidth, model.host);
  std::vector<int> proj_ranks = ranks;
  for (int p : sc::default_projection_ranks())
    if (p > ranks.back()) proj_ranks.push_back(p);
  const auto proj = sc::project(model, proj_ranks);
  j.key("projection");
  j.begin_array();
  std::fprintf(text, "projection (%s):\n%6s %12s %10s %9s %12s %12s %12s %12s  %s\n", sc::to_string(r.mode), "ranks",
               "time[s]", strong ? "speedup" : "scaled_S", "effic.", "local", "latency", "bandwidth", "host", "dominant");
  for (const auto& p : proj) {
    j.begin_object();
    j.field("ranks", p.ranks);
    j.field("time_s", p.time);
    j.field(strong ? "speedup" : "scaled_speedup", p.speedup);
    j.field("efficiency", p.efficiency);
    j.key("terms_s");
    j.begin_object();
    j.field("local", p.terms.local);
    j.field("latency", p.terms.latency);
    j.field("bandwidth", p.terms.bandwidth);
    j.field("host", p.terms.host);
    j.end_object();
    j.field("dominant", p.dominant);
    j.end_object();
    std::fprintf(text, "%6d %12.4g %10.2f %9.3f %12.4g %12.4g %12.4g %12.4g  %s\n", p.ranks, p.time, p.speedup,
                 p.efficiency, p.terms.local, p.terms.latency, p.terms.bandwidth, p.terms.host, p.dominant.c_str());
  }
  j.end_array();
  j.end_object();
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
// CUDA_VISIBLE_DEVICES. Printed in rank order by rank 0.
int probe_gpus(const tessera::Runtime& runtime) {
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
  char line[512];
  std::snprintf(line, sizeof line,
                "gpu-probe rank=%d host=%s local_rank=%d local_size=%d cuda_visible_devices=%s visible=%d (%s) "
                "device=%d gpu=%s",
                runtime.world_rank(), runtime.hostname().c_str(), runtime.local_rank(), runtime.local_size(),
                cvd.empty() ? "unset" : cvd.c_str(), visible, source, device, gpu.c_str());
  std::vector<char> all(runtime.world_rank() == 0 ? sizeof line * runtime.world_size() : 0);
  TESSERA_MPI_CHECK(MPI_Gather(line, sizeof line, MPI_CHAR, all.data(), sizeof line, MPI_CHAR, 0, MPI_COMM_WORLD));
  if (runtime.world_rank() == 0)
    for (int r = 0; r < runtime.world_size(); ++r) std::printf("%s\n", all.data() + r * sizeof line);
  std::fflush(stdout);
  return 0;
}

int run(tessera::Runtime& runtime, int argc, char** argv) {
  const Options o = parse(argc, argv, runtime.world_size());
  if (o.probe_gpus) return probe_gpus(runtime);
  const bool root = runtime.world_rank() == 0;
  check_outputs_writable(o, runtime.world_rank());
  const tessera::Context world = runtime.start(tessera::parse_backend_choice(o.backend));
  if (root && !o.quiet) std::fprintf(stderr, "scaling: %s\n", runtime.describe().c_str());

  const std::size_t total_points = o.ranks.size() * (o.modes.size() + 1);
  std::size_t done = 0;
  tessera::Stopwatch elapsed;
  auto progress = [&](const std::string& what) {
    ++done;
    if (root && !o.quiet)
      std::fprintf(stderr, "scaling: [%zu/%zu] %s done; %zu left; %.1f s elapsed\n", done, total_points, what.c_str(),
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

  std::vector<ModeReport> reports;
  for (sc::Mode mode : o.modes) {
    ModeReport report{mode, mode == sc::Mode::strong ? *o.n : *o.n_per_rank, {}};
    for (std::size_t i = 0; i < o.ranks.size(); ++i) {
      PointResult point;
      point.ranks = o.ranks[i];
      point.size = sc::problem_at(o.op, mode, report.size_arg, element_bytes(o.dtype), point.ranks).size;
      if (!contexts[i].is_null()) run_point(contexts[i], o, point);
      if (root) report.points.push_back(point);
      sleepy_world_barrier();
      progress(std::string(sc::to_string(mode)) + " at " + std::to_string(point.ranks) + " ranks");
    }
    reports.push_back(std::move(report));
  }
  if (!root) return 0;

  tessera::scaling_app::JsonWriter j;
  j.begin_object();
  j.field("app", "scaling");
  j.field("op", sc::to_string(o.op));
  j.field("dtype", o.dtype);
  j.field("backend", tessera::to_string(world.backend()));
  j.field("world_size", runtime.world_size());
  j.field("host", runtime.hostname());
  j.field("runtime", runtime.describe());
  j.field("repeat", o.repeat);
  j.field("warmup", o.warmup);
  j.field("seed", static_cast<long long>(o.seed));
  if (o.op == sc::Op::matmul) j.field("panel_width", static_cast<long long>(o.panel_width));
  if (const char* job = std::getenv("SLURM_JOB_ID")) j.field("slurm_job_id", job);
  j.array("ranks", o.ranks);
  j.key("collectives");
  j.begin_array();
  std::printf("scaling: %s, %s\ncollectives (allreduce, slowest rank, per call):\n%6s %14s %14s %14s\n",
              sc::to_string(o.op), runtime.describe().c_str(), "ranks", "8 B [s]", "large [s]", "large [B]");
  for (const auto& s : samples) {
    j.begin_object();
    j.field("ranks", s.ranks);
    j.field("allreduce_8B_s", s.small_seconds);
    j.field("allreduce_large_s", s.large_seconds);
    j.field("large_bytes", s.large_bytes);
    j.end_object();
    std::printf("%6d %14.4g %14.4g %14.4g\n", s.ranks, s.small_seconds, s.large_seconds, s.large_bytes);
  }
  j.end_array();
  const auto net = sc::fit_network(samples);
  j.key("network");
  j.begin_object();
  j.field("latency_s", net.latency);
  j.field("bandwidth_Bps", net.bandwidth);
  j.end_object();
  std::printf("network model: latency %.4g s per tree round, bandwidth %.4g B/s\n", net.latency, net.bandwidth);
  for (const auto& r : reports) write_mode(j, o, r, samples, stdout);
  j.end_object();
  std::fflush(stdout);

  int status = 0;
  if (!o.json.empty() && !write_file(o.json, j.str() + "\n")) {
    std::fprintf(stderr, "scaling: error: --json: cannot write '%s'\n", o.json.c_str());
    status = 1;
  }
  if (!o.csv.empty()) {
    std::ostringstream csv;
    csv << "op,mode,ranks,size,time_s,local_s,communication_s,fixup_s,host_s,other_s,checksum\n";
    csv.precision(17);
    for (const auto& r : reports)
      for (const auto& p : r.points)
        csv << sc::to_string(o.op) << ',' << sc::to_string(r.mode) << ',' << p.ranks << ',' << p.size << ',' << p.time
            << ',' << p.phases.local << ',' << p.phases.communication << ',' << p.phases.fixup << ','
            << p.phases.host << ',' << p.other << ',' << p.checksum << '\n';
    if (!write_file(o.csv, csv.str())) {
      std::fprintf(stderr, "scaling: error: --csv: cannot write '%s'\n", o.csv.c_str());
      status = 1;
    }
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  try {
    return run(runtime, argc, argv);
  } catch (const UsageError& e) {
    // Parsing is identical on every rank, so every rank gets here; only rank 0 speaks.
    if (runtime.world_rank() == 0) {
      if (*e.what()) std::fprintf(stderr, "scaling: error: %s\n", e.what());
      std::fputs(kUsage, stderr);
    }
    return *e.what() ? 2 : 0;
  }
}
