// The two-level network of the cost model against the formulas written out here: node shapes under
// block placement, the intra- and inter-node stages of a collective, the fit recovering known
// parameters, the reduction to the one-level model on one node (or one rank per node), SUMMA's
// broadcasts charged to the level each process row and column spans, and the projection.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/scaling.hpp"
#include "model/scaling_two_level.hpp"

namespace sc = tessera::scaling;

namespace {

void expect_shape(sc::NodeShape s, int nodes, int per_node) {
  EXPECT_EQ(s.nodes, nodes);
  EXPECT_EQ(s.per_node, per_node);
}

sc::TwoLevelNetwork network(double alpha_intra, double beta_intra, double alpha_inter, double beta_inter) {
  sc::TwoLevelNetwork n;
  n.intra.latency = alpha_intra;
  n.intra.bandwidth = beta_intra;
  n.inter.latency = alpha_inter;
  n.inter.bandwidth = beta_inter;
  return n;
}

sc::CostModel base_model(sc::Op op, sc::Mode mode, std::int64_t size, int element_bytes, double overhead,
                         double seconds_per_work, double host, std::int64_t panel = 512) {
  sc::CostModel m;
  m.op = op;
  m.mode = mode;
  m.size_arg = size;
  m.element_bytes = element_bytes;
  m.panel_width = panel;
  m.local_overhead = overhead;
  m.local_seconds_per_work = seconds_per_work;
  m.host = host;
  // Written here, not taken from the algorithms: a sum's one allreduce of an element, a scan's and a
  // filter's one allgather of a 16-byte record (the plans the algorithms declare, checked against
  // the collectives they make by the multi-rank tests).
  if (op == sc::Op::sum) m.plan = {{tessera::Collective::allreduce, static_cast<double>(element_bytes)}};
  if (op == sc::Op::scan || op == sc::Op::filter) m.plan = {{tessera::Collective::allgather, 16}};
  return m;
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

}  // namespace

TEST(ScalingTwoLevel, BlockShapes) {
  expect_shape(sc::block_shape(1, 2), 1, 1);
  expect_shape(sc::block_shape(2, 2), 1, 2);
  expect_shape(sc::block_shape(3, 2), 2, 2);
  expect_shape(sc::block_shape(6, 2), 3, 2);
  expect_shape(sc::block_shape(5, 4), 2, 4);
  expect_shape(sc::block_shape(7, 1), 7, 1);
  expect_shape(sc::block_shape(3, 8), 1, 3);
  expect_shape(sc::shape_of({0, 1}, 2), 1, 2);
  expect_shape(sc::shape_of({0, 2, 4}, 2), 3, 1);
  expect_shape(sc::shape_of({0, 3}, 4), 1, 2);
  expect_shape(sc::shape_of({1, 2}, 2), 2, 1);
  expect_shape(sc::shape_of({0, 1, 2, 3, 4, 5}, 4), 2, 4);
  expect_shape(sc::shape_of({}, 4), 1, 1);
}

TEST(ScalingTwoLevel, CollectiveStages) {
  const auto net = network(1e-6, 1e10, 1e-5, 1e9);
  const sc::NodeShape s{3, 2};  // ceil(log2 2) = 1 intra round, ceil(log2 3) = 2 inter rounds
  EXPECT_DOUBLE_EQ(net.small_collective(s), 1e-6 * 1 + 1e-5 * 2);
  const double b = 1e6;
  EXPECT_NEAR(net.allreduce(s, b), 1e-6 + 2e-5 + (2.0 * 1 / 2) * b / 1e10 + (2.0 * 2 / 3) * b / 1e9, 1e-18);
  EXPECT_NEAR(net.bcast(s, b), 1e-6 + 2e-5 + b / 1e10 + b / 1e9, 1e-18);
  // One node: no inter stage. One rank per node: no intra stage.
  EXPECT_NEAR(net.allreduce({1, 4}, b), 1e-6 * 2 + 1.5 * b / 1e10, 1e-18);
  EXPECT_NEAR(net.allreduce({4, 1}, b), 1e-5 * 2 + 1.5 * b / 1e9, 1e-18);
  EXPECT_NEAR(net.bcast({1, 4}, b), 1e-6 * 2 + b / 1e10, 1e-18);
  EXPECT_NEAR(net.bcast({4, 1}, b), 1e-5 * 2 + b / 1e9, 1e-18);
  EXPECT_EQ(net.allreduce({1, 1}, b), 0.0);
  // An unknown bandwidth contributes nothing.
  const auto latency_only = network(1e-6, 0, 1e-5, 0);
  EXPECT_DOUBLE_EQ(latency_only.allreduce(s, b), latency_only.small_collective(s));
}

TEST(ScalingTwoLevel, FitRecoversBothLevels) {
  const double ai = 2e-6, bi = 8e9, ae = 3e-5, be = 1.2e8, bytes = 4 << 20;
  std::vector<sc::CollectiveSample> intra, inter;
  for (int g : {1, 2, 4}) {
    sc::CollectiveSample s;
    s.ranks = g;
    s.small_seconds = ai * sc::tree_depth(g);
    s.large_bytes = bytes;
    s.large_seconds = s.small_seconds + sc::ring_factor(g) * bytes / bi;
    s.device_small_seconds = 2 * ai * sc::tree_depth(g);
    s.device_large_bytes = bytes;
    s.device_large_seconds = s.device_small_seconds + (g > 1 ? bytes / (2 * bi) : 0.0);
    intra.push_back(s);
  }
  for (int n : {2, 3}) {
    sc::CollectiveSample s;
    s.ranks = n;
    s.small_seconds = ae * sc::tree_depth(n);
    s.large_bytes = bytes;
    s.large_seconds = s.small_seconds + sc::ring_factor(n) * bytes / be;
    s.device_small_seconds = ae * sc::tree_depth(n);
    s.device_large_bytes = bytes;
    s.device_large_seconds = s.device_small_seconds + bytes / be;
    inter.push_back(s);
  }
  const auto host = sc::fit_two_level(intra, inter);
  EXPECT_LT(rel(host.intra.latency, ai), 1e-12);
  EXPECT_LT(rel(host.intra.bandwidth, bi), 1e-9);
  EXPECT_LT(rel(host.inter.latency, ae), 1e-12);
  EXPECT_LT(rel(host.inter.bandwidth, be), 1e-9);
  const auto device = sc::fit_two_level_device(intra, inter);
  EXPECT_LT(rel(device.intra.latency, 2 * ai), 1e-12);
  EXPECT_LT(rel(device.intra.bandwidth, 2 * bi), 1e-9);
  EXPECT_LT(rel(device.inter.latency, ae), 1e-12);
  EXPECT_LT(rel(device.inter.bandwidth, be), 1e-9);
  // A single node: nothing to fit between nodes.
  const auto alone = sc::fit_two_level(intra, {});
  EXPECT_EQ(alone.inter.latency, 0.0);
  EXPECT_EQ(alone.inter.bandwidth, 0.0);
}

TEST(ScalingTwoLevel, SumScanFilterTermsByHand) {
  const auto net = network(1e-6, 1e10, 1e-5, 1e9);
  for (auto op : {sc::Op::sum, sc::Op::scan, sc::Op::filter}) {
    sc::TwoLevelModel m;
    m.base = base_model(op, sc::Mode::strong, 1000003, 8, 2e-6, 1e-10, 3e-6);
    m.host = net;
    m.ranks_per_node = 2;
    const auto t = m.predict(3, 2);
    const double n_local = std::ceil(1000003.0 / 6);
    const double work = op == sc::Op::sum ? n_local * 8 : op == sc::Op::scan ? 3 * n_local * 8 : 1.5 * n_local * 8;
    // 3 nodes x 2: one round within the node, two between the nodes. The sum's allreduce of 8 bytes
    // moves 2 (G-1)/G = 1 and 2 (N-1)/N = 4/3 payloads; the allgathers of 16 bytes (G-1) = 1 record
    // within the node and (N-1) G = 4 records between the nodes.
    const bool gather = op != sc::Op::sum;
    EXPECT_NEAR(t.local, 2e-6 + 1e-10 * work, 1e-18) << sc::to_string(op);
    EXPECT_NEAR(t.latency_intra, 1e-6, 1e-18);
    EXPECT_NEAR(t.latency_inter, 2 * 1e-5, 1e-18);
    EXPECT_NEAR(t.bandwidth_intra, gather ? 16.0 / 1e10 : 8.0 / 1e10, 1e-24);
    EXPECT_NEAR(t.bandwidth_inter, gather ? 4 * 16.0 / 1e9 : (4.0 / 3) * 8 / 1e9, 1e-24);
    EXPECT_DOUBLE_EQ(t.host, 3e-6);
    EXPECT_NEAR(t.total(), t.local + t.latency_intra + t.latency_inter + t.bandwidth_intra + t.bandwidth_inter + 3e-6,
                1e-18);
    // The first 5 ranks of a 2-per-node launch: 3 nodes, 2 on the fullest, the work of 5 ranks.
    const auto t5 = m.predict_ranks(5);
    EXPECT_NEAR(t5.local, 2e-6 + 1e-10 * (work / n_local) * std::ceil(1000003.0 / 5), 1e-18);
    EXPECT_NEAR(t5.latency_inter, 2 * 1e-5, 1e-18);
  }
}

TEST(ScalingTwoLevel, OneNodeIsTheOneLevelModelWithTheIntraNetwork) {
  const auto net = network(1.5e-6, 5e9, 4e-5, 1e8);
  for (auto op : {sc::Op::sum, sc::Op::scan, sc::Op::filter, sc::Op::matmul}) {
    for (auto mode : {sc::Mode::strong, sc::Mode::weak}) {
      const std::int64_t size = op == sc::Op::matmul ? 300 : 1 << 20;
      sc::TwoLevelModel m;
      m.base = base_model(op, mode, size, 4, 1e-6, op == sc::Op::matmul ? 1e-11 : 2e-10, 5e-6, 64);
      m.host = net;
      m.device = net;
      m.ranks_per_node = 8;
      sc::CostModel one = m.base;
      one.network = net.intra;
      one.device_network = net.intra;
      for (int p : {1, 2, 3, 4, 8}) {
        const auto t2 = m.predict_ranks(p);
        const auto t1 = one.predict(p);
        EXPECT_NEAR(t2.total(), t1.total(), 1e-12 * t1.total()) << sc::to_string(op) << " p=" << p;
        EXPECT_EQ(t2.latency_inter + t2.bandwidth_inter, 0.0);
        EXPECT_NEAR(t2.hidden, t1.hidden, 1e-12 * (t1.hidden + 1e-30));
      }
    }
  }
}

TEST(ScalingTwoLevel, OneRankPerNodeIsTheOneLevelModelWithTheInterNetwork) {
  const auto net = network(1.5e-6, 5e9, 4e-5, 1e8);
  for (auto op : {sc::Op::sum, sc::Op::scan, sc::Op::filter, sc::Op::matmul}) {
    const std::int64_t size = op == sc::Op::matmul ? 300 : 1 << 20;
    sc::TwoLevelModel m;
    m.base = base_model(op, sc::Mode::strong, size, 8, 1e-6, op == sc::Op::matmul ? 1e-11 : 2e-10, 5e-6, 64);
    m.host = net;
    m.device = net;
    m.ranks_per_node = 1;
    sc::CostModel one = m.base;
    one.network = net.inter;
    one.device_network = net.inter;
    for (int p : {1, 2, 3, 6, 16}) {
      const auto t2 = m.predict_ranks(p);
      EXPECT_NEAR(t2.total(), one.predict(p).total(), 1e-12 * one.predict(p).total()) << sc::to_string(op) << " p=" << p;
      EXPECT_EQ(t2.latency_intra + t2.bandwidth_intra, 0.0);
    }
  }
}

TEST(ScalingTwoLevel, SummaChargesRowAndColumnToTheirLevels) {
  // p = 4 on 2 nodes x 2: the grid is 2 x 2, process row 0 = ranks {0, 1} (one node: intra),
  // process column 0 = ranks {0, 2} (two nodes: inter). n = 8, panel 4: two steps of width 4,
  // blocks 4 x 4. Broadcast of a step: A panel 4 x 4 along the row (intra), B panel 4 x 4 along
  // the column (inter); GEMM of a step 2 * 4 * 4 * 4 flops.
  const auto net = network(1e-6, 1e9, 1e-4, 1e7);
  const double e = 8, panel_bytes = 4 * 4 * e, spf = 1e-9;
  const double c_intra_lat = 1e-6, c_inter_lat = 1e-4, c_intra_bw = panel_bytes / 1e9, c_inter_bw = panel_bytes / 1e7;
  const double c = c_intra_lat + c_inter_lat + c_intra_bw + c_inter_bw;
  const double g = spf * 2 * 4 * 4 * 4;
  ASSERT_GT(c, g);  // the broadcast is the longer side: time = c_0 + max(g, c_1) + g = 2c + g
  sc::Problem problem{sc::Op::matmul, 8, 8};
  const auto t = sc::summa_overlap_two_level(problem, 4, 2, 4, spf, net);
  EXPECT_NEAR(t.latency_intra, 2 * c_intra_lat, 1e-18);
  EXPECT_NEAR(t.latency_inter, 2 * c_inter_lat, 1e-18);
  EXPECT_NEAR(t.bandwidth_intra, 2 * c_intra_bw, 1e-18);
  EXPECT_NEAR(t.bandwidth_inter, 2 * c_inter_bw, 1e-18);
  EXPECT_NEAR(t.local, g, 1e-18);
  EXPECT_NEAR(t.hidden, g, 1e-18);
  EXPECT_NEAR(t.total(), 2 * c + g, 1e-15);
  // With 4 ranks per node both groups are within one node.
  const auto one_node = sc::summa_overlap_two_level(problem, 4, 4, 4, spf, net);
  EXPECT_EQ(one_node.latency_inter + one_node.bandwidth_inter, 0.0);
}

TEST(ScalingTwoLevel, ProjectionIsNodesTimesRanksPerNode) {
  sc::TwoLevelModel m;
  m.base = base_model(sc::Op::sum, sc::Mode::strong, 1 << 24, 4, 0, 1e-10, 0);
  m.host = network(1e-6, 1e10, 2e-5, 1e9);
  m.ranks_per_node = 4;
  const auto proj = sc::project_two_level(m, sc::default_projection_nodes());
  ASSERT_EQ(proj.size(), 11u);  // 1, 2, ..., 1024 nodes
  const double t1 = m.predict(1, 1).total();
  for (const auto& q : proj) {
    EXPECT_EQ(q.per_node, 4);
    EXPECT_DOUBLE_EQ(q.time, m.predict(q.nodes, 4).total());
    EXPECT_NEAR(q.speedup, t1 / q.time, 1e-12 * t1 / q.time);
    EXPECT_NEAR(q.efficiency, q.speedup / (4.0 * q.nodes), 1e-12);
  }
  EXPECT_EQ(proj.front().nodes, 1);
  EXPECT_EQ(proj.back().nodes, 1024);
  // Far out, the inter-node latency (ceil(log2 N) rounds of 20 us) outweighs the shrinking local part.
  EXPECT_STREQ(proj.back().terms.dominant(), "latency_inter");
  EXPECT_STREQ(proj.front().terms.dominant(), "local");
}
