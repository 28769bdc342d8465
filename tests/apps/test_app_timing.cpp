// The apps' timing summary (apps/common/report.cpp, summarize) on made-up per-rank, per-repeat
// times whose statistics are computed here from the same formulas every rank knows: the headline
// time is the median over repeats of the slowest rank's time, min / avg / max are over ranks (each
// rank's median over repeats), and the phases (the slowest rank's in the median repeat) never add
// up to more than the headline time, even where one rank spends its time computing and another
// waiting in a collective.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "app.hpp"
#include "support/test_support.hpp"

namespace tessera::apps {
namespace {

using test::world;

struct Repeat {
  double wall;
  PhaseTimes phases;
};

// Repeat i of rank r: a rank that computes (r == 0: local work) and ranks that wait for it in the
// collective (communication); the repeats differ in length, and on one rank a repeat is slow.
Repeat made_up(int rank, int i) {
  const double wall[] = {1.0, 1.0, 3.0, 1.2, 0.9};
  Repeat r{wall[i] * (1 + 0.01 * rank), {}};
  if (rank == 0) {
    r.phases.local = (i % 2 ? 0.2 : 0.95) * r.wall;
    r.phases.communication = (i % 2 ? 0.75 : 0.01) * r.wall;
  } else {
    r.phases.local = 0.1 * r.wall;
    r.phases.communication = 0.85 * r.wall;
  }
  r.phases.host = 0.01 * r.wall;
  return r;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

TEST(AppTiming, PhasesNeverAddUpToMoreThanTheTime) {
  for (int repeats = 1; repeats <= 5; ++repeats) {
    std::vector<double> wall;
    std::vector<PhaseTimes> phases;
    for (int i = 0; i < repeats; ++i) {
      const Repeat r = made_up(world().rank(), i);
      wall.push_back(r.wall);
      phases.push_back(r.phases);
    }
    const TimingSummary s = summarize(world(), wall, phases, 1);

    // The reference: every rank's times are known here.
    std::vector<double> slowest;
    for (int i = 0; i < repeats; ++i) {
      double worst = 0;
      for (int rank = 0; rank < world().size(); ++rank) worst = std::max(worst, made_up(rank, i).wall);
      slowest.push_back(worst);
    }
    EXPECT_DOUBLE_EQ(s.total, median_of(slowest)) << repeats << " repeats";
    EXPECT_EQ(s.slowest, slowest);
    EXPECT_DOUBLE_EQ(s.repeat_min, *std::min_element(slowest.begin(), slowest.end()));
    EXPECT_DOUBLE_EQ(s.repeat_max, *std::max_element(slowest.begin(), slowest.end()));
    std::vector<double> rank_medians;
    for (int rank = 0; rank < world().size(); ++rank) {
      std::vector<double> own;
      for (int i = 0; i < repeats; ++i) own.push_back(made_up(rank, i).wall);
      rank_medians.push_back(median_of(own));
    }
    EXPECT_DOUBLE_EQ(s.rank_min, *std::min_element(rank_medians.begin(), rank_medians.end()));
    EXPECT_DOUBLE_EQ(s.rank_max, *std::max_element(rank_medians.begin(), rank_medians.end()));
    EXPECT_NEAR(s.rank_avg, std::accumulate(rank_medians.begin(), rank_medians.end(), 0.0) / world().size(), 1e-12);
    EXPECT_LE(s.phases.total(), s.total * (1 + 1e-12))
        << repeats << " repeats: local " << s.phases.local << " + communication " << s.phases.communication
        << " + fixup " << s.phases.fixup << " + host " << s.phases.host << " > time " << s.total;
    // ... and they are one rank's in one repeat: the slowest rank's (the last) in the median repeat.
    std::vector<int> order(static_cast<std::size_t>(repeats));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return slowest[a] < slowest[b]; });
    const Repeat middle = made_up(world().size() - 1, order[static_cast<std::size_t>(repeats - 1) / 2]);
    EXPECT_DOUBLE_EQ(s.phases.local, middle.phases.local);
    EXPECT_DOUBLE_EQ(s.phases.communication, middle.phases.communication);
  }
}

}  // namespace
}  // namespace tessera::apps
