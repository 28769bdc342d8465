#include "model/scaling_two_level.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace tessera::scaling {

NodeShape block_shape(int p, int ranks_per_node) {
  const int g = std::max(1, ranks_per_node);
  p = std::max(1, p);
  return {(p + g - 1) / g, std::min(p, g)};
}

NodeShape shape_of(const std::vector<int>& ranks, int ranks_per_node) {
  const int g = std::max(1, ranks_per_node);
  std::map<int, int> per_node;
  for (int r : ranks) ++per_node[r / g];
  NodeShape s{0, 0};
  for (const auto& [node, count] : per_node) {
    ++s.nodes;
    s.per_node = std::max(s.per_node, count);
  }
  if (s.nodes == 0) return {1, 1};
  return s;
}

double TwoLevelNetwork::allreduce_bytes_intra(NodeShape s, double bytes) const {
  return intra.bandwidth > 0 ? ring_factor(s.per_node) * bytes / intra.bandwidth : 0.0;
}

double TwoLevelNetwork::allreduce_bytes_inter(NodeShape s, double bytes) const {
  return inter.bandwidth > 0 ? ring_factor(s.nodes) * bytes / inter.bandwidth : 0.0;
}

double TwoLevelNetwork::bcast_bytes_intra(NodeShape s, double bytes) const {
  return s.per_node > 1 && intra.bandwidth > 0 ? bytes / intra.bandwidth : 0.0;
}

double TwoLevelNetwork::bcast_bytes_inter(NodeShape s, double bytes) const {
  return s.nodes > 1 && inter.bandwidth > 0 ? bytes / inter.bandwidth : 0.0;
}

double TwoLevelNetwork::allgather_bytes_intra(NodeShape s, double bytes) const {
  return intra.bandwidth > 0 ? (s.per_node - 1.0) * bytes / intra.bandwidth : 0.0;
}

double TwoLevelNetwork::allgather_bytes_inter(NodeShape s, double bytes) const {
  return inter.bandwidth > 0 ? (s.nodes - 1.0) * s.per_node * bytes / inter.bandwidth : 0.0;
}

TwoLevelNetwork fit_two_level(const std::vector<CollectiveSample>& intra, const std::vector<CollectiveSample>& inter) {
  return {fit_network(intra), fit_network(inter)};
}

TwoLevelNetwork fit_two_level_device(const std::vector<CollectiveSample>& intra,
                                     const std::vector<CollectiveSample>& inter) {
  return {fit_device_network(intra), fit_device_network(inter)};
}

const char* TwoLevelModel::Terms::dominant() const {
  const std::pair<const char*, double> terms[] = {{"local", local},
                                                  {"latency_intra", latency_intra},
                                                  {"latency_inter", latency_inter},
                                                  {"bandwidth_intra", bandwidth_intra},
                                                  {"bandwidth_inter", bandwidth_inter},
                                                  {"host", host}};
  const auto* best = &terms[0];
  for (const auto& t : terms)
    if (t.second > best->second) best = &t;
  return best->first;
}

TwoLevelModel::Terms summa_overlap_two_level(const Problem& problem, int p, int ranks_per_node,
                                             std::int64_t panel_width, double seconds_per_flop,
                                             const TwoLevelNetwork& device) {
  using Terms = TwoLevelModel::Terms;
  Terms t;
  if (problem.size <= 0) return t;
  int rows = 1, cols = 1;
  grid_dims(std::max(1, p), rows, cols);
  // The process grid is row-major over the ranks (MPI_Cart_create without reordering): process
  // row 0 holds ranks 0 .. cols-1, process column 0 ranks 0, cols, 2 cols, ...
  std::vector<int> row0, col0;
  for (int j = 0; j < cols; ++j) row0.push_back(j);
  for (int i = 0; i < rows; ++i) col0.push_back(i * cols);
  const NodeShape along_row = shape_of(row0, ranks_per_node), along_col = shape_of(col0, ranks_per_node);

  const double n = static_cast<double>(problem.size);
  const double e = problem.element_bytes;
  const double m_local = std::ceil(n / rows), n_local = std::ceil(n / cols);
  const std::int64_t b = std::max<std::int64_t>(1, panel_width);
  const std::int64_t full = problem.size / b;
  const std::int64_t rest = problem.size % b;

  struct Bcast {
    double latency_intra = 0, latency_inter = 0, bandwidth_intra = 0, bandwidth_inter = 0;
    double total() const { return latency_intra + latency_inter + bandwidth_intra + bandwidth_inter; }
  };
  auto bcast = [&](double w) {
    Bcast c;
    auto add = [&](int members, NodeShape s, double bytes) {
      if (members <= 1) return;
      c.latency_intra += device.latency_intra(s);
      c.latency_inter += device.latency_inter(s);
      c.bandwidth_intra += device.bcast_bytes_intra(s, bytes);
      c.bandwidth_inter += device.bcast_bytes_inter(s, bytes);
    };
    add(cols, along_row, m_local * w * e);  // A panel along the process row
    add(rows, along_col, w * n_local * e);  // B panel along the process column
    return c;
  };
  auto gemm = [&](double w) { return seconds_per_flop * 2.0 * m_local * n_local * w; };
  // As in summa_overlap: `count` steps whose GEMM g runs beside the broadcast c of the next step;
  // each step costs the longer of the two, charged to the side that set it.
  auto charge = [&](double g, const Bcast& c, double count) {
    if (count <= 0) return;
    if (c.total() > g) {
      t.latency_intra += count * c.latency_intra;
      t.latency_inter += count * c.latency_inter;
      t.bandwidth_intra += count * c.bandwidth_intra;
      t.bandwidth_inter += count * c.bandwidth_inter;
      t.hidden += count * g;
    } else {
      t.local += count * g;
      t.hidden += count * c.total();
    }
  };
  const Bcast none;
  const double wb = static_cast<double>(b), wr = static_cast<double>(rest);
  if (full > 0) {
    charge(0, bcast(wb), 1);
    charge(gemm(wb), bcast(wb), static_cast<double>(full - 1));
    charge(gemm(wb), rest > 0 ? bcast(wr) : none, 1);
  } else {
    charge(0, bcast(wr), 1);
  }
  if (rest > 0) charge(gemm(wr), none, 1);
  return t;
}

namespace {

TwoLevelModel::Terms predict_shape(const TwoLevelModel& m, int p, NodeShape shape, int placement) {
  const CostModel& base = m.base;
  const Problem problem = problem_at(base.op, base.mode, base.size_arg, base.element_bytes, p);
  TwoLevelModel::Terms t;
  t.host = base.host;
  if (base.op == Op::matmul) {
    const auto o = summa_overlap_two_level(problem, p, placement, base.panel_width, base.local_seconds_per_work, m.device);
    t = o;
    t.host = base.host;
    t.local += base.local_overhead;
    return t;
  }
  // Each node holds shape.per_node busy ranks: the node's shared bandwidth at that many.
  t.local = base.local_overhead + base.local_seconds_per_work * base.sharing.slowdown(shape.per_node) * local_work(problem, p);
  if (p <= 1) return t;
  // The operation's collective plan, as comm_cost charges it, on two levels.
  const TwoLevelNetwork& net = m.host;
  for (const CollectiveCall& call : base.plan) {
    const double b = call.bytes;
    switch (call.kind) {
      case Collective::reduce_scatter:  // half an allreduce's bytes
        t.latency_intra += net.latency_intra(shape);
        t.latency_inter += net.latency_inter(shape);
        t.bandwidth_intra += net.allreduce_bytes_intra(shape, b) / 2;
        t.bandwidth_inter += net.allreduce_bytes_inter(shape, b) / 2;
        break;
      case Collective::allreduce:
      case Collective::exscan:
        t.latency_intra += net.latency_intra(shape);
        t.latency_inter += net.latency_inter(shape);
        t.bandwidth_intra += net.allreduce_bytes_intra(shape, b);
        t.bandwidth_inter += net.allreduce_bytes_inter(shape, b);
        break;
      case Collective::allgather:
        t.latency_intra += net.latency_intra(shape);
        t.latency_inter += net.latency_inter(shape);
        t.bandwidth_intra += net.allgather_bytes_intra(shape, b);
        t.bandwidth_inter += net.allgather_bytes_inter(shape, b);
        break;
      case Collective::bcast:
        t.latency_intra += net.latency_intra(shape);
        t.latency_inter += net.latency_inter(shape);
        t.bandwidth_intra += net.bcast_bytes_intra(shape, b);
        t.bandwidth_inter += net.bcast_bytes_inter(shape, b);
        break;
      case Collective::alltoallv: {
        // Pairwise: G-1 partners within the node, the other p-G between nodes; b spread evenly.
        const double p_all = static_cast<double>(shape.ranks());
        t.latency_intra += net.intra.latency * (shape.per_node - 1.0);
        t.latency_inter += net.inter.latency * (p_all - shape.per_node);
        if (net.intra.bandwidth > 0) t.bandwidth_intra += b * (shape.per_node - 1.0) / p_all / net.intra.bandwidth;
        if (net.inter.bandwidth > 0) t.bandwidth_inter += b * (p_all - shape.per_node) / p_all / net.inter.bandwidth;
        break;
      }
      case Collective::neighbor_exchange:
        // One round; neighbours on other nodes where there are several nodes.
        if (shape.nodes > 1) {
          t.latency_inter += net.inter.latency;
          if (net.inter.bandwidth > 0) t.bandwidth_inter += b / net.inter.bandwidth;
        } else {
          t.latency_intra += net.intra.latency;
          if (net.intra.bandwidth > 0) t.bandwidth_intra += b / net.intra.bandwidth;
        }
        break;
    }
  }
  return t;
}

}  // namespace

TwoLevelModel::Terms TwoLevelModel::predict(int nodes, int per_node) const {
  nodes = std::max(1, nodes);
  per_node = std::max(1, per_node);
  return predict_shape(*this, nodes * per_node, {nodes, per_node}, per_node);
}

TwoLevelModel::Terms TwoLevelModel::predict_ranks(int p) const {
  p = std::max(1, p);
  return predict_shape(*this, p, block_shape(p, ranks_per_node), ranks_per_node);
}

std::vector<TwoLevelProjection> project_two_level(const TwoLevelModel& model, const std::vector<int>& nodes) {
  std::vector<TwoLevelProjection> out;
  const double t1 = model.predict(1, 1).total();
  const int g = std::max(1, model.ranks_per_node);
  for (int n : nodes) {
    TwoLevelProjection q;
    q.nodes = n;
    q.per_node = g;
    q.terms = model.predict(n, g);
    q.time = q.terms.total();
    const int p = n * g;
    if (model.base.mode == Mode::strong) {
      q.speedup = speedup(t1, q.time);
      q.efficiency = efficiency(t1, q.time, p);
    } else {
      q.speedup = scaled_speedup(t1, q.time, p);
      q.efficiency = weak_efficiency(t1, q.time);
    }
    out.push_back(q);
  }
  return out;
}

std::vector<int> default_projection_nodes() {
  std::vector<int> n;
  for (int k = 1; k <= 1024; k *= 2) n.push_back(k);
  return n;
}

}  // namespace tessera::scaling
