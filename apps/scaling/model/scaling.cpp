#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "model/scaling.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::scaling {
namespace {

// min over a >= 0, b >= 0 of sum_i w_i^2 (a + b x_i - y_i)^2. Convex, so the minimum is the
// unconstrained one where that is feasible, else the best of the two one-variable boundary fits.
struct Line {
  double a = 0, b = 0;
};

double objective(const Line& l, const std::vector<double>& x, const std::vector<double>& y,
                 const std::vector<double>& w) {
  double sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = w[i] * (l.a + l.b * x[i] - y[i]);
    sum += r * r;
  }
  return sum;
}

Line nonnegative_line_fit(const std::vector<double>& x, const std::vector<double>& y, const std::vector<double>& w,
                          bool allow_intercept) {
  // With u_i = w_i and v_i = w_i x_i the residual is a u_i + b v_i - w_i y_i.
  double uu = 0, uv = 0, vv = 0, uy = 0, vy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double u = w[i], v = w[i] * x[i], t = w[i] * y[i];
    uu += u * u;
    uv += u * v;
    vv += v * v;
    uy += u * t;
    vy += v * t;
  }
  std::vector<Line> candidates;
  if (vv > 0) candidates.push_back({0, std::max(0.0, vy / vv)});
  if (!allow_intercept) return candidates.empty() ? Line{} : candidates.front();
  if (uu > 0) candidates.push_back({std::max(0.0, uy / uu), 0});
  const double det = uu * vv - uv * uv;
  // A determinant that is tiny next to its terms means the x_i barely differ: the two columns are
  // collinear and the interior solution is noise.
  if (det > 1e-12 * uu * vv) {
    const Line interior{(uy * vv - vy * uv) / det, (vy * uu - uy * uv) / det};
    if (interior.a >= 0 && interior.b >= 0) candidates.push_back(interior);
  }
  Line best;
  double best_value = std::numeric_limits<double>::infinity();
  for (const Line& c : candidates) {
    const double value = objective(c, x, y, w);
    if (value < best_value) {
      best_value = value;
      best = c;
    }
  }
  return best;
}

bool distinct_values_at_least_two(const std::vector<int>& ranks) {
  return std::set<int>(ranks.begin(), ranks.end()).size() >= 2;
}

double ceil_div(double a, double b) { return std::ceil(a / b); }

}  // namespace

// ------------------------------------------------------------------------------------------------

double speedup(double t1, double tp) { return tp > 0 ? t1 / tp : 0.0; }
double efficiency(double t1, double tp, int p) { return p > 0 ? speedup(t1, tp) / p : 0.0; }
double weak_efficiency(double t1, double tp) { return tp > 0 ? t1 / tp : 0.0; }
double scaled_speedup(double t1, double tp, int p) { return tp > 0 ? p * t1 / tp : 0.0; }

std::optional<double> karp_flatt(double s, int p) {
  if (p <= 1 || !(s > 0)) return std::nullopt;
  const double inv_p = 1.0 / p;
  return (1.0 / s - inv_p) / (1.0 - inv_p);
}

AmdahlFit fit_amdahl(const std::vector<int>& ranks, const std::vector<double>& times) {
  AmdahlFit fit;
  if (ranks.size() != times.size() || !distinct_values_at_least_two(ranks)) return fit;
  std::vector<double> x, w;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 1 || !(times[i] > 0) || !std::isfinite(times[i])) return fit;
    x.push_back(1.0 / ranks[i]);
    w.push_back(1.0 / times[i]);  // relative residuals
  }
  const Line line = nonnegative_line_fit(x, times, w, true);
  const double t1 = line.a + line.b;
  if (!(t1 > 0)) return fit;
  fit.valid = true;
  fit.t1 = t1;
  fit.serial_fraction = std::clamp(line.a / t1, 0.0, 1.0);
  double sum_sq = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const double predicted = fit.predict(ranks[i]);
    fit.fitted.push_back(predicted);
    const double r = (predicted - times[i]) / times[i];
    sum_sq += r * r;
    fit.residual_max = std::max(fit.residual_max, std::abs(r));
  }
  fit.residual_rms = std::sqrt(sum_sq / ranks.size());
  return fit;
}

GustafsonFit fit_gustafson(const std::vector<int>& ranks, const std::vector<double>& scaled) {
  GustafsonFit fit;
  if (ranks.size() != scaled.size()) return fit;
  // p - S(p) = s (p - 1): a line through the origin in (p - 1).
  double xx = 0, xy = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const double x = ranks[i] - 1.0;
    xx += x * x;
    xy += x * (ranks[i] - scaled[i]);
  }
  if (!(xx > 0)) return fit;
  fit.valid = true;
  fit.serial_fraction = std::clamp(xy / xx, 0.0, 1.0);
  double sum_sq = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const double r = fit.predict(ranks[i]) - scaled[i];
    sum_sq += r * r;
  }
  fit.residual_rms = std::sqrt(sum_sq / ranks.size());
  return fit;
}

// ------------------------------------------------------------------------------------------------

int tree_depth(int p) {
  int depth = 0;
  for (long long reach = 1; reach < p; reach *= 2) ++depth;
  return depth;
}

double ring_factor(int p) { return p <= 1 ? 0.0 : 2.0 * (p - 1) / p; }

double NetworkModel::allreduce(int p, double bytes) const {
  if (p <= 1) return 0;
  return latency * tree_depth(p) + (bandwidth > 0 ? ring_factor(p) * bytes / bandwidth : 0.0);
}

double NetworkModel::bcast(int p, double bytes) const {
  if (p <= 1) return 0;
  return latency * tree_depth(p) + (bandwidth > 0 ? bytes / bandwidth : 0.0);
}

namespace {

// One ping pair per sample: `small` seconds for the latency-bound call, `large` seconds for `bytes`
// (already multiplied by what the collective moves per payload byte).
struct Ping {
  int ranks;
  double small, large, bytes;
};

NetworkModel fit_pings(const std::vector<Ping>& pings) {
  NetworkModel net;
  double dd = 0, dt = 0;
  for (const auto& s : pings) {
    if (s.ranks < 2) continue;
    const double d = tree_depth(s.ranks);
    dd += d * d;
    dt += d * s.small;
  }
  if (!(dd > 0)) return net;
  net.latency = std::max(0.0, dt / dd);
  // 1/beta by least squares through the origin: (large - alpha d) = bytes * (1/beta).
  double xx = 0, xy = 0;
  for (const auto& s : pings) {
    if (s.ranks < 2 || !(s.bytes > 0)) continue;
    xx += s.bytes * s.bytes;
    xy += s.bytes * (s.large - net.latency * tree_depth(s.ranks));
  }
  if (xx > 0 && xy > 0) net.bandwidth = xx / xy;
  return net;
}

}  // namespace

NetworkModel fit_network(const std::vector<CollectiveSample>& samples) {
  std::vector<Ping> pings;
  for (const auto& s : samples)
    pings.push_back({s.ranks, s.small_seconds, s.large_seconds, ring_factor(s.ranks) * s.large_bytes});
  return fit_pings(pings);
}

NetworkModel fit_device_network(const std::vector<CollectiveSample>& samples) {
  std::vector<Ping> pings;
  for (const auto& s : samples)
    pings.push_back({s.ranks, s.device_small_seconds, s.device_large_seconds, s.device_large_bytes});
  return fit_pings(pings);
}

// ------------------------------------------------------------------------------------------------

Op parse_op(const std::string& text) {
  if (text == "sum") return Op::sum;
  if (text == "scan") return Op::scan;
  if (text == "filter") return Op::filter;
  if (text == "matmul") return Op::matmul;
  throw UsageError("--op: unknown operation '" + text + "' (expected sum, scan, filter or matmul)");
}

const char* to_string(Op op) {
  switch (op) {
    case Op::sum: return "sum";
    case Op::scan: return "scan";
    case Op::filter: return "filter";
    case Op::matmul: return "matmul";
  }
  return "?";
}

const char* to_string(Mode mode) { return mode == Mode::strong ? "strong" : "weak"; }

Problem problem_at(Op op, Mode mode, std::int64_t size_arg, int element_bytes, int p) {
  Problem problem{op, size_arg, element_bytes};
  if (mode == Mode::weak) {
    if (op == Op::matmul) {
      problem.size = std::max<std::int64_t>(1, std::llround(size_arg * std::cbrt(static_cast<double>(p))));
    } else {
      problem.size = size_arg * p;
    }
  }
  return problem;
}

void grid_dims(int p, int& rows, int& cols) {
  cols = 1;
  for (int c = 1; static_cast<long long>(c) * c <= p; ++c)
    if (p % c == 0) cols = c;
  rows = p / cols;
}

double local_work(const Problem& problem, int p) {
  const double w = problem.element_bytes;
  const double n = static_cast<double>(problem.size);
  // The slowest rank holds the largest block: the ceiling of the share.
  switch (problem.op) {
    case Op::sum: return ceil_div(n, p) * w;
    case Op::scan: return 3.0 * ceil_div(n, p) * w;      // reduce reads, scan reads and writes
    case Op::filter: return 1.5 * ceil_div(n, p) * w;    // read all, write the kept (half, for x > 0)
    case Op::matmul: {
      int rows = 1, cols = 1;
      grid_dims(p, rows, cols);
      return 2.0 * ceil_div(n, rows) * ceil_div(n, cols) * n;
    }
  }
  return 0;
}

CommCost comm_cost(const CollectivePlan& plan, int p) {
  CommCost cost;
  if (p <= 1) return cost;
  for (const CollectiveCall& call : plan) {
    switch (call.kind) {
      case Collective::allreduce:
        cost.latency_rounds += tree_depth(p);
        cost.bytes += ring_factor(p) * call.bytes;
        break;
      case Collective::allgather:
        cost.latency_rounds += tree_depth(p);
        cost.bytes += (p - 1.0) * call.bytes;
        break;
      case Collective::exscan:
        cost.latency_rounds += tree_depth(p);
        cost.bytes += tree_depth(p) * call.bytes;
        break;
      case Collective::bcast:
        cost.latency_rounds += tree_depth(p);
        cost.bytes += call.bytes;
        break;
      case Collective::alltoallv:
        cost.latency_rounds += p - 1.0;
        cost.bytes += call.bytes;
        break;
      case Collective::reduce_scatter:
        cost.latency_rounds += tree_depth(p);
        cost.bytes += (p - 1.0) / p * call.bytes;
        break;
      case Collective::neighbor_exchange:  // every message in flight at once: one round
        cost.latency_rounds += 1;
        cost.bytes += call.bytes;
        break;
    }
  }
  return cost;
}

CommCost summa_comm_cost(const Problem& problem, int p, std::int64_t panel_width) {
  CommCost cost;
  if (p <= 1) return cost;
  int rows = 1, cols = 1;
  grid_dims(p, rows, cols);
  const double w = problem.element_bytes;
  const double n = static_cast<double>(problem.size);
  const double b = static_cast<double>(std::max<std::int64_t>(1, panel_width));
  const double steps = std::ceil(n / b);
  // Each step: an A panel (n/rows x b) along the process row of `cols` ranks, a B panel
  // (b x n/cols) along the process column of `rows` ranks.
  cost.latency_rounds = steps * (tree_depth(cols) + tree_depth(rows));
  if (cols > 1) cost.bytes += steps * ceil_div(n, rows) * b * w;
  if (rows > 1) cost.bytes += steps * b * ceil_div(n, cols) * w;
  return cost;
}

OverlapTerms summa_overlap(const Problem& problem, int p, std::int64_t panel_width, double seconds_per_flop,
                           const NetworkModel& device) {
  OverlapTerms t;
  if (problem.size <= 0) return t;
  int rows = 1, cols = 1;
  grid_dims(std::max(1, p), rows, cols);
  const double n = static_cast<double>(problem.size);
  const double e = problem.element_bytes;
  const double m_local = ceil_div(n, rows), n_local = ceil_div(n, cols);
  const std::int64_t b = std::max<std::int64_t>(1, panel_width);
  const std::int64_t full = problem.size / b;  // steps of width b
  const std::int64_t rest = problem.size % b;  // and one narrower step, if any

  struct Bcast {
    double latency = 0, bandwidth = 0;
    double total() const { return latency + bandwidth; }
  };
  auto bcast = [&](double w) {
    Bcast c;
    auto add = [&](int ranks, double bytes) {
      if (ranks <= 1) return;
      c.latency += device.latency * tree_depth(ranks);
      if (device.bandwidth > 0) c.bandwidth += bytes / device.bandwidth;
    };
    add(cols, m_local * w * e);  // A panel along the process row
    add(rows, w * n_local * e);  // B panel along the process column
    return c;
  };
  auto gemm = [&](double w) { return seconds_per_flop * 2.0 * m_local * n_local * w; };
  // `count` steps whose GEMM g runs beside the broadcast c of the step after them.
  auto charge = [&](double g, const Bcast& c, double count) {
    if (count <= 0) return;
    if (c.total() > g) {
      t.latency += count * c.latency;
      t.bandwidth += count * c.bandwidth;
      t.hidden += count * g;
    } else {
      t.local += count * g;
      t.hidden += count * c.total();
    }
  };
  const Bcast none;
  const double wb = static_cast<double>(b), wr = static_cast<double>(rest);
  if (full > 0) {
    charge(0, bcast(wb), 1);                                 // the first panel's broadcast, exposed
    charge(gemm(wb), bcast(wb), static_cast<double>(full - 1));
    charge(gemm(wb), rest > 0 ? bcast(wr) : none, 1);        // the last full step
  } else {
    charge(0, bcast(wr), 1);
  }
  if (rest > 0) charge(gemm(wr), none, 1);
  return t;
}

const char* CostModel::Terms::dominant() const {
  const char* name = "local";
  double best = local;
  if (latency > best) name = "latency", best = latency;
  if (bandwidth > best) name = "bandwidth", best = bandwidth;
  if (host > best) name = "host";
  return name;
}

double NodeSharing::slowdown(int k) const {
  if (!measured()) return 1.0;
  const double t1 = seconds.front();
  if (k <= active.front()) return 1.0;
  for (std::size_t i = 1; i < active.size(); ++i) {
    if (k > active[i]) continue;
    const double w = double(k - active[i - 1]) / double(active[i] - active[i - 1]);
    return ((1 - w) * seconds[i - 1] + w * seconds[i]) / t1;
  }
  return seconds.back() / t1;
}

namespace {

bool power_of_two(int p) { return p > 0 && (p & (p - 1)) == 0; }
double fold(int p) { return power_of_two(p) ? 0.0 : 2.0; }  // recursive doubling's extra rounds

AlgorithmCost allreduce_cost(int alg, int p, double b) {
  const double d = tree_depth(p), ring = 2.0 * (p - 1) / p * b;
  switch (alg) {
    case 1: return {"linear", 2.0 * (p - 1), 2.0 * (p - 1) * b};
    case 2: return {"reduce+bcast", 2 * d, 2 * d * b};
    case 3: return {"recursive_doubling", d + fold(p), (d + fold(p)) * b};
    case 4: return {"ring", 2.0 * (p - 1), ring};
    case 5: return {"segmented_ring", 2.0 * (p - 1), ring};
    default: return {"rabenseifner", 2 * d + fold(p), ring};
  }
}

// Open MPI 4.1's fixed decision for a commutative allreduce: the algorithm by communicator size
// and message size (1 linear, 2 nonoverlapping, 3 recursive doubling, 4 ring, 5 segmented ring,
// 6 Rabenseifner). A table of thresholds in bytes: below the first size of a row's list, the
// first algorithm, and so on.
int openmpi_allreduce_choice(int p, double b) {
  struct Row { int below_p; std::vector<std::pair<double, int>> steps; int otherwise; };
  static const std::vector<Row> rows = {
      {4, {{8, 4}, {4096, 3}, {8192, 4}, {16384, 3}, {65536, 4}, {262144, 5}}, 6},
      {8, {{16, 4}, {8192, 3}}, 6},
      {16, {{8192, 3}}, 6},
      {32, {{64, 5}, {4096, 3}}, 6},
      {64, {{128, 5}}, 6},
      {128, {{128, 1}, {512, 3}, {8192, 1}, {262144, 3}}, 6},
      {256, {{2048, 2}, {16384, 1}, {131072, 2}, {262144, 3}}, 6},
      {512, {{4096, 2}}, 6},
      {2048, {{2048, 2}, {16384, 3}}, 6},
      {4096, {{2048, 2}, {4096, 5}, {16384, 3}}, 6},
      {1 << 30, {{2048, 2}, {16384, 5}, {32768, 3}}, 6}};
  for (const Row& row : rows) {
    if (p >= row.below_p) continue;
    for (const auto& [below, alg] : row.steps)
      if (b < below) return alg;
    return row.otherwise;
  }
  return 6;
}

}  // namespace

AlgorithmCost openmpi_algorithm(Collective kind, int p, double b) {
  if (p <= 1) return {"none", 0, 0};
  const double d = tree_depth(p);
  switch (kind) {
    case Collective::allreduce: {
      // The ring, segmented ring and Rabenseifner fall back to recursive doubling when the vector
      // has fewer elements than the communicator has ranks (counted here as 8-byte elements).
      int alg = openmpi_allreduce_choice(p, b);
      if (alg >= 4 && std::floor(b / 8) < p) alg = 3;
      return allreduce_cost(alg, p, b);
    }
    case Collective::allgather:
      if (b * p < 65536) return {power_of_two(p) ? "recursive_doubling" : "bruck", d, (p - 1) * b};
      return {"ring", double(p - 1), (p - 1) * b};
    case Collective::bcast: {
      if (b < 2048) return {"binomial", d, d * b};
      const double segments = std::ceil(b / 131072.0);
      return {"pipeline", d + segments - 1, b};
    }
    case Collective::exscan: return {"linear", double(p - 1), (p - 1) * b};
    case Collective::alltoallv: return {"pairwise", double(p - 1), (p - 1.0) / p * b};
    case Collective::reduce_scatter: return {"recursive_halving", d, (p - 1.0) / p * b};
    case Collective::neighbor_exchange: return {"neighbor", 1, b};
  }
  return {"none", 0, 0};
}

AlgorithmCost nccl_algorithm(Collective kind, int p, double b) {
  if (p <= 1) return {"none", 0, 0};
  const double d = tree_depth(p);
  switch (kind) {
    case Collective::allreduce:
      if (b < 65536) return {"tree", 2 * d, 2 * b};
      return {"ring", 2.0 * (p - 1), 2.0 * (p - 1) / p * b};
    case Collective::bcast: return {"ring", double(p - 1), b};
    case Collective::allgather: return {"ring", double(p - 1), (p - 1) * b};
    case Collective::reduce_scatter: return {"ring", double(p - 1), (p - 1.0) / p * b};
    default: return openmpi_algorithm(kind, p, b);
  }
}

AlgorithmCost library_algorithm(CollectiveLibrary library, Collective kind, int p, double bytes) {
  return library == CollectiveLibrary::nccl ? nccl_algorithm(kind, p, bytes) : openmpi_algorithm(kind, p, bytes);
}

int size_class(double bytes) { return bytes < 2 ? 0 : static_cast<int>(std::floor(std::log2(bytes))); }

CollectiveCharge charge_collective(const std::vector<CollectiveTiming>& measured, CollectiveLibrary library,
                                   const NetworkModel& network, Collective kind, int p, double bytes) {
  CollectiveCharge c;
  if (p <= 1) {
    c.source = "none";
    c.algorithm = "none";
    return c;
  }
  const AlgorithmCost alg = library_algorithm(library, kind, p, bytes);
  c.algorithm = alg.name;
  auto formula = [&](int q) {
    const AlgorithmCost a = library_algorithm(library, kind, q, bytes);
    return network.latency * a.rounds + (network.bandwidth > 0 ? a.bytes / network.bandwidth : 0.0);
  };
  // The measured rows of this collective and size class, by group size (the nearest bytes first
  // where one size holds several).
  std::vector<const CollectiveTiming*> rows;
  for (const CollectiveTiming& t : measured) {
    if (t.kind != kind || t.ranks < 2 || size_class(t.bytes) != size_class(bytes) || !(t.seconds > 0)) continue;
    auto same = std::find_if(rows.begin(), rows.end(), [&](const CollectiveTiming* r) { return r->ranks == t.ranks; });
    if (same == rows.end())
      rows.push_back(&t);
    else if (std::abs(t.bytes - bytes) < std::abs((*same)->bytes - bytes))
      *same = &t;
  }
  std::sort(rows.begin(), rows.end(), [](const CollectiveTiming* a, const CollectiveTiming* b) { return a->ranks < b->ranks; });
  const double f = formula(p);
  if (rows.empty()) {
    c.seconds = f;
    c.source = "formula";
  } else if (p > rows.back()->ranks || p < rows.front()->ranks) {
    const CollectiveTiming& edge = p > rows.back()->ranks ? *rows.back() : *rows.front();
    const double fe = formula(edge.ranks);
    c.seconds = fe > 0 ? edge.seconds * f / fe : edge.seconds;
    c.source = "extrapolated";
  } else {
    std::size_t i = 0;
    while (rows[i]->ranks < p) ++i;
    if (rows[i]->ranks == p) {
      c.seconds = rows[i]->seconds;
      c.source = "measured";
    } else {
      const CollectiveTiming& a = *rows[i - 1];
      const CollectiveTiming& b = *rows[i];
      const double fa = formula(a.ranks), fb = formula(b.ranks);
      const double w = fb > fa ? (f - fa) / (fb - fa)
                               : (std::log2(double(p)) - std::log2(double(a.ranks))) /
                                     (std::log2(double(b.ranks)) - std::log2(double(a.ranks)));
      c.seconds = a.seconds + (b.seconds - a.seconds) * w;
      c.source = "interpolated";
    }
  }
  // Split as the algorithm's alpha and beta shares at p.
  const double lat = network.latency * alg.rounds;
  const double bw = network.bandwidth > 0 ? alg.bytes / network.bandwidth : 0.0;
  const double share = lat + bw > 0 ? lat / (lat + bw) : 1.0;
  c.latency = c.seconds * share;
  c.bandwidth = c.seconds - c.latency;
  return c;
}

int CostModel::active_on_node(int p) const {
  const int g = ranks_per_node > 0 ? ranks_per_node : sharing.max_active();
  return std::max(1, std::min(p, g));
}

double CostModel::local_slowdown(int p) const { return op == Op::matmul ? 1.0 : sharing.slowdown(active_on_node(p)); }

CostModel::Terms CostModel::predict(int p) const {
  const Problem problem = problem_at(op, mode, size_arg, element_bytes, p);
  Terms t;
  t.host = host;
  if (op == Op::matmul) {
    // The panels travel on the device path, overlapped with the GEMMs: see summa_overlap.
    const OverlapTerms o = summa_overlap(problem, p, panel_width, local_seconds_per_work, device_network);
    t.local = local_overhead + o.local;
    t.latency = o.latency;
    t.bandwidth = o.bandwidth;
    t.hidden = o.hidden;
    return t;
  }
  t.local = local_overhead + local_seconds_per_work * local_slowdown(p) * local_work(problem, p);
  if (collectives.empty()) {
    const CommCost cost = comm_cost(plan, p);
    t.latency = network.latency * cost.latency_rounds;
    t.bandwidth = network.bandwidth > 0 ? cost.bytes / network.bandwidth : 0.0;
    return t;
  }
  for (const CollectiveCall& call : plan) {
    const CollectiveCharge c = charge_collective(collectives, library, network, call.kind, p, call.bytes);
    t.latency += c.latency;
    t.bandwidth += c.bandwidth;
  }
  return t;
}

CostModel fit_cost_model(Op op, Mode mode, std::int64_t size_arg, int element_bytes, std::int64_t panel_width,
                         const CollectivePlan& plan, const NetworkModel& network,
                         const std::vector<Measurement>& points, const std::vector<int>& fit_ranks) {
  return fit_cost_model(op, mode, size_arg, element_bytes, panel_width, plan, network, network, points, fit_ranks);
}

CostModel fit_cost_model(Op op, Mode mode, std::int64_t size_arg, int element_bytes, std::int64_t panel_width,
                         const CollectivePlan& plan, const NetworkModel& network, const NetworkModel& device_network,
                         const std::vector<Measurement>& points, const std::vector<int>& fit_ranks) {
  return fit_cost_model(op, mode, size_arg, element_bytes, panel_width, plan, network, device_network, NodeSharing{}, 0,
                        {}, points, fit_ranks);
}

CostModel fit_cost_model(Op op, Mode mode, std::int64_t size_arg, int element_bytes, std::int64_t panel_width,
                         const CollectivePlan& plan, const NetworkModel& network, const NetworkModel& device_network,
                         const NodeSharing& sharing, int ranks_per_node, const std::vector<CollectiveTiming>& collectives,
                         const std::vector<Measurement>& points, const std::vector<int>& fit_ranks) {
  CostModel model;
  model.plan = plan;
  model.device_network = device_network;
  model.op = op;
  model.mode = mode;
  model.size_arg = size_arg;
  model.element_bytes = element_bytes;
  model.panel_width = panel_width;
  model.network = network;
  model.sharing = sharing;
  model.ranks_per_node = ranks_per_node;
  model.collectives = collectives;
  std::vector<double> x, y, w;
  double host_sum = 0;
  double work_lo = 0, work_hi = 0;
  for (const auto& m : points) {
    if (std::find(fit_ranks.begin(), fit_ranks.end(), m.ranks) == fit_ranks.end()) continue;
    const double work = local_work(problem_at(op, mode, size_arg, element_bytes, m.ranks), m.ranks);
    work_lo = x.empty() ? work : std::min(work_lo, work);
    work_hi = x.empty() ? work : std::max(work_hi, work);
    x.push_back(work * model.local_slowdown(m.ranks));
    y.push_back(m.local);
    w.push_back(m.local > 0 ? 1.0 / m.local : 1.0);
    host_sum += m.host;
    model.fitted_on.push_back(m.ranks);
  }
  if (x.empty()) return model;
  model.host = host_sum / x.size();
  // Weak scaling keeps the work per rank fixed: overhead and rate cannot be told apart, so all the
  // local time is charged to the rate.
  const bool work_varies = work_hi > 1.01 * work_lo;
  const Line line = nonnegative_line_fit(x, y, w, work_varies);
  model.local_overhead = line.a;
  model.local_seconds_per_work = line.b;
  return model;
}

std::vector<ProjectionPoint> project(const CostModel& model, const std::vector<int>& ranks) {
  std::vector<ProjectionPoint> out;
  const double t1 = model.predict(1).total();
  for (int p : ranks) {
    ProjectionPoint point;
    point.ranks = p;
    point.terms = model.predict(p);
    point.time = point.terms.total();
    if (model.mode == Mode::strong) {
      point.speedup = speedup(t1, point.time);
      point.efficiency = efficiency(t1, point.time, p);
    } else {
      point.speedup = scaled_speedup(t1, point.time, p);
      point.efficiency = weak_efficiency(t1, point.time);
    }
    point.dominant = point.terms.dominant();
    out.push_back(point);
  }
  return out;
}

std::vector<int> node_projection_ranks(int ranks_per_node) {
  std::vector<int> r;
  for (int nodes = 1; nodes <= 1024; nodes *= 2) r.push_back(nodes * std::max(1, ranks_per_node));
  return r;
}

double quantile(std::vector<double> x, double q) {
  if (x.empty()) return 0;
  std::sort(x.begin(), x.end());
  const double at = q * double(x.size() - 1);
  const std::size_t i = static_cast<std::size_t>(std::floor(at));
  if (i + 1 >= x.size()) return x.back();
  return x[i] + (x[i + 1] - x[i]) * (at - double(i));
}

void apply_interval(std::vector<ProjectionPoint>& points, const std::vector<std::vector<double>>& refits) {
  for (std::size_t j = 0; j < points.size(); ++j) {
    std::vector<double> t;
    for (const auto& r : refits)
      if (j < r.size() && std::isfinite(r[j])) t.push_back(r[j]);
    if (t.empty()) continue;
    points[j].low = std::min(points[j].time, quantile(t, 0.025));
    points[j].high = std::max(points[j].time, quantile(t, 0.975));
  }
}

std::vector<int> default_projection_ranks() {
  std::vector<int> r;
  for (int p = 8; p <= 4096; p *= 2) r.push_back(p);
  return r;
}

}  // namespace tessera::scaling
