#include "two_level.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "pings.hpp"
#include "model/scaling_two_level.hpp"

namespace tessera::apps::two_level {
namespace sc = tessera::scaling;
namespace {

// Ranks outside the group being measured wait here without spinning, so that on an oversubscribed
// node they take no cycles from the ranks being measured.
void sleepy_barrier(const Communicator& comm) { comm.barrier_sleeping(std::chrono::microseconds(200)); }

// 2, 4, 8, ... below limit, and limit itself (from 2 up).
std::vector<int> doubling_up_to(int limit) {
  std::vector<int> sizes;
  for (int k = 2; k < limit; k *= 2) sizes.push_back(k);
  if (limit >= 2) sizes.push_back(limit);
  return sizes;
}

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

Json sample_json(const sc::CollectiveSample& s, const char* what) {
  Json j = Json::object();
  j[what] = s.ranks;
  j["allreduce_8B_s"] = number(s.small_seconds);
  j["allreduce_large_s"] = number(s.large_seconds);
  j["large_bytes"] = number(s.large_bytes);
  j["device_bcast_small_s"] = number(s.device_small_seconds);
  j["device_bcast_large_s"] = number(s.device_large_seconds);
  j["device_large_bytes"] = number(s.device_large_bytes);
  return j;
}

Json level_json(const sc::NetworkModel& host, const sc::NetworkModel& device) {
  Json j = Json::object();
  j["latency_s"] = number(host.latency);
  j["bandwidth_Bps"] = number(host.bandwidth);
  j["device_latency_s"] = number(device.latency);
  j["device_bandwidth_Bps"] = number(device.bandwidth);
  return j;
}

Json terms_json(const sc::TwoLevelModel::Terms& t) {
  Json j = Json::object();
  j["local"] = number(t.local);
  j["latency_intra"] = number(t.latency_intra);
  j["latency_inter"] = number(t.latency_inter);
  j["bandwidth_intra"] = number(t.bandwidth_intra);
  j["bandwidth_inter"] = number(t.bandwidth_inter);
  j["host"] = number(t.host);
  return j;
}

Json shape_json(Json j, sc::NodeShape s) {
  j["nodes"] = s.nodes;
  j["per_node"] = s.per_node;
  return j;
}

// A prediction against a measurement, with the one-level model's beside it.
Json versus(double predicted, double one_level, double measured) {
  Json j = Json::object();
  j["predicted_s"] = number(predicted);
  j["measured_s"] = number(measured);
  j["relative_error"] = number((predicted - measured) / measured);
  j["one_level_predicted_s"] = number(one_level);
  j["one_level_relative_error"] = number((one_level - measured) / measured);
  return j;
}

// Fits on at most this many nodes; checks on more.
constexpr int kFitNodes = 2;

}  // namespace

Layout discover_layout(const Context& world) {
  Layout layout;
  const Communicator& comm = world.comm();
  // The lowest world rank on this node names it.
  const int leader = comm.split_node(world.rank()).allreduce(world.rank(), ReduceOp::min);
  const std::vector<int> node_of = comm.allgather(leader);
  std::map<int, int> index, count;  // node (by leader) -> order of appearance, ranks on it
  for (int r = 0; r < world.size(); ++r) {
    const int n = node_of[static_cast<std::size_t>(r)];
    if (!index.count(n)) index[n] = static_cast<int>(index.size());
    ++count[n];
  }
  layout.nodes = static_cast<int>(index.size());
  layout.ranks_per_node = count[node_of[0]];
  for (int r = 0; r < world.size() && layout.block; ++r) {
    const int n = node_of[static_cast<std::size_t>(r)];
    if (index[n] != r / layout.ranks_per_node) {
      layout.block = false;
      layout.irregular = "rank " + std::to_string(r) + " is not on node " + std::to_string(r / layout.ranks_per_node) +
                         " of a block placement with " + std::to_string(layout.ranks_per_node) +
                         " ranks per node";
    }
  }
  return layout;
}

Samples measure(const Context& world, const Layout& layout, std::int64_t ping_bytes) {
  Samples samples;
  if (!layout.block) return samples;
  const Communicator& comm = world.comm();
  const int g = layout.ranks_per_node;
  // Within node 0: its first k ranks (block placement puts world ranks 0 .. g-1 there).
  for (int k : doubling_up_to(g)) {
    const Context group = world.first(k);
    sc::CollectiveSample s;
    if (!group.is_null()) s = scaling_study::ping(group, ping_bytes);
    if (world.is_root()) samples.intra.push_back(s);
    sleepy_barrier(comm);
  }
  // Among nodes, as the inter-node stage of a hierarchical collective runs: a small one among
  // the first rank of each of the first n nodes (the node leaders); a large one split over the G
  // groups of the i-th ranks of those nodes, run at once, each with 1/G of the payload, so that a
  // node's link carries the whole payload and its ranks share it. The sample is the slowest
  // group's, with the payload per node.
  const std::int64_t share = std::max<std::int64_t>(8, ping_bytes / g);
  for (int n : doubling_up_to(layout.nodes)) {
    const bool member = world.rank() / g < n;
    const int local = world.rank() % g;
    sc::CollectiveSample s;
    {
      const Context leaders = world.split(member && local == 0 ? 0 : -1, world.rank());
      if (!leaders.is_null()) s = scaling_study::ping(leaders, 8, {true, false});
      sleepy_barrier(comm);
    }
    {
      const Context group = world.split(member ? local : -1, world.rank());
      if (!group.is_null()) {
        const sc::CollectiveSample large = scaling_study::ping(group, share, {false, true});
        s.large_seconds = large.large_seconds;
        s.device_large_seconds = large.device_large_seconds;
        s.large_bytes = large.large_bytes;
        s.device_large_bytes = large.device_large_bytes;
      }
      sleepy_barrier(comm);
    }
    double times[4] = {s.small_seconds, s.large_seconds, s.device_small_seconds, s.device_large_seconds};
    comm.allreduce(times, 4, ReduceOp::max);
    if (world.is_root()) {
      s.ranks = n;
      s.small_seconds = times[0];
      s.large_seconds = times[1];
      s.device_small_seconds = times[2];
      s.device_large_seconds = times[3];
      s.large_bytes *= g;
      s.device_large_bytes *= g;
      samples.inter.push_back(s);
    }
  }
  return samples;
}

Json report(const Layout& layout, const Samples& samples, const Study& study, std::FILE* text) {
  Json j = Json::object();
  j["nodes"] = layout.nodes;
  j["ranks_per_node"] = layout.ranks_per_node;
  j["placement"] = layout.block ? "block" : "irregular";
  if (!layout.block) {
    j["note"] = "no two-level analysis: " + layout.irregular;
    std::fprintf(text, "\ntwo-level network: not analysed (%s)\n", layout.irregular.c_str());
    return j;
  }
  const int g = layout.ranks_per_node;
  Json intra = Json::array(), inter = Json::array();
  for (const auto& s : samples.intra) intra.push_back(sample_json(s, "ranks"));
  for (const auto& s : samples.inter) inter.push_back(sample_json(s, "nodes"));
  Json collectives = Json::object();
  collectives["intra"] = intra;
  collectives["inter"] = inter;
  j["collectives"] = collectives;

  // The model of record (every sample) and the one of the check (at most two nodes).
  auto fit_inter = [&](int max_nodes) {
    std::vector<sc::CollectiveSample> in;
    for (const auto& s : samples.inter)
      if (s.ranks <= max_nodes) in.push_back(s);
    return in;
  };
  const auto host = sc::fit_two_level(samples.intra, samples.inter);
  const auto device = sc::fit_two_level_device(samples.intra, samples.inter);
  const auto host_fit = sc::fit_two_level(samples.intra, fit_inter(kFitNodes));
  const auto device_fit = sc::fit_two_level_device(samples.intra, fit_inter(kFitNodes));
  Json network = Json::object();
  network["intra"] = level_json(host.intra, device.intra);
  network["inter"] = level_json(host.inter, device.inter);
  j["network"] = network;
  std::fprintf(text,
               "\ntwo-level network (%d nodes x %d ranks per node): within a node latency %.3g s, bandwidth %.3g B/s "
               "(device %.3g s, %.3g B/s); between nodes latency %.3g s, bandwidth %.3g B/s (device %.3g s, %.3g B/s)\n",
               layout.nodes, g, host.intra.latency, host.intra.bandwidth, device.intra.latency, device.intra.bandwidth,
               host.inter.latency, host.inter.bandwidth, device.inter.latency, device.inter.bandwidth);

  // The one-level networks fitted on the same (at most two-node) launch sizes, for comparison.
  std::vector<sc::CollectiveSample> near;
  for (const auto& s : study.samples)
    if (sc::block_shape(s.ranks, g).nodes <= kFitNodes) near.push_back(s);
  const auto one_host = sc::fit_network(near), one_device = sc::fit_device_network(near);

  // The collectives of the launch (first p ranks) on more than two nodes, predicted.
  Json collective_check = Json::array();
  for (const auto& s : study.samples) {
    const sc::NodeShape shape = sc::block_shape(s.ranks, g);
    if (shape.nodes <= kFitNodes) continue;
    Json q = shape_json(Json::object(), shape);
    q["ranks"] = s.ranks;
    q["allreduce_8B"] = versus(host_fit.small_collective(shape), one_host.small_collective(s.ranks), s.small_seconds);
    q["allreduce_large"] = versus(host_fit.allreduce(shape, s.large_bytes), one_host.allreduce(s.ranks, s.large_bytes),
                                  s.large_seconds);
    q["device_bcast_large"] = versus(device_fit.bcast(shape, s.device_large_bytes),
                                     one_device.bcast(s.ranks, s.device_large_bytes), s.device_large_seconds);
    collective_check.push_back(q);
    std::fprintf(text,
                 "two-level check (fitted on <= %d nodes) of the collectives on %d nodes x %d: allreduce 8 B %+.0f%%, "
                 "allreduce %.0f B %+.0f%%, device broadcast %.0f B %+.0f%% (one-level: %+.0f%%, %+.0f%%, %+.0f%%)\n",
                 kFitNodes, shape.nodes, shape.per_node,
                 100 * (host_fit.small_collective(shape) - s.small_seconds) / s.small_seconds, s.large_bytes,
                 100 * (host_fit.allreduce(shape, s.large_bytes) - s.large_seconds) / s.large_seconds,
                 s.device_large_bytes,
                 100 * (device_fit.bcast(shape, s.device_large_bytes) - s.device_large_seconds) / s.device_large_seconds,
                 100 * (one_host.small_collective(s.ranks) - s.small_seconds) / s.small_seconds,
                 100 * (one_host.allreduce(s.ranks, s.large_bytes) - s.large_seconds) / s.large_seconds,
                 100 * (one_device.bcast(s.ranks, s.device_large_bytes) - s.device_large_seconds) /
                     s.device_large_seconds);
  }
  j["collective_check"] = collective_check;

  for (const auto& mode : study.modes) {
    const bool strong = mode.mode == sc::Mode::strong;
    std::vector<int> near_ranks, all_ranks;
    for (const auto& m : mode.points) {
      all_ranks.push_back(m.ranks);
      if (sc::block_shape(m.ranks, g).nodes <= kFitNodes) near_ranks.push_back(m.ranks);
    }
    Json block = Json::object();
    // The check: fitted on the points on at most two nodes, predicting those on more.
    sc::TwoLevelModel check;
    check.base = sc::fit_cost_model(study.op, mode.mode, mode.size_arg, study.element_bytes, study.panel_width, study.plan, one_host,
                                    one_device, study.sharing, g, {}, mode.points, near_ranks);
    check.host = host_fit;
    check.device = device_fit;
    check.ranks_per_node = g;
    Json check_json = Json::object();
    Json fit_nodes = Json::array();
    for (int n = 1; n <= std::min(kFitNodes, layout.nodes); ++n) fit_nodes.push_back(n);
    check_json["fit_nodes"] = fit_nodes;
    Json points = Json::array();
    for (const auto& m : mode.points) {
      const sc::NodeShape shape = sc::block_shape(m.ranks, g);
      if (shape.nodes <= kFitNodes) continue;
      const auto t = check.predict_ranks(m.ranks);
      const double one = check.base.predict(m.ranks).total();
      Json q = versus(t.total(), one, m.time);
      q["ranks"] = m.ranks;
      q = shape_json(q, shape);
      q["terms_s"] = terms_json(t);
      points.push_back(q);
      std::fprintf(text,
                   "two-level check (%s %s, fitted on <= %d nodes): %d nodes x %d: predicted %.4g s, measured %.4g s, "
                   "error %+.1f%% (one-level model: %.4g s, %+.1f%%)\n",
                   sc::to_string(mode.mode), sc::to_string(study.op), kFitNodes, shape.nodes, shape.per_node, t.total(),
                   m.time, 100 * (t.total() - m.time) / m.time, one, 100 * (one - m.time) / m.time);
    }
    check_json["points"] = points;
    block["check"] = check_json;

    // The model of record, projected as nodes x ranks per node.
    sc::TwoLevelModel model;
    model.base = sc::fit_cost_model(study.op, mode.mode, mode.size_arg, study.element_bytes, study.panel_width, study.plan,
                                    sc::fit_network(study.samples), sc::fit_device_network(study.samples), study.sharing, g,
                                    {}, mode.points, all_ranks);
    model.host = host;
    model.device = device;
    model.ranks_per_node = g;
    // Without a second node the network between nodes is unknown: no projection beyond one node.
    std::vector<int> projected_nodes = sc::default_projection_nodes();
    if (samples.inter.empty()) {
      projected_nodes = {1};
      block["note"] = "one-node launch: the network between nodes was not measured, so the projection stops at one node";
    }
    Json projection = Json::array();
    std::fprintf(text, "two-level projection (%s, %d ranks per node):\n%6s %6s %12s %10s %9s  %s\n", sc::to_string(mode.mode),
                 g, "nodes", "ranks", "time[s]", strong ? "speedup" : "scaled_S", "effic.", "dominant");
    for (const auto& p : sc::project_two_level(model, projected_nodes)) {
      Json q = Json::object();
      q["nodes"] = p.nodes;
      q["gpus_per_node"] = p.per_node;
      q["ranks"] = p.nodes * p.per_node;
      q["time_s"] = number(p.time);
      q[strong ? "speedup" : "scaled_speedup"] = number(p.speedup);
      q["efficiency"] = number(p.efficiency);
      q["terms_s"] = terms_json(p.terms);
      q["hidden_s"] = number(p.terms.hidden);
      q["dominant"] = p.terms.dominant();
      projection.push_back(q);
      std::fprintf(text, "%6d %6d %12.4g %10.2f %9.3f  %s\n", p.nodes, p.nodes * p.per_node, p.time, p.speedup,
                   p.efficiency, p.terms.dominant());
    }
    block["projection"] = projection;
    j[sc::to_string(mode.mode)] = block;
  }
  return j;
}

}  // namespace tessera::apps::two_level
