// The benchmark harness (harness.hpp).
#include "harness.hpp"

#include <hdf5.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "app.hpp"
#include "cli.hpp"
#include "tessera/build_config.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/framework/io.hpp"

namespace tessera::bench {

Stats statistics(std::vector<double> seconds) {
  Stats s;
  s.samples = static_cast<std::int64_t>(seconds.size());
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  auto rank = [&](double q) {  // nearest rank: the smallest sample with at least q of them at or below it
    const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
    return seconds[std::min(n, std::max<std::size_t>(k, 1)) - 1];
  };
  double sum = 0;
  for (double t : seconds) sum += t;
  s.mean = sum / static_cast<double>(n);
  double squares = 0;
  for (double t : seconds) squares += (t - s.mean) * (t - s.mean);
  s.cv = n > 1 && s.mean > 0 ? std::sqrt(squares / static_cast<double>(n - 1)) / s.mean : 0.0;
  s.min = seconds.front();
  s.max = seconds.back();
  s.p50 = rank(0.50);
  s.p95 = rank(0.95);
  s.p99 = rank(0.99);
  return s;
}

Json stats_json(const Stats& s) {
  Json j = Json::object();
  j["samples"] = s.samples;
  j["mean"] = s.mean;
  j["min"] = s.min;
  j["p50"] = s.p50;
  j["p95"] = s.p95;
  j["p99"] = s.p99;
  j["max"] = s.max;
  j["cv"] = s.cv;
  return j;
}

// ---- Row

Row& Row::time(const std::vector<double>& seconds) { return time(statistics(seconds)); }

Row& Row::time(const Stats& stats) {
  stats_ = stats;
  timed_ = true;
  return *this;
}

Row& Row::share(std::string of, double value) {
  shares_.emplace_back(std::move(of), value);
  return *this;
}

Row& Row::verdict(bool valid, std::string why) {
  valid_ = valid;
  has_verdict_ = true;
  why_ = std::move(why);
  return *this;
}

Json Row::json() const {
  Json j = fields_;
  j["time_s"] = timed_ ? stats_json(stats_) : Json();
  Json shares = Json::object();
  for (const auto& [of, value] : shares_) shares[of] = value;
  j["share"] = shares;
  j["verdict"] = valid_ ? "VALID" : "INVALID";
  if (!valid_) j["why"] = has_verdict_ ? why_ : std::string("not checked");
  return j;
}

std::string Row::verdict_line(const std::string& benchmark) const {
  std::string line = std::string(valid_ ? "VALID: " : "INVALID: ") + benchmark + " " + label_;
  if (timed_) {
    char text[96];
    std::snprintf(text, sizeof text, " p50=%s cv=%.3f", format_seconds(stats_.p50).c_str(), stats_.cv);
    line += text;
  }
  for (const auto& [of, value] : shares_) {
    char text[32];
    std::snprintf(text, sizeof text, "=%.3f", value);
    line += " " + of + text;
  }
  if (!valid_) line += " (" + (has_verdict_ ? why_ : std::string("not checked")) + ")";
  return line;
}

// ---- Harness

Harness::Harness(std::string program, std::string summary, Defaults d)
    : program_(std::move(program)),
      summary_(std::move(summary)),
      minbytes_(d.minbytes),
      maxbytes_(d.maxbytes),
      stepfactor_(d.stepfactor),
      iters_(d.iters),
      warmup_(d.warmup) {
  auto size = [](index_t* target, const char* flag) {
    return [target, flag](std::string_view v) { *target = apps::parse_size(v, flag); };
  };
  add_option({"-b", "--minbytes"}, "SIZE",
             "smallest size in bytes (1M, 2^20, 1e6; K, M, G: powers of 1024; default " + std::to_string(d.minbytes) + ")",
             size(&minbytes_, "-b/--minbytes"));
  add_option({"-e", "--maxbytes"}, "SIZE", "largest size in bytes (default " + std::to_string(d.maxbytes) + ")",
             size(&maxbytes_, "-e/--maxbytes"));
  add_option({"-f", "--stepfactor"}, "F",
             "multiply the size by F from one step to the next (default " + std::to_string(d.stepfactor) + ")",
             [this](std::string_view v) { stepfactor_ = apps::parse_count(v, "-f/--stepfactor", 2, index_t(1) << 40); });
  add_option({"-n", "--iters"}, "I", "timed calls per row (default " + std::to_string(d.iters) + ")",
             [this](std::string_view v) { iters_ = static_cast<int>(apps::parse_count(v, "-n/--iters", 1, 1 << 30)); });
  add_option({"-w", "--warmup"}, "W", "untimed calls before them (default " + std::to_string(d.warmup) + ")",
             [this](std::string_view v) { warmup_ = static_cast<int>(apps::parse_count(v, "-w/--warmup", 0, 1 << 30)); });
  add_option({"--json"}, "FILE", "write the report as JSON (schema tessera-bench/2, bench/README.md)",
             [this](std::string_view v) {
               if (v.empty()) throw UsageError("--json: empty file name");
               json_ = std::string(v);
             });
  add_switch({"-h", "--help"}, "print this help", &help_);
}

void Harness::add_option(std::vector<std::string> names, std::string metavar, std::string help,
                         std::function<void(std::string_view)> apply) {
  for (Flag& f : flags_)
    if (f.names == names) {  // a benchmark widening a harness flag
      f = Flag{std::move(names), std::move(metavar), std::move(help), nullptr, std::move(apply)};
      return;
    }
  flags_.push_back(Flag{std::move(names), std::move(metavar), std::move(help), nullptr, std::move(apply)});
}

void Harness::add_switch(std::vector<std::string> names, std::string help, bool* target) {
  flags_.push_back(Flag{std::move(names), "", std::move(help), target, {}});
}

void Harness::add_alias(std::string_view name, std::string alias) {
  for (Flag& f : flags_)
    if (std::find(f.names.begin(), f.names.end(), name) != f.names.end()) {
      f.names.insert(f.names.end() - 1, std::move(alias));
      return;
    }
  throw std::logic_error("add_alias: no flag " + std::string(name));
}

void Harness::allow_element_sizes(index_t min_elements, index_t max_elements) {
  element_sizes_ = true;
  min_elements_ = min_elements;
  max_elements_ = max_elements;
  add_option({"--min"}, "N", "smallest size in elements instead of -b (default " + std::to_string(min_elements) + ")",
             [this](std::string_view v) { min_elements_ = apps::parse_size(v, "--min"); });
  add_option({"--max"}, "N", "largest size in elements instead of -e (default " + std::to_string(max_elements) + ")",
             [this](std::string_view v) { max_elements_ = apps::parse_size(v, "--max"); });
}

const Harness::Flag* Harness::find(std::string_view name) const {
  for (const Flag& f : flags_)
    for (const std::string& n : f.names)
      if (n == name) return &f;
  return nullptr;
}

bool Harness::given(std::string_view name) const {
  const Flag* flag = find(name);
  if (!flag) return false;
  return std::find(given_.begin(), given_.end(), flag->names.back()) != given_.end();
}

bool Harness::parse(int argc, char** argv) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view name = arg;
    std::optional<std::string_view> value;
    if (arg.substr(0, 2) == "--")
      if (const auto eq = arg.find('='); eq != std::string_view::npos) {
        name = arg.substr(0, eq);
        value = arg.substr(eq + 1);
      }
    const Flag* flag = find(name);
    if (!flag) throw UsageError("unknown flag '" + std::string(name) + "' (see --help)");
    const std::string& key = flag->names.back();
    if (std::find(given_.begin(), given_.end(), key) != given_.end()) throw UsageError(key + ": given more than once");
    given_.push_back(key);
    if (flag->target) {
      if (value) throw UsageError(key + ": takes no value");
      *flag->target = true;
      options_[key] = true;
      continue;
    }
    if (!value) {
      if (i + 1 >= argc) throw UsageError(key + ": missing value " + flag->metavar);
      value = std::string_view(argv[++i]);
    }
    flag->apply(*value);
    options_[key] = std::string(*value);
  }
  if (help_) {
    if (root_) std::fputs(help_text().c_str(), stdout);
    return false;
  }
  const bool bytes = given("-b") || given("-e");
  const bool elements = element_sizes_ && (given("--min") || given("--max"));
  if (bytes && elements) throw UsageError("-b/-e (bytes) and --min/--max (elements): give one or the other");
  sizes_given_ = bytes || elements;
  if (bytes) {
    if (!given("-b")) minbytes_ = std::min(minbytes_, maxbytes_);
    if (!given("-e")) maxbytes_ = std::max(minbytes_, maxbytes_);
  }
  if (minbytes_ < 1 || maxbytes_ < minbytes_) throw UsageError("-b/-e: need 1 <= minbytes <= maxbytes");
  if (element_sizes_ && (min_elements_ < 1 || max_elements_ < min_elements_))
    throw UsageError("--min/--max: need 1 <= min <= max");
  configuration_["command"] = command;
  if (elements) {
    configuration_["min_elements"] = min_elements_;
    configuration_["max_elements"] = max_elements_;
  } else {
    configuration_["minbytes"] = minbytes_;
    configuration_["maxbytes"] = maxbytes_;
  }
  configuration_["stepfactor"] = stepfactor_;
  configuration_["iters"] = iters_;
  configuration_["warmup"] = warmup_;
  configuration_["options"] = options_;
  return true;
}

std::vector<index_t> Harness::sizes(std::size_t element_bytes) const {
  const bool elements = element_sizes_ && (given("--min") || given("--max") || !sizes_given_);
  const index_t first = elements ? min_elements_ : minbytes_;
  const index_t last = elements ? max_elements_ : maxbytes_;
  std::vector<index_t> out;
  for (index_t size = first;; size *= stepfactor_) {
    const index_t n = elements ? size : std::max<index_t>(1, size / static_cast<index_t>(element_bytes));
    if (out.empty() || out.back() != n) out.push_back(n);
    if (size > last / stepfactor_) break;
  }
  return out;
}

std::vector<index_t> Harness::square_sides(std::size_t element_bytes) const {
  std::vector<index_t> out;
  for (index_t size = minbytes_;; size *= stepfactor_) {
    auto side = static_cast<index_t>(std::sqrt(static_cast<double>(size / static_cast<index_t>(element_bytes))));
    while (side > 1 && side * side * static_cast<index_t>(element_bytes) > size) --side;
    while ((side + 1) * (side + 1) * static_cast<index_t>(element_bytes) <= size) ++side;
    side = std::max<index_t>(side, 1);
    if (out.empty() || out.back() != side) out.push_back(side);
    if (size > maxbytes_ / stepfactor_) break;
  }
  return out;
}

Row& Harness::row(std::string label) {
  print_pending();
  rows_.emplace_back(std::move(label));
  return rows_.back();
}

void Harness::print_pending() {
  if (!root_) {
    printed_ = rows_.size();
    return;
  }
  for (; printed_ < rows_.size(); ++printed_) std::printf("%s\n", rows_[printed_].verdict_line(program_).c_str());
  std::fflush(stdout);
}

Json Harness::report() const {
  Json j = Json::object();
  j["schema"] = "tessera-bench/2";
  j["benchmark"] = program_;
  j["configuration"] = configuration_;
  j["environment"] = environment_;
  Json rows = Json::array();
  std::int64_t invalid = 0;
  for (const Row& r : rows_) {
    rows.push_back(r.json());
    invalid += r.valid() ? 0 : 1;
  }
  j["rows"] = rows;
  Json summary = Json::object();
  summary["rows"] = static_cast<std::int64_t>(rows_.size());
  summary["invalid"] = invalid;
  summary["verdict"] = invalid == 0 ? "VALID" : "INVALID";
  j["summary"] = summary;
  return j;
}

int Harness::finish(bool written_elsewhere) {
  print_pending();
  std::size_t invalid = 0;
  for (const Row& r : rows_) invalid += r.valid() ? 0 : 1;
  if (root_ && !json_.empty() && !written_elsewhere) {
    const std::string error = io::write_whole_file(json_, report().dump(2) + "\n");
    if (!error.empty()) throw UsageError("--json: " + error);
  }
  if (root_) {
    std::printf("# summary: %zu rows, %zu INVALID: %s\n", rows_.size(), invalid, invalid == 0 ? "VALID" : "INVALID");
    std::fflush(stdout);
  }
  return invalid == 0 ? 0 : 1;
}

std::string Harness::help_text() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [flags]\n" << summary_ << "\n\nflags:\n";
  for (const Flag& f : flags_) {
    std::string names;
    for (const std::string& n : f.names) names += (names.empty() ? "" : ", ") + n;
    if (!f.metavar.empty()) names += " " + f.metavar;
    out << "  " << names;
    if (names.size() < 28) out << std::string(28 - names.size(), ' ');
    else out << "\n" << std::string(30, ' ');
    out << f.help << "\n";
  }
  out << "\nEach row prints one line starting VALID: or INVALID:, and the run ends with '# summary: N rows, M INVALID'.\n";
  return out.str();
}

// ---- environment

namespace {

std::string cuda_version_text(int v) {
  return v > 0 ? std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) : std::string();
}

// "NVIDIA H200, 132 SMs, 139.8 GiB" -> {"name", "sms", "memory_gib"}; "cpu" -> {"name": "cpu"}.
Json device_json(const std::string& description) {
  Json d = Json::object();
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t comma; (comma = description.find(", ", start)) != std::string::npos; start = comma + 2)
    parts.push_back(description.substr(start, comma - start));
  parts.push_back(description.substr(start));
  long long sms = -1;
  double gib = -1;
  if (parts.size() >= 3) {
    char unit[8] = {};
    if (std::sscanf(parts[parts.size() - 2].c_str(), "%lld SMs", &sms) == 1 &&
        std::sscanf(parts.back().c_str(), "%lf %7s", &gib, unit) == 2 && std::strcmp(unit, "GiB") == 0) {
      parts.resize(parts.size() - 2);
    } else {
      sms = -1;
    }
  }
  std::string name;
  for (const std::string& p : parts) name += (name.empty() ? "" : ", ") + p;
  d["name"] = name;
  d["sms"] = sms >= 0 ? Json(sms) : Json();
  d["memory_gib"] = sms >= 0 ? Json(gib) : Json();
  return d;
}

}  // namespace

Json environment_json(const Environment& e) {
  Json j = apps::environment_json(e);
  Json devices = Json::array();
  for (const std::string& d : e.devices) devices.push_back(device_json(d));
  j["devices"] = devices;
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  j["timestamp"] = std::string(stamp);
  return j;
}

std::vector<double> slowest_rank(const Context& ctx, const std::vector<double>& seconds) {
  std::vector<double> out(seconds.size());
  TESSERA_MPI_CHECK(MPI_Allreduce(seconds.data(), out.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX,
                                  ctx.comm().get()));
  return out;
}

Environment local_environment(const std::string& device, const std::string& nccl_version) {
  Environment e;
  e.tessera = TESSERA_VERSION_STRING;
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(library, &length) == MPI_SUCCESS) {
    e.mpi = std::string(library, strnlen(library, static_cast<std::size_t>(std::max(length, 0))));
    e.mpi = e.mpi.substr(0, e.mpi.find('\n'));
  }
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) >= 0)
    e.hdf5 = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release) +
             (TESSERA_HDF5_PARALLEL ? " (parallel)" : " (serial)");
  const kernels::CudaVersions cuda = kernels::cuda_versions();
  e.cuda_runtime = cuda_version_text(cuda.runtime);
  e.cuda_driver = cuda_version_text(cuda.driver);
  e.nccl = nccl_version;
  e.devices = {device};
  return e;
}

}  // namespace tessera::bench
