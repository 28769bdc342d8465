#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>

#include "app.hpp"
#include "source_revision.hpp"
#include "tessera/build_config.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/framework/io.hpp"

namespace tessera::apps {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

TimingSummary summarize(const Context& ctx, const std::vector<double>& wall, const std::vector<PhaseTimes>& phases,
                        int warmup) {
  const Communicator& comm = ctx.comm();
  TimingSummary s;
  s.repeats = static_cast<int>(wall.size());
  s.warmup = warmup;
  if (wall.empty()) return s;

  // A repeat lasts as long as its slowest rank (a barrier starts each one): find it, lowest rank on a tie.
  std::vector<int> slowest_rank;
  for (double mine : wall) {
    const double slowest = comm.allreduce(mine, ReduceOp::max);
    s.slowest.push_back(slowest);
    slowest_rank.push_back(comm.allreduce(mine == slowest ? ctx.rank() : ctx.size(), ReduceOp::min));
  }
  s.total = median(s.slowest);
  s.repeat_min = *std::min_element(s.slowest.begin(), s.slowest.end());
  s.repeat_max = *std::max_element(s.slowest.begin(), s.slowest.end());

  // The phases of one rank in one repeat, so that they add up to no more than that repeat's time;
  // of the median repeat (the lower middle one), whose time is at most the median.
  std::vector<std::size_t> order(s.slowest.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return s.slowest[a] < s.slowest[b]; });
  const std::size_t middle = order[(order.size() - 1) / 2];
  double mine[4] = {phases[middle].local, phases[middle].communication, phases[middle].fixup, phases[middle].host};
  comm.bcast(mine, 4, slowest_rank[middle]);
  s.phases_repeat = static_cast<int>(middle);
  s.phases_rank = slowest_rank[middle];
  s.phases.local = mine[0];
  s.phases.communication = mine[1];
  s.phases.fixup = mine[2];
  s.phases.host = mine[3];

  const double rank_median = median(wall);
  s.rank_min = comm.allreduce(rank_median, ReduceOp::min);
  s.rank_max = comm.allreduce(rank_median, ReduceOp::max);
  s.rank_avg = comm.allreduce(rank_median, ReduceOp::sum) / ctx.size();
  return s;
}

std::string format_seconds(double seconds) {
  char buf[64];
  if (seconds >= 1) std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f us", seconds * 1e6);
  return buf;
}

namespace {

Json timing_json(const TimingSummary& t) {
  Json phases = Json::object();
  phases["local"] = t.phases.local;
  phases["communication"] = t.phases.communication;
  phases["fixup"] = t.phases.fixup;
  phases["host"] = t.phases.host;
  Json j = Json::object();
  j["repeats"] = t.repeats;
  j["warmup"] = t.warmup;
  j["total"] = t.total;
  j["repeat_min"] = t.repeat_min;
  j["repeat_max"] = t.repeat_max;
  Json ranks = Json::object();
  ranks["min"] = t.rank_min;
  ranks["avg"] = t.rank_avg;
  ranks["max"] = t.rank_max;
  j["ranks"] = ranks;
  j["phases"] = phases;
  return j;
}

std::string sizes_text(const Json& sizes) {
  // sizes is a flat object of integers: "n = 1048576" or "m = 512, k = 512, n = 512".
  std::string text = sizes.dump();
  std::string out;
  for (char c : text) {
    if (c == '{' || c == '}' || c == '"') continue;
    if (c == ':') out += " = ";
    else if (c == ',') out += ", ";
    else out += c;
  }
  return out;
}

}  // namespace

std::string version_text() { return std::string(TESSERA_VERSION_STRING) + ", revision " + TESSERA_SOURCE_REVISION; }

void add_provenance(Json& j, const Runtime& runtime) {
  j["version"] = TESSERA_VERSION_STRING;
  j["revision"] = TESSERA_SOURCE_REVISION;
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  j["timestamp"] = std::string(stamp);
  Json hosts = Json::array();
  for (const auto& h : runtime.hostnames()) hosts.push_back(h);
  j["hosts"] = hosts;
}

Json environment_json(const Environment& e) {
  Json j = Json::object();
  j["tessera"] = e.tessera;
  j["revision"] = TESSERA_SOURCE_REVISION;
  j["mpi"] = e.mpi;
  j["hdf5"] = e.hdf5;
  j["cuda_runtime"] = e.cuda_runtime.empty() ? Json() : Json(e.cuda_runtime);
  j["cuda_driver"] = e.cuda_driver.empty() ? Json() : Json(e.cuda_driver);
  j["nccl"] = e.nccl.empty() ? Json() : Json(e.nccl);
  Json devices = Json::array();
  for (const auto& d : e.devices) devices.push_back(d);
  j["devices"] = devices;
  return j;
}

Json threads_json(const Runtime& runtime) {
  Json t = Json::object();
  t["per_rank"] = runtime.cpu_threads();  // rank 0's
  t["min"] = runtime.cpu_threads_min();
  t["max"] = runtime.cpu_threads_max();
  t["chosen_by"] = runtime.cpu_threads_chosen_by();
  t["cores_in_mask"] = runtime.mask_cores();
  t["cores_on_node"] = runtime.node_cores();
  t["ranks_on_node"] = runtime.local_size();
  return t;
}

namespace {

// Rank 0's half of publish(): the table, and the JSON. Returns why the JSON could not be written,
// or "".
std::string publish_on_root(const App& app, const Context& ctx, const Report& r, const Environment& environment) {
  const CommonOptions& o = app.options();
  const std::string backend = to_string(ctx.backend());
  const int gpus = app.runtime().gpus_in_use();
  const std::string comm_path = communication_path(ctx);

  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back("ran on", app.runtime().describe() + ", communication " + comm_path);
  rows.emplace_back("libraries", environment.mpi + "; HDF5 " + environment.hdf5 +
                                     (environment.cuda_runtime.empty() ? "" : "; CUDA " + environment.cuda_runtime +
                                                                                   " (driver " + environment.cuda_driver + ")") +
                                     (environment.nccl.empty() ? "" : "; NCCL " + environment.nccl));
  const std::string dtype = r.dtype_name.empty() ? io::to_string(r.dtype) : r.dtype_name;
  rows.emplace_back("input", dtype + ", " + sizes_text(r.sizes) + ", " + r.input);
  for (const auto& row : r.rows) rows.push_back(row);
  rows.emplace_back("result", r.result_text);
  if (r.verdict)
    rows.emplace_back("verified", (!r.verdict->ok ? "NO: " : r.verdict->checked ? "yes: " : "not checked: ") + r.verdict->detail);
  const TimingSummary& t = r.timing;
  rows.emplace_back("time", format_seconds(t.total) + " (median over " + std::to_string(t.repeats) +
                                (t.repeats == 1 ? " repeat" : " repeats") + " of the slowest rank; repeats " +
                                format_seconds(t.repeat_min) + " to " + format_seconds(t.repeat_max) + ")");
  rows.emplace_back("over ranks", "min " + format_seconds(t.rank_min) + ", avg " + format_seconds(t.rank_avg) +
                                      ", max " + format_seconds(t.rank_max) + " (each rank's median over the repeats)");
  rows.emplace_back("phases", "local " + format_seconds(t.phases.local) + ", communication " +
                                  format_seconds(t.phases.communication) + ", fix-up " + format_seconds(t.phases.fixup) +
                                  ", host " + format_seconds(t.phases.host) + " (the slowest rank, median repeat)");
  char tp[128];
  std::snprintf(tp, sizeof tp, "%.3f %s (%s)", r.throughput, r.throughput_unit.c_str(), r.throughput_basis.c_str());
  rows.emplace_back("throughput", tp);
  if (o.output) rows.emplace_back("output", o.output->str());

  std::string table = app.name() + " (Tessera " + version_text() + ")\n";
  std::size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  for (const auto& [key, value] : rows) table += "  " + key + std::string(width - key.size() + 2, ' ') + value + "\n";
  std::fputs(table.c_str(), stdout);
  std::fflush(stdout);

  if (o.json.empty()) return "";
  Json j = Json::object();
  j["app"] = app.name();
  add_provenance(j, app.runtime());
  j["environment"] = environment_json(environment);
  j["ranks"] = ctx.size();
  j["gpus"] = gpus;
  j["backend"] = backend;
  j["threads"] = threads_json(app.runtime());
  j["communication"] = comm_path;
  j["dtype"] = r.dtype_name.empty() ? std::string(io::to_string(r.dtype)) : r.dtype_name;
  j["sizes"] = r.sizes;
  j["input"] = r.input;
  j["seed"] = static_cast<unsigned long long>(o.seed);
  j["parameters"] = r.parameters;
  j["result"] = r.result;
  j["verify"] = r.verdict.has_value();
  j["verified"] = r.verdict && (r.verdict->checked || !r.verdict->ok) ? Json(r.verdict->ok) : Json();
  if (r.verdict) j["verify_detail"] = r.verdict->detail;
  j["timing"] = timing_json(r.timing);
  Json throughput = Json::object();
  throughput["value"] = r.throughput;
  throughput["unit"] = r.throughput_unit;
  throughput["basis"] = r.throughput_basis;
  j["throughput"] = throughput;
  if (o.output) j["output"] = o.output->str();
  // The directory was checked at start-up; a failure now (a full disk) still ends the run non-zero.
  const std::string problem = io::write_whole_file(o.json, j.dump(2) + "\n");
  return problem.empty() ? "" : "--json: " + problem;
}

}  // namespace

void publish(const App& app, const Context& ctx, const Report& r) {
  const Environment environment = describe_environment(ctx);
  throw_root_error(ctx.comm(), ctx.is_root() ? publish_on_root(app, ctx, r, environment) : std::string());
}

void write_json_report(const Context& ctx, const std::string& path, const Json& report) {
  std::string error;
  if (ctx.is_root()) {
    const std::string problem = io::write_whole_file(path, report.dump(2) + "\n");
    if (!problem.empty()) error = "--json: " + problem;
  }
  throw_root_error(ctx.comm(), error);
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  const bool a_exists = stat(a.c_str(), &sa) == 0, b_exists = stat(b.c_str(), &sb) == 0;
  if (a_exists && b_exists) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (a_exists != b_exists) return false;
  // Neither exists: the paths compared as written once their directory is resolved, without the
  // trailing slashes and "." components that name the same place ("ck/" and "./ck"), and a
  // symbolic link whose target does not exist yet followed to that target (a report through it
  // would write the file the other path names once it is made).
  const auto resolved = [](std::string path) {
    for (int hops = 0; hops < 16; ++hops) {
      struct stat st {};
      if (lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
      char target[PATH_MAX] = {};
      const ssize_t length = readlink(path.c_str(), target, sizeof target - 1);
      if (length <= 0) break;
      const std::string to(target, static_cast<std::size_t>(length));
      const auto slash = path.find_last_of('/');
      path = to.front() == '/' || slash == std::string::npos ? to : path.substr(0, slash + 1) + to;
    }
    path = std::filesystem::path(path).lexically_normal().string();
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    const auto slash = path.find_last_of('/');
    const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    char real[PATH_MAX] = {};
    return realpath(directory.c_str(), real) ? std::string(real) + "/" + base : path;
  };
  return resolved(a) == resolved(b);
}

bool same_file(const Context& ctx, const std::string& a, const std::string& b) {
  return ctx.comm().bcast_value<std::int32_t>(ctx.is_root() && same_file(a, b) ? 1 : 0, 0) != 0;
}

void check_report_path(const Context& ctx, const App& app) {
  const std::string& json = app.options().json;
  for_flag("--json", [&] { io::check_output_file(ctx, json); });
  std::string error;
  if (ctx.is_root()) {
    for (const auto& [flag, file] : app.parser().dataset_files()) {
      if (!same_file(json, file)) continue;
      error = "--json: '" + json + "' is the HDF5 file of " + flag + "; the report would overwrite it";
      break;
    }
  }
  throw_root_error(ctx.comm(), error);
}

}  // namespace tessera::apps
