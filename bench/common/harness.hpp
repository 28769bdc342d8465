// The benchmark harness every Tessera benchmark uses: one command line in the style of nccl-tests
// (-b/-e/-f sizes in bytes, -n iterations, -w warm-up calls, --json FILE, plus each benchmark's own
// flags registered here), per-row statistics of the timed calls (p50, p95, p99, coefficient of
// variation), one JSON schema ("tessera-bench/2", described in bench/README.md) and one greppable
// verdict line per row:
//
//   VALID: tessera_bench_sort keys uint32 n=16777216 p50=1.234 ms cv=0.012 share=0.98 of vendor
//
// Plain C++: no MPI call beyond MPI_Get_library_version (allowed before MPI_Init), no device code;
// the CUDA benchmarks and the distributed ones link it alike.
//
//   Harness h("tessera_bench_x", "what it measures", {.minbytes = 1 << 20, .maxbytes = 1 << 30});
//   h.add_option({"--ops"}, "LIST", "operations to run", [&](std::string_view v) { ops = v; });
//   if (!h.parse(argc, argv)) return 0;               // --help printed
//   for (index_t n : h.sizes(sizeof(float))) {
//     Row& r = h.row("reduce float").set("n", n);
//     r.time(samples_s).share("vendor", vendor_p50 / ours_p50).verdict(wrong == 0);
//   }
//   return h.finish();                                  // JSON, summary line; 1 if a row is INVALID
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app.hpp"
#include "json.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::bench {

using apps::Json;
using tessera::index_t;
using tessera::UsageError;

// The statistics of one row's timed calls, in seconds (the percentiles by nearest rank over the
// sorted samples; cv: the sample standard deviation over the mean, 0 for one sample).
struct Stats {
  std::int64_t samples = 0;
  double mean = 0, min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, cv = 0;
};
Stats statistics(std::vector<double> seconds);
Json stats_json(const Stats& s);

// One result row: the benchmark's own fields (set, in order), then the harness's "time_s"
// statistics, "share" and "verdict".
class Row {
 public:
  explicit Row(std::string label) : label_(std::move(label)), fields_(Json::object()) {}
  template <class V>
  Row& set(const std::string& key, V value) {
    fields_[key] = Json(value);
    return *this;
  }
  Row& set_json(const std::string& key, Json value) {
    fields_[key] = std::move(value);
    return *this;
  }
  // The timed calls' durations in seconds (all of them, not a summary).
  Row& time(const std::vector<double>& seconds);
  Row& time(const Stats& stats);
  // The share of a baseline this row reaches, one call per baseline: "copy" (our rate as a share of
  // the device-to-device copy rate), "vendor" (the vendor library's time over ours: > 1 when ours is
  // faster), or another named baseline ("alltoall_alone": the same bytes through the bare
  // all-to-all).
  Row& share(std::string of, double value);
  // VALID when the result was checked and right; INVALID otherwise (`why` says what was wrong).
  Row& verdict(bool valid, std::string why = "");

  const std::string& label() const { return label_; }
  const Stats& stats() const { return stats_; }
  bool valid() const { return valid_; }
  bool has_verdict() const { return has_verdict_; }
  Json json() const;
  std::string verdict_line(const std::string& benchmark) const;

 private:
  std::string label_;
  Json fields_;
  Stats stats_;
  bool timed_ = false;
  std::vector<std::pair<std::string, double>> shares_;
  bool valid_ = false, has_verdict_ = false;
  std::string why_;
};

struct Defaults {
  index_t minbytes = index_t(1) << 20;
  index_t maxbytes = index_t(1) << 26;
  index_t stepfactor = 2;
  int iters = 20;
  int warmup = 5;
};

class Harness {
 public:
  Harness(std::string program, std::string summary, Defaults defaults = {});

  // A flag of this benchmark, with its aliases ({"-c", "--check"}); `apply` converts the value and
  // may throw UsageError. Its text goes into the report's configuration.options.
  void add_option(std::vector<std::string> names, std::string metavar, std::string help,
                  std::function<void(std::string_view)> apply);
  void add_switch(std::vector<std::string> names, std::string help, bool* target);
  // Another name for a flag (a benchmark's older name for -n: --rounds).
  void add_alias(std::string_view name, std::string alias);
  // Also accept --min N / --max N, the sizes in elements instead of bytes (not both).
  void allow_element_sizes(index_t min_elements, index_t max_elements);

  // Parses the command line; throws UsageError. Returns false when --help was asked for (the help
  // has been printed on standard output when this process prints).
  bool parse(int argc, char** argv);

  // Whether this process prints and writes (rank 0 of a distributed benchmark; true by default).
  void set_root(bool root) { root_ = root; }
  bool root() const { return root_; }

  // The sizes to run, in elements of `element_bytes`: -b to -e bytes (each rounded down to whole
  // elements, at least one; repeats dropped) or --min to --max elements, times -f between steps.
  std::vector<index_t> sizes(std::size_t element_bytes) const;
  // The same byte sweep as square sides: the largest side s with s*s*element_bytes <= bytes (>= 1).
  std::vector<index_t> square_sides(std::size_t element_bytes) const;
  // Whether the sizes were given on the command line (-b, -e, --min or --max).
  bool sizes_given() const { return sizes_given_; }
  bool given(std::string_view name) const;

  index_t minbytes() const { return minbytes_; }
  index_t maxbytes() const { return maxbytes_; }
  index_t stepfactor() const { return stepfactor_; }
  int iters() const { return iters_; }
  int warmup() const { return warmup_; }
  const std::string& json_path() const { return json_; }
  const std::string& program() const { return program_; }

  // The report's "configuration" (the harness's flags and every flag given are in it already; a
  // benchmark adds what it derives: ranks, backend, device path) and "environment".
  Json& configuration() { return configuration_; }
  void set_environment(Json environment) { environment_ = std::move(environment); }

  // A new row; its verdict line is printed by print_pending(), when the next row starts or at
  // finish(), so set everything on it before then.
  Row& row(std::string label);
  void print_pending();
  const std::vector<Row>& rows() const { return rows_; }

  // The whole report (schema tessera-bench/2).
  Json report() const;
  // Prints the remaining verdict lines and the summary line ("# summary: N rows, M INVALID"),
  // writes --json (when given and not written_elsewhere) whole or not at all; returns 0 when every
  // row is VALID, 1 otherwise. A --json that cannot be written throws UsageError("--json: ...").
  int finish(bool written_elsewhere = false);

  std::string help_text() const;

 private:
  struct Flag {
    std::vector<std::string> names;
    std::string metavar, help;
    bool* target = nullptr;
    std::function<void(std::string_view)> apply;
  };
  const Flag* find(std::string_view name) const;

  std::string program_, summary_;
  std::vector<Flag> flags_;
  std::vector<std::string> given_;
  index_t minbytes_, maxbytes_, stepfactor_;
  int iters_, warmup_;
  bool element_sizes_ = false, sizes_given_ = false, help_ = false, root_ = true;
  index_t min_elements_ = 0, max_elements_ = 0;
  std::string json_;
  Json configuration_ = Json::object(), options_ = Json::object(), environment_;
  std::vector<Row> rows_;
  std::size_t printed_ = 0;
};

// The environment block (schema tessera-bench/2): the library versions and the devices, each
// {"name", "sms", "memory_gib"} where the description has them; revision; timestamp.
Json environment_json(const Environment& environment);
// The same for a process that drives one device without an MPI runtime (the kernel benchmarks):
// `device` is kernels::describe_device's text.
Environment local_environment(const std::string& device, const std::string& nccl_version = "");

// Collective over ctx: per timed call, the slowest rank's time (elementwise maximum of every rank's
// samples, which all ranks must have the same number of): the samples of a distributed row.
std::vector<double> slowest_rank(const Context& ctx, const std::vector<double>& seconds);

// "1.234 ms", "45.6 us": the apps' format (apps/common).
using apps::format_seconds;

}  // namespace tessera::bench
