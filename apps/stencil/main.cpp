// stencil: stencils over distributed data.
//   --op jacobi5 | jacobi9   the steady heat equation on an nx x ny grid (stencil_problem.hpp) by Jacobi
//                            iteration over a 2-D process grid: per iteration the block edges first,
//                            their halo exchange beside the interior sweep, the residual every
//                            --check-every iterations; checkpoints every --checkpoint-every
//                            iterations, and --restart from one, bitwise the same as a run never
//                            interrupted, whatever the grids of the two runs.
//   --op convolve1d          the 1-D convolution (numpy.convolve, same length) of a block-distributed
//                            array with a kernel of any radius, zero or periodic boundary, by the
//                            direct sum or the FFT (--method; fft_convolve.hpp).
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "app.hpp"
#include "perturb.hpp"
#include "field_ops.hpp"
#include "stencil_problem.hpp"
#include "tessera/framework/algorithms/stencil.hpp"
#include "tessera/framework/checkpoint.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/framework/fft_convolve.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "verify.hpp"
#include "verify_stencil.hpp"

namespace tessera::apps::stencil {
namespace {

enum class Op { jacobi5, jacobi9, convolve1d };

const char* op_name(Op op) {
  switch (op) {
    case Op::jacobi5: return "jacobi5";
    case Op::jacobi9: return "jacobi9";
    case Op::convolve1d: return "convolve1d";
  }
  return "?";
}

constexpr const char* kFieldDataset = "/field";

// --weights: numbers separated by commas, or FILE.h5:/DATASET (a 1-D dataset).
struct WeightsSource {
  std::vector<double> values;
  std::optional<io::DatasetPath> file;
  bool given() const { return file || !values.empty(); }
};

std::vector<double> parse_list(std::string_view text, std::string_view flag) {
  std::vector<double> out;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    out.push_back(parse_real(text.substr(at, comma - at), flag));
    if (!std::isfinite(out.back()))
      throw UsageError(std::string(flag) + ": weight '" + std::string(text.substr(at, comma - at)) + "' is not finite");
    at = comma + 1;
  }
  return out;
}

// The weights, on every rank: from the list, or read from the dataset (any length; 1-D).
std::vector<double> load_weights(const Context& ctx, const WeightsSource& source) {
  if (!source.file) return source.values;
  const io::DatasetInfo info = for_flag("--weights", [&] { return io::probe_dataset(ctx, *source.file); });
  if (info.shape.size() != 1)
    throw UsageError("--weights: dataset '" + source.file->dataset + "' in '" + source.file->file +
                     "' is not 1-D; the weights are a 1-D dataset");
  const DistArray<double> w = for_flag("--weights", [&] { return io::read_array<double>(ctx, *source.file); });
  std::vector<double> all = w.gather(0);
  all.resize(static_cast<std::size_t>(info.shape[0]));
  ctx.comm().bcast(all.data(), static_cast<index_t>(all.size()), 0);
  for (double v : all)
    if (!std::isfinite(v)) throw UsageError("--weights: " + source.file->str() + " holds a weight that is not finite");
  return all;
}

std::string list_text(const std::vector<double>& values) {
  std::string s;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) s += ',';
    s += format_number(values[i]);
  }
  return s;
}

template <class T>
StencilWeights<T> stencil_weights(Op op, const std::vector<double>& given) {
  StencilWeights<T> w = op == Op::jacobi5 ? StencilWeights<T>::jacobi5() : StencilWeights<T>::jacobi9();
  if (given.empty()) return w;
  const std::size_t want = op == Op::jacobi5 ? 5 : 9;
  if (given.size() != want)
    throw UsageError(std::string("--weights: ") + op_name(op) + " takes " + std::to_string(want) + " weights (" +
                     (op == Op::jacobi5 ? "centre,north,south,west,east" : "centre,north,south,west,east,nw,ne,sw,se") +
                     "), got " + std::to_string(given.size()));
  T* slots[] = {&w.centre, &w.north, &w.south, &w.west, &w.east, &w.north_west, &w.north_east, &w.south_west, &w.south_east};
  for (std::size_t k = 0; k < want; ++k) *slots[k] = static_cast<T>(given[k]);
  return w;
}

template <class T>
std::vector<double> weights_as_list(const StencilWeights<T>& w) {
  std::vector<double> v = {w.centre, w.north, w.south, w.west, w.east};
  if (w.shape == StencilShape::nine_point)
    for (const T x : std::array<T, 4>{w.north_west, w.north_east, w.south_west, w.south_east}) v.push_back(x);
  return v;
}

std::string attribute(const std::vector<std::pair<std::string, std::string>>& attrs, const std::string& name) {
  for (const auto& [k, v] : attrs)
    if (k == name) return v;
  return "";
}

// Test-only: TESSERA_TEST_PAUSE_AFTER_CHECKPOINT=SECONDS makes every rank stop that long after each
// checkpoint, rank 0 saying so on stderr, so that a test can kill the run between checkpoints.
int test_pause_after_checkpoint() {
  const char* env = std::getenv("TESSERA_TEST_PAUSE_AFTER_CHECKPOINT");
  return env ? std::atoi(env) : 0;
}

// SIGUSR1 or SIGTERM, once caught: the solve writes a checkpoint at the next step boundary and
// stops with kExitRequeue. Installed only for runs that checkpoint.
volatile std::sig_atomic_t stop_signal = 0;
extern "C" void catch_stop_signal(int signo) { stop_signal = signo; }

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = catch_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int signo : {SIGUSR1, SIGTERM})
    if (sigaction(signo, &sa, nullptr) != 0) throw UsageError("cannot catch signal " + std::to_string(signo));
}

const char* signal_name(int signo) { return signo == SIGUSR1 ? "SIGUSR1" : signo == SIGTERM ? "SIGTERM" : "a signal"; }

// Checkpoints in a directory: DIR/checkpoint-<iteration, 12 digits>.h5.
constexpr index_t kDefaultCheckpointKeep = 2;
// --checkpoint-every auto (the default with --checkpoint-dir): a checkpoint once the solve has run
// kAutoCheckpointSeconds since the last one (or its start), and at least kAutoCheckpointFactor times
// as long as the last one took to write, so that writing costs at most 1 / (1 + factor) of the run
// (5%) whatever the file system, and a lost node loses at most that interval's work.
constexpr double kAutoCheckpointSeconds = 600;
constexpr double kAutoCheckpointFactor = 19;

// How often to checkpoint: every `iterations`, or by the clock (auto, or every `seconds`).
struct CheckpointInterval {
  index_t iterations = 0;  // > 0: every that many iterations
  double seconds = 0;      // > 0: once that many seconds have passed since the last one
  bool automatic = false;  // seconds = kAutoCheckpointSeconds, and at least factor x the last write
  std::string spec;        // as given: "auto", "90s", "500"
  bool set() const { return iterations > 0 || seconds > 0; }
  std::string description() const {
    if (automatic)
      return "every " + format_seconds(kAutoCheckpointSeconds) + " of solving and at least " +
             std::to_string(static_cast<int>(kAutoCheckpointFactor)) + "x the last write";
    if (seconds > 0) return "every " + format_seconds(seconds) + " of solving";
    return "every " + std::to_string(iterations) + " iterations";
  }
};

// --checkpoint-every: N (iterations), a duration (90s, 10min, 2h), or auto.
CheckpointInterval parse_checkpoint_interval(std::string_view v) {
  CheckpointInterval c;
  c.spec = std::string(v);
  if (v == "auto") {
    c.automatic = true;
    c.seconds = kAutoCheckpointSeconds;
    return c;
  }
  for (const auto& [suffix, unit] : {std::pair<std::string_view, double>{"min", 60}, {"s", 1}, {"h", 3600}}) {
    if (v.size() > suffix.size() && v.substr(v.size() - suffix.size()) == suffix) {
      const std::string number(v.substr(0, v.size() - suffix.size()));
      char* end = nullptr;
      const double x = std::strtod(number.c_str(), &end);
      if (end == number.c_str() || *end != '\0' || !(x > 0) || !std::isfinite(x))
        throw UsageError("--checkpoint-every: cannot parse '" + std::string(v) +
                         "' as a duration (examples: 90s, 10min, 2h), a count of iterations or auto");
      c.seconds = x * unit;
      return c;
    }
  }
  c.iterations = parse_count(v, "--checkpoint-every", 1, INT64_MAX);
  return c;
}

// When a run that checkpoints writes the next checkpoint: every N iterations, or by the clock (the
// ranks agree on the longest time any of them has solved since the last one; auto: at least
// kAutoCheckpointFactor times the last write). Collective where the interval is a time.
class CheckpointClock {
 public:
  explicit CheckpointClock(const CheckpointInterval& every) : every_(every) {}
  // After a step that reached `iteration`, with work left (`unfinished`) or not, and a stop signal
  // caught by some rank (`signalled`, which writes one anyway).
  bool due(const Context& ctx, index_t iteration, bool unfinished, bool signalled) const {
    if (every_.seconds > 0 && unfinished && !signalled) {
      const double since = ctx.comm().allreduce(since_.seconds(), ReduceOp::max);
      double interval = every_.seconds;
      if (every_.automatic) interval = std::max(interval, kAutoCheckpointFactor * last_write_seconds_);
      return since >= interval;
    }
    return every_.iterations > 0 && iteration % every_.iterations == 0;
  }
  // A checkpoint took `seconds` on this rank: the ranks agree on the slowest, the clock restarts.
  void written(const Context& ctx, double seconds) {
    last_write_seconds_ = ctx.comm().allreduce(seconds, ReduceOp::max);
    since_.restart();
  }

 private:
  CheckpointInterval every_;
  Stopwatch since_;                // solving time since the last checkpoint (or the start)
  double last_write_seconds_ = 0;  // the slowest rank's time for the last checkpoint
};

// The stop signal any rank caught (srun and mpirun forward it to every task, not all at the same
// step). Collective.
int agreed_stop_signal(const Context& ctx) { return ctx.comm().allreduce(static_cast<int>(stop_signal), ReduceOp::max); }

// After a checkpoint at `iteration` was written: the test hook's pause (TESSERA_TEST_PAUSE_AFTER_CHECKPOINT).
void pause_after_checkpoint(const Context& ctx, const std::string& app, index_t iteration, bool signalled) {
  if (const int pause = test_pause_after_checkpoint(); pause > 0 && !signalled) {
    if (ctx.is_root()) {
      std::fprintf(stderr, "%s: checkpoint at iteration %lld written; paused for a test (process %ld)\n", app.c_str(),
                   static_cast<long long>(iteration), static_cast<long>(getpid()));
      std::fflush(stderr);
    }
    sleep(static_cast<unsigned>(pause));
  }
}

// A run stopped by a signal after its checkpoint: rank 0 says so; the status asks for a requeue.
int report_requeue(const Context& ctx, const std::string& app, int signo, index_t iterations, index_t total,
                   const std::string& checkpoint) {
  if (ctx.is_root()) {
    std::fprintf(stderr, "%s: %s: stopped at iteration %lld of %lld after writing the checkpoint %s; exit status %d "
                 "asks for a requeue (continue with --restart auto)\n", app.c_str(), signal_name(signo),
                 static_cast<long long>(iterations), static_cast<long long>(total), checkpoint.c_str(), kExitRequeue);
    std::fflush(stderr);
  }
  return kExitRequeue;
}

std::string checkpoint_name(const std::string& dir, index_t iteration) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%012lld", static_cast<long long>(iteration));
  return dir + "/checkpoint-" + digits + ".h5";
}

// Whether a file name (no directory) is a checkpoint's name, checkpoint-<digits>.h5.
bool checkpoint_file_name(const std::string& n) {
  if (n.size() < 15 || n.compare(0, 11, "checkpoint-") != 0 || n.compare(n.size() - 3, 3, ".h5") != 0) return false;
  const std::string digits = n.substr(11, n.size() - 14);
  return !digits.empty() && digits.size() <= 18 && digits.find_first_not_of("0123456789") == std::string::npos;
}

// Whether `path` lies in the checkpoint directory `dir` under a checkpoint's name (a file the run may
// write or remove there).
bool in_checkpoint_dir(const Context& ctx, const std::string& path, const std::string& dir) {
  const std::filesystem::path p(path);
  const std::string parent = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  return checkpoint_file_name(p.filename().string()) && same_file(ctx, parent, dir);
}

// The checkpoints in `dir`, newest (highest iteration) first: {iteration, path}. Collective (rank 0
// lists, every rank gets the list).
std::vector<std::pair<index_t, std::string>> list_checkpoints(const Context& ctx, const std::string& dir) {
  std::string packed;  // "ITERATION NAME\n" ...
  if (ctx.is_root()) {
    std::vector<std::pair<index_t, std::string>> found;
    if (DIR* d = opendir(dir.c_str())) {
      while (const dirent* e = readdir(d)) {
        const std::string n = e->d_name;
        if (!checkpoint_file_name(n)) continue;
        found.emplace_back(std::stoll(n.substr(11, n.size() - 14)), n);
      }
      closedir(d);
    }
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [it, n] : found) packed += std::to_string(it) + " " + n + "\n";
  }
  index_t size = ctx.comm().bcast_value(static_cast<index_t>(packed.size()), 0);
  packed.resize(static_cast<std::size_t>(size));
  ctx.comm().bcast(packed.data(), size, 0);
  std::vector<std::pair<index_t, std::string>> out;
  for (std::size_t at = 0; at < packed.size();) {
    const std::size_t space = packed.find(' ', at), end = packed.find('\n', at);
    out.emplace_back(std::stoll(packed.substr(at, space - at)), dir + "/" + packed.substr(space + 1, end - space - 1));
    at = end + 1;
  }
  return out;
}

// What a file under a checkpoint's name is: a checkpoint of this app (its field dataset carries the
// app's name and an iteration; `attrs` then holds the attributes), a file of another program (an
// HDF5 file that opens, without such a field), or unreadable (not HDF5, truncated, damaged: what a
// checkpoint cut short looks like). Collective.
enum class CheckpointFile { ours, foreign, unreadable };
CheckpointFile classify_checkpoint(const Context& ctx, const std::string& file,
                                   std::vector<std::pair<std::string, std::string>>* attrs = nullptr) {
  try {
    auto found = io::read_attributes(ctx, {file, kFieldDataset});
    const bool ours = attribute(found, "app") == "tessera-stencil" && !attribute(found, "iteration").empty();
    if (attrs) *attrs = std::move(found);
    return ours ? CheckpointFile::ours : CheckpointFile::foreign;
  } catch (const io::IoError& e) {
    return e.kind() == io::IoError::Kind::no_dataset ? CheckpointFile::foreign : CheckpointFile::unreadable;
  }
}
bool our_checkpoint(const Context& ctx, const std::string& file) {
  return classify_checkpoint(ctx, file) == CheckpointFile::ours;
}

// Before the first step: a file in `dir` under the name of a checkpoint this run may write (after
// iteration `from`, before `to`) that is not a checkpoint of this app would stop the run at that
// checkpoint (such a file is never replaced): UsageError now, naming it. Collective.
void refuse_files_in_the_way(const Context& ctx, const std::string& dir, index_t from, index_t to) {
  for (const auto& [it, path] : list_checkpoints(ctx, dir)) {
    if (it <= from || it >= to || our_checkpoint(ctx, path)) continue;
    throw UsageError("--checkpoint-dir: '" + path + "' is not a checkpoint of tessera-stencil, and this run may write "
                     "its checkpoint of iteration " + std::to_string(it) + " under that name (it checkpoints after "
                     "iterations " + std::to_string(from + 1) + " to " + std::to_string(to - 1) +
                     "); move the file or give another directory");
  }
}

// A file under a checkpoint's name in --checkpoint-dir that this app did not write: left as it is,
// with a warning (once a run for each file). Rank 0 writes.
void warn_not_ours(const Context& ctx, const std::string& path, const char* flag) {
  static std::set<std::string> warned;
  if (ctx.is_root() && warned.insert(path).second) {
    std::fprintf(stderr, "tessera-stencil: warning: %s: left '%s' in --checkpoint-dir as it is: not a checkpoint of this app\n",
                 flag, path.c_str());
    std::fflush(stderr);
  }
}

// Removes the checkpoints in `dir` older than `newest` beyond the keep - 1 before it (the newest and
// keep - 1 older ones stay); rank 0 removes. Newer files are left alone, and so is any file with a
// checkpoint's name that this app did not write (warn_not_ours). Collective.
void prune_checkpoints(const Context& ctx, const std::string& dir, index_t newest, index_t keep) {
  index_t kept = 1;
  for (const auto& [it, path] : list_checkpoints(ctx, dir)) {
    if (it >= newest) continue;
    if (!our_checkpoint(ctx, path)) {
      warn_not_ours(ctx, path, "--checkpoint-keep");
      continue;
    }
    if (kept < keep) {
      ++kept;
      continue;
    }
    if (ctx.is_root() && std::remove(path.c_str()) != 0)
      std::fprintf(stderr, "tessera-stencil: warning: could not remove the old checkpoint '%s'\n", path.c_str());
  }
}

// --restart auto met a checkpoint that does not read or verify: rank 0 renames it NAME.corrupt (kept,
// never removed) and warns; the caller tries the one before it. Collective.
void set_aside_corrupt(const Context& ctx, const std::string& app, const std::string& file, const std::string& why) {
  if (ctx.is_root()) {
    const std::string aside = file + ".corrupt";
    const bool moved = std::rename(file.c_str(), aside.c_str()) == 0;
    std::fprintf(stderr, "%s: warning: --restart auto: skipped %s (%s); %s; trying the one before it\n", app.c_str(),
                 file.c_str(), why.c_str(), moved ? ("renamed it " + aside).c_str() : "could not rename it");
    std::fflush(stderr);
  }
  ctx.comm().barrier();
}

std::string gbps_text(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", gbps);
  return text;
}

int slurm_restart_count() {
  const char* env = std::getenv("SLURM_RESTART_COUNT");
  return env && *env ? std::atoi(env) : 0;
}

struct JacobiSettings {
  Op op = Op::jacobi5;
  index_t nx = 1024, ny = 1024;
  int grid_rows = 0, grid_cols = 0;
  index_t iters = 1000;
  double tol = 0;
  index_t check_every = 100;
  int ghost = 1;
  bool overlap = true;
  CheckpointInterval checkpoint_every;
  std::optional<std::string> checkpoint, restart, checkpoint_dir;
  bool restart_auto = false;
  index_t checkpoint_keep = kDefaultCheckpointKeep;
};

// --checkpoint-dir: made where it is missing (one level); UsageError on every rank where it cannot
// be made or is not a directory. Collective.
void make_checkpoint_dir(const Context& ctx, const std::string& dir) {
  int made = 0;
  if (ctx.is_root()) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) made = ::mkdir(dir.c_str(), 0777) == 0 ? 1 : -1;
    else made = S_ISDIR(st.st_mode) ? 0 : -2;
  }
  made = ctx.comm().bcast_value(made, 0);
  if (made == -1) throw UsageError("--checkpoint-dir: cannot make the directory '" + dir + "'");
  if (made == -2) throw UsageError("--checkpoint-dir: '" + dir + "' is not a directory");
}

template <class T>
int run_jacobi(App& app, const Context& ctx, const JacobiSettings& s, const WeightsSource& weights_source) {
  const CommonOptions& o = app.options();
  const io::DType dtype = io::dtype_of<T>();
  const StencilWeights<T> weights = stencil_weights<T>(s.op, load_weights(ctx, weights_source));
  const std::string weights_text = list_text(weights_as_list(weights));
  if (o.verify && weights_source.given())
    throw UsageError("--verify: the analytic solution is that of the Laplace weights; give no --weights with --verify");
  ProcessGrid grid;
  try {
    grid = ProcessGrid::create(ctx, s.grid_rows, s.grid_cols);
  } catch (const UsageError& e) {
    throw UsageError(std::string("--grid: ") + e.what());
  }
  if (s.ny < grid.rows())
    throw UsageError("--ny: " + std::to_string(s.ny) + " rows cannot be cut over the " + std::to_string(grid.rows()) +
                     " process rows of the grid " + std::to_string(grid.rows()) + "x" + std::to_string(grid.cols()) +
                     " (every rank needs at least one row)");
  if (s.nx < grid.cols())
    throw UsageError("--nx: " + std::to_string(s.nx) + " columns cannot be cut over the " + std::to_string(grid.cols()) +
                     " process columns of the grid " + std::to_string(grid.rows()) + "x" + std::to_string(grid.cols()) +
                     " (every rank needs at least one column)");
  const HeatProblem problem{s.nx, s.ny};
  const std::string grid_text = std::to_string(grid.rows()) + "x" + std::to_string(grid.cols());

  // --restart: a checkpoint of this problem (same op, type, shape and weights); returns its iteration.
  auto check_restart = [&](const std::string& file, const std::vector<std::pair<std::string, std::string>>& attrs,
                           const std::string& flag) -> index_t {
    const std::string where = flag + ": '" + file + "'";
    if (attribute(attrs, "app") != app.name() || attribute(attrs, "iteration").empty())
      throw UsageError(where + " is not a checkpoint of " + app.name() + " (its " + kFieldDataset +
                       " lacks the attributes app and iteration)");
    if (attribute(attrs, "nx").empty() || attribute(attrs, "ny").empty())
      throw UsageError(where + " was made by --op " + attribute(attrs, "op") + " (a field of another kind); this run is --op " +
                       op_name(s.op));
    const std::string shape = attribute(attrs, "ny") + " x " + attribute(attrs, "nx");
    if (attribute(attrs, "nx") != std::to_string(s.nx) || attribute(attrs, "ny") != std::to_string(s.ny))
      throw UsageError(where + " holds a field of " + shape + " cells (ny x nx); this run's is " + std::to_string(s.ny) +
                       " x " + std::to_string(s.nx));
    if (attribute(attrs, "op") != op_name(s.op))
      throw UsageError(where + " was made by --op " + attribute(attrs, "op") + "; this run is --op " + op_name(s.op));
    if (attribute(attrs, "dtype") != io::to_string(dtype))
      throw UsageError(where + " holds " + attribute(attrs, "dtype") + "; this run computes in " + io::to_string(dtype) +
                       " (give --dtype " + attribute(attrs, "dtype") + " to continue it bit for bit)");
    if (attribute(attrs, "weights") != weights_text)
      throw UsageError(where + " was made with the weights " + attribute(attrs, "weights") + "; this run's are " + weights_text);
    const index_t iteration = parse_size(attribute(attrs, "iteration"), flag + " (its iteration attribute)");
    if (iteration > s.iters)
      throw UsageError(where + " is at iteration " + std::to_string(iteration) + ", beyond --iters " +
                       std::to_string(s.iters) + " (--iters counts from the start of the problem; give --iters " +
                       std::to_string(iteration) + " or more)");
    return iteration;
  };
  index_t first_iteration = 0;
  std::optional<io::DatasetPath> restart_path;
  if (s.restart && !s.restart_auto) {
    restart_path = io::DatasetPath{*s.restart, kFieldDataset};
    const auto attrs = for_flag("--restart", [&] { return io::read_attributes(ctx, *restart_path); });
    first_iteration = check_restart(*s.restart, attrs, "--restart");
  }
  std::optional<io::DatasetPath> checkpoint_path;
  if (s.checkpoint_dir) {
    if (!o.json.empty() && same_file(ctx, o.json, *s.checkpoint_dir))
      throw UsageError("--json: '" + o.json + "' is this run's --checkpoint-dir");
    if (!o.json.empty() && in_checkpoint_dir(ctx, o.json, *s.checkpoint_dir))
      throw UsageError("--json: '" + o.json + "' is a checkpoint's name in this run's --checkpoint-dir");
  }
  if (s.checkpoint) {
    // The checkpoint file is replaced whole by each checkpoint: never a file of the run's other
    // flags, and only a file that holds nothing but an earlier checkpoint of this app (any other
    // HDF5 file is refused, and left as it is).
    const std::pair<const char*, std::optional<std::string>> others[] = {
        {"--output", o.output ? std::optional<std::string>(o.output->file) : std::nullopt},
        {"--weights", weights_source.file ? std::optional<std::string>(weights_source.file->file) : std::nullopt},
        {"--json", o.json.empty() ? std::nullopt : std::optional<std::string>(o.json)}};
    for (const auto& [flag, file] : others)
      if (file && same_file(ctx, *file, *s.checkpoint))
        throw UsageError("--checkpoint: '" + *s.checkpoint + "' is also this run's " + flag + " file (each checkpoint "
                         "replaces the file whole; give the checkpoints a file of their own)");
    checkpoint_path = io::DatasetPath{*s.checkpoint, kFieldDataset};
    for_flag("--checkpoint", [&] {
      io::check_output_path(ctx, *checkpoint_path, /*overwrite=*/true, /*replace_file=*/true, app.name());
    });
  }
  if (!o.json.empty() && s.restart && !s.restart_auto && same_file(ctx, o.json, *s.restart))
    throw UsageError("--json: '" + o.json + "' is this run's --restart file");

  const std::string what = "--nx/--ny: a field of " + std::to_string(s.ny) + " x " + std::to_string(s.nx) + " " +
                           io::to_string(dtype) + " cells (and a second one for the iteration) on " +
                           std::to_string(ctx.size()) + " rank(s)";
  // The field with its ghost layers must be numberable (Field2D refuses it otherwise, without the
  // flags' names), and both fields must fit the memory of the ranks that share it.
  if (s.nx > (index_t(1) << 62) || s.ny > (index_t(1) << 62))
    throw UsageError(std::string(s.nx > s.ny ? "--nx" : "--ny") + ": " + std::to_string(std::max(s.nx, s.ny)) +
                     " cells along one side pass 2^62");
  checked_elements(s.ny + 2 * static_cast<index_t>(s.ghost) + 16, s.nx + 2 * static_cast<index_t>(s.ghost) + 16,
                   "--nx/--ny: a field of " + std::to_string(s.ny) + " x " + std::to_string(s.nx) + " cells with its ghost layers");
  // Both fields of the iteration are made here, so that a rank without room stops every rank with
  // one line; the second is given back at once, for the solver to take again (from the block cache
  // under cuda).
  Field2D<T> u = make_collectively(ctx, what, [&] {
    Field2D<T> first(grid, s.ny, s.nx, s.ghost);
    Field2D<T> second(grid, s.ny, s.nx, s.ghost);
    return first;
  });
  // Made once every flag has been checked and the fields made, so that a refused run leaves no new
  // directory behind.
  if (s.checkpoint_dir) make_checkpoint_dir(ctx, *s.checkpoint_dir);
  auto boundary = [&](index_t i, index_t j) { return static_cast<T>(problem.exact(i, j)); };
  // --restart auto: the newest checkpoint in the directory that reads and verifies; one that does
  // not is renamed NAME.corrupt (kept, never removed), with a warning, and the one before it tried.
  std::string resumed_from;
  auto restore_newest = [&] {
    for (const auto& [it, file] : list_checkpoints(ctx, *s.checkpoint_dir)) {
      std::string why;
      std::vector<std::pair<std::string, std::string>> attrs;
      const CheckpointFile kind = classify_checkpoint(ctx, file, &attrs);
      if (kind == CheckpointFile::foreign) {
        warn_not_ours(ctx, file, "--restart auto");
        continue;
      }
      try {
        if (kind == CheckpointFile::unreadable) attrs = io::read_attributes(ctx, {file, kFieldDataset});  // its error
        const index_t iteration = check_restart(file, attrs, "--restart auto");  // another problem's: an error
        io::restore(ctx, file, {{"field", u}});
        first_iteration = iteration;
        resumed_from = file;
        return;
      } catch (const io::IoError& e) {
        why = e.what();
      }
      set_aside_corrupt(ctx, app.name(), file, why);
    }
    first_iteration = 0;  // none: from the beginning
    u.fill(T(0));
  };
  bool looked_in_the_way = false;
  auto initialise = [&] {
    u.fill(T(0));
    if (s.restart_auto) restore_newest();
    else if (restart_path) for_flag("--restart", [&] { io::restore(ctx, *s.restart, {{"field", u}}); });
    u.set_outer_ghosts(boundary);
    if (s.checkpoint_dir && !looked_in_the_way) refuse_files_in_the_way(ctx, *s.checkpoint_dir, first_iteration, s.iters);
    looked_in_the_way = true;
  };

  // One checkpoint: to --checkpoint FILE, or DIR/checkpoint-ITERATION.h5 (then the older ones beyond
  // --checkpoint-keep are removed).
  index_t checkpoint_bytes = 0;
  double checkpoint_seconds = 0;
  std::string last_checkpoint;
  auto write_checkpoint = [&](index_t iteration) {
    io::CheckpointOptions c;
    c.app = app.name();
    c.extra = {{"dtype", io::to_string(dtype)}, {"op", op_name(s.op)}, {"iteration", std::to_string(iteration)},
               {"nx", std::to_string(s.nx)}, {"ny", std::to_string(s.ny)}, {"weights", weights_text}, {"grid", grid_text}};
    const std::string file = s.checkpoint_dir ? checkpoint_name(*s.checkpoint_dir, iteration) : *s.checkpoint;
    const char* flag = s.checkpoint_dir ? "--checkpoint-dir" : "--checkpoint";
    Stopwatch write;
    for_flag(flag, [&] { io::checkpoint(ctx, file, {{"field", u}}, iteration, c); });
    checkpoint_seconds += write.seconds();
    checkpoint_bytes += s.nx * s.ny * static_cast<index_t>(sizeof(T));
    last_checkpoint = file;
    if (s.checkpoint_dir) prune_checkpoints(ctx, *s.checkpoint_dir, iteration, s.checkpoint_keep);
  };
  const bool checkpointing = s.checkpoint || s.checkpoint_dir;
  if (checkpointing) install_stop_handlers();
  int stopped_by = 0;

  const Perturbation perturbation = test_perturbation(app, ctx, {Perturbation::Kind::add, Perturbation::Kind::relative});
  JacobiOptions options;
  options.check_every = s.check_every;
  options.tolerance = s.tol;
  options.overlap = s.overlap;
  index_t iterations = first_iteration;
  double residual = std::numeric_limits<double>::quiet_NaN();
  bool converged = false;
  int checkpoints = 0;
  // The solver outlives the timed runs, so that --verify can check the last step against the
  // iterate before it (Jacobi::previous).
  std::optional<Jacobi<T>> last_solver;
  const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) {
    last_solver.reset();
    initialise();
    Jacobi<T>& solver = last_solver.emplace(u, weights, options, first_iteration);
    checkpoints = 0;
    CheckpointClock clock(s.checkpoint_every);
    // Progress on long solves: the run is cut into pieces of whole --check-every intervals, which
    // grow while a piece takes under a second (cutting changes no result: the checks fall where
    // they would), and a line follows each (Progress prints one every few seconds at most).
    Progress progress(ctx, o, app.name(), "iteration", static_cast<double>(s.iters));
    // A run that checkpoints looks for a stop signal after each piece, so its pieces stay short.
    index_t piece = o.quiet && !checkpointing ? s.iters : s.check_every;
    while (solver.iteration() < s.iters && !solver.converged()) {
      index_t stop = s.iters;
      const index_t every = s.checkpoint_every.iterations;
      if (every > 0) stop = std::min(stop, (solver.iteration() / every + 1) * every);
      if (piece < s.iters - solver.iteration()) stop = std::min(stop, (solver.iteration() / piece + 1) * piece);
      Stopwatch piece_time;
      solver.run_until(stop, times);
      progress.update(static_cast<double>(solver.iteration()));
      if (piece < s.iters && ctx.comm().allreduce(piece_time.seconds(), ReduceOp::max) < 1.0)
        piece = piece > s.iters / 2 ? s.iters : 2 * piece;
      const int signalled = checkpointing ? agreed_stop_signal(ctx) : 0;
      const bool unfinished = solver.iteration() < s.iters && !solver.converged();
      if (unfinished && (clock.due(ctx, solver.iteration(), unfinished, signalled != 0) || signalled)) {
        Stopwatch write;
        write_checkpoint(solver.iteration());
        ++checkpoints;
        if (times) times->host += write.seconds();
        clock.written(ctx, write.seconds());
        pause_after_checkpoint(ctx, app.name(), solver.iteration(), signalled != 0);
      }
      if (unfinished && signalled) {
        stopped_by = signalled;
        break;
      }
    }
    iterations = solver.iteration();
    residual = solver.residual();
    converged = solver.converged();
  });

  if (stopped_by) return report_requeue(ctx, app.name(), stopped_by, iterations, s.iters, last_checkpoint);
  if (s.restart_auto && !resumed_from.empty()) restart_path = io::DatasetPath{resumed_from, kFieldDataset};

  Report r;
  r.input = restart_path ? "restart from " + restart_path->file + " at iteration " + std::to_string(first_iteration)
                         : std::string("heat equation, hot top edge, zero start");
  r.dtype = dtype;
  r.sizes["nx"] = static_cast<long long>(s.nx);
  r.sizes["ny"] = static_cast<long long>(s.ny);
  r.parameters["op"] = op_name(s.op);
  r.parameters["grid"] = grid_text;
  r.parameters["iters"] = static_cast<long long>(s.iters);
  r.parameters["tol"] = s.tol;
  r.parameters["check_every"] = static_cast<long long>(s.check_every);
  r.parameters["ghost"] = s.ghost;
  r.parameters["overlap"] = s.overlap;
  r.parameters["weights"] = weights_text;
  if (s.checkpoint_every.iterations > 0)
    r.parameters["checkpoint_every"] = static_cast<long long>(s.checkpoint_every.iterations);
  else
    r.parameters["checkpoint_every"] = s.checkpoint_every.spec;
  r.parameters["checkpoint_dir"] = s.checkpoint_dir ? Json(*s.checkpoint_dir) : Json();
  r.parameters["checkpoint_keep"] = static_cast<long long>(s.checkpoint_keep);
  r.parameters["restart"] = s.restart_auto ? Json("auto") : s.restart ? Json(*s.restart) : Json();
  r.parameters["slurm_restart_count"] = slurm_restart_count();
  r.parameters["path"] = communication_path(ctx);
  r.rows.emplace_back("stencil", std::string(to_string(weights.shape)) + ", weights " + weights_text + ", grid " +
                                     grid_text + ", ghost width " + std::to_string(s.ghost) +
                                     (s.overlap ? ", edges first, exchange overlapped" : ", sweep then exchange"));
  const double checkpoint_gbps = checkpoint_seconds > 0 ? static_cast<double>(checkpoint_bytes) / checkpoint_seconds / 1e9 : 0;
  if (s.checkpoint_every.set())
    r.rows.emplace_back("checkpoints", std::to_string(checkpoints) + " to " +
                                           (s.checkpoint_dir ? *s.checkpoint_dir + "/ (the last " +
                                                                   std::to_string(s.checkpoint_keep) + " kept)"
                                                             : *s.checkpoint) +
                                           " (" + s.checkpoint_every.description() + "), " +
                                           format_seconds(checkpoint_seconds) + " writing, " + gbps_text(checkpoint_gbps) +
                                           " GB/s");
  if (s.restart || std::getenv("SLURM_RESTART_COUNT"))
    r.rows.emplace_back("restart", "SLURM_RESTART_COUNT " + std::to_string(slurm_restart_count()) + "; " +
                                       (restart_path ? "resumed from " + restart_path->file + " at iteration " +
                                                           std::to_string(first_iteration)
                                        : s.restart_auto ? "no checkpoint in " + *s.checkpoint_dir + ": from the beginning"
                                                         : std::string("from the beginning")));
  Json result = Json::object();
  result["iterations"] = static_cast<long long>(iterations);
  result["residual"] = std::isnan(residual) ? Json() : Json(residual);
  result["converged"] = converged;
  result["resumed_iteration"] = static_cast<long long>(first_iteration);
  result["checkpoints"] = checkpoints;
  result["checkpoint_seconds"] = checkpoint_seconds;
  result["checkpoint_write_gbps"] = checkpoint_gbps;
  r.result = result;
  r.result_text = std::to_string(iterations) + " iterations, residual max|u_k - u_(k-1)| " +
                  (std::isnan(residual) ? std::string("(none)") : format_number(residual)) +
                  (converged ? " (converged: below --tol)" : "");

  // The previous iterate, for --verify's check of the last step (none where this run iterated not
  // at all: --iters 0, or a restart at its last iteration).
  const bool stepped = iterations > first_iteration;
  std::vector<T> previous;
  if (o.verify && stepped) previous = last_solver->previous().local_to_host();
  last_solver.reset();
  if (perturbation) perturb_element(perturbation, u);

  if (o.verify) {
    // 1. The last step, every cell, against one stencil step recomputed on the host.
    const std::vector<T> block = u.local_to_host();
    std::optional<Verdict> step;
    if (stepped) step = verify::check_last_step(u, block, previous, weights, boundary);
    // 2. Every cell against the exact solution, where the bound says something: below 1, the
    // solution's largest value (a field of zeros is within 1 of it, so a bound of 1 or more can
    // fail no field). A NaN or infinite error never passes.
    double largest = 0;
    for (index_t i = 0; i < u.local_rows(); ++i)
      for (index_t j = 0; j < u.local_cols(); ++j) {
        const double err = std::fabs(static_cast<double>(block[static_cast<std::size_t>(i * u.local_cols() + j)]) -
                                     problem.exact(u.row_offset() + i, u.col_offset() + j));
        largest = std::isfinite(err) ? std::max(largest, err) : std::numeric_limits<double>::infinity();
      }
    largest = ctx.comm().allreduce(largest, ReduceOp::max);
    const double eps = std::numeric_limits<T>::epsilon();
    const double disc = discretisation_bound(problem, weights.shape);
    const double iter = std::isnan(residual) ? std::numeric_limits<double>::infinity()
                                             : iteration_bound(problem, weights.shape, residual, eps);
    const double rounding = (weights.shape == StencilShape::five_point ? 5 : 9) * eps + eps / 2;
    const double bound = disc + iter + rounding;
    const bool exact_applies = bound < 1;
    const bool exact_ok = largest <= bound;  // false for an infinite error
    const std::string exact_text =
        exact_applies ? "max |u - exact| " + verify::sci(largest) + (exact_ok ? " <= " : " > ") + "bound " +
                            verify::sci(bound) + " (discretisation " + verify::sci(disc) + ", iteration " +
                            verify::sci(iter) + ", rounding " + verify::sci(rounding) + ")"
                      : "not compared with the exact solution: the bound " + verify::sci(bound) + " (iteration " +
                            verify::sci(iter) + ") is not below 1, the solution's largest value (not converged)";
    Verdict v;
    v.ok = (!step || step->ok) && (!exact_applies || exact_ok);
    v.checked = step.has_value() || exact_applies;
    v.detail = (step ? step->detail : std::string("the last iteration: not checked (no iteration ran)")) + "; " + exact_text;
    if (!v.checked) v.detail = "no iteration ran in this run, and " + exact_text;
    r.verdict = v;
  }
  r.timing = timing;
  const double swept = static_cast<double>(s.nx) * static_cast<double>(s.ny) * static_cast<double>(iterations - first_iteration);
  r.throughput = timing.total > 0 ? 2.0 * swept * sizeof(T) / timing.total / 1e9 : 0;
  r.throughput_unit = "GB/s";
  r.throughput_basis = "each cell read and written once per iteration";

  const bool wrong = r.verdict && !r.verdict->ok;
  if (o.output && !wrong) {
    io::OutputAttributes a = output_attributes(app, ctx, dtype);
    a.extra.emplace_back("op", op_name(s.op));
    a.extra.emplace_back("iteration", std::to_string(iterations));
    a.extra.emplace_back("nx", std::to_string(s.nx));
    a.extra.emplace_back("ny", std::to_string(s.ny));
    a.extra.emplace_back("weights", weights_text);
    a.extra.emplace_back("grid", grid_text);
    a.extra.emplace_back("residual", std::isnan(residual) ? "nan" : format_number(residual));
    for_flag("--output", [&] { io::write_field(u, *o.output, a); });
  }
  publish(app, ctx, r);
  return wrong ? kExitVerifyFailed : kExitOk;
}

template <class T>
int run_convolve(App& app, const Context& ctx, const ArraySource& source, const WeightsSource& weights_source,
                 std::optional<index_t> radius, Boundary boundary, fft::ConvolveMethod method) {
  const CommonOptions& o = app.options();
  std::vector<double> given = load_weights(ctx, weights_source);
  if (!given.empty()) {
    if (given.size() % 2 == 0)
      throw UsageError("--weights: " + std::to_string(given.size()) + " weights; a kernel of radius r has 2 r + 1 (an odd count)");
    if (radius && *radius != static_cast<index_t>(given.size() / 2))
      throw UsageError("--radius: " + std::to_string(*radius) + " does not match the " + std::to_string(given.size()) +
                       " weights (radius " + std::to_string(given.size() / 2) + ")");
  } else {
    // The box filter of the radius: the mean of 2 r + 1 neighbours.
    const index_t r = radius.value_or(1);
    if (r > (index_t(1) << 26)) throw UsageError("--radius: " + std::to_string(r) + " is too large (at most 2^26)");
    given.assign(static_cast<std::size_t>(2 * r + 1), 1.0 / static_cast<double>(2 * r + 1));
  }
  const index_t r = static_cast<index_t>(given.size() / 2);
  if (boundary == Boundary::periodic && r > source.n)
    throw UsageError("--radius: " + std::to_string(r) + " exceeds the " + std::to_string(source.n) +
                     " elements; a periodic boundary wraps the array at most once");
  const std::vector<T> weights(given.begin(), given.end());
  const Perturbation perturbation = test_perturbation(app, ctx, {Perturbation::Kind::add, Perturbation::Kind::relative});
  const DistArray<T> a = load_array<T>(ctx, app, source);
  fft::ConvolveOptions co;
  co.method = method;
  fft::Convolution<T> conv(ctx, std::span<const T>(weights), boundary, co);
  const bool fft_path =
      ctx.comm().allreduce(conv.method_for(a.local_size()) == fft::ConvolveMethod::fft ? 1 : 0, ReduceOp::max) == 1;
  DistArray<T> out;
  const TimingSummary timing = measure(ctx, o, [&](PhaseTimes* times) { out = conv(a, times); });
  if (perturbation) perturb_element(perturbation, out);

  Report rep;
  rep.input = source.description;
  rep.dtype = source.dtype;
  rep.sizes["n"] = static_cast<long long>(source.n);
  rep.parameters["op"] = "convolve1d";
  rep.parameters["radius"] = static_cast<long long>(r);
  rep.parameters["boundary"] = to_string(boundary);
  rep.parameters["method"] = fft_path ? "fft" : "direct";
  if (fft_path) rep.parameters["fft_length"] = static_cast<long long>(conv.fft_length());
  rep.parameters["path"] = communication_path(ctx);
  rep.rows.emplace_back("convolution", "radius " + std::to_string(r) + " (" + std::to_string(2 * r + 1) + " weights), " +
                                           to_string(boundary) + " boundary, " +
                                           (fft_path ? "by the FFT (overlap-save, length " + std::to_string(conv.fft_length()) + ")"
                                                     : std::string("by the direct sum")));
  // A checksum of the result: the sum of its elements (long double).
  long double sum = 0;
  for (const T v : out.local_to_host()) sum += v;
  verify::allreduce_sum(ctx, &sum, 1);
  rep.result = static_cast<double>(sum);
  rep.result_text = "sum of the " + std::to_string(source.n) + " outputs " + format_number(static_cast<double>(sum));
  if (o.verify) {
    // The FFT path's outputs within its bound (fft_convolve.hpp), of the largest input.
    double fft_bound = 0;
    if (fft_path) {
      double max_abs = 0;
      for (const T v : a.local_to_host()) max_abs = std::max(max_abs, std::fabs(static_cast<double>(v)));
      fft_bound = conv.error_bound(ctx.comm().allreduce(max_abs, ReduceOp::max));
    }
    rep.verdict = verify::check_convolve(a, out, weights, boundary, fft_bound);
  }
  rep.timing = timing;
  rep.throughput = timing.total > 0 ? 2.0 * static_cast<double>(source.n) * sizeof(T) / timing.total / 1e9 : 0;
  rep.throughput_unit = "GB/s";
  rep.throughput_basis = "n elements read and n written";
  const bool wrong = rep.verdict && !rep.verdict->ok;
  if (o.output && !wrong) {
    io::OutputAttributes attrs = output_attributes(app, ctx, source.dtype);
    attrs.extra.emplace_back("op", "convolve1d");
    attrs.extra.emplace_back("boundary", to_string(boundary));
    attrs.extra.emplace_back("weights", list_text(given));
    for_flag("--output", [&] { io::write_array(out, *o.output, attrs); });
  }
  publish(app, ctx, rep);
  return wrong ? kExitVerifyFailed : kExitOk;
}


// ---- user stencils on Field<T, D>: --nz (3-D), --op star:R | box:R | prk-star:R ------------------------

struct FieldSettings {
  FieldOp op;
  index_t nx = 1024, ny = 1024, nz = 0;  // nz > 0: 3-D
  std::array<int, 3> grid{0, 0, 0};
  int grid_axes = 0;  // axes --grid gave (0: MPI_Dims_create)
  index_t iters = 1000;
  bool periodic = false;
  std::vector<double> weights;  // as given (--weights or --weights-file); empty: the defaults
  std::string weights_origin;   // the flag that gave them
  std::string weights_file;     // --weights-file's file, where it gave them
  CheckpointInterval checkpoint_every;
  std::optional<std::string> restart, checkpoint_dir;
  bool restart_auto = false;
  index_t checkpoint_keep = kDefaultCheckpointKeep;
};

// --weights-file F: numbers separated by white space or commas (at most kMaxWeightsFileBytes; an
// empty field between commas is refused, as --weights refuses it).
constexpr std::size_t kMaxWeightsFileBytes = 1 << 20;

// A file's text as a message may quote it: at most 24 characters, bytes outside printable ASCII as
// \xNN.
std::string quoted_text(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < 24; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return text.size() > 24 ? out + "..." : out;
}

std::vector<double> read_weights_file(const Context& ctx, const std::string& file) {
  std::string text;
  std::string problem;  // why the file cannot be read (rank 0's finding, broadcast)
  if (ctx.is_root()) {
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) {
      problem = "'" + file + "' is a directory";
    } else if (FILE* f = std::fopen(file.c_str(), "rb")) {
      char buffer[4096];
      std::size_t got;
      while ((got = std::fread(buffer, 1, sizeof buffer, f)) > 0 && text.size() <= kMaxWeightsFileBytes)
        text.append(buffer, got);
      if (std::ferror(f)) problem = "cannot read '" + file + "'";
      std::fclose(f);
      if (problem.empty() && text.size() > kMaxWeightsFileBytes)
        problem = "'" + file + "' is larger than " + std::to_string(kMaxWeightsFileBytes >> 20) + " MiB (a weights file holds R + 1 numbers)";
    } else {
      problem = "cannot read '" + file + "'";
    }
  }
  problem = ctx.comm().bcast_string(problem, 0);
  if (!problem.empty()) throw UsageError("--weights-file: " + problem);
  index_t size = ctx.comm().bcast_value(static_cast<index_t>(text.size()), 0);
  text.resize(static_cast<std::size_t>(size));
  ctx.comm().bcast(text.data(), size, 0);
  std::vector<double> out;
  bool field_open = true;  // at the start, or after a comma: a number must come before the next comma
  bool any_field = false;
  for (std::size_t at = 0; at < text.size();) {
    const char c = text[at];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      ++at;
      continue;
    }
    if (c == ',') {
      if (field_open)
        throw UsageError("--weights-file: '" + file + "' " + (any_field ? "has an empty field between commas" : "starts with a comma"));
      field_open = true;
      ++at;
      continue;
    }
    const std::size_t end = std::min(text.find_first_of(" \n\r\t,", at), text.size());
    const std::string_view token = std::string_view(text).substr(at, end - at);
    try {
      out.push_back(parse_real(token, "--weights-file"));
    } catch (const UsageError&) {
      throw UsageError("--weights-file: '" + file + "' holds '" + quoted_text(token) + "', which is not a number");
    }
    if (!std::isfinite(out.back())) throw UsageError("--weights-file: '" + file + "' holds a weight that is not finite");
    field_open = false;
    any_field = true;
    at = end;
  }
  if (any_field && field_open) throw UsageError("--weights-file: '" + file + "' ends with a comma");
  if (out.empty()) throw UsageError("--weights-file: '" + file + "' holds no numbers");
  return out;
}

// The weights of a star or box op: one per distance 0..R (star) or per Chebyshev shell 0..R (box).
// Default: the explicit heat step u + (1/8) (sum of the 2D neighbours - 2D u) for star:1, and the
// mean of the cells within the reach otherwise.
std::vector<double> field_weights(const FieldSettings& s, int dims) {
  const int r = s.op.radius;
  if (!s.weights.empty()) {
    if (s.weights.size() != static_cast<std::size_t>(r + 1))
      throw UsageError(s.weights_origin + ": --op " + s.op.name() + " takes " + std::to_string(r + 1) + " weights (" +
                       (s.op.kind == FieldOp::Kind::star ? "the centre, then distance 1.." : "shell 0 (the centre), then shells 1..") +
                       std::to_string(r) + "), got " + std::to_string(s.weights.size()));
    return s.weights;
  }
  if (s.op.kind == FieldOp::Kind::star && r == 1) return {1.0 - 2.0 * dims * 0.125, 0.125};
  const double points = s.op.kind == FieldOp::Kind::star ? 2.0 * dims * r + 1 : std::pow(2.0 * r + 1, dims);
  return std::vector<double>(static_cast<std::size_t>(r + 1), 1.0 / points);
}

template <class T, int D>
std::vector<T> host_step(const FieldSettings& s, const std::vector<double>& w, const std::array<index_t, 3>& n,
                         const std::vector<T>& prev, std::vector<double>* magnitude) {
  const int r = s.op.radius;
  const std::size_t cells = prev.size();
  std::vector<T> next(cells);
  magnitude->assign(cells, 0.0);
  auto at = [&](index_t i0, index_t i1, index_t i2, bool* zero) -> T {
    index_t g[3] = {i0, i1, i2};
    for (int a = 0; a < 3; ++a) {
      if (g[a] >= 0 && g[a] < n[a]) continue;
      if (!s.periodic) {
        *zero = true;
        return T(0);
      }
      g[a] = ((g[a] % n[a]) + n[a]) % n[a];
    }
    return prev[static_cast<std::size_t>((g[0] * n[1] + g[1]) * n[2] + g[2])];
  };
  for (index_t i0 = 0; i0 < n[0]; ++i0)
    for (index_t i1 = 0; i1 < n[1]; ++i1)
      for (index_t i2 = 0; i2 < n[2]; ++i2) {
        const std::size_t k = static_cast<std::size_t>((i0 * n[1] + i1) * n[2] + i2);
        bool zero = false;
        T sum = static_cast<T>(w[0]) * prev[k];
        double mag = std::fabs(w[0] * static_cast<double>(prev[k]));
        const int lo0 = D == 3 ? -r : 0, hi0 = D == 3 ? r : 0;
        if (s.op.kind == FieldOp::Kind::star) {
          for (int j = 1; j <= r; ++j) {
            T part = T(0);
            for (int a = 3 - D; a < 3; ++a)
              for (const int sign : std::array<int, 2>{-1, 1}) {
                index_t g[3] = {i0, i1, i2};
                g[a] += sign * j;
                const T v = at(g[0], g[1], g[2], &zero);
                part += v;
                mag += std::fabs(w[static_cast<std::size_t>(j)] * static_cast<double>(v));
              }
            sum += static_cast<T>(w[static_cast<std::size_t>(j)]) * part;
          }
        } else {
          for (int d0 = lo0; d0 <= hi0; ++d0)
            for (int d1 = -r; d1 <= r; ++d1)
              for (int d2 = -r; d2 <= r; ++d2) {
                const int shell = std::max({std::abs(d0), std::abs(d1), std::abs(d2)});
                if (shell == 0) continue;
                const T v = at(i0 + d0, i1 + d1, i2 + d2, &zero);
                sum += static_cast<T>(w[static_cast<std::size_t>(shell)]) * v;
                mag += std::fabs(w[static_cast<std::size_t>(shell)] * static_cast<double>(v));
              }
        }
        next[k] = sum;
        (*magnitude)[k] = mag;
      }
  return next;
}

template <class T, int D>
int run_field(App& app, const Context& ctx, const FieldSettings& s) {
  const CommonOptions& o = app.options();
  const io::DType dtype = io::dtype_of<T>();
  const bool prk = s.op.kind == FieldOp::Kind::prk_star;
  const int r = s.op.radius;
  const std::array<index_t, 3> n3 = D == 3 ? std::array<index_t, 3>{s.nx, s.ny, s.nz} : std::array<index_t, 3>{1, s.nx, s.ny};
  std::array<index_t, D> extents;
  for (int a = 0; a < D; ++a) extents[static_cast<std::size_t>(a)] = n3[static_cast<std::size_t>(3 - D + a)];
  const std::vector<double> w = prk ? std::vector<double>{} : field_weights(s, D);
  const std::string weights_text = prk ? std::string("1/(2 j R) by direction") : list_text(w);
  const char* axis_flag[3] = {"--nx", "--ny", "--nz"};
  if (s.periodic)
    for (int a = 0; a < D; ++a)
      if (r > extents[static_cast<std::size_t>(a)])
        throw UsageError(std::string("--op: radius ") + std::to_string(r) + " exceeds the " +
                         std::to_string(extents[static_cast<std::size_t>(a)]) + " cells of " + axis_flag[a] +
                         "; a periodic boundary wraps the field at most once");
  CartesianGrid grid;
  try {
    std::vector<int> shape(static_cast<std::size_t>(D), 0);
    if (s.grid_axes != 0) {
      if (s.grid_axes != D)
        throw UsageError("expected " + std::string(D == 3 ? "AxBxC" : "RxC") + " for a " + std::to_string(D) +
                         "-D field, got " + std::to_string(s.grid_axes) + " extents");
      for (int a = 0; a < D; ++a) shape[static_cast<std::size_t>(a)] = s.grid[static_cast<std::size_t>(a)];
    }
    grid = CartesianGrid::create(ctx, shape);
  } catch (const UsageError& e) {
    throw UsageError(std::string("--grid: ") + e.what());
  }
  if (prk)
    for (int a = 0; a < D; ++a)
      if (extents[static_cast<std::size_t>(a)] <= 2 * r)
        throw UsageError(std::string(axis_flag[a]) + ": PRK's star of radius " + std::to_string(r) + " needs more than " +
                         std::to_string(2 * r) + " cells along each axis");
  std::array<AxisBoundary, D> boundary;
  boundary.fill(s.periodic ? AxisBoundary::periodic : AxisBoundary::dirichlet);
  std::array<int, D> ghost;
  ghost.fill(r);
  std::string shape_text;
  for (int a = 0; a < D; ++a) shape_text += (a ? " x " : "") + std::to_string(extents[static_cast<std::size_t>(a)]);

  // --restart: a checkpoint of this problem (same op, type, shape, weights and boundary).
  auto check_restart = [&](const std::string& file, const std::vector<std::pair<std::string, std::string>>& attrs,
                           const std::string& flag) -> index_t {
    const std::string where = flag + ": '" + file + "'";
    if (attribute(attrs, "app") != app.name() || attribute(attrs, "iteration").empty())
      throw UsageError(where + " is not a checkpoint of " + app.name() + " (its " + kFieldDataset +
                       " lacks the attributes app and iteration)");
    if (attribute(attrs, "shape").empty())
      throw UsageError(where + " was made by --op " + attribute(attrs, "op") + " (a field of another kind); this run is --op " +
                       s.op.name());
    if (attribute(attrs, "shape") != shape_text)
      throw UsageError(where + " holds a field of " + attribute(attrs, "shape") + " cells; this run's is " + shape_text);
    if (attribute(attrs, "op") != s.op.name())
      throw UsageError(where + " was made by --op " + attribute(attrs, "op") + "; this run is --op " + s.op.name());
    if (attribute(attrs, "dtype") != io::to_string(dtype))
      throw UsageError(where + " holds " + attribute(attrs, "dtype") + "; this run computes in " + io::to_string(dtype));
    if (attribute(attrs, "weights") != weights_text)
      throw UsageError(where + " was made with the weights " + attribute(attrs, "weights") + "; this run's are " + weights_text);
    if (attribute(attrs, "boundary") != (s.periodic ? "periodic" : "zero"))
      throw UsageError(where + " was made with --boundary " + attribute(attrs, "boundary"));
    const index_t iteration = parse_size(attribute(attrs, "iteration"), flag + " (its iteration attribute)");
    if (iteration > s.iters)
      throw UsageError(where + " is at iteration " + std::to_string(iteration) + ", beyond --iters " + std::to_string(s.iters));
    return iteration;
  };
  index_t first_iteration = 0;
  if (s.restart && !s.restart_auto) {
    const auto attrs = for_flag("--restart", [&] { return io::read_attributes(ctx, {*s.restart, kFieldDataset}); });
    first_iteration = check_restart(*s.restart, attrs, "--restart");
  }
  // The report never replaces a file the run reads or a checkpoint it writes.
  if (!o.json.empty()) {
    if (s.restart && !s.restart_auto && same_file(ctx, o.json, *s.restart))
      throw UsageError("--json: '" + o.json + "' is this run's --restart file");
    if (!s.weights_file.empty() && same_file(ctx, o.json, s.weights_file))
      throw UsageError("--json: '" + o.json + "' is this run's --weights-file");
    if (s.checkpoint_dir && same_file(ctx, o.json, *s.checkpoint_dir))
      throw UsageError("--json: '" + o.json + "' is this run's --checkpoint-dir");
    if (s.checkpoint_dir && in_checkpoint_dir(ctx, o.json, *s.checkpoint_dir))
      throw UsageError("--json: '" + o.json + "' is a checkpoint's name in this run's --checkpoint-dir");
  }

  const std::string what = std::string(D == 3 ? "--nx/--ny/--nz" : "--nx/--ny") + ": fields of " + shape_text + " " +
                           io::to_string(dtype) + " cells with ghost width " + std::to_string(r) + " on " +
                           std::to_string(ctx.size()) + " rank(s)";
  const Perturbation perturbation = test_perturbation(app, ctx, {Perturbation::Kind::add, Perturbation::Kind::relative});
  auto make = [&] {
    try {
      return Field<T, D>(grid, extents, ghost, boundary);
    } catch (const UsageError& e) {  // a field too large to number: alike on every rank
      throw UsageError(std::string(D == 3 ? "--nx/--ny/--nz: " : "--nx/--ny: ") + e.what());
    }
  };
  Field<T, D> u = make_collectively(ctx, what, make);
  Field<T, D> v = make_collectively(ctx, what, make);
  Field<T, D> out, out_next;  // PRK's OUT and its ping-pong partner
  if (prk) {
    out = make_collectively(ctx, what, make);
    out_next = make_collectively(ctx, what, make);
  }
  // Made once every flag has been checked and the fields made, so that a refused run leaves no new
  // directory behind.
  if (s.checkpoint_dir) make_checkpoint_dir(ctx, *s.checkpoint_dir);
  SineMode<D> sine{};
  for (int a = 0; a < D; ++a) sine.h[a] = 1.0 / static_cast<double>(extents[static_cast<std::size_t>(a)] + 1);

  std::string resumed_from;
  // What a checkpoint holds: the field, and PRK's OUT beside it.
  auto checkpointed = [&] {
    std::vector<io::CheckpointEntry> entries{{"field", u}};
    if (prk) entries.push_back({"out", out});
    return entries;
  };
  auto initialise = [&] {
    u.fill(T(0));
    v.fill(T(0));
    if (prk) {
      out.fill(T(0));
      out_next.fill(T(0));
    }
    first_iteration = 0;
    if (s.restart_auto) {
      for (const auto& [it, file] : list_checkpoints(ctx, *s.checkpoint_dir)) {
        std::vector<std::pair<std::string, std::string>> attrs;
        const CheckpointFile kind = classify_checkpoint(ctx, file, &attrs);
        if (kind == CheckpointFile::foreign) {
          warn_not_ours(ctx, file, "--restart auto");
          continue;
        }
        try {
          if (kind == CheckpointFile::unreadable) attrs = io::read_attributes(ctx, {file, kFieldDataset});  // its error
          const index_t iteration = check_restart(file, attrs, "--restart auto");
          io::restore(ctx, file, checkpointed());
          first_iteration = iteration;
          resumed_from = file;
          return;
        } catch (const io::IoError& e) {
          set_aside_corrupt(ctx, app.name(), file, e.what());
        }
      }
    } else if (s.restart) {
      first_iteration = check_restart(*s.restart, io::read_attributes(ctx, {*s.restart, kFieldDataset}), "--restart");
      for_flag("--restart", [&] { io::restore(ctx, *s.restart, checkpointed()); });
      resumed_from = *s.restart;
      return;
    }
    // From the beginning (a restore that failed its checksum may have written into the fields; u is
    // generated whole).
    if (prk) {
      out.fill(T(0));
      out_next.fill(T(0));
      u.generate(AsElement<T, PrkInput<D>>{PrkInput<D>{}});
    } else {
      u.generate(AsElement<T, SineMode<D>>{sine});
    }
  };
  std::string last_checkpoint;
  auto write_checkpoint = [&](index_t iteration) {
    io::CheckpointOptions c;
    c.app = app.name();
    c.extra = {{"dtype", io::to_string(dtype)}, {"op", s.op.name()}, {"iteration", std::to_string(iteration)},
               {"shape", shape_text}, {"weights", weights_text}, {"boundary", s.periodic ? "periodic" : "zero"},
               {"grid", grid.text()}};
    const std::string file = checkpoint_name(*s.checkpoint_dir, iteration);
    for_flag("--checkpoint-dir", [&] { io::checkpoint(ctx, file, checkpointed(), iteration, c); });
    last_checkpoint = file;
    prune_checkpoints(ctx, *s.checkpoint_dir, iteration, s.checkpoint_keep);
  };
  const bool checkpointing = s.checkpoint_dir.has_value();
  if (checkpointing) install_stop_handlers();
  int stopped_by = 0;

  // One step of the op: u <- op(u) through v.
  auto step = [&] {
    with_radius(r, [&]<int R>() {
      if (prk) {
        PrkStar<R, D> f{};
        for (int a = 0; a < D; ++a) f.extent[a] = extents[static_cast<std::size_t>(a)];
        apply_stencil(out_next, f, u, out);
        std::swap(out, out_next);
        apply_stencil(v, AddOne{}, u);
      } else if (s.op.kind == FieldOp::Kind::star) {
        WeightedStencil<R, StencilForm::star, D> f{};
        for (int j = 0; j <= R; ++j) f.w[j] = w[static_cast<std::size_t>(j)];
        apply_stencil(v, f, u);
      } else {
        WeightedStencil<R, StencilForm::box, D> f{};
        for (int j = 0; j <= R; ++j) f.w[j] = w[static_cast<std::size_t>(j)];
        apply_stencil(v, f, u);
      }
    });
    std::swap(u, v);
  };

  index_t iteration = 0;
  int checkpoints = 0;
  double prk_seconds = 0;  // PRK's timed iterations: all but the first (of those this run made)
  index_t prk_timed = 0;
  const index_t steps = prk ? s.iters + 1 : s.iters;  // PRK runs iterations + 1 (the first untimed)
  bool looked_in_the_way = false;
  const TimingSummary timing = measure(ctx, o, [&](PhaseTimes*) {
    initialise();
    if (s.checkpoint_dir && !looked_in_the_way) refuse_files_in_the_way(ctx, *s.checkpoint_dir, first_iteration, steps);
    looked_in_the_way = true;
    iteration = first_iteration;
    checkpoints = 0;
    Stopwatch since_first;
    CheckpointClock clock(s.checkpoint_every);
    const index_t timed_from = std::max<index_t>(first_iteration, 1);  // PRK's first iteration is untimed
    prk_timed = steps - timed_from;
    while (iteration < steps) {
      if (prk && iteration == timed_from) {
        ctx.queue().synchronize();
        ctx.comm().barrier();
        since_first.restart();
      }
      step();
      ++iteration;
      if (!checkpointing) continue;
      // After every step: a stop signal any rank caught, and whether a checkpoint is due.
      const int signalled = agreed_stop_signal(ctx);
      const bool unfinished = iteration < steps;
      if (unfinished && (clock.due(ctx, iteration, unfinished, signalled != 0) || signalled)) {
        Stopwatch write;
        write_checkpoint(iteration);
        ++checkpoints;
        clock.written(ctx, write.seconds());
        pause_after_checkpoint(ctx, app.name(), iteration, signalled != 0);
      }
      if (unfinished && signalled) {
        stopped_by = signalled;
        break;
      }
    }
    ctx.queue().synchronize();
    prk_seconds = ctx.comm().allreduce(since_first.seconds(), ReduceOp::max);
  });
  if (stopped_by) return report_requeue(ctx, app.name(), stopped_by, iteration, steps, last_checkpoint);
  if (perturbation) perturb_element(perturbation, prk ? out : u);  // the result: PRK's OUT, else the field

  Report rep;
  rep.input = !resumed_from.empty() ? "restart from " + resumed_from + " at iteration " + std::to_string(first_iteration)
              : prk ? std::string("PRK's input: in = sum of the indices, out = 0")
                    : std::string("the sine mode prod sin(pi (i + 1) / (n + 1))");
  rep.dtype = dtype;
  rep.sizes["nx"] = static_cast<long long>(s.nx);
  rep.sizes["ny"] = static_cast<long long>(s.ny);
  if (D == 3) rep.sizes["nz"] = static_cast<long long>(s.nz);
  rep.parameters["op"] = s.op.name();
  rep.parameters["grid"] = grid.text();
  rep.parameters["iters"] = static_cast<long long>(s.iters);
  rep.parameters["weights"] = weights_text;
  rep.parameters["boundary"] = s.periodic ? "periodic" : "zero";
  rep.parameters["checkpoint_dir"] = s.checkpoint_dir ? Json(*s.checkpoint_dir) : Json();
  if (s.checkpoint_every.iterations > 0)
    rep.parameters["checkpoint_every"] = static_cast<long long>(s.checkpoint_every.iterations);
  else
    rep.parameters["checkpoint_every"] = s.checkpoint_dir ? Json(s.checkpoint_every.spec) : Json();
  rep.parameters["restart"] = s.restart_auto ? Json("auto") : s.restart ? Json(*s.restart) : Json();
  rep.parameters["path"] = communication_path(ctx);
  rep.rows.emplace_back("stencil", "apply_stencil on Field<" + std::string(io::to_string(dtype)) + ", " + std::to_string(D) +
                                       ">, " + s.op.name() + ", weights " + weights_text + ", grid " + grid.text() +
                                       ", ghost width " + std::to_string(r) + ", " +
                                       (s.periodic ? "periodic" : "Dirichlet zero") + " boundary");
  Json result = Json::object();
  result["iterations"] = static_cast<long long>(iteration);
  result["resumed_iteration"] = static_cast<long long>(first_iteration);
  result["checkpoints"] = checkpoints;
  const double cells = static_cast<double>(u.cells());
  // PRK: the L1 norm of OUT over PRK's interior, divided by its cell count; PRK's closed form is
  // (iterations + 1) * (COEFX + COEFY + ...), one per axis.
  double prk_norm = 0, prk_reference = 0, prk_mflops = 0;
  if (prk) {
    double norm = 0;
    out.for_each_owned_on_host([&](const FieldIndex<D>& at, const T& value) {
      bool inside = true;
      for (int a = 0; a < D; ++a) inside = inside && at[a] >= r && at[a] < n3[static_cast<std::size_t>(3 - D + a)] - r;
      if (inside) norm += std::fabs(static_cast<double>(value));
    });
    norm = ctx.comm().allreduce(norm, ReduceOp::sum);
    double active = 1;
    for (int a = 3 - D; a < 3; ++a) active *= static_cast<double>(n3[static_cast<std::size_t>(a)] - 2 * r);
    prk_norm = norm / active;
    prk_reference = static_cast<double>(s.iters + 1) * D;
    const double flops = (2.0 * (2 * D * r + 1) + 1) * active;  // PRK: (2 stencil_size + 1) per active point
    prk_mflops = prk_timed > 0 && prk_seconds > 0 ? 1e-6 * flops / (prk_seconds / static_cast<double>(prk_timed)) : 0;
    result["prk_l1_norm"] = prk_norm;
    result["prk_reference_norm"] = prk_reference;
    result["prk_mflops"] = prk_mflops;
    rep.rows.emplace_back("PRK", "L1 norm " + format_number(prk_norm) + ", reference " + format_number(prk_reference) +
                                     ", rate " + format_number(prk_mflops) + " MFlops/s (PRK's count: (2 (4R+1) + 1) "
                                     "flops per interior point, over its iterations after the first)");
  }
  rep.result = result;
  rep.result_text = std::to_string(iteration) + " iterations of " + s.op.name() + " on " + shape_text + " cells";

  if (o.verify) {
    Verdict verdict;
    const double eps = std::numeric_limits<T>::epsilon();
    if (prk) {
      const double err = std::fabs(prk_norm - prk_reference);
      // PRK's EPSILON (1e-8) in double; in float the norm's sum of 2 (R terms) per step rounds to
      // within a few eps of each term's magnitude.
      const double bound = std::max(1e-8, 8.0 * eps * static_cast<double>(2 * D * r + 2) * prk_reference);
      verdict.ok = err <= bound;
      verdict.detail = "PRK's closed form: L1 norm " + format_number(prk_norm) + ", reference (iterations + 1) x " +
                       std::to_string(D) + " = " + format_number(prk_reference) + ", |difference| " + verify::sci(err) +
                       (verdict.ok ? " <= " : " > ") + verify::sci(bound);
    } else if (!s.periodic && s.op.kind == FieldOp::Kind::star && r == 1) {
      // The sine mode is an eigenvector of the star:1 step with zero outer ghosts: each step
      // multiplies it by g = w0 + 2 w1 sum_a cos(pi / (n_a + 1)).
      double g = w[0];
      for (int a = 0; a < D; ++a) g += 2 * w[1] * std::cos(3.14159265358979323846 / static_cast<double>(extents[static_cast<std::size_t>(a)] + 1));
      const double m = static_cast<double>(iteration);
      const double decay = std::pow(g, m);
      double worst = 0;
      u.for_each_owned_on_host([&](const FieldIndex<D>& at, const T& value) {
        const double e = std::fabs(static_cast<double>(value) - decay * sine(at));
        worst = std::isfinite(e) ? std::max(worst, e) : std::numeric_limits<double>::infinity();
      });
      worst = ctx.comm().allreduce(worst, ReduceOp::max);
      // Rounding: the initial value within eps/2; each step adds at most (2D + 3) eps times the sum
      // of |weight x value| (<= |w0| + 2D |w1| times the largest value, itself <= max(1, |g|)^m),
      // and carries the earlier errors on multiplied by at most |w0| + 2D |w1|.
      const double a1 = std::max(1.0, std::fabs(w[0]) + 2.0 * D * std::fabs(w[1]));
      const double bound = (0.5 + (2.0 * D + 3) * a1 * m) * eps * std::pow(a1, m);
      verdict.ok = worst <= bound;
      verdict.detail = "the exact solution g^m u0 of the discrete problem (g = " + format_number(g) + ", m = " +
                       std::to_string(iteration) + "): max |u - g^m u0| " + verify::sci(worst) +
                       (verdict.ok ? " <= " : " > ") + "bound " + verify::sci(bound) + " (rounding)";
    } else if (iteration > first_iteration) {
      // The last step recomputed on rank 0 from the previous field (v after the swap).
      const std::vector<T> last = u.gather(0), previous = v.gather(0);
      double worst_ratio = 0;
      bool ok = true;
      if (ctx.is_root()) {
        std::vector<double> magnitude;
        const std::vector<T> want = host_step<T, D>(s, w, n3, previous, &magnitude);
        const double terms = s.op.kind == FieldOp::Kind::star ? 2.0 * D * r + 1 : std::pow(2.0 * r + 1, D);
        for (std::size_t k = 0; k < want.size(); ++k) {
          const double err = std::fabs(static_cast<double>(last[k]) - static_cast<double>(want[k]));
          const double bound = 2.0 * (terms + 1) * eps * magnitude[k];
          if (!(err <= bound)) ok = false;
          if (bound > 0) worst_ratio = std::max(worst_ratio, err / bound);
        }
      }
      ok = ctx.comm().bcast_value(ok ? 1 : 0, 0) != 0;
      worst_ratio = ctx.comm().bcast_value(worst_ratio, 0);
      verdict.ok = ok;
      verdict.detail = "the last step, every cell, against the same step on the host: largest |difference| / bound " +
                       verify::sci(worst_ratio) + " (bound 2 (points + 1) eps sum |w u|)";
    } else {
      verdict.checked = false;
      verdict.detail = "no step ran in this run: nothing to check";
    }
    rep.verdict = verdict;
  }
  rep.timing = timing;
  const double swept = cells * static_cast<double>(iteration - first_iteration);
  rep.throughput = timing.total > 0 ? 2.0 * swept * sizeof(T) / timing.total / 1e9 : 0;
  rep.throughput_unit = "GB/s";
  rep.throughput_basis = "each cell read and written once per step";
  const bool wrong = rep.verdict && !rep.verdict->ok;
  if (o.output && !wrong) {
    io::OutputAttributes a = output_attributes(app, ctx, dtype);
    a.extra.emplace_back("op", s.op.name());
    a.extra.emplace_back("iteration", std::to_string(iteration));
    a.extra.emplace_back("shape", shape_text);
    a.extra.emplace_back("weights", weights_text);
    a.extra.emplace_back("grid", grid.text());
    for_flag("--output", [&] { io::write_field(prk ? out : u, *o.output, a); });
  }
  publish(app, ctx, rep);
  return wrong ? kExitVerifyFailed : kExitOk;
}

}  // namespace
}  // namespace tessera::apps::stencil

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::apps;
  using namespace tessera::apps::stencil;
  App app(argc, argv, "tessera-stencil",
          "Stencils over distributed data: the heat equation by Jacobi iteration on a 2-D process grid (--op jacobi5 "
          "or jacobi9), or the 1-D convolution of an array (--op convolve1d).");
  auto& p = app.parser();
  Op op = Op::jacobi5;
  JacobiSettings s;
  WeightsSource weights;
  std::optional<index_t> radius;
  Boundary boundary = Boundary::zero;
  fft::ConvolveMethod method = fft::ConvolveMethod::automatic;
  bool no_overlap = false;
  FieldSettings fs;
  bool field_op = false;
  p.add_option("--op", "jacobi5|jacobi9|convolve1d|star:R|box:R|prk-star:R",
               "the operation (default jacobi5; star:1 with --nz)", [&](std::string_view v) {
    field_op = false;
    if (v == "jacobi5") op = Op::jacobi5;
    else if (v == "jacobi9") op = Op::jacobi9;
    else if (v == "convolve1d") op = Op::convolve1d;
    else {
      const auto colon = v.find(':');
      const std::string_view kind = v.substr(0, colon);
      if (colon == std::string_view::npos || (kind != "star" && kind != "box" && kind != "prk-star"))
        throw UsageError("--op: unknown operation '" + std::string(v) +
                         "' (expected jacobi5, jacobi9, convolve1d, star:R, box:R or prk-star:R)");
      fs.op.kind = kind == "star" ? FieldOp::Kind::star : kind == "box" ? FieldOp::Kind::box : FieldOp::Kind::prk_star;
      fs.op.radius = static_cast<int>(parse_integer(v.substr(colon + 1), "--op", 1, kMaxFieldRadius));
      field_op = true;
    }
  });
  p.add_option("--nz", "N", "a 3-D field of nx x ny x nz cells, z fastest (the user-stencil ops; default star:1)",
               [&](std::string_view v) {
                 fs.nz = parse_size(v, "--nz");
                 if (fs.nz < 1) throw UsageError("--nz: the field needs at least one cell along z");
               });
  p.add_option("--weights-file", "FILE",
               "star:R and box:R: the R + 1 weights as numbers in a text file (white space or commas between them)",
               [&](std::string_view v) {
                 if (v.empty()) throw UsageError("--weights-file: empty file name");
                 fs.weights_origin = std::string(v);
               });
  p.add_option("--nx", "N", "columns of the field (jacobi; default 1024)", [&](std::string_view v) {
    s.nx = parse_size(v, "--nx");
    if (s.nx < 1) throw UsageError("--nx: the field needs at least one column");
  });
  p.add_option("--ny", "N", "rows of the field (jacobi; default 1024)", [&](std::string_view v) {
    s.ny = parse_size(v, "--ny");
    if (s.ny < 1) throw UsageError("--ny: the field needs at least one row");
  });
  p.add_option("--grid", "RxC|AxBxC", "process grid, R * C (or A * B * C with --nz) = ranks (default: MPI_Dims_create)",
               [&](std::string_view v) {
    const auto x = v.find('x');
    if (x == std::string_view::npos) throw UsageError("--grid: expected RxC or AxBxC (e.g. 2x3), got '" + std::string(v) + "'");
    fs.grid_axes = 0;
    for (std::size_t at = 0; at <= v.size() && fs.grid_axes < 4;) {
      const std::size_t end = std::min(v.find('x', at), v.size());
      if (fs.grid_axes == 3) throw UsageError("--grid: at most three extents, got '" + std::string(v) + "'");
      fs.grid[static_cast<std::size_t>(fs.grid_axes++)] = static_cast<int>(parse_integer(v.substr(at, end - at), "--grid", 1, 1 << 24));
      at = end + 1;
    }
    s.grid_rows = fs.grid[0];
    s.grid_cols = fs.grid[1];
  });
  p.add_option("--iters", "N", "Jacobi iterations in all, counted from the start of the problem (default 1000)",
               [&](std::string_view v) { s.iters = parse_size(v, "--iters"); });
  p.add_option("--tol", "T", "stop at the first residual check below T (default 0: run every iteration)",
               [&](std::string_view v) {
                 s.tol = parse_real(v, "--tol");
                 if (!(s.tol >= 0) || std::isinf(s.tol)) throw UsageError("--tol: expected a finite number >= 0");
               });
  p.add_option("--check-every", "K", "iterations between residual checks, one allreduce each (default 100)",
               [&](std::string_view v) { s.check_every = parse_count(v, "--check-every", 1, INT64_MAX); });
  p.add_option("--ghost", "W", "ghost layers around each block (default 1, the stencil's radius)",
               [&](std::string_view v) { s.ghost = static_cast<int>(parse_count(v, "--ghost", 1, 1 << 20)); });
  p.add_switch("--no-overlap", "sweep the whole block, then exchange (default: edges first, exchange overlapped)",
               &no_overlap);
  p.add_option("--weights", "W,W,...|FILE.h5:/DSET",
               "stencil weights: jacobi5 centre,north,south,west,east; jacobi9 those and nw,ne,sw,se; convolve1d "
               "2r+1 weights (numpy.convolve order); or a 1-D dataset",
               [&](std::string_view v) {
                 if (v.find(":/") != std::string_view::npos) weights.file = parse_dataset_option(v, "--weights");
                 else weights.values = parse_list(v, "--weights");
               });
  p.add_option("--radius", "R", "convolve1d: the kernel's radius, with the box weights 1/(2R+1) (default 1)",
               [&](std::string_view v) {
                 if (!v.empty() && v[0] == '-') throw UsageError("--radius: negative radius '" + std::string(v) + "'");
                 radius = parse_size(v, "--radius");
               });
  p.add_option("--method", "auto|direct|fft",
               "convolve1d: the direct sum, the FFT (overlap-save), or the faster for the radius and device "
               "(default auto)",
               [&](std::string_view v) {
                 try {
                   method = fft::parse_convolve_method(std::string(v));
                 } catch (const UsageError& e) {
                   throw UsageError(std::string("--method: ") + e.what());
                 }
               });
  p.add_option("--boundary", "zero|periodic", "convolve1d: what lies beyond the array's ends (default zero)",
               [&](std::string_view v) {
                 if (v == "zero") boundary = Boundary::zero;
                 else if (v == "periodic") boundary = Boundary::periodic;
                 else throw UsageError("--boundary: unknown boundary '" + std::string(v) + "' (expected zero or periodic)");
               });
  p.add_option("--checkpoint-every", "N|TIME|auto",
               "jacobi, star:R, box:R: write a checkpoint every N iterations, every TIME of solving (90s, 10min, 2h), or "
               "auto: every 10 min and at least 19x the last write (at most 5% of the run; the default with --checkpoint-dir)",
               [&](std::string_view v) { s.checkpoint_every = parse_checkpoint_interval(v); });
  p.add_option("--checkpoint", "FILE.h5", "jacobi: the checkpoint file (rewritten whole, under a temporary name first)",
               [&](std::string_view v) {
                 if (v.empty()) throw UsageError("--checkpoint: empty file name");
                 s.checkpoint = std::string(v);
               });
  p.add_option("--checkpoint-dir", "DIR",
               "jacobi, star:R, box:R: write checkpoints to DIR/checkpoint-ITERATION.h5 (made when missing), keeping the "
               "newest --checkpoint-keep; SIGUSR1 or SIGTERM then writes one at the next step and exits with status 75",
               [&](std::string_view v) {
                 if (v.empty()) throw UsageError("--checkpoint-dir: empty directory name");
                 s.checkpoint_dir = std::string(v);
               });
  p.add_option("--checkpoint-keep", "K",
               "jacobi, star:R, box:R: checkpoints kept in --checkpoint-dir, the newest K (default " +
                   std::to_string(kDefaultCheckpointKeep) + ")",
               [&](std::string_view v) { s.checkpoint_keep = parse_count(v, "--checkpoint-keep", 1, 1000000); });
  p.add_option("--restart", "FILE.h5|auto",
               "jacobi, star:R, box:R: continue from a checkpoint of the same problem; auto: the newest in --checkpoint-dir that "
               "verifies, or from the beginning when there is none",
               [&](std::string_view v) {
                 if (v.empty()) throw UsageError("--restart: empty file name");
                 s.restart = std::string(v);
                 s.restart_auto = v == "auto";
               });

  return app.run([&](const Context& ctx) -> int {
    CommonOptions& o = app.options();
    if (field_op || p.given("--nz")) {
      const bool three = p.given("--nz");
      for (const char* flag : {"--tol", "--check-every", "--ghost", "--no-overlap", "--checkpoint", "--radius", "--n", "--input"})
        if (p.given(flag))
          throw UsageError(std::string(flag) + ": does not apply to the user-stencil ops (" +
                           (three ? "--nz" : "--op star:R, box:R, prk-star:R") + "); it is for --op jacobi5, jacobi9 or convolve1d");
      if (!field_op && p.given("--op"))
        throw UsageError(std::string("--op: ") + op_name(op) + " is 2-D; with --nz give star:R, box:R (or none: star:1)");
      if (three && fs.op.kind == FieldOp::Kind::prk_star)
        throw UsageError("--op: prk-star is PRK's 2-D kernel; give no --nz");
      if (fs.grid_axes != 0 && fs.grid_axes != (three ? 3 : 2))
        throw UsageError(std::string("--grid: expected ") + (three ? "AxBxC for a 3-D field (--nz)" : "RxC for a 2-D field"));
      if (fs.op.kind == FieldOp::Kind::prk_star && (weights.given() || p.given("--weights-file")))
        throw UsageError("--weights: prk-star's weights are PRK's, 1/(2 j R); give none");
      if (weights.file) throw UsageError("--weights: the user-stencil ops take a list of numbers or --weights-file");
      if (p.given("--weights") && p.given("--weights-file"))
        throw UsageError("--weights-file: give --weights or --weights-file, not both");
      if (p.given("--weights-file")) {
        const std::string file = fs.weights_origin;
        fs.weights = read_weights_file(ctx, file);
        fs.weights_origin = "--weights-file '" + file + "'";
        fs.weights_file = file;
      } else if (!weights.values.empty()) {
        fs.weights = weights.values;
        fs.weights_origin = "--weights";
      }
      fs.nx = s.nx;
      fs.ny = s.ny;
      fs.iters = s.iters;
      fs.periodic = boundary == Boundary::periodic;
      fs.checkpoint_every = s.checkpoint_every;
      fs.checkpoint_dir = s.checkpoint_dir;
      fs.restart = s.restart;
      fs.restart_auto = s.restart_auto;
      fs.checkpoint_keep = s.checkpoint_keep;
      if (fs.checkpoint_every.set() && !fs.checkpoint_dir)
        throw UsageError("--checkpoint-every: needs --checkpoint-dir DIR, where to write them");
      if (fs.checkpoint_dir && !fs.checkpoint_every.set()) fs.checkpoint_every = parse_checkpoint_interval("auto");
      if (p.given("--checkpoint-keep") && !fs.checkpoint_dir)
        throw UsageError("--checkpoint-keep: applies to --checkpoint-dir DIR");
      if (fs.restart_auto && !fs.checkpoint_dir)
        throw UsageError("--restart auto: needs --checkpoint-dir DIR, where to look for the checkpoints");
      if (fs.checkpoint_dir || fs.restart) {
        if ((p.given("--repeat") && o.repeat != 1) || (p.given("--warmup") && o.warmup != 0))
          throw UsageError(std::string(p.given("--repeat") && o.repeat != 1 ? "--repeat" : "--warmup") +
                           ": a run with --checkpoint-dir or --restart steps once (--repeat 1 --warmup 0)");
        o.repeat = 1;
        o.warmup = 0;
      }
      const io::DType dtype = o.dtype.value_or(io::DType::float64);
      if (dtype != io::DType::float32 && dtype != io::DType::float64)
        throw UsageError(std::string("--dtype: the stencils compute in float32 or float64, not ") + io::to_string(dtype));
      if (three)
        return dtype == io::DType::float32 ? run_field<float, 3>(app, ctx, fs) : run_field<double, 3>(app, ctx, fs);
      return dtype == io::DType::float32 ? run_field<float, 2>(app, ctx, fs) : run_field<double, 2>(app, ctx, fs);
    }
    if (p.given("--weights-file"))
      throw UsageError("--weights-file: applies to --op star:R and box:R");
    if (fs.grid_axes > 2) throw UsageError("--grid: a 3-D grid needs --nz (a 3-D field)");
    s.op = op;
    s.overlap = !no_overlap;
    const bool jacobi = op != Op::convolve1d;
    const std::vector<const char*> jacobi_only = {"--nx", "--ny", "--grid", "--iters", "--tol", "--check-every", "--ghost",
                                                  "--no-overlap", "--checkpoint-every", "--checkpoint", "--restart",
                                                  "--checkpoint-dir", "--checkpoint-keep"};
    const std::vector<const char*> convolve_only = {"--radius", "--boundary", "--n", "--input", "--method"};
    for (const char* flag : jacobi ? convolve_only : jacobi_only)
      if (p.given(flag))
        throw UsageError(std::string(flag) + ": does not apply to --op " + op_name(op) + " (it is for " +
                         (jacobi ? "--op convolve1d" : "--op jacobi5 and jacobi9") + ")");
    auto require_float = [](io::DType dtype, const std::string& from) {
      if (dtype != io::DType::float32 && dtype != io::DType::float64)
        throw UsageError(from + ": the stencils compute in float32 or float64, not " + io::to_string(dtype));
    };
    if (!jacobi) {
      // The file's type with --input (integer files need --dtype float32 or float64).
      const ArraySource source = resolve_array_source(ctx, app);
      require_float(source.dtype, o.dtype || !o.input ? "--dtype" : "--input (" + o.input->str() + ")");
      return source.dtype == io::DType::float32 ? run_convolve<float>(app, ctx, source, weights, radius, boundary, method)
                                                : run_convolve<double>(app, ctx, source, weights, radius, boundary, method);
    }
    const io::DType dtype = o.dtype.value_or(io::DType::float32);
    require_float(dtype, "--dtype");
    if (s.checkpoint && s.checkpoint_dir)
      throw UsageError("--checkpoint: give --checkpoint FILE.h5 or --checkpoint-dir DIR, not both");
    if (s.checkpoint_every.set() && !s.checkpoint && !s.checkpoint_dir)
      throw UsageError("--checkpoint-every: needs --checkpoint FILE.h5 or --checkpoint-dir DIR, where to write them");
    if (s.checkpoint && !s.checkpoint_every.set())
      throw UsageError("--checkpoint: needs --checkpoint-every N, how often to write one");
    if (p.given("--checkpoint-keep") && !s.checkpoint_dir)
      throw UsageError("--checkpoint-keep: applies to --checkpoint-dir DIR");
    if (s.restart_auto && !s.checkpoint_dir)
      throw UsageError("--restart auto: needs --checkpoint-dir DIR, where to look for the checkpoints");
    if (s.checkpoint_dir && !s.checkpoint_every.set()) s.checkpoint_every = parse_checkpoint_interval("auto");
    if (s.checkpoint || s.restart || s.checkpoint_dir) {
      // A checkpointed or restarted solve runs once: repetitions would redo it from its start.
      if ((p.given("--repeat") && o.repeat != 1) || (p.given("--warmup") && o.warmup != 0))
        throw UsageError(std::string(p.given("--repeat") && o.repeat != 1 ? "--repeat" : "--warmup") +
                         ": a run with --checkpoint, --checkpoint-dir or --restart solves once (--repeat 1 --warmup 0)");
      o.repeat = 1;
      o.warmup = 0;
    }
    return dtype == io::DType::float32 ? run_jacobi<float>(app, ctx, s, weights) : run_jacobi<double>(app, ctx, s, weights);
  });
}
