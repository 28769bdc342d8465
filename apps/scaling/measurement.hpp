// One measured point of tessera-scaling: the operation run on the sub-communicator of its first p
// ranks, `repeat` timed calls per round (the apps' shared timing: per call the slowest rank, then
// the median), in rounds over all points until each point's median is known to --max-spread; and
// the median of a point's rounds with its distribution-free 95% interval.
#pragma once

#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "app.hpp"
#include "options.hpp"
#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/context.hpp"
#include "model/scaling.hpp"
#include "tessera/framework/timer.hpp"

namespace tessera::apps::scaling_study {

// One point in one round.
struct PointResult {
  int ranks = 1;
  index_t size = 0;       // global elements, or matrix side
  TimingSummary timing;   // medians of the slowest rank's wall and phase times
  double other = 0;       // wall time outside the phases (max(0, time - phases))
  double checksum = 0;
};

// The median of samples and a distribution-free confidence interval for it: [x_(k), x_(n+1-k)] of
// the sorted samples, with the largest k whose coverage 1 - 2 P(Binomial(n, 1/2) < k) is at least
// 95%. Below 6 samples no k reaches 95%: then k = 1 (min and max), and `level` says the coverage.
struct MedianInterval {
  double median = 0, low = 0, high = 0, level = 0;
};

MedianInterval median_interval(std::vector<double> x);

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

// The points of one mode (strong or weak) at each rank count measured.
struct ModeReport {
  scaling::Mode mode;
  index_t size_arg = 0;
  std::vector<PointSeries> points;
};

// The collectives the measured operation makes, as its algorithm declares them (collective_plan.hpp):
// what the cost model charges. matmul's panels are charged by summa_overlap instead.
CollectivePlan operation_plan(scaling::Op op, io::DType dtype);

// Lines on stderr as the points complete ("[3/14] ... done; 11 left; 0.4 s elapsed"), when `show`.
class Progress {
 public:
  Progress(bool show, std::size_t total) : show_(show), total_(total) {}
  void done(const std::string& what);
  void add(std::size_t points) { total_ += points; }
  // Points done before this run (a study resumed from its checkpoint): counted, no line.
  void credit(std::size_t points) { done_ += points; }

 private:
  bool show_;
  std::size_t total_;
  std::size_t done_ = 0;
  Stopwatch elapsed_;
};

// Ranks outside a point's sub-communicator (and those done early) wait here asleep, so that on an
// oversubscribed node they take no cycles from the ranks being measured, as a spinning barrier would.
void wait_for_all(const Context& world);

// Runs one point on ctx (every rank of ctx calls it): its timing over repeats and a checksum.
void run_point(const Context& ctx, const Options& o, PointResult& point);

// The points of every mode, their sizes and no rounds yet: the study's plan. UsageError, alike on
// every rank, for a point whose size does not fit in 64 bits (--n-per-rank times the ranks) or whose
// blocks pass 2^64 bytes. Not collective.
std::vector<ModeReport> plan_points(const Options& o);

// The most bytes one rank holds at once in any point of the plan (its blocks, the operation's
// output and buffers), for require_memory.
std::size_t largest_point_bytes(const Options& o, const std::vector<ModeReport>& plan);

// Every point of the plan once per round, in an order that rotates from round to round, until
// --rounds rounds ran and no point is noisy, or --max-rounds. contexts[i]: the sub-communicator of
// o.ranks[i] ranks (null on the ranks outside it). Collective over world; the series are complete on
// world rank 0 only (the other ranks get the modes and sizes without rounds). A resumed study passes
// the rounds it holds (`rounds_done` of them in `plan`, on world rank 0); `after_round`, when set, is
// called on every rank after each round with the series so far and the rounds done.
using AfterRound = std::function<void(const std::vector<ModeReport>&, int rounds_done)>;
std::vector<ModeReport> measure_modes(const Context& world, const std::vector<Context>& contexts, const Options& o,
                                      std::vector<ModeReport> plan, Progress& progress, int rounds_done = 0,
                                      const AfterRound& after_round = {});

}  // namespace tessera::apps::scaling_study
