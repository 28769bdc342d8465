// The frame every app runs in: the runtime, the command line, the error policy (a UsageError on
// every rank -> one line on rank 0 and exit status 2), timing over repeats, and the report (a table
// on rank 0, and a JSON object with --json).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "json.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/timer.hpp"

namespace tessera::apps {

// Exit statuses of every app.
inline constexpr int kExitOk = 0;
inline constexpr int kExitVerifyFailed = 1;
inline constexpr int kExitUsage = 2;
// A run stopped by SIGUSR1 or SIGTERM after writing a checkpoint: the work is not done, and a
// requeued run with --restart auto continues it (EX_TEMPFAIL of sysexits.h, "try again later"; the
// job scripts requeue on it).
inline constexpr int kExitRequeue = 75;

class App {
 public:
  // Initialises MPI. name: the executable's name, first word of every message.
  App(int& argc, char**& argv, std::string name, std::string summary, bool common_n = true);

  ArgParser& parser() { return parser_; }
  const ArgParser& parser() const { return parser_; }
  CommonOptions& options() { return options_; }
  const CommonOptions& options() const { return options_; }
  const std::string& name() const { return name_; }
  Runtime& runtime() { return runtime_; }
  const Runtime& runtime() const { return runtime_; }

  // Parses the command line (--help / --version print on rank 0 and return 0), checks the --json
  // and --output destinations, starts the backend and runs body. A UsageError from any of these,
  // thrown alike on every rank, becomes one line on rank 0 and exit status 2.
  int run(const std::function<int(const Context&)>& body);

 private:
  Runtime runtime_;
  int argc_for_parse_ = 0;         // argc and argv after MPI took its own arguments out
  char** argv_for_parse_ = nullptr;
  std::string name_;
  ArgParser parser_;
  CommonOptions options_;
};

// How the ranks' device buffers travel in this run ("mpi-host" on the cpu backend).
std::string communication_path(const Context& ctx);

// ---- timing ------------------------------------------------------------------------------------------

struct TimingSummary {
  int repeats = 0;
  int warmup = 0;
  double total = 0;       // median over repeats of the slowest rank's wall time: the headline time
  double repeat_min = 0;  // the slowest rank's wall time in the fastest and in the slowest repeat
  double repeat_max = 0;
  double rank_min = 0;    // over ranks, as OSU and nccl-tests report: each rank's median over repeats
  double rank_avg = 0;
  double rank_max = 0;
  PhaseTimes phases;      // the slowest rank's phase times in the median repeat (the lower of the two
                          // middle ones for an even count): they add up to at most `total`
  std::vector<double> slowest;  // per repeat, in order: the slowest rank's wall time
  int phases_repeat = 0;  // the repeat (0-based, in order) and the rank `phases` come from: an app's
  int phases_rank = 0;    // finer steps of that repeat on that rank add up to them
};

double median(std::vector<double> values);

// Per repeat: the slowest rank (its wall time and its phases); per rank: its median over repeats.
// Collective over ctx; every rank gets the same summary.
TimingSummary summarize(const Context& ctx, const std::vector<double>& wall, const std::vector<PhaseTimes>& phases,
                        int warmup);

// A progress line on rank 0's stderr for runs longer than a few seconds: "<app>: <what> 3 of 8,
// 12.1 s elapsed, about 20 s left", at most one every kEvery seconds and none in the first
// kQuietStart seconds, none with --quiet. Not collective: every rank may call update, only rank 0
// prints.
class Progress {
 public:
  static constexpr double kQuietStart = 3.0;
  static constexpr double kEvery = 5.0;
  Progress(const Context& ctx, const CommonOptions& options, std::string app, std::string what, double total)
      : show_(ctx.is_root() && !options.quiet), app_(std::move(app)), what_(std::move(what)), total_(total) {}
  // `done` of the total units have been done.
  void update(double done);

 private:
  bool show_;
  std::string app_, what_;
  double total_;
  double last_ = 0;  // elapsed seconds at the last line
  Stopwatch elapsed_;
};

// The app's name for progress lines, set by App.
const std::string& app_name();

// Runs body(PhaseTimes*) `warmup` times untimed, then `repeat` times timed between barriers, with a
// progress line over them on long runs.
template <class Body>
TimingSummary measure(const Context& ctx, const CommonOptions& options, Body&& body) {
  Progress progress(ctx, options, app_name(), "repeat", options.warmup + options.repeat);
  for (int i = 0; i < options.warmup; ++i) {
    body(static_cast<PhaseTimes*>(nullptr));
    progress.update(i + 1);
  }
  ctx.queue().synchronize();  // the untimed calls' queued device work ends before the first timed call
  std::vector<double> wall;
  std::vector<PhaseTimes> phases;
  for (int i = 0; i < options.repeat; ++i) {
    ctx.comm().barrier();
    PhaseTimes times;
    Stopwatch watch;
    body(&times);
    ctx.queue().synchronize();
    wall.push_back(watch.seconds());
    phases.push_back(times);
    progress.update(options.warmup + i + 1);
  }
  return summarize(ctx, wall, phases, options.warmup);
}

// ---- the report ----------------------------------------------------------------------------------------

struct Verdict {
  bool ok = true;        // false: the result is wrong (exit status 1)
  bool checked = true;   // false: nothing could be compared (NaN or infinity in the inputs, say); ok stays true
  std::string detail;    // what was compared, and how close
};

struct Report {
  std::string input;                                // "generated (seed 42)" or FILE:/DSET
  io::DType dtype = io::DType::float32;
  std::string dtype_name;                           // where set, the dtype's name instead (complex64)
  Json sizes = Json::object();                      // {"n": ...} or {"m":, "k":, "n":}
  Json parameters = Json::object();                 // app-specific flags (op, predicate, grid, ...)
  std::vector<std::pair<std::string, std::string>> rows;  // app-specific table rows (after the sizes)
  Json result;                                      // the headline result
  std::string result_text;
  std::optional<Verdict> verdict;                   // set when --verify ran
  TimingSummary timing;
  double throughput = 0;
  std::string throughput_unit;                      // "GB/s" or "GFLOP/s"
  std::string throughput_basis;                     // how the throughput was counted
};

// ---- inputs, values and outputs shared by the apps --------------------------------------------------

// Where a 1-D input comes from: --input (probed collectively; must be 1-D; dtype from the file
// unless --dtype was given) or the generator (--n, --seed, --dtype).
struct ArraySource {
  io::DType dtype = io::DType::float32;
  index_t n = 0;
  std::string description;  // for the table and the JSON
  std::size_t bytes_per_rank = 0;  // of the largest block
};
ArraySource resolve_array_source(const Context& ctx, const App& app);

// The input array: read from the file, or generated from the seed (element i depends on seed and i).
// A rank without room for its block stops every rank with one line naming the flag and the bytes per
// rank (make_collectively).
template <class T>
DistArray<T> load_array(const Context& ctx, const App& app, const ArraySource& source) {
  const CommonOptions& o = app.options();
  const std::string what = std::string(o.input ? "--input" : "--n") + ": " + std::to_string(source.n) + " elements of " +
                           io::to_string(source.dtype) + " need " + format_bytes(static_cast<double>(source.bytes_per_rank)) +
                           " per rank on " + std::to_string(ctx.size()) + " rank(s)";
  // Before any allocation: the blocks of all ranks that share a memory (a GPU, a node's host memory)
  // must fit it, or the run stops in one line (a host allocation past the memory is not refused
  // but killed later, by the kernel's out-of-memory killer).
  require_memory(ctx, source.bytes_per_rank,
                 std::string(o.input ? "--input" : "--n") + ": " + std::to_string(source.n) + " elements of " +
                     io::to_string(source.dtype));
  if (o.input)
    return make_collectively(ctx, what, [&] { return for_flag("--input", [&] { return io::read_array<T>(ctx, *o.input); }); });
  DistArray<T> array = make_collectively(ctx, what, [&] { return DistArray<T>(ctx, source.n); });
  array.generate(o.seed);
  return array;
}

// The attributes every output dataset carries.
io::OutputAttributes output_attributes(const App& app, const Context& ctx, io::DType dtype);

template <class T>
Json value_json(T v) {
  if constexpr (std::is_same_v<T, std::int32_t>) return Json(static_cast<long long>(v));
  else if constexpr (std::is_same_v<T, std::int64_t>) return Json(static_cast<long long>(v));
  else return Json(v);
}

template <class T>
std::string value_text(T v) {
  if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else return format_number(v);
}

// The OpenMP threads per rank the runtime set, and what chose them (rank 0's view; min and max over
// the ranks): {"per_rank", "min", "max", "chosen_by", "cores_in_mask", "cores_on_node", "ranks_on_node"}.
Json threads_json(const Runtime& runtime);

// What every report carries to say where it came from: "version" (the library's), "revision" (the
// source revision at build time, or "unknown"), "timestamp" (now, UTC, ISO 8601) and "hosts"
// (the distinct host names of the job, in rank order).
void add_provenance(Json& report, const Runtime& runtime);

// The environment block of a report: {"tessera", "revision", "mpi", "hdf5", "cuda_runtime",
// "cuda_driver", "nccl", "devices"} (null where the build or machine has none).
Json environment_json(const Environment& environment);

// "0.1.0, revision v0.1.0-12-gabcdef0" for tables and --version.
std::string version_text();

// Prints the table on rank 0 and, with --json, writes the JSON object there. Collective: when the
// JSON cannot be written (a full disk), every rank throws the same UsageError.
void publish(const App& app, const Context& ctx, const Report& report);

// Collective: rank 0 writes `report` (dump(2) and a newline) to `path` whole or not at all
// (io::write_whole_file); the other ranks' `report` is not read. When it cannot be written, every rank
// throws the same UsageError: "--json: cannot ...".
void write_json_report(const Context& ctx, const std::string& path, const Json& report);

// Whether two paths name the same file: the same device and inode where both exist, else the same
// path once the directory is resolved. The second form is collective: rank 0 looks and tells all.
bool same_file(const std::string& a, const std::string& b);
bool same_file(const Context& ctx, const std::string& a, const std::string& b);

// Collective, before any work: the --json destination can be written (io::check_output_file) and is
// not a file that an HDF5 flag of this run names (same device and inode, or the same resolved path).
void check_report_path(const Context& ctx, const App& app);

// "1.23 ms", "45.6 us", "2.00 s".
std::string format_seconds(double seconds);

}  // namespace tessera::apps
