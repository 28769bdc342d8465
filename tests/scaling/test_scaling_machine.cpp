// A synthetic machine with known parameters: its node's shared bandwidth, its collectives (as Open
// MPI 4.1 runs them, with a known alpha and beta), its local rate, overhead and host time. Times
// generated from those parameters, with a deterministic +-0.5% perturbation, are fitted on 1 and 2
// ranks; the fit recovers the parameters within 5% and predicts the held-out points within 5%.
// Also: Open MPI's decision rules at a few points of its table, and the charge of a collective
// measured, between measured sizes and past them.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/scaling.hpp"
#include "model/scaling_two_level.hpp"

namespace sc = tessera::scaling;
using tessera::Collective;

namespace {

// The machine. alpha and beta of the host network; the node's probe times (bandwidth shared by k
// ranks: 1 rank alone, then 1.25x, 1.6x, ... slower); the local rate and overhead; the host time.
constexpr double kAlpha = 3e-6, kBeta = 4e9, kRate = 6e9, kOverhead = 40e-6, kHost = 25e-6;
constexpr int kRanksPerNode = 8;
double true_slowdown(int k) { return 1.0 + 0.2 * (k - 1) + 0.01 * (k - 1) * (k - 1); }

double true_collective(Collective kind, int p, double bytes) {
  const sc::AlgorithmCost a = sc::openmpi_algorithm(kind, p, bytes);
  return kAlpha * a.rounds + a.bytes / kBeta;
}

// +-0.5%, deterministic, different per point.
double perturb(double t, int i) { return t * (1.0 + 0.005 * std::sin(1.7 * i + 0.3)); }

struct Synthetic {
  sc::NodeSharing sharing;
  std::vector<sc::CollectiveTiming> collectives;
  std::vector<sc::CollectiveSample> pings;
  std::vector<sc::Measurement> points;
  tessera::CollectivePlan plan{{Collective::allreduce, 8}};
};

Synthetic make(sc::Mode mode, std::int64_t size_arg, const std::vector<int>& ranks) {
  Synthetic s;
  for (int k = 1; k <= kRanksPerNode; ++k) {
    s.sharing.active.push_back(k);
    s.sharing.seconds.push_back(0.01 * true_slowdown(k));
  }
  for (int p : ranks) {
    if (p < 2) continue;
    s.collectives.push_back({Collective::allreduce, p, 8, true_collective(Collective::allreduce, p, 8), {}});
    // The pings of the network fit: recursive doubling of 8 B is alpha per round, and a 4 MiB
    // allreduce is charged alpha ceil(log2 p) + 2 (p-1)/p b / beta by fit_network.
    sc::CollectiveSample ping;
    ping.ranks = p;
    ping.small_seconds = kAlpha * sc::tree_depth(p);
    ping.large_bytes = 4 << 20;
    ping.large_seconds = kAlpha * sc::tree_depth(p) + sc::ring_factor(p) * ping.large_bytes / kBeta;
    s.pings.push_back(ping);
  }
  int i = 0;
  for (int p : ranks) {
    const sc::Problem problem = sc::problem_at(sc::Op::sum, mode, size_arg, 8, p);
    const double local = kOverhead + sc::local_work(problem, p) / kRate * true_slowdown(std::min(p, kRanksPerNode));
    const double comm = p > 1 ? true_collective(Collective::allreduce, p, 8) : 0.0;
    const double l = perturb(local, i++), h = perturb(kHost, i++);
    s.points.push_back({p, l + comm + h, l, comm, h});
  }
  return s;
}

sc::CostModel fit(const Synthetic& s, sc::Mode mode, std::int64_t size_arg, const std::vector<int>& on) {
  return sc::fit_cost_model(sc::Op::sum, mode, size_arg, 8, 512, s.plan, sc::fit_network(s.pings),
                            sc::fit_device_network(s.pings), s.sharing, kRanksPerNode, s.collectives, s.points, on);
}

TEST(ScalingSyntheticMachine, StrongScalingRecoversParametersAndPredictsHeldOutPoints) {
  const std::vector<int> ranks = {1, 2, 4, 8};
  const std::int64_t n = 1 << 18;  // 2 MiB: the overhead is 10% of the local time at one rank
  const Synthetic s = make(sc::Mode::strong, n, ranks);
  const sc::CostModel all = fit(s, sc::Mode::strong, n, ranks);
  EXPECT_NEAR(all.local_rate(), kRate, 0.05 * kRate);
  EXPECT_NEAR(all.local_overhead, kOverhead, 0.05 * kOverhead);
  EXPECT_NEAR(all.host, kHost, 0.05 * kHost);
  EXPECT_NEAR(all.network.latency, kAlpha, 0.05 * kAlpha);
  EXPECT_NEAR(all.network.bandwidth, kBeta, 0.05 * kBeta);
  const sc::CostModel check = fit(s, sc::Mode::strong, n, {1, 2});
  for (const auto& m : s.points) EXPECT_NEAR(check.predict(m.ranks).total(), m.time, 0.05 * m.time) << m.ranks;
  // Past the machine: 64 nodes of 8 ranks, against the machine's own time there.
  const int p = 512;
  const double truth = kOverhead + sc::local_work(sc::problem_at(sc::Op::sum, sc::Mode::strong, n, 8, p), p) / kRate *
                                       true_slowdown(kRanksPerNode) +
                       true_collective(Collective::allreduce, p, 8) + kHost;
  EXPECT_NEAR(all.predict(p).total(), truth, 0.05 * truth);
}

TEST(ScalingSyntheticMachine, WeakScalingPredictsTheSharedBandwidth) {
  const std::vector<int> ranks = {1, 2, 3, 4, 5, 8};
  const Synthetic s = make(sc::Mode::weak, 1 << 22, ranks);
  const sc::CostModel check = fit(s, sc::Mode::weak, 1 << 22, {1, 2});
  for (const auto& m : s.points) EXPECT_NEAR(check.predict(m.ranks).total(), m.time, 0.05 * m.time) << m.ranks;
  // Without the probe, each rank would keep its one-rank rate: 8 ranks would be off by far more.
  sc::NodeSharing none;
  const sc::CostModel blind = sc::fit_cost_model(sc::Op::sum, sc::Mode::weak, 1 << 22, 8, 512, s.plan,
                                                 sc::fit_network(s.pings), sc::fit_device_network(s.pings), none, 0,
                                                 s.collectives, s.points, {1, 2});
  EXPECT_GT(std::abs(blind.predict(8).total() - s.points.back().time), 0.3 * s.points.back().time);
}

TEST(ScalingSharing, SlowdownInterpolatesAndHoldsPastTheNode) {
  sc::NodeSharing s{{1, 2, 4}, {1.0, 1.5, 2.5}};
  EXPECT_DOUBLE_EQ(s.slowdown(1), 1.0);
  EXPECT_DOUBLE_EQ(s.slowdown(2), 1.5);
  EXPECT_DOUBLE_EQ(s.slowdown(3), 2.0);
  EXPECT_DOUBLE_EQ(s.slowdown(4), 2.5);
  EXPECT_DOUBLE_EQ(s.slowdown(64), 2.5);
  EXPECT_DOUBLE_EQ(sc::NodeSharing{}.slowdown(8), 1.0);
}

TEST(ScalingSharing, TwoLevelLocalTermIsSlowedByTheRanksPerNode) {
  sc::TwoLevelModel m;
  m.base.op = sc::Op::sum;
  m.base.mode = sc::Mode::strong;
  m.base.size_arg = 1000;
  m.base.element_bytes = 8;
  m.base.local_overhead = 1e-3;
  m.base.local_seconds_per_work = 1e-9;
  m.base.sharing = {{1, 2, 4}, {1.0, 1.5, 2.5}};
  m.ranks_per_node = 4;
  // 2 nodes x 4: each rank reads ceil(1000 / 8) = 125 doubles, 1000 bytes, at 2.5x the one-rank time.
  EXPECT_DOUBLE_EQ(m.predict(2, 4).local, 1e-3 + 1e-9 * 2.5 * 1000);
  EXPECT_DOUBLE_EQ(m.predict(1, 1).local, 1e-3 + 1e-9 * 8000);
}

// The thresholds of Open MPI 4.1's allreduce table, read from coll_tuned_decision_fixed.c.
TEST(ScalingCollectives, OpenMpiAllreduceChoice) {
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::allreduce, 2, 8).name, "recursive_doubling");
  // 4 ranks, 8 B: the table says ring, which hands a vector shorter than p to recursive doubling.
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::allreduce, 4, 8).name, "recursive_doubling");
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::allreduce, 8, 4096).name, "recursive_doubling");
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::allreduce, 8, 1 << 20).name, "rabenseifner");
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::allreduce, 3, 50000).name, "ring");
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::allreduce, 100, 64).name, "linear");
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::allreduce, 300, 1000).name, "reduce+bcast");
  // Recursive doubling on 6 ranks: 3 rounds and 2 more to fold the extra ranks in and out.
  EXPECT_DOUBLE_EQ(sc::openmpi_algorithm(Collective::allreduce, 6, 8).rounds, 5.0);
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::allgather, 6, 16).name, "bruck");
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::allgather, 8, 16).name, "recursive_doubling");
  EXPECT_STREQ(sc::openmpi_algorithm(Collective::bcast, 8, 1 << 22).name, "pipeline");
  EXPECT_STREQ(sc::nccl_algorithm(Collective::allreduce, 8, 1 << 22).name, "ring");
  EXPECT_STREQ(sc::nccl_algorithm(Collective::allreduce, 8, 1024).name, "tree");
}

TEST(ScalingCollectives, ChargedAsMeasuredInterpolatedAndExtrapolated) {
  sc::NetworkModel net{2e-6, 1e9};
  const auto f = [&](int p) {
    const sc::AlgorithmCost a = sc::openmpi_algorithm(Collective::allgather, p, 16);
    return net.latency * a.rounds + a.bytes / net.bandwidth;
  };
  // Measured at 2 and 8 ranks at twice the formula's time (a machine slower than its pings).
  const std::vector<sc::CollectiveTiming> rows = {{Collective::allgather, 2, 16, 2 * f(2), {}},
                                                  {Collective::allgather, 8, 16, 2 * f(8), {}}};
  auto charge = [&](int p, double bytes) {
    return sc::charge_collective(rows, sc::CollectiveLibrary::open_mpi, net, Collective::allgather, p, bytes);
  };
  EXPECT_DOUBLE_EQ(charge(2, 16).seconds, 2 * f(2));
  EXPECT_STREQ(charge(2, 16).source, "measured");
  // 20 bytes is in the same size class (16..31) as 16: charged as measured.
  EXPECT_STREQ(charge(8, 20).source, "measured");
  EXPECT_NEAR(charge(4, 16).seconds, 2 * f(4), 1e-15);
  EXPECT_STREQ(charge(4, 16).source, "interpolated");
  EXPECT_NEAR(charge(1024, 16).seconds, 2 * f(1024), 1e-12);
  EXPECT_STREQ(charge(1024, 16).source, "extrapolated");
  // Another size class: the formula.
  EXPECT_NEAR(charge(8, 4096).seconds, net.latency * 3 + 7 * 4096 / net.bandwidth, 1e-15);
  EXPECT_STREQ(charge(8, 4096).source, "formula");
  const sc::CollectiveCharge c = charge(8, 16);
  EXPECT_NEAR(c.latency + c.bandwidth, c.seconds, 1e-18);
  EXPECT_DOUBLE_EQ(charge(1, 16).seconds, 0.0);
}

}  // namespace
