// The cost model replayed on measurements recorded by tessera-scaling (--model-inputs, files in
// tests/scaling/data): the same inputs give the same predictions, to the last bit, as the run that
// recorded them. A change to the model that moves a prediction shows here, with the file that moved.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/scaling.hpp"

namespace sc = tessera::scaling;

namespace {

tessera::Collective collective_named(const std::string& name) {
  for (tessera::Collective c : tessera::kCollectives)
    if (name == tessera::to_string(c)) return c;
  ADD_FAILURE() << "unknown collective " << name;
  return tessera::Collective::allreduce;
}

struct Recorded {
  sc::Op op = sc::Op::sum;
  int element_bytes = 4, ranks_per_node = 1;
  std::int64_t panel_width = 512;
  tessera::CollectivePlan plan;
  std::vector<sc::CollectiveSample> pings;
  sc::NodeSharing sharing;
  std::vector<sc::CollectiveTiming> collectives;
  struct Mode {
    sc::Mode mode = sc::Mode::strong;
    std::int64_t size_arg = 0;
    std::vector<sc::Measurement> points;
    std::vector<std::pair<int, double>> check;    // held-out ranks, predicted
    std::vector<int> check_fit;
    std::vector<std::pair<int, double>> predict;  // ranks, predicted by the model of record
  };
  std::vector<Mode> modes;
};

Recorded load(const std::filesystem::path& file) {
  Recorded r;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string what;
    s >> what;
    if (what == "run") {
      std::string op;
      s >> op >> r.element_bytes >> r.panel_width >> r.ranks_per_node;
      r.op = sc::parse_op(op);
    } else if (what == "plan") {
      std::string kind;
      double bytes = 0;
      s >> kind >> bytes;
      r.plan.push_back({collective_named(kind), bytes});
    } else if (what == "ping") {
      sc::CollectiveSample p;
      s >> p.ranks >> p.small_seconds >> p.large_seconds >> p.large_bytes >> p.device_small_seconds >>
          p.device_large_seconds >> p.device_large_bytes >> p.device_small_bytes;
      r.pings.push_back(p);
    } else if (what == "probe") {
      int k = 0;
      double t = 0;
      s >> k >> t;
      r.sharing.active.push_back(k);
      r.sharing.seconds.push_back(t);
    } else if (what == "collective") {
      std::string kind;
      sc::CollectiveTiming t;
      s >> kind >> t.ranks >> t.bytes >> t.seconds;
      t.kind = collective_named(kind);
      r.collectives.push_back(t);
    } else if (what == "mode") {
      std::string mode;
      Recorded::Mode m;
      s >> mode >> m.size_arg;
      m.mode = mode == "strong" ? sc::Mode::strong : sc::Mode::weak;
      r.modes.push_back(m);
    } else if (what == "point") {
      sc::Measurement m;
      s >> m.ranks >> m.time >> m.local >> m.communication >> m.host;
      r.modes.back().points.push_back(m);
    } else if (what == "check") {
      int a = 0, b = 0, p = 0;
      double t = 0;
      s >> a >> b >> p >> t;
      r.modes.back().check_fit = {a, b};
      r.modes.back().check.push_back({p, t});
    } else if (what == "predict") {
      int p = 0;
      double t = 0;
      s >> p >> t;
      r.modes.back().predict.push_back({p, t});
    }
    EXPECT_FALSE(s.fail()) << file << ": cannot read '" << line << "'";
  }
  return r;
}

TEST(ScalingRecorded, PredictionsReproduceExactly) {
  const std::filesystem::path dir = TESSERA_SCALING_TEST_DATA;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".txt") continue;
    ++files;
    const Recorded r = load(entry.path());
    ASSERT_FALSE(r.modes.empty()) << entry.path();
    for (const auto& m : r.modes) {
      std::vector<int> all;
      for (const auto& p : m.points) all.push_back(p.ranks);
      const sc::CostModel model =
          sc::fit_cost_model(r.op, m.mode, m.size_arg, r.element_bytes, r.panel_width, r.plan, sc::fit_network(r.pings),
                             sc::fit_device_network(r.pings), r.sharing, r.ranks_per_node, r.collectives, m.points, all);
      ASSERT_FALSE(m.predict.empty());
      for (const auto& [p, t] : m.predict)
        EXPECT_EQ(model.predict(p).total(), t) << entry.path() << " " << sc::to_string(m.mode) << " at " << p << " ranks";
      if (m.check.empty()) continue;
      std::vector<sc::CollectiveSample> within;
      for (const auto& s : r.pings)
        if (s.ranks <= m.check_fit.back()) within.push_back(s);
      const sc::CostModel check =
          sc::fit_cost_model(r.op, m.mode, m.size_arg, r.element_bytes, r.panel_width, r.plan, sc::fit_network(within),
                             sc::fit_device_network(within), r.sharing, r.ranks_per_node, r.collectives, m.points,
                             m.check_fit);
      for (const auto& [p, t] : m.check)
        EXPECT_EQ(check.predict(p).total(), t) << entry.path() << " held-out check at " << p << " ranks";
    }
  }
  EXPECT_GE(files, 1) << "no recorded measurements in " << dir;
}

}  // namespace
