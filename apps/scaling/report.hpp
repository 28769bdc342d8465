// The report of tessera-scaling, on world rank 0: the analysis of each mode's points (speedups and
// efficiencies with their intervals, the Amdahl or Gustafson fit, the cost model's check on held-out
// points, the model fitted on every point and its projection), then the table on stdout and the JSON
// and CSV files, each written by its own function from the same analysis.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "json.hpp"
#include "measurement.hpp"
#include "options.hpp"
#include "tessera/framework/runtime.hpp"
#include "model/scaling.hpp"

namespace tessera::apps::scaling_study {

// One point of a mode, as reported.
struct PointAnalysis {
  const PointSeries* series = nullptr;
  MedianInterval interval;          // of the rounds' times
  double speedup = 0;               // strong: speedup; weak: scaled speedup
  double efficiency = 0;
  double efficiency_low = 1, efficiency_high = 1;
  double karp_flatt = 0;            // NaN where undefined (one rank, weak scaling)
  double other = 0;                 // the median round's time outside its phases
  bool noisy = false;
};

// What the launch measured of the machine, on world rank 0: the pings of the network models, the
// operation's own collectives at each group size, and the node-sharing probe.
struct Machine {
  std::vector<scaling::CollectiveSample> samples;
  std::vector<scaling::CollectiveTiming> collectives;
  scaling::NodeSharing sharing;
  std::vector<std::vector<double>> probe_repetitions;  // per k of sharing.active
  int ranks_per_node = 1;
};

// The cost model fitted on the two smallest rank counts, predicting the others.
struct ModelCheck {
  struct Prediction {
    int ranks = 0;
    double predicted = 0, measured = 0, error = 0;
    scaling::CostModel::Terms terms;      // predicted
    scaling::Measurement phases;          // measured
  };
  std::vector<int> fit_ranks;
  std::vector<Prediction> predictions;
  double worst = 0;   // largest |relative error|
  int worst_ranks = 0;
  double median = 0;  // median |relative error|
  std::string missed_term;  // at the worst point, the term whose prediction is furthest from its phase
  bool held_out() const { return !predictions.empty(); }
  bool passed = false;
};

// The collectives measured at group sizes past the model check's fit, predicted from those within
// it (the extrapolation rule of charge_collective): what the model would charge where the launch
// measured nothing.
struct CollectiveExtrapolation {
  Collective kind;
  int ranks = 0;
  double bytes = 0, predicted = 0, measured = 0;
  const char* algorithm = "";
};

struct ModeAnalysis {
  const ModeReport* report = nullptr;
  bool strong = true;
  std::vector<int> ranks;
  std::vector<PointAnalysis> points;
  int noisy = 0;
  scaling::AmdahlFit amdahl;                 // strong scaling
  scaling::GustafsonFit gustafson;           // weak scaling
  std::vector<double> gustafson_predicted;   // the fit's scaled speedup at each rank count
  double fit_error = 0;                      // the fit's largest relative miss
  bool fit_describes = false;                // fit_error <= --max-fit-error
  ModelCheck check;
  scaling::CostModel model;                  // fitted on every point
  bool projection_withheld = false;
  std::string projection_note;               // why withheld, or what checked it
  double extrapolation = 0;
  std::vector<scaling::ProjectionPoint> projection;  // with low/high: the bootstrap's 95% interval
  int ranks_per_node = 1;
  int resamples = 0;
  // 95% intervals of the fitted parameters over the resamples.
  double rate_low = 0, rate_high = 0, overhead_low = 0, overhead_high = 0, host_low = 0, host_high = 0;
  std::vector<CollectiveExtrapolation> extrapolation_check;
  std::vector<scaling::Measurement> measured;  // the points the model was fitted to (critical_path)
};

ModeAnalysis analyse_mode(const Options& o, const ModeReport& r, const Machine& machine);

// The model check's verdict against the target of a held-out check (median |error| <= 15%, largest
// <= 25%), one greppable line: "model check <mode> <op>: PASS|FAIL ...".
std::string verdict_line(const Options& o, const ModeAnalysis& a);
// The same over every mode's held-out points together: "model check verdict: PASS|FAIL|NONE ...".
std::string overall_verdict(const Options& o, const std::vector<ModeAnalysis>& analyses);

// The probe and the measured collectives, as a table and as JSON.
void print_machine(FILE* text, const Machine& machine);
Json machine_json(const Machine& machine);
// The model's inputs and predictions as text (--model-inputs), one record a line; the unit test
// replays them (tests/scaling/test_scaling_recorded.cpp).
std::string model_inputs_text(const Options& o, const Machine& machine, const std::vector<ModeAnalysis>& analyses);

// The table of a mode on `text`, and its JSON object.
void print_mode(FILE* text, const Options& o, const ModeAnalysis& a);
Json mode_json(const Options& o, const ModeAnalysis& a);

// The pings' table and the network models fitted on them.
void print_collectives(FILE* text, const Options& o, const Runtime& runtime, const Context& world,
                       const std::vector<scaling::CollectiveSample>& samples);
// The whole run as JSON up to the two-level section: settings, provenance, the pings, the network
// models, and each mode's object.
Json run_json(const Options& o, const Runtime& runtime, const Context& world,
              const std::vector<scaling::CollectiveSample>& samples, const std::vector<ModeReport>& reports,
              const std::vector<ModeAnalysis>& analyses);
// One CSV row per point and round.
std::string run_csv(const Options& o, const std::vector<ModeReport>& reports);

// Per point: the median time, and the median round's phases with the rest of the median as host work.
std::vector<scaling::Measurement> measurements(const ModeReport& r);
// The same on the critical path: the part of a point's communication phase beyond what its
// collectives take on their own (as the launch measured them, machine.collectives) is the wait
// for a slower peer's local phase, and is counted as local. Points of an operation without a plan
// (matmul) are left as they are.
std::vector<scaling::Measurement> critical_path(std::vector<scaling::Measurement> points, const Machine& machine,
                                                const CollectivePlan& plan);

// Collective over world, before any measurement: every rank learns whether rank 0 could create each
// output file (--json, --csv); UsageError naming the flag otherwise.
void check_outputs_writable(const Options& o, const Communicator& world);

}  // namespace tessera::apps::scaling_study
