#include "resume.hpp"

#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <utility>

#include "tessera/framework/checkpoint.hpp"
#include "tessera/framework/io.hpp"

namespace tessera::apps::scaling_study {
namespace {

constexpr const char* kApp = "tessera-scaling";
// Columns of /rounds_i64 and the fixed columns of /rounds_f64 (the slowest rank's time of each call
// follows them, `repeat` columns).
enum I64 { kMode, kPoint, kRound, kRanks, kSize, kRepeats, kWarmup, kPhasesRepeat, kPhasesRank, kSlowestCount, kI64Cols };
enum F64 { kTotal, kRepeatMin, kRepeatMax, kRankMin, kRankAvg, kRankMax, kLocal, kCommunication, kFixup, kHost,
           kOther, kChecksum, kF64Fixed };

}  // namespace

std::string study_signature(const Options& o, const std::vector<ModeReport>& plan, int world_size,
                            const std::string& backend) {
  std::ostringstream s;
  s << "op " << scaling::to_string(o.op) << "; dtype " << io::to_string(o.dtype) << "; points";
  for (const auto& mode : plan) {
    s << " " << scaling::to_string(mode.mode) << ":";
    for (const auto& p : mode.points) s << " " << p.ranks << "x" << p.size;
  }
  s << "; repeat " << o.repeat << "; warmup " << o.warmup << "; seed " << o.seed << "; backend " << backend
    << "; ranks " << world_size;
  if (o.op == scaling::Op::matmul) s << "; panel width " << o.panel_width;
  return s.str();
}

void save_rounds(const Context& world, const Context& root_only, const std::string& path,
                 const std::vector<ModeReport>& reports, int rounds_done, const std::string& signature) {
  std::string problem;
  if (!root_only.is_null()) {
    int repeat = 0;
    std::vector<std::int64_t> ints;
    std::vector<double> reals;
    std::size_t rows = 0;
    for (const auto& report : reports)
      for (const auto& series : report.points)
        for (const auto& r : series.rounds) repeat = std::max(repeat, static_cast<int>(r.timing.slowest.size()));
    const std::size_t f64_cols = kF64Fixed + static_cast<std::size_t>(repeat);
    for (std::size_t m = 0; m < reports.size(); ++m)
      for (std::size_t i = 0; i < reports[m].points.size(); ++i) {
        const PointSeries& series = reports[m].points[i];
        for (std::size_t k = 0; k < series.rounds.size(); ++k) {
          const PointResult& r = series.rounds[k];
          const TimingSummary& t = r.timing;
          const std::int64_t row_ints[kI64Cols] = {static_cast<std::int64_t>(m), static_cast<std::int64_t>(i),
                                                   static_cast<std::int64_t>(k), r.ranks, r.size, t.repeats, t.warmup,
                                                   t.phases_repeat, t.phases_rank,
                                                   static_cast<std::int64_t>(t.slowest.size())};
          ints.insert(ints.end(), row_ints, row_ints + kI64Cols);
          const double row_reals[kF64Fixed] = {t.total, t.repeat_min, t.repeat_max, t.rank_min, t.rank_avg,
                                               t.rank_max, t.phases.local, t.phases.communication, t.phases.fixup,
                                               t.phases.host, r.other, r.checksum};
          reals.insert(reals.end(), row_reals, row_reals + kF64Fixed);
          for (int c = 0; c < repeat; ++c)
            reals.push_back(c < static_cast<int>(t.slowest.size()) ? t.slowest[c] : std::numeric_limits<double>::quiet_NaN());
          ++rows;
        }
      }
    DistArray<std::int64_t> round_ints(root_only, static_cast<index_t>(rows * kI64Cols));
    DistArray<double> round_reals(root_only, static_cast<index_t>(rows * f64_cols));
    round_ints.local_from_host(ints);
    round_reals.local_from_host(reals);
    std::int64_t done = rounds_done;
    std::int64_t width = static_cast<std::int64_t>(f64_cols);
    try {
      io::checkpoint(root_only, path,
                     {{"rounds_i64", round_ints}, {"rounds_f64", round_reals}, {"rounds_f64_columns", width},
                      {"rounds_done", done}},
                     rounds_done, io::CheckpointOptions{kApp, {{"study", signature}}});
    } catch (const std::exception& e) {
      problem = std::string("--checkpoint: ") + e.what();
    }
  }
  throw_root_error(world.comm(), problem);
}

int restore_rounds(const Context& world, const Context& root_only, const std::string& path,
                   std::vector<ModeReport>& reports, const std::string& signature) {
  std::string problem;
  std::int64_t done = 0;
  if (!root_only.is_null()) {
    struct stat st {};
    try {
      if (::stat(path.c_str(), &st) != 0) throw UsageError("no such file '" + path + "'");
      std::string theirs;
      bool ours = false;
      try {
        for (const auto& [name, value] : io::read_attributes(root_only, io::DatasetPath{path, "/rounds_i64"})) {
          if (name == "study") theirs = value;
          if (name == "app") ours = value == kApp;
        }
      } catch (const io::IoError&) {
      }
      if (!ours || theirs.empty()) throw UsageError("'" + path + "' is not a checkpoint of " + kApp);
      if (theirs != signature)
        throw UsageError("'" + path + "' is a checkpoint of another study (" + theirs + "); this run's is: " + signature);
      DistArray<std::int64_t> round_ints(root_only, 0);
      DistArray<double> round_reals(root_only, 0);
      std::int64_t width = 0;
      io::restore(root_only, path,
                  {{"rounds_i64", round_ints}, {"rounds_f64", round_reals}, {"rounds_f64_columns", width},
                   {"rounds_done", done}});
      const std::vector<std::int64_t> ints = round_ints.local_to_host();
      const std::vector<double> reals = round_reals.local_to_host();
      const std::size_t rows = ints.size() / kI64Cols;
      if (ints.size() % kI64Cols != 0 || width < kF64Fixed || reals.size() != rows * static_cast<std::size_t>(width))
        throw UsageError("'" + path + "': its rounds do not have the columns of this version's checkpoints");
      for (auto& report : reports)
        for (auto& series : report.points) series.rounds.clear();
      for (std::size_t row = 0; row < rows; ++row) {
        const std::int64_t* n = ints.data() + row * kI64Cols;
        const double* x = reals.data() + row * static_cast<std::size_t>(width);
        if (n[kMode] < 0 || n[kMode] >= static_cast<std::int64_t>(reports.size()) || n[kPoint] < 0 ||
            n[kPoint] >= static_cast<std::int64_t>(reports[n[kMode]].points.size()) || n[kSlowestCount] < 0 ||
            n[kSlowestCount] > width - kF64Fixed)
          throw UsageError("'" + path + "': row " + std::to_string(row) + " names no point of this study");
        PointSeries& series = reports[n[kMode]].points[n[kPoint]];
        if (n[kRanks] != series.ranks || n[kSize] != series.size)
          throw UsageError("'" + path + "': row " + std::to_string(row) + " is of another point");
        PointResult r;
        r.ranks = static_cast<int>(n[kRanks]);
        r.size = n[kSize];
        r.timing.repeats = static_cast<int>(n[kRepeats]);
        r.timing.warmup = static_cast<int>(n[kWarmup]);
        r.timing.phases_repeat = static_cast<int>(n[kPhasesRepeat]);
        r.timing.phases_rank = static_cast<int>(n[kPhasesRank]);
        r.timing.total = x[kTotal];
        r.timing.repeat_min = x[kRepeatMin];
        r.timing.repeat_max = x[kRepeatMax];
        r.timing.rank_min = x[kRankMin];
        r.timing.rank_avg = x[kRankAvg];
        r.timing.rank_max = x[kRankMax];
        r.timing.phases = PhaseTimes{x[kLocal], x[kCommunication], x[kFixup], x[kHost]};
        r.other = x[kOther];
        r.checksum = x[kChecksum];
        r.timing.slowest.assign(x + kF64Fixed, x + kF64Fixed + n[kSlowestCount]);
        series.rounds.push_back(std::move(r));
      }
      for (const auto& report : reports)
        for (const auto& series : report.points)
          if (static_cast<std::int64_t>(series.rounds.size()) != done)
            throw UsageError("'" + path + "' holds " + std::to_string(series.rounds.size()) + " rounds of the point at " +
                             std::to_string(series.ranks) + " ranks, not the " + std::to_string(done) + " it says were done");
    } catch (const std::exception& e) {
      problem = std::string("--restart: ") + e.what();
    }
  }
  throw_root_error(world.comm(), problem);
  return static_cast<int>(world.comm().bcast_value(done, 0));
}

}  // namespace tessera::apps::scaling_study
