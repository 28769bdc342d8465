// The scaling analysis against analytic cases: synthetic times made from a known serial fraction
// must give it back; Karp-Flatt and Gustafson against hand-computed values; the cost model's terms
// against the formulas written out here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/scaling.hpp"
#include "tessera/kernels/error.hpp"

namespace sc = tessera::scaling;

namespace {

// A sum of floats: one allreduce of 4 bytes (what the sum declares, checked by the multi-rank tests).
const tessera::CollectivePlan kSumOfFloats = {{tessera::Collective::allreduce, 4}};

std::vector<double> amdahl_times(double t1, double s, const std::vector<int>& ranks) {
  std::vector<double> t;
  for (int p : ranks) t.push_back(t1 * (s + (1 - s) / p));
  return t;
}

}  // namespace

TEST(ScalingAmdahl, RecoversKnownSerialFractionExactly) {
  const std::vector<int> ranks{1, 2, 4, 8, 16, 3, 5};
  for (double s : {0.0, 1e-4, 0.05, 0.3, 0.77, 1.0}) {
    for (double t1 : {1e-6, 0.25, 37.0}) {
      const auto times = amdahl_times(t1, s, ranks);
      const auto fit = sc::fit_amdahl(ranks, times);
      ASSERT_TRUE(fit.valid) << "s=" << s << " t1=" << t1;
      EXPECT_NEAR(fit.serial_fraction, s, 1e-9) << "t1=" << t1;
      EXPECT_NEAR(fit.t1 / t1, 1.0, 1e-9) << "s=" << s;
      EXPECT_LT(fit.residual_rms, 1e-9);
      EXPECT_LT(fit.residual_max, 1e-9);
      ASSERT_EQ(fit.fitted.size(), ranks.size());
      for (std::size_t i = 0; i < ranks.size(); ++i) EXPECT_NEAR(fit.fitted[i] / times[i], 1.0, 1e-9);
    }
  }
}

TEST(ScalingAmdahl, TwoPointsDetermineTheFit) {
  // T(1) = 10, T(2) = 6: a + b = 10, a + b/2 = 6 -> a = 2, b = 8, s = 0.2.
  const auto fit = sc::fit_amdahl({1, 2}, {10.0, 6.0});
  ASSERT_TRUE(fit.valid);
  EXPECT_NEAR(fit.serial_fraction, 0.2, 1e-12);
  EXPECT_NEAR(fit.t1, 10.0, 1e-12);
  EXPECT_NEAR(fit.predict(4), 10.0 * (0.2 + 0.8 / 4), 1e-12);
}

TEST(ScalingAmdahl, NoisyDataStaysCloseAndResidualBoundsEveryPoint) {
  const std::vector<int> ranks{1, 2, 4, 8, 16, 32};
  const double s = 0.1, t1 = 2.0;
  std::mt19937_64 rng(20240607);
  std::uniform_real_distribution<double> noise(-0.02, 0.02);
  std::vector<double> times = amdahl_times(t1, s, ranks);
  for (double& t : times) t *= 1 + noise(rng);
  const auto fit = sc::fit_amdahl(ranks, times);
  ASSERT_TRUE(fit.valid);
  EXPECT_NEAR(fit.serial_fraction, s, 0.02) << "seed 20240607";
  EXPECT_GT(fit.residual_rms, 0);
  EXPECT_LE(fit.residual_rms, fit.residual_max);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const double model = fit.t1 * (fit.serial_fraction + (1 - fit.serial_fraction) / ranks[i]);
    EXPECT_LE(std::abs(model - times[i]) / times[i], fit.residual_max * (1 + 1e-12));
  }
}

TEST(ScalingAmdahl, LeastSquaresOptimumBeatsNearbyFractions) {
  // Times that fit no Amdahl curve exactly: the reported (s, T1) must minimise the relative
  // squared error, so any perturbation of either does no better.
  const std::vector<int> ranks{1, 2, 4};
  const std::vector<double> times{1.0, 0.7, 0.3};
  const auto fit = sc::fit_amdahl(ranks, times);
  ASSERT_TRUE(fit.valid);
  auto cost = [&](double s, double t1) {
    double sum = 0;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const double r = (t1 * (s + (1 - s) / ranks[i]) - times[i]) / times[i];
      sum += r * r;
    }
    return sum;
  };
  const double best = cost(fit.serial_fraction, fit.t1);
  for (double ds : {-1e-3, 1e-3})
    for (double dt : {-1e-3, 0.0, 1e-3}) {
      const double s = fit.serial_fraction + ds;
      if (s < 0 || s > 1) continue;
      EXPECT_GE(cost(s, fit.t1 * (1 + dt)), best - 1e-15);
    }
  EXPECT_NEAR(fit.residual_rms, std::sqrt(best / 3), 1e-12);
}

TEST(ScalingAmdahl, ConstraintHoldsForSuperlinearAndSlowdown) {
  // Faster than ideal (cache effects): the best s within [0, 1] is 0.
  const auto super = sc::fit_amdahl({1, 2, 4}, {8.0, 3.0, 1.0});
  ASSERT_TRUE(super.valid);
  EXPECT_EQ(super.serial_fraction, 0.0);
  // Slower with more ranks: everything is serial.
  const auto slow = sc::fit_amdahl({1, 2, 4}, {1.0, 1.5, 2.0});
  ASSERT_TRUE(slow.valid);
  EXPECT_EQ(slow.serial_fraction, 1.0);
  EXPECT_GT(slow.residual_max, 0.1);
}

TEST(ScalingAmdahl, NeedsTwoDistinctRankCounts) {
  EXPECT_FALSE(sc::fit_amdahl({}, {}).valid);
  EXPECT_FALSE(sc::fit_amdahl({4}, {1.0}).valid);
  EXPECT_FALSE(sc::fit_amdahl({2, 2}, {1.0, 1.1}).valid);
  EXPECT_FALSE(sc::fit_amdahl({1, 2}, {1.0, 0.0}).valid);
  EXPECT_FALSE(sc::fit_amdahl({1, 2}, {1.0}).valid);
}

TEST(ScalingMetrics, KarpFlattByHand) {
  // T(1) = 10, T(4) = 4: S = 2.5, e = (1/2.5 - 1/4) / (1 - 1/4) = 0.15 / 0.75 = 0.2.
  const double s4 = sc::speedup(10.0, 4.0);
  EXPECT_DOUBLE_EQ(s4, 2.5);
  EXPECT_NEAR(*sc::karp_flatt(s4, 4), 0.2, 1e-15);
  // Perfect speedup: e = 0; no speedup at all: e = 1.
  EXPECT_NEAR(*sc::karp_flatt(8.0, 8), 0.0, 1e-15);
  EXPECT_NEAR(*sc::karp_flatt(1.0, 8), 1.0, 1e-15);
  EXPECT_FALSE(sc::karp_flatt(1.0, 1).has_value());
  // On exact Amdahl data Karp-Flatt equals s at every p.
  for (int p : {2, 3, 7, 64}) {
    const double tp = 5.0 * (0.125 + 0.875 / p);
    EXPECT_NEAR(*sc::karp_flatt(sc::speedup(5.0, tp), p), 0.125, 1e-12) << "p=" << p;
  }
  EXPECT_DOUBLE_EQ(sc::efficiency(10.0, 4.0, 4), 0.625);
}

TEST(ScalingMetrics, GustafsonByHand) {
  // Weak: T(1) = 1, T(4) = 1.25: scaled speedup 4 / 1.25 = 3.2, efficiency 0.8.
  EXPECT_DOUBLE_EQ(sc::scaled_speedup(1.0, 1.25, 4), 3.2);
  EXPECT_DOUBLE_EQ(sc::weak_efficiency(1.0, 1.25), 0.8);
  // Scaled speedups made with s = 0.3 give s back.
  const std::vector<int> ranks{1, 2, 4, 8};
  std::vector<double> scaled;
  for (int p : ranks) scaled.push_back(p - 0.3 * (p - 1));
  const auto fit = sc::fit_gustafson(ranks, scaled);
  ASSERT_TRUE(fit.valid);
  EXPECT_NEAR(fit.serial_fraction, 0.3, 1e-12);
  EXPECT_NEAR(fit.residual_rms, 0.0, 1e-12);
  EXPECT_FALSE(sc::fit_gustafson({1}, {1.0}).valid);
}

TEST(ScalingNetwork, DepthsAndFit) {
  EXPECT_EQ(sc::tree_depth(1), 0);
  EXPECT_EQ(sc::tree_depth(2), 1);
  EXPECT_EQ(sc::tree_depth(3), 2);
  EXPECT_EQ(sc::tree_depth(4), 2);
  EXPECT_EQ(sc::tree_depth(5), 3);
  EXPECT_EQ(sc::tree_depth(4096), 12);
  EXPECT_EQ(sc::tree_depth(4097), 13);
  EXPECT_DOUBLE_EQ(sc::ring_factor(1), 0.0);
  EXPECT_DOUBLE_EQ(sc::ring_factor(4), 1.5);
  // Samples made from alpha = 2 us, beta = 5 GB/s must give them back.
  const double alpha = 2e-6, beta = 5e9, bytes = 1 << 22;
  std::vector<sc::CollectiveSample> samples;
  for (int p : {1, 2, 3, 4}) {
    const double d = sc::tree_depth(p);
    samples.push_back({p, alpha * d, alpha * d + sc::ring_factor(p) * bytes / beta, bytes});
  }
  const auto net = sc::fit_network(samples);
  EXPECT_NEAR(net.latency / alpha, 1.0, 1e-12);
  EXPECT_NEAR(net.bandwidth / beta, 1.0, 1e-9);
  EXPECT_NEAR(net.allreduce(4, bytes), 2 * alpha + 1.5 * bytes / beta, 1e-15);
  EXPECT_EQ(net.allreduce(1, bytes), 0.0);
  // Only one rank: nothing to fit.
  const auto none = sc::fit_network({{1, 0.0, 0.0, bytes}});
  EXPECT_EQ(none.latency, 0.0);
  EXPECT_EQ(none.bandwidth, 0.0);
}

TEST(ScalingModel, GridAndWorkFormulas) {
  int r = 0, c = 0;
  sc::grid_dims(8, r, c);
  EXPECT_EQ(r * c, 8);
  EXPECT_EQ(r, 4);
  EXPECT_EQ(c, 2);
  sc::grid_dims(7, r, c);
  EXPECT_EQ(r, 7);
  EXPECT_EQ(c, 1);
  sc::grid_dims(36, r, c);
  EXPECT_EQ(r, 6);
  EXPECT_EQ(c, 6);
  // Sum of 1001 floats on 4 ranks: the slowest rank reads ceil(1001/4) = 251 elements.
  const sc::Problem sum{sc::Op::sum, 1001, 4};
  EXPECT_DOUBLE_EQ(sc::local_work(sum, 4), 251.0 * 4);
  // Matmul n = 100 on a 2 x 2 grid: 2 * 50 * 50 * 100 flops per rank.
  const sc::Problem mm{sc::Op::matmul, 100, 8};
  EXPECT_DOUBLE_EQ(sc::local_work(mm, 4), 2.0 * 50 * 50 * 100);
  // SUMMA on 2 x 2 with panel 32: ceil(100/32) = 4 steps, each one round per direction, and an A
  // panel of 50 x 32 plus a B panel of 32 x 50 doubles.
  const auto cost = sc::summa_comm_cost(mm, 4, 32);
  EXPECT_DOUBLE_EQ(cost.latency_rounds, 4.0 * 2);
  EXPECT_DOUBLE_EQ(cost.bytes, 4.0 * (50 * 32 + 32 * 50) * 8);
  // Weak scaling grows the problem with p.
  EXPECT_EQ(sc::problem_at(sc::Op::sum, sc::Mode::weak, 1000, 4, 8).size, 8000);
  EXPECT_EQ(sc::problem_at(sc::Op::matmul, sc::Mode::weak, 100, 4, 8).size, 200);
  EXPECT_EQ(sc::problem_at(sc::Op::scan, sc::Mode::strong, 1000, 4, 8).size, 1000);
  EXPECT_THROW(sc::parse_op("mean"), tessera::UsageError);
}

TEST(ScalingModel, EachCollectiveOfAPlanIsChargedByItsAlgorithm) {
  using tessera::Collective;
  // p = 6: ceil(log2 6) = 3 rounds for the tree-shaped ones.
  const auto one = [](Collective kind, double bytes) { return sc::comm_cost({{kind, bytes}}, 6); };
  EXPECT_DOUBLE_EQ(one(Collective::allreduce, 12).latency_rounds, 3);
  EXPECT_DOUBLE_EQ(one(Collective::allreduce, 12).bytes, 2.0 * 5 / 6 * 12);
  EXPECT_DOUBLE_EQ(one(Collective::allgather, 12).latency_rounds, 3);
  EXPECT_DOUBLE_EQ(one(Collective::allgather, 12).bytes, 5 * 12.0);
  EXPECT_DOUBLE_EQ(one(Collective::exscan, 12).bytes, 3 * 12.0);
  EXPECT_DOUBLE_EQ(one(Collective::bcast, 12).bytes, 12.0);
  EXPECT_DOUBLE_EQ(one(Collective::alltoallv, 1000).latency_rounds, 5);
  EXPECT_DOUBLE_EQ(one(Collective::alltoallv, 1000).bytes, 1000);
  EXPECT_DOUBLE_EQ(one(Collective::reduce_scatter, 600).latency_rounds, 3);
  EXPECT_DOUBLE_EQ(one(Collective::reduce_scatter, 600).bytes, 500);
  EXPECT_DOUBLE_EQ(one(Collective::neighbor_exchange, 64).latency_rounds, 1);
  EXPECT_DOUBLE_EQ(one(Collective::neighbor_exchange, 64).bytes, 64);
  // A plan's calls add up; one rank pays nothing.
  const tessera::CollectivePlan two = {{Collective::allgather, 16}, {Collective::allreduce, 8}};
  EXPECT_DOUBLE_EQ(sc::comm_cost(two, 6).latency_rounds, 6);
  EXPECT_DOUBLE_EQ(sc::comm_cost(two, 6).bytes, 5 * 16.0 + 2.0 * 5 / 6 * 8);
  EXPECT_DOUBLE_EQ(sc::comm_cost(two, 1).latency_rounds, 0);
  EXPECT_DOUBLE_EQ(sc::comm_cost(two, 1).bytes, 0);
  EXPECT_EQ(tessera::describe(two), "allgather of 16 B; allreduce of 8 B");
}

TEST(ScalingModel, FitOnTwoPointsPredictsSyntheticThird) {
  // Measurements generated from a known model: overhead 10 us, 1 ns per byte, 3 us host, and a
  // network of 5 us latency. Fitting on ranks 1 and 2 must predict 4 exactly.
  const std::int64_t n = (1 << 20) + 1;
  sc::NetworkModel net;
  net.latency = 5e-6;
  net.bandwidth = 1e10;
  std::vector<sc::Measurement> points;
  for (int p : {1, 2, 4}) {
    const auto prob = sc::problem_at(sc::Op::sum, sc::Mode::strong, n, 4, p);
    const double local = 10e-6 + 1e-9 * sc::local_work(prob, p);
    const double comm = net.allreduce(p, 4);
    points.push_back({p, local + comm + 3e-6, local, comm, 3e-6});
  }
  const auto model = sc::fit_cost_model(sc::Op::sum, sc::Mode::strong, n, 4, 512, kSumOfFloats, net, points, {1, 2});
  EXPECT_NEAR(model.local_overhead, 10e-6, 1e-12);
  EXPECT_NEAR(model.local_rate(), 1e9, 1e-3 * 1e9);
  EXPECT_NEAR(model.host, 3e-6, 1e-15);
  EXPECT_NEAR(model.predict(4).total() / points[2].time, 1.0, 1e-9);
  const auto proj = sc::project(model, sc::default_projection_ranks());
  ASSERT_EQ(proj.size(), 10u);
  EXPECT_EQ(proj.front().ranks, 8);
  EXPECT_EQ(proj.back().ranks, 4096);
  // At 4096 ranks each holds 257 floats (about 11 us of local work with the overhead), while 12
  // rounds of 5 us latency cost 60 us: latency dominates. At 8 ranks the local work (0.5 ms) does.
  EXPECT_STREQ(proj.back().terms.dominant(), "latency");
  EXPECT_EQ(proj.back().dominant, "latency");
  EXPECT_STREQ(proj.front().terms.dominant(), "local");
  EXPECT_NEAR(proj.back().terms.latency, 12 * 5e-6, 1e-15);
  EXPECT_NEAR(proj.back().efficiency, proj.back().speedup / 4096, 1e-15);
  // Weak scaling: the work per rank is fixed, so the rate absorbs all local time.
  std::vector<sc::Measurement> weak;
  for (int p : {1, 2}) weak.push_back({p, 1e-3 + net.allreduce(p, 4), 1e-3, net.allreduce(p, 4), 0});
  const auto wm = sc::fit_cost_model(sc::Op::sum, sc::Mode::weak, 1000, 4, 512, kSumOfFloats, net, weak, {1, 2});
  EXPECT_EQ(wm.local_overhead, 0.0);
  EXPECT_NEAR(wm.predict(64).local, 1e-3, 1e-12);
  const auto wp = sc::project(wm, {64});
  EXPECT_NEAR(wp[0].efficiency, 1e-3 / (1e-3 + 6 * 5e-6 + 2.0 * 63 / 64 * 4 / 1e10), 1e-9);
}

TEST(ScalingNetwork, DeviceBroadcastFitIsSeparateFromHostAllreduce) {
  // Host allreduce pings from alpha = 20 us, beta = 4 GB/s; device broadcast pings from 8 us and
  // 150 GB/s (a broadcast moves its payload once: no ring factor). Each fit gives its own back.
  const double ha = 20e-6, hb = 4e9, da = 8e-6, db = 150e9, bytes = 1 << 22;
  std::vector<sc::CollectiveSample> samples;
  for (int p : {1, 2, 3, 4, 7}) {
    const double d = sc::tree_depth(p);
    sc::CollectiveSample s;
    s.ranks = p;
    s.small_seconds = ha * d;
    s.large_seconds = ha * d + sc::ring_factor(p) * bytes / hb;
    s.large_bytes = bytes;
    s.device_small_seconds = da * d;
    s.device_large_seconds = da * d + bytes / db;
    s.device_large_bytes = bytes;
    s.device_small_bytes = 8;
    samples.push_back(s);
  }
  const auto host = sc::fit_network(samples);
  const auto device = sc::fit_device_network(samples);
  EXPECT_NEAR(host.latency / ha, 1.0, 1e-12);
  EXPECT_NEAR(host.bandwidth / hb, 1.0, 1e-9);
  EXPECT_NEAR(device.latency / da, 1.0, 1e-12);
  EXPECT_NEAR(device.bandwidth / db, 1.0, 1e-9);
  // Without a device ping (bytes 0) the device bandwidth is unknown, not infinite.
  for (auto& s : samples) s.device_large_bytes = 0;
  EXPECT_EQ(sc::fit_device_network(samples).bandwidth, 0.0);
  EXPECT_EQ(sc::fit_device_network({{1, 1e-6, 1e-3, bytes, 1e-6, 1e-3, bytes, 8}}).latency, 0.0);
}

namespace {

sc::NetworkModel network(double alpha, double beta) {
  sc::NetworkModel net;
  net.latency = alpha;
  net.bandwidth = beta;
  return net;
}

}  // namespace

TEST(ScalingSumma, OverlapByHandComputeBound) {
  // n = 100 doubles on 2 x 2, panel 32: steps of width 32, 32, 32, 4; blocks 50 x 50.
  // Broadcast of a width-w panel: A along the row and B along the column, each one round of
  // alpha = 15 us and 50 w 8 bytes at 1 GB/s: c(32) = 30 us + 25.6 us, c(4) = 30 us + 3.2 us.
  // GEMM at 1 ns per flop: g(w) = 2 * 50 * 50 * w ns: g(32) = 160 us, g(4) = 20 us.
  // Time = c(32) + max(g32, c32) + max(g32, c32) + max(g32, c4) + max(g4, 0)
  //      = 55.6 + 160 + 160 + 160 + 20 us; hidden = 55.6 + 55.6 + 33.2 us.
  const sc::Problem mm{sc::Op::matmul, 100, 8};
  const auto t = sc::summa_overlap(mm, 4, 32, 1e-9, network(15e-6, 1e9));
  EXPECT_NEAR(t.local, 500e-6, 1e-15);
  EXPECT_NEAR(t.latency, 30e-6, 1e-15);
  EXPECT_NEAR(t.bandwidth, 25.6e-6, 1e-15);
  EXPECT_NEAR(t.hidden, 144.4e-6, 1e-15);
  EXPECT_NEAR(t.total(), 555.6e-6, 1e-15);
}

TEST(ScalingSumma, OverlapByHandCommunicationBound) {
  // The same at 0.1 ns per flop: g(32) = 16 us < c(32), c(4); g(4) = 2 us.
  // Time = c32 + c32 + c32 + c4 + g4: latency 4 x 30 us, bandwidth 3 x 25.6 + 3.2 us, local 2 us,
  // hidden 3 x 16 us.
  const sc::Problem mm{sc::Op::matmul, 100, 8};
  const auto t = sc::summa_overlap(mm, 4, 32, 1e-10, network(15e-6, 1e9));
  EXPECT_NEAR(t.local, 2e-6, 1e-15);
  EXPECT_NEAR(t.latency, 120e-6, 1e-15);
  EXPECT_NEAR(t.bandwidth, 80e-6, 1e-15);
  EXPECT_NEAR(t.hidden, 48e-6, 1e-15);
}

TEST(ScalingSumma, OverlapByHandMixedOnAColumnGrid) {
  // n = 33 floats on 2 ranks: grid 2 x 1, blocks 17 x 33, only B panels travel (along the column
  // of 2): c(w) = 1 us + 33 w 4 B / 1 GB/s, so c(8) = 2.056 us, c(1) = 1.132 us. Steps 8, 8, 8, 8, 1.
  // At 0.15 ns per flop g(w) = 0.15 * 2 * 17 * 33 w ns: g(8) = 1.3464 us, g(1) = 0.1683 us.
  // Time = c8 + 3 max(g8, c8) + max(g8, c1) + g1 = 4 c8 + g8 + g1.
  const sc::Problem mm{sc::Op::matmul, 33, 4};
  const auto t = sc::summa_overlap(mm, 2, 8, 1.5e-10, network(1e-6, 1e9));
  EXPECT_NEAR(t.latency, 4e-6, 1e-15);
  EXPECT_NEAR(t.bandwidth, 4 * 1.056e-6, 1e-15);
  EXPECT_NEAR(t.local, 1.3464e-6 + 0.1683e-6, 1e-15);
  EXPECT_NEAR(t.hidden, 3 * 1.3464e-6 + 1.132e-6, 1e-15);
}

TEST(ScalingSumma, OverlapAgreesWithStepByStepReference) {
  // Against a direct walk over the steps on random sizes (odd, prime, 2^k +- 1, fewer elements
  // than ranks): time = c_0 + sum max(g_s, c_{s+1}); time + hidden = all GEMMs + all broadcasts;
  // the GEMMs add up to the local work.
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<double> log_uniform(-3, 3);
  for (std::int64_t n : {0, 1, 2, 3, 31, 33, 127, 257, 1023, 1025, 4099}) {
    for (int p : {1, 2, 3, 4, 6, 9, 16, 4096}) {
      for (std::int64_t b : {1, 7, 32, 512, 5000}) {
        if (n / b > 20000) continue;
        const double spf = 1e-10 * std::pow(10.0, log_uniform(rng));
        const sc::NetworkModel net = network(1e-6 * std::pow(10.0, log_uniform(rng)), 1e10);
        const int e = (n % 2) ? 4 : 8;
        const sc::Problem mm{sc::Op::matmul, n, e};
        int r = 0, c = 0;
        sc::grid_dims(p, r, c);
        const double mb = std::ceil(double(n) / r), nb = std::ceil(double(n) / c);
        std::vector<double> widths;
        for (std::int64_t k = 0; k < n; k += b) widths.push_back(double(std::min(b, n - k)));
        auto bcast = [&](double w) {
          double s = 0;
          if (c > 1) s += net.latency * sc::tree_depth(c) + mb * w * e / net.bandwidth;
          if (r > 1) s += net.latency * sc::tree_depth(r) + w * nb * e / net.bandwidth;
          return s;
        };
        double time = widths.empty() ? 0 : bcast(widths[0]), gemms = 0, comms = time;
        for (std::size_t s = 0; s < widths.size(); ++s) {
          const double g = spf * 2 * mb * nb * widths[s];
          const double next = s + 1 < widths.size() ? bcast(widths[s + 1]) : 0.0;
          time += std::max(g, next);
          gemms += g;
          comms += next;
        }
        const auto t = sc::summa_overlap(mm, p, b, spf, net);
        const double tol = 1e-9 * (gemms + comms) + 1e-18;
        EXPECT_NEAR(t.total(), time, tol) << "n=" << n << " p=" << p << " b=" << b;
        EXPECT_NEAR(t.total() + t.hidden, gemms + comms, tol) << "n=" << n << " p=" << p << " b=" << b;
        EXPECT_NEAR(gemms, spf * sc::local_work(mm, p), tol) << "n=" << n << " p=" << p;
        EXPECT_GE(t.local, 0);
        EXPECT_GE(t.latency, 0);
        EXPECT_GE(t.bandwidth, 0);
        if (p == 1) {
          EXPECT_EQ(t.hidden, 0.0);
        }
      }
    }
  }
}

TEST(ScalingSumma, CostModelChargesPanelsToTheDeviceNetwork) {
  // Weak float64 matmul, 1000 per rank, panel 100: the host network (slow, 4 GB/s) must not enter
  // the matmul terms; the device network (fast) does, overlapped with the GEMMs.
  const sc::NetworkModel host = network(50e-6, 4e9), device = network(10e-6, 150e9);
  std::vector<sc::Measurement> points{{1, 0.1, 0.1, 0, 0}, {2, 0.1, 0.1, 0, 0}};
  const auto model = sc::fit_cost_model(sc::Op::matmul, sc::Mode::weak, 1000, 8, 100, {}, host, device, points, {1, 2});
  ASSERT_GT(model.local_seconds_per_work, 0);
  const auto t2 = model.predict(2);
  const auto direct = sc::summa_overlap(sc::problem_at(sc::Op::matmul, sc::Mode::weak, 1000, 8, 2), 2, 100,
                                        model.local_seconds_per_work, device);
  EXPECT_NEAR(t2.total(), direct.total(), 1e-15);
  EXPECT_NEAR(t2.hidden, direct.hidden, 1e-15);
  EXPECT_STREQ(t2.dominant(), "local");
  // The one-network overload uses it for both paths.
  const auto same = sc::fit_cost_model(sc::Op::matmul, sc::Mode::weak, 1000, 8, 100, {}, host, points, {1, 2});
  EXPECT_EQ(same.device_network.bandwidth, host.bandwidth);
  EXPECT_GT(same.predict(2).total(), t2.total());
  // Scalar ops stay on the host network.
  const auto sum = sc::fit_cost_model(sc::Op::sum, sc::Mode::weak, 1000, 8, 100, {{tessera::Collective::allreduce, 8}}, host, device, points, {1, 2});
  EXPECT_NEAR(sum.predict(4).latency, 2 * host.latency, 1e-18);
}
