#include <algorithm>
#include <cstdio>
#include <string>

#include "app.hpp"
#include "tessera/build_config.hpp"

namespace tessera::apps {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

TimingSummary summarize(const Context& ctx, const std::vector<double>& wall, const std::vector<PhaseTimes>& phases,
                        int warmup) {
  // A run is as slow as its slowest rank: take the maximum over ranks of each repeat, then medians.
  std::vector<double> total, local, communication, fixup, host;
  for (std::size_t i = 0; i < wall.size(); ++i) {
    const Communicator& comm = ctx.comm();
    total.push_back(comm.allreduce(wall[i], ReduceOp::max));
    local.push_back(comm.allreduce(phases[i].local, ReduceOp::max));
    communication.push_back(comm.allreduce(phases[i].communication, ReduceOp::max));
    fixup.push_back(comm.allreduce(phases[i].fixup, ReduceOp::max));
    host.push_back(comm.allreduce(phases[i].host, ReduceOp::max));
  }
  TimingSummary s;
  s.repeats = static_cast<int>(wall.size());
  s.warmup = warmup;
  s.total = median(total);
  s.total_min = total.empty() ? 0 : *std::min_element(total.begin(), total.end());
  s.total_max = total.empty() ? 0 : *std::max_element(total.begin(), total.end());
  s.phases.local = median(local);
  s.phases.communication = median(communication);
  s.phases.fixup = median(fixup);
  s.phases.host = median(host);
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
  j["total_min"] = t.total_min;
  j["total_max"] = t.total_max;
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

void publish(const App& app, const Context& ctx, const Report& r) {
  if (!ctx.is_root()) return;
  const CommonOptions& o = app.options();
  const std::string backend = to_string(ctx.backend());
  const int gpus = app.runtime().gpus_in_use();
  const std::string comm_path = communication_path(ctx);

  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back("ran on", app.runtime().describe() + ", communication " + comm_path);
  rows.emplace_back("input", std::string(io::to_string(r.dtype)) + ", " + sizes_text(r.sizes) + ", " + r.input);
  for (const auto& row : r.rows) rows.push_back(row);
  rows.emplace_back("result", r.result_text);
  if (r.verdict) rows.emplace_back("verified", (r.verdict->ok ? "yes: " : "NO: ") + r.verdict->detail);
  rows.emplace_back("time", format_seconds(r.timing.total) + " (median of " + std::to_string(r.timing.repeats) +
                                ", min " + format_seconds(r.timing.total_min) + ", max " +
                                format_seconds(r.timing.total_max) + ")");
  rows.emplace_back("phases", "local " + format_seconds(r.timing.phases.local) + ", communication " +
                                  format_seconds(r.timing.phases.communication) + ", fix-up " +
                                  format_seconds(r.timing.phases.fixup) + ", host " +
                                  format_seconds(r.timing.phases.host));
  char tp[128];
  std::snprintf(tp, sizeof tp, "%.3f %s (%s)", r.throughput, r.throughput_unit.c_str(), r.throughput_basis.c_str());
  rows.emplace_back("throughput", tp);
  if (o.output) rows.emplace_back("output", o.output->str());

  std::string table = app.name() + " (Tessera " + TESSERA_VERSION_STRING + ")\n";
  std::size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  for (const auto& [key, value] : rows) table += "  " + key + std::string(width - key.size() + 2, ' ') + value + "\n";
  std::fputs(table.c_str(), stdout);
  std::fflush(stdout);

  if (o.json.empty()) return;
  Json j = Json::object();
  j["app"] = app.name();
  j["version"] = TESSERA_VERSION_STRING;
  j["ranks"] = ctx.size();
  j["gpus"] = gpus;
  j["backend"] = backend;
  j["communication"] = comm_path;
  j["dtype"] = io::to_string(r.dtype);
  j["sizes"] = r.sizes;
  j["input"] = r.input;
  j["seed"] = static_cast<unsigned long long>(o.seed);
  j["parameters"] = r.parameters;
  j["result"] = r.result;
  j["verify"] = r.verdict.has_value();
  j["verified"] = r.verdict ? Json(r.verdict->ok) : Json();
  if (r.verdict) j["verify_detail"] = r.verdict->detail;
  j["timing"] = timing_json(r.timing);
  Json throughput = Json::object();
  throughput["value"] = r.throughput;
  throughput["unit"] = r.throughput_unit;
  throughput["basis"] = r.throughput_basis;
  j["throughput"] = throughput;
  if (o.output) j["output"] = o.output->str();
  const std::string text = j.dump(2) + "\n";
  // The directory was checked at start-up; a failure now (disk full) is reported, not fatal.
  // Written under a temporary name and renamed: a job killed meanwhile leaves no report that
  // looks complete.
  const std::string partial = o.json + ".partial";
  if (FILE* f = std::fopen(partial.c_str(), "w")) {
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok || std::rename(partial.c_str(), o.json.c_str()) != 0) {
      std::remove(partial.c_str());
      std::fprintf(stderr, "%s: --json: could not write '%s'\n", app.name().c_str(), o.json.c_str());
    }
  } else {
    std::fprintf(stderr, "%s: --json: cannot create '%s'\n", app.name().c_str(), o.json.c_str());
  }
}

}  // namespace tessera::apps
