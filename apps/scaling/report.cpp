#include "report.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <utility>

#include "app.hpp"
#include "tessera/framework/device_comm.hpp"

namespace tessera::apps::scaling_study {
namespace sc = tessera::scaling;
namespace {

// JSON has no NaN or infinity: the report writes them as null (Karp-Flatt at one rank, say), which
// is what its readers (check_scaling_json.py, gather_scaling.py) expect.
Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
Json number(int v) { return Json(v); }

template <class T>
Json array_of(const std::vector<T>& values) {
  Json a = Json::array();
  for (const T& v : values) a.push_back(number(v));
  return a;
}

// The two smallest rank counts measured: the model check fits on them and predicts the rest.
std::vector<int> check_fit_ranks(const std::vector<int>& ranks) {
  std::vector<int> r(ranks.begin(), ranks.begin() + std::min<std::size_t>(2, ranks.size()));
  return r;
}

// "[0.81, 1.02]"
std::string interval_text(double low, double high) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "[%.3g, %.3g]", low, high);
  return buf;
}

Json interval_json(double low, double high) {
  Json a = Json::array();
  a.push_back(number(low));
  a.push_back(number(high));
  return a;
}

}  // namespace

std::vector<sc::Measurement> measurements(const ModeReport& r) {
  std::vector<sc::Measurement> m;
  for (const auto& p : r.points) {
    const auto& t = p.median_round().timing;
    const double time = p.time();
    m.push_back({p.ranks, time, t.phases.local + t.phases.fixup, t.phases.communication,
                 std::max(0.0, time - t.phases.local - t.phases.fixup - t.phases.communication)});
  }
  return m;
}

std::vector<sc::Measurement> critical_path(std::vector<sc::Measurement> points, const Machine& machine,
                                           const CollectivePlan& plan) {
  if (plan.empty() || machine.collectives.empty()) return points;
  const sc::NetworkModel net = sc::fit_network(machine.samples);
  for (auto& m : points) {
    if (m.ranks < 2) continue;
    double own = 0;
    for (const CollectiveCall& call : plan)
      own += sc::charge_collective(machine.collectives, sc::CollectiveLibrary::open_mpi, net, call.kind, m.ranks, call.bytes)
                 .seconds;
    const double wait = std::max(0.0, m.communication - own);
    m.local += wait;
    m.communication -= wait;
  }
  return points;
}

// ------------------------------------------------------------------------------------------------
// Analysis of one mode.

ModeAnalysis analyse_mode(const Options& o, const ModeReport& r, const Machine& machine) {
  const std::vector<sc::CollectiveSample>& samples = machine.samples;
  ModeAnalysis a;
  a.report = &r;
  a.strong = r.mode == sc::Mode::strong;
  const bool strong = a.strong;
  const auto& pts = r.points;
  const MedianInterval first = pts.front().interval();
  const double t_first = first.median;
  const int p_first = pts.front().ranks;
  const double base = strong ? p_first : 1;  // T(1) stands for p_first T(p_first) in strong scaling
  std::vector<double> times, scaled;
  for (const auto& p : pts) {
    a.ranks.push_back(p.ranks);
    times.push_back(p.time());
    scaled.push_back(sc::scaled_speedup(t_first, p.time(), p.ranks) / (strong ? 1 : p_first));
  }

  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    PointAnalysis q;
    q.series = &p;
    q.interval = p.interval();
    const double time = q.interval.median;
    q.speedup = strong ? t_first * base / time : scaled[i];
    q.efficiency = strong ? q.speedup / p.ranks : t_first / time;
    // The efficiency's interval from the two times' intervals (the first point's own is exactly 1).
    if (i > 0) {
      q.efficiency_low = first.low / q.interval.high * (strong ? base / p.ranks : 1);
      q.efficiency_high = first.high / q.interval.low * (strong ? base / p.ranks : 1);
    }
    q.noisy = p.spread() > o.max_spread;
    a.noisy += q.noisy ? 1 : 0;
    // Karp-Flatt is undefined at one rank (and not a weak-scaling metric): NaN, written as null.
    q.karp_flatt = strong ? sc::karp_flatt(q.speedup, p.ranks).value_or(std::nan("")) : std::nan("");
    q.other = std::max(0.0, time - p.median_round().timing.phases.total());
    a.points.push_back(q);
  }

  if (strong) {
    a.amdahl = sc::fit_amdahl(a.ranks, times);
    if (a.amdahl.valid) {
      a.fit_error = a.amdahl.residual_max;
      a.fit_describes = a.fit_error <= o.max_fit_error;
    }
  } else {
    a.gustafson = sc::fit_gustafson(a.ranks, scaled);
    if (a.gustafson.valid) {
      double worst = 0;
      for (std::size_t i = 0; i < a.ranks.size(); ++i) {
        a.gustafson_predicted.push_back(a.gustafson.predict(a.ranks[i]));
        worst = std::max(worst, std::abs(a.gustafson_predicted.back() - scaled[i]) / scaled[i]);
      }
      a.fit_error = worst;
      a.fit_describes = worst <= o.max_fit_error;
    }
  }

  // The model check: fit on the two smallest points (network included), predict the others. The
  // machine's own measurements (the probe at 1..G ranks, the collectives at every group size) are
  // inputs at every size; the operation's times at the larger sizes are held out.
  const int eb = element_bytes(o.dtype);
  const CollectivePlan plan = operation_plan(o.op, o.dtype);
  a.measured = critical_path(measurements(r), machine, plan);
  const auto& meas = a.measured;
  a.ranks_per_node = machine.ranks_per_node;
  auto fit = [&](const std::vector<sc::CollectiveSample>& pings, const sc::NodeSharing& sharing,
                 const std::vector<sc::CollectiveTiming>& collectives, const std::vector<sc::Measurement>& points,
                 const std::vector<int>& fit_ranks) {
    return sc::fit_cost_model(o.op, r.mode, r.size_arg, eb, o.panel_width, plan, sc::fit_network(pings),
                              sc::fit_device_network(pings), sharing, machine.ranks_per_node, collectives, points,
                              fit_ranks);
  };
  ModelCheck& check = a.check;
  check.fit_ranks = check_fit_ranks(a.ranks);
  std::vector<sc::CollectiveSample> check_samples;
  for (const auto& s : samples)
    if (s.ranks <= check.fit_ranks.back()) check_samples.push_back(s);
  const auto check_model = fit(check_samples, machine.sharing, machine.collectives, meas, check.fit_ranks);
  std::vector<double> abs_errors;
  const sc::Measurement* worst_phases = nullptr;
  sc::CostModel::Terms worst_terms;
  for (const auto& m : meas) {
    if (std::find(check.fit_ranks.begin(), check.fit_ranks.end(), m.ranks) != check.fit_ranks.end()) continue;
    const sc::CostModel::Terms terms = check_model.predict(m.ranks);
    const double predicted = terms.total();
    const double error = (predicted - m.time) / m.time;
    if (std::abs(error) >= check.worst) {
      check.worst_ranks = m.ranks;
      worst_phases = &m;
      worst_terms = terms;
    }
    check.worst = std::max(check.worst, std::abs(error));
    abs_errors.push_back(std::abs(error));
    check.predictions.push_back({m.ranks, predicted, m.time, error, terms, m});
  }
  check.median = abs_errors.empty() ? 0 : sc::quantile(abs_errors, 0.5);
  check.passed = check.held_out() && check.worst <= o.max_fit_error;
  if (worst_phases) {
    // The term whose prediction is furthest from the phase it predicts, at the worst point.
    const double local = worst_terms.local - worst_phases->local;
    const double comm = worst_terms.latency + worst_terms.bandwidth - worst_phases->communication;
    const double host = worst_terms.host - worst_phases->host;
    char text[160];
    const char* name = "local (shared node bandwidth)";
    double miss = local, pred = worst_terms.local, seen = worst_phases->local;
    if (std::abs(comm) > std::abs(miss))
      name = "collectives", miss = comm, pred = worst_terms.latency + worst_terms.bandwidth, seen = worst_phases->communication;
    if (std::abs(host) > std::abs(miss)) name = "host", miss = host, pred = worst_terms.host, seen = worst_phases->host;
    std::snprintf(text, sizeof text, "%s: predicted %.3g s, measured %.3g s at %d ranks", name, pred, seen,
                  check.worst_ranks);
    check.missed_term = text;
  }

  // The collective extrapolation, checked where the launch measured beyond the fit's group sizes.
  {
    std::vector<sc::CollectiveTiming> within;
    for (const auto& t : machine.collectives)
      if (t.ranks <= check.fit_ranks.back()) within.push_back(t);
    const sc::NetworkModel net = sc::fit_network(check_samples);
    for (const auto& t : machine.collectives) {
      if (t.ranks <= check.fit_ranks.back()) continue;
      const sc::CollectiveCharge c =
          sc::charge_collective(within, sc::CollectiveLibrary::open_mpi, net, t.kind, t.ranks, t.bytes);
      a.extrapolation_check.push_back({t.kind, t.ranks, t.bytes, c.seconds, t.seconds, c.algorithm});
    }
  }

  // The model of record: fitted on every point; projected past the machine when the check allows.
  a.model = fit(samples, machine.sharing, machine.collectives, meas, a.ranks);
  if (check.held_out() && !check.passed) {
    char why[320];
    std::snprintf(why, sizeof why,
                  "the model fitted on ranks %d,%d misses %d ranks by %.0f%%, more than %.0f%% (the term that missed: %s)",
                  check.fit_ranks.front(), check.fit_ranks.back(), check.worst_ranks, 100 * check.worst,
                  100 * o.max_fit_error, check.missed_term.c_str());
    a.projection_withheld = true;
    a.projection_note = why;
    return a;
  }
  // The measured sizes, then 1, 2, 4, ..., 1024 nodes of G ranks past them.
  std::vector<int> proj_ranks = a.ranks;
  for (int p : sc::node_projection_ranks(machine.ranks_per_node))
    if (p > a.ranks.back()) proj_ranks.push_back(p);
  a.extrapolation = static_cast<double>(proj_ranks.back()) / a.ranks.back();
  char note[256];
  if (check.held_out())
    std::snprintf(note, sizeof note,
                  "checked: the model fitted on ranks %d,%d predicts the other points within %.0f%% (limit %.0f%%); "
                  "%d ranks are %.0fx the largest measured (%d)",
                  check.fit_ranks.front(), check.fit_ranks.back(), 100 * check.worst, 100 * o.max_fit_error,
                  proj_ranks.back(), a.extrapolation, a.ranks.back());
  else
    std::snprintf(note, sizeof note,
                  "unchecked: no measured point was held out of the fit (run more rank counts to check it); "
                  "%d ranks are %.0fx the largest measured (%d)",
                  proj_ranks.back(), a.extrapolation, a.ranks.back());
  a.projection_note = note;
  a.projection = sc::project(a.model, proj_ranks);

  // The interval: refits to bootstrap resamples of the rounds of every point, the probe's
  // repetitions and the collectives' batches (the pings of alpha and beta are kept).
  std::mt19937_64 rng(o.seed);
  auto draw = [&rng](const std::vector<double>& x) {
    std::vector<double> y(x.size());
    std::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
    for (auto& v : y) v = x[pick(rng)];
    return y;
  };
  constexpr int kResamples = 200;
  std::vector<std::vector<double>> refits;
  std::vector<double> rates, overheads, hosts;
  for (int b = 0; b < kResamples; ++b) {
    std::vector<sc::Measurement> points;
    for (const PointSeries& p : r.points) {
      PointSeries resampled;
      resampled.ranks = p.ranks;
      std::uniform_int_distribution<std::size_t> pick(0, p.rounds.size() - 1);
      for (std::size_t k = 0; k < p.rounds.size(); ++k) resampled.rounds.push_back(p.rounds[pick(rng)]);
      const auto& t = resampled.median_round().timing;
      const double time = resampled.time();
      points.push_back({p.ranks, time, t.phases.local + t.phases.fixup, t.phases.communication,
                        std::max(0.0, time - t.phases.local - t.phases.fixup - t.phases.communication)});
    }
    points = critical_path(std::move(points), machine, plan);
    sc::NodeSharing sharing = machine.sharing;
    for (std::size_t k = 0; k < sharing.seconds.size() && k < machine.probe_repetitions.size(); ++k)
      if (!machine.probe_repetitions[k].empty())
        sharing.seconds[k] = median_interval(draw(machine.probe_repetitions[k])).median;
    std::vector<sc::CollectiveTiming> collectives = machine.collectives;
    for (auto& t : collectives)
      if (!t.batches.empty()) t.seconds = median_interval(draw(t.batches)).median;
    const sc::CostModel m = fit(samples, sharing, collectives, points, a.ranks);
    std::vector<double> refit_times;
    for (int p : proj_ranks) refit_times.push_back(m.predict(p).total());
    refits.push_back(refit_times);
    rates.push_back(m.local_rate());
    overheads.push_back(m.local_overhead);
    hosts.push_back(m.host);
  }
  sc::apply_interval(a.projection, refits);
  a.resamples = kResamples;
  a.rate_low = sc::quantile(rates, 0.025), a.rate_high = sc::quantile(rates, 0.975);
  a.overhead_low = sc::quantile(overheads, 0.025), a.overhead_high = sc::quantile(overheads, 0.975);
  a.host_low = sc::quantile(hosts, 0.025), a.host_high = sc::quantile(hosts, 0.975);
  return a;
}

std::string verdict_line(const Options& o, const ModeAnalysis& a) {
  const ModelCheck& c = a.check;
  char line[512];
  if (!c.held_out()) {
    std::snprintf(line, sizeof line, "model check %s %s: NONE (no measured point held out of the fit on ranks %s)",
                  sc::to_string(a.report->mode), sc::to_string(o.op), a.ranks.size() == 1 ? "1" : "1,2");
    return line;
  }
  const bool pass = c.median <= 0.15 && c.worst <= 0.25;
  std::string held;
  for (const auto& q : c.predictions) {
    if (!held.empty()) held += ',';
    held += std::to_string(q.ranks);
  }
  std::snprintf(line, sizeof line,
                "model check %s %s: %s median |error| %.1f%% max %.1f%% (at %d ranks), fitted on ranks %d,%d, held out "
                "%s; target median <= 15%% max <= 25%%%s%s",
                sc::to_string(a.report->mode), sc::to_string(o.op), pass ? "PASS" : "FAIL", 100 * c.median,
                100 * c.worst, c.worst_ranks, c.fit_ranks.front(), c.fit_ranks.back(), held.c_str(),
                pass ? "" : "; the term that missed: ", pass ? "" : c.missed_term.c_str());
  return line;
}

std::string overall_verdict(const Options& o, const std::vector<ModeAnalysis>& analyses) {
  std::vector<double> errors;
  double worst = 0;
  std::string where, missed;
  for (const ModeAnalysis& a : analyses)
    for (const auto& q : a.check.predictions) {
      errors.push_back(std::abs(q.error));
      if (std::abs(q.error) >= worst) {
        worst = std::abs(q.error);
        where = std::string(sc::to_string(a.report->mode)) + " at " + std::to_string(q.ranks) + " ranks";
        missed = a.check.missed_term;
      }
    }
  char line[512];
  if (errors.empty()) {
    std::snprintf(line, sizeof line, "model check verdict: NONE %s: no measured point held out of the fit on 1,2 ranks",
                  sc::to_string(o.op));
    return line;
  }
  const double median = sc::quantile(errors, 0.5);
  const bool pass = median <= 0.15 && worst <= 0.25;
  std::snprintf(line, sizeof line,
                "model check verdict: %s %s: median |error| %.1f%% max %.1f%% (%s) over %zu held-out points; target "
                "median <= 15%% max <= 25%%%s%s",
                pass ? "PASS" : "FAIL", sc::to_string(o.op), 100 * median, 100 * worst, where.c_str(), errors.size(),
                pass ? "" : "; the term that missed: ", pass ? "" : missed.c_str());
  return line;
}

void print_machine(FILE* text, const Machine& machine) {
  if (machine.sharing.measured()) {
    std::fprintf(text, "node-sharing probe (sum of a buffer per rank, k ranks of node 0 at once; slowest rank):\n%6s %12s %10s\n",
                 "k", "time[s]", "slowdown");
    for (std::size_t i = 0; i < machine.sharing.active.size(); ++i)
      std::fprintf(text, "%6d %12.4g %10.3f\n", machine.sharing.active[i], machine.sharing.seconds[i],
                   machine.sharing.slowdown(machine.sharing.active[i]));
  }
  if (!machine.collectives.empty()) {
    std::fprintf(text, "the operation's collectives (slowest rank, per call; median of 5 batches):\n%-10s %6s %10s %12s  %s\n",
                 "collective", "ranks", "bytes", "time[s]", "Open MPI 4.1 picks");
    for (const auto& t : machine.collectives)
      std::fprintf(text, "%-10s %6d %10.0f %12.4g  %s\n", to_string(t.kind), t.ranks, t.bytes, t.seconds,
                   sc::openmpi_algorithm(t.kind, t.ranks, t.bytes).name);
  }
}

Json machine_json(const Machine& machine) {
  Json j = Json::object();
  j["ranks_per_node"] = machine.ranks_per_node;
  Json probe = Json::object();
  probe["active_ranks"] = array_of(machine.sharing.active);
  probe["seconds"] = array_of(machine.sharing.seconds);
  std::vector<double> slow;
  for (int k : machine.sharing.active) slow.push_back(machine.sharing.slowdown(k));
  probe["slowdown"] = array_of(slow);
  Json reps = Json::array();
  for (const auto& r : machine.probe_repetitions) reps.push_back(array_of(r));
  probe["repetitions_s"] = reps;
  j["node_sharing"] = probe;
  Json rows = Json::array();
  for (const auto& t : machine.collectives) {
    Json c = Json::object();
    c["kind"] = std::string(to_string(t.kind));
    c["ranks"] = t.ranks;
    c["bytes"] = number(t.bytes);
    c["seconds"] = number(t.seconds);
    c["batches_s"] = array_of(t.batches);
    c["size_class"] = sc::size_class(t.bytes);
    c["open_mpi_algorithm"] = std::string(sc::openmpi_algorithm(t.kind, t.ranks, t.bytes).name);
    rows.push_back(c);
  }
  j["collectives"] = rows;
  return j;
}

std::string model_inputs_text(const Options& o, const Machine& machine, const std::vector<ModeAnalysis>& analyses) {
  std::string out = "# tessera-scaling model inputs: op dtype_bytes panel_width ranks_per_node\n";
  char line[512];
  std::snprintf(line, sizeof line, "run %s %d %lld %d\n", sc::to_string(o.op), element_bytes(o.dtype),
                static_cast<long long>(o.panel_width), machine.ranks_per_node);
  out += line;
  for (const CollectiveCall& call : operation_plan(o.op, o.dtype)) {
    std::snprintf(line, sizeof line, "plan %s %.17g\n", to_string(call.kind), call.bytes);
    out += line;
  }
  for (const auto& s : machine.samples) {
    std::snprintf(line, sizeof line, "ping %d %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", s.ranks, s.small_seconds,
                  s.large_seconds, s.large_bytes, s.device_small_seconds, s.device_large_seconds, s.device_large_bytes,
                  s.device_small_bytes);
    out += line;
  }
  for (std::size_t i = 0; i < machine.sharing.active.size(); ++i) {
    std::snprintf(line, sizeof line, "probe %d %.17g\n", machine.sharing.active[i], machine.sharing.seconds[i]);
    out += line;
  }
  for (const auto& t : machine.collectives) {
    std::snprintf(line, sizeof line, "collective %s %d %.17g %.17g\n", to_string(t.kind), t.ranks, t.bytes, t.seconds);
    out += line;
  }
  for (const ModeAnalysis& a : analyses) {
    std::snprintf(line, sizeof line, "mode %s %lld\n", sc::to_string(a.report->mode),
                  static_cast<long long>(a.report->size_arg));
    out += line;
    for (const auto& m : a.measured) {
      std::snprintf(line, sizeof line, "point %d %.17g %.17g %.17g %.17g\n", m.ranks, m.time, m.local, m.communication,
                    m.host);
      out += line;
    }
    for (const auto& q : a.check.predictions) {
      std::snprintf(line, sizeof line, "check %d %d %d %.17g\n", a.check.fit_ranks.front(), a.check.fit_ranks.back(),
                    q.ranks, q.predicted);
      out += line;
    }
    for (int p : sc::node_projection_ranks(machine.ranks_per_node)) {
      std::snprintf(line, sizeof line, "predict %d %.17g\n", p, a.model.predict(p).total());
      out += line;
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// The table.

void print_mode(FILE* text, const Options& o, const ModeAnalysis& a) {
  const ModeReport& r = *a.report;
  const bool strong = a.strong;
  const bool matmul = o.op == sc::Op::matmul;
  const auto& pts = r.points;
  std::fprintf(text, "\n%s scaling of %s (%s, %s %lld): per point the median over %zu rounds of %d calls each, and its 95%% interval\n",
               sc::to_string(r.mode), sc::to_string(o.op), io::to_string(o.dtype), strong ? "n" : "n per rank",
               static_cast<long long>(r.size_arg), pts.front().rounds.size(), o.repeat);
  std::fprintf(text, "%6s %14s %12s %23s %7s %9s %9s %19s %8s %12s %12s %12s %12s\n", "ranks", "size", "time[s]",
               "95% interval [s]", "spread", strong ? "speedup" : "scaled_S", "effic.", "effic. interval", "karp_fl",
               "local[s]", "comm[s]", "fixup[s]", "host[s]");
  for (const PointAnalysis& q : a.points) {
    const PointSeries& p = *q.series;
    const auto& t = p.median_round().timing;
    char kf_text[32] = "-";
    if (!std::isnan(q.karp_flatt)) std::snprintf(kf_text, sizeof kf_text, "%.4f", q.karp_flatt);
    std::fprintf(text, "%6d %14lld %12.6g %23s %6.0f%%%s %9.3f %9.3f %19s %8s %12.4g %12.4g %12.4g %12.4g\n", p.ranks,
                 static_cast<long long>(p.size), q.interval.median, interval_text(q.interval.low, q.interval.high).c_str(),
                 100 * p.spread(), q.noisy ? "!" : " ", q.speedup, q.efficiency,
                 interval_text(q.efficiency_low, q.efficiency_high).c_str(), kf_text, t.phases.local,
                 t.phases.communication, t.phases.fixup, t.phases.host + q.other);
  }
  if (a.noisy)
    std::fprintf(text,
                 "! %d point%s noisy: the 95%% interval of the median is wider than %.0f%% of it after %zu rounds; read "
                 "speedups and fits with that interval in mind (a quieter machine, more --max-rounds or larger sizes "
                 "narrow it)\n",
                 a.noisy, a.noisy == 1 ? " is" : "s are", 100 * o.max_spread, pts.front().rounds.size());

  if (strong) {
    const auto& fit = a.amdahl;
    if (fit.valid) {
      std::fprintf(text, "Amdahl fit: serial fraction s = %.4g, T(1) = %.4g s, relative residual rms %.3g, max %.3g\n",
                   fit.serial_fraction, fit.t1, fit.residual_rms, fit.residual_max);
      if (!a.fit_describes)
        std::fprintf(text,
                     "Amdahl fit: does not describe these points (a fitted time is %.0f%% off, more than %.0f%%): s is "
                     "not the serial fraction of this operation here\n",
                     100 * fit.residual_max, 100 * o.max_fit_error);
    } else {
      std::fprintf(text, "Amdahl fit: needs two distinct rank counts\n");
    }
  } else if (a.gustafson.valid) {
    std::fprintf(text, "Gustafson fit: serial fraction s = %.4g (scaled speedup p - s (p - 1)), residual rms %.3g, max %.0f%%\n",
                 a.gustafson.serial_fraction, a.gustafson.residual_rms, 100 * a.fit_error);
    if (!a.fit_describes)
      std::fprintf(text, "Gustafson fit: does not describe these points (a fitted speedup is %.0f%% off, more than %.0f%%)\n",
                   100 * a.fit_error, 100 * o.max_fit_error);
  }

  const ModelCheck& check = a.check;
  for (const auto& q : check.predictions)
    std::fprintf(text, "model check: fitted on ranks %d,%d, predicts %d ranks: %.4g s, measured %.4g s, error %+.1f%%\n",
                 check.fit_ranks.front(), check.fit_ranks.back(), q.ranks, q.predicted, q.measured, 100 * q.error);
  std::fprintf(text, "tessera-scaling: %s\n", verdict_line(o, a).c_str());
  for (const auto& e : a.extrapolation_check)
    std::fprintf(text, "collective extrapolation: %s of %.0f B at %d ranks from ranks <= %d (%s): %.4g s, measured %.4g s, error %+.1f%%\n",
                 to_string(e.kind), e.bytes, e.ranks, check.fit_ranks.empty() ? 1 : check.fit_ranks.back(), e.algorithm,
                 e.predicted, e.measured, e.measured > 0 ? 100 * (e.predicted - e.measured) / e.measured : 0.0);

  const sc::CostModel& model = a.model;
  const sc::NetworkModel& charged = matmul ? model.device_network : model.network;
  std::fprintf(text,
               "model: local = %.3g s + work / %.3g %s/s, %s network: latency %.3g s per tree round, bandwidth %.3g B/s%s, "
               "host %.3g s\n",
               model.local_overhead, model.local_rate(), model.work_unit(), matmul ? "device" : "host",
               charged.latency, charged.bandwidth,
               matmul ? " (broadcast of panel s+1 overlapped with GEMM of panel s)" : "", model.host);
  if (!matmul) std::fprintf(text, "collectives per call: %s (charged as measured at each group size, %s past them)\n",
                            describe(model.plan).c_str(), "Open MPI 4.1's algorithm");
  if (!matmul && model.sharing.measured())
    std::fprintf(text, "local: slowdown of the node's shared bandwidth at %d ranks per node: %.3g (probe)\n",
                 model.active_on_node(1 << 30), model.sharing.slowdown(model.active_on_node(1 << 30)));
  if (a.resamples > 0)
    std::fprintf(text, "parameters, 95%% intervals over %d bootstrap refits: rate [%.4g, %.4g] %s/s, overhead [%.3g, %.3g] s, host [%.3g, %.3g] s\n",
                 a.resamples, a.rate_low, a.rate_high, model.work_unit(), a.overhead_low, a.overhead_high, a.host_low,
                 a.host_high);

  if (a.projection_withheld) {
    std::fprintf(text, "projection (%s): withheld: %s; the model does not describe this machine well enough to "
                 "project from it\n", sc::to_string(r.mode), a.projection_note.c_str());
    return;
  }
  std::fprintf(text, "projection (%s; %s):\n%6s %6s %12s %23s %10s %9s %12s %12s %12s %12s %12s  %s\n",
               sc::to_string(r.mode), a.projection_note.c_str(), "ranks", "nodes", "time[s]", "95% interval [s]",
               strong ? "speedup" : "scaled_S", "effic.", "local", "latency", "bandwidth", "host", "hidden", "dominant");
  for (const auto& p : a.projection)
    std::fprintf(text, "%6d %6d %12.4g %23s %10.2f %9.3f %12.4g %12.4g %12.4g %12.4g %12.4g  %s\n", p.ranks,
                 (p.ranks + a.ranks_per_node - 1) / std::max(1, a.ranks_per_node), p.time,
                 interval_text(p.low, p.high).c_str(), p.speedup, p.efficiency, p.terms.local, p.terms.latency,
                 p.terms.bandwidth, p.terms.host, p.terms.hidden, p.dominant.c_str());
}

// ------------------------------------------------------------------------------------------------
// The JSON.

Json mode_json(const Options& o, const ModeAnalysis& a) {
  const ModeReport& r = *a.report;
  const bool strong = a.strong;
  const bool matmul = o.op == sc::Op::matmul;
  Json j = Json::object();
  j[strong ? "n" : "n_per_rank"] = r.size_arg;
  j["max_spread"] = number(o.max_spread);
  j["max_fit_error"] = number(o.max_fit_error);
  Json points = Json::array();
  for (const PointAnalysis& q : a.points) {
    const PointSeries& p = *q.series;
    const PointResult& mid = p.median_round();
    const auto& t = mid.timing;
    const MedianInterval& m = q.interval;
    Json point = Json::object();
    point["ranks"] = p.ranks;
    point["size"] = p.size;
    point["time_s"] = number(m.median);
    point["time_ci95_s"] = interval_json(m.low, m.high);
    point["ci_level"] = number(m.level);
    const std::vector<double> round_times = p.times();
    point["time_min_s"] = number(*std::min_element(round_times.begin(), round_times.end()));
    point["time_max_s"] = number(*std::max_element(round_times.begin(), round_times.end()));
    point["rounds"] = static_cast<int>(p.rounds.size());
    point["round_times_s"] = array_of(round_times);
    point["spread"] = number(p.spread());
    point["noisy"] = q.noisy;
    point[strong ? "speedup" : "scaled_speedup"] = number(q.speedup);
    point["efficiency"] = number(q.efficiency);
    point["efficiency_interval"] = interval_json(q.efficiency_low, q.efficiency_high);
    if (strong) point["karp_flatt"] = number(q.karp_flatt);
    Json phases = Json::object();
    phases["local"] = number(t.phases.local);
    phases["communication"] = number(t.phases.communication);
    phases["fixup"] = number(t.phases.fixup);
    phases["host"] = number(t.phases.host);
    phases["other"] = number(q.other);
    point["phases_s"] = phases;
    point["checksum"] = number(mid.checksum);
    points.push_back(point);
  }
  j["points"] = points;
  j["noisy_points"] = a.noisy;

  Json fit_json = Json::object();
  if (strong) {
    const auto& fit = a.amdahl;
    fit_json["valid"] = fit.valid;
    if (fit.valid) {
      fit_json["serial_fraction"] = number(fit.serial_fraction);
      fit_json["t1_s"] = number(fit.t1);
      fit_json["residual_rms"] = number(fit.residual_rms);
      fit_json["residual_max"] = number(fit.residual_max);
      fit_json["fitted_time_s"] = array_of(fit.fitted);
      fit_json["describes_points"] = a.fit_describes;
    }
    j["amdahl"] = fit_json;
  } else {
    const auto& fit = a.gustafson;
    fit_json["valid"] = fit.valid;
    if (fit.valid) {
      fit_json["serial_fraction"] = number(fit.serial_fraction);
      fit_json["residual_rms"] = number(fit.residual_rms);
      fit_json["residual_max_relative"] = number(a.fit_error);
      fit_json["fitted_scaled_speedup"] = array_of(a.gustafson_predicted);
      fit_json["describes_points"] = a.fit_describes;
    }
    j["gustafson"] = fit_json;
  }

  const ModelCheck& check = a.check;
  Json check_json = Json::object();
  check_json["fit_ranks"] = array_of(check.fit_ranks);
  Json predictions = Json::array();
  for (const auto& p : check.predictions) {
    Json q = Json::object();
    q["ranks"] = p.ranks;
    q["predicted_s"] = number(p.predicted);
    q["measured_s"] = number(p.measured);
    q["relative_error"] = number(p.error);
    predictions.push_back(q);
  }
  check_json["points"] = predictions;
  check_json["max_abs_relative_error"] = number(check.worst);
  check_json["median_abs_relative_error"] = number(check.median);
  check_json["verdict"] = verdict_line(o, a);
  check_json["missed_term"] = check.missed_term;
  Json extrapolated = Json::array();
  for (const auto& e : a.extrapolation_check) {
    Json q = Json::object();
    q["kind"] = std::string(to_string(e.kind));
    q["ranks"] = e.ranks;
    q["bytes"] = number(e.bytes);
    q["algorithm"] = std::string(e.algorithm);
    q["predicted_s"] = number(e.predicted);
    q["measured_s"] = number(e.measured);
    extrapolated.push_back(q);
  }
  check_json["collective_extrapolation"] = extrapolated;
  check_json["threshold"] = number(o.max_fit_error);
  check_json["passed"] = check.held_out() ? Json(check.passed) : Json();
  j["model_check"] = check_json;

  const sc::CostModel& model = a.model;
  Json model_json = Json::object();
  model_json["fit_ranks"] = array_of(model.fitted_on);
  model_json["local_overhead_s"] = number(model.local_overhead);
  model_json["local_rate"] = number(model.local_rate());
  model_json["local_rate_unit"] = std::string(model.work_unit()) + "/s";
  model_json["host_s"] = number(model.host);
  model_json["latency_s"] = number(model.network.latency);
  model_json["bandwidth_Bps"] = number(model.network.bandwidth);
  model_json["device_latency_s"] = number(model.device_network.latency);
  model_json["device_bandwidth_Bps"] = number(model.device_network.bandwidth);
  // Which network the op's collectives were charged to, and whether communication overlaps work.
  model_json["network_path"] = matmul ? "device" : "host";
  model_json["overlap"] = matmul ? "summa: max(panel GEMM, next panel broadcast) per step" : "none";
  // The collectives charged per call: the operation's declared plan (matmul: SUMMA's panels).
  Json collectives = Json::array();
  for (const CollectiveCall& call : model.plan) {
    Json c = Json::object();
    c["kind"] = std::string(to_string(call.kind));
    c["bytes"] = number(call.bytes);
    collectives.push_back(c);
  }
  model_json["collectives"] = collectives;
  model_json["collectives_charged"] = model.collectives.empty() ? "formula" : "measured";
  model_json["ranks_per_node"] = a.ranks_per_node;
  model_json["local_slowdown_applies"] = !matmul && model.sharing.measured();
  if (a.resamples > 0) {
    Json intervals = Json::object();
    intervals["resamples"] = a.resamples;
    intervals["local_rate"] = interval_json(a.rate_low, a.rate_high);
    intervals["local_overhead_s"] = interval_json(a.overhead_low, a.overhead_high);
    intervals["host_s"] = interval_json(a.host_low, a.host_high);
    model_json["parameter_ci95"] = intervals;
  }
  j["model"] = model_json;

  Json projection = Json::array();
  if (a.projection_withheld) {
    j["projection_status"] = "withheld";
    j["projection_note"] = a.projection_note;
    j["projection"] = projection;
    return j;
  }
  j["projection_status"] = check.held_out() ? "checked" : "unchecked";
  j["projection_note"] = a.projection_note;
  j["projection_extrapolation"] = number(a.extrapolation);
  for (const auto& p : a.projection) {
    Json q = Json::object();
    q["ranks"] = p.ranks;
    q["nodes"] = (p.ranks + a.ranks_per_node - 1) / std::max(1, a.ranks_per_node);
    q["time_s"] = number(p.time);
    q["time_ci95_s"] = interval_json(p.low, p.high);
    q[strong ? "speedup" : "scaled_speedup"] = number(p.speedup);
    q["efficiency"] = number(p.efficiency);
    Json terms = Json::object();
    terms["local"] = number(p.terms.local);
    terms["latency"] = number(p.terms.latency);
    terms["bandwidth"] = number(p.terms.bandwidth);
    terms["host"] = number(p.terms.host);
    q["terms_s"] = terms;
    // Outside terms_s, which add up to time_s: what ran in the shadow of the critical path.
    q["hidden_s"] = number(p.terms.hidden);
    q["dominant"] = p.dominant;
    projection.push_back(q);
  }
  j["projection"] = projection;
  return j;
}

// ------------------------------------------------------------------------------------------------
// The run: its settings, the pings and the network models.

void print_collectives(FILE* text, const Options& o, const Runtime& runtime, const Context& world,
                       const std::vector<sc::CollectiveSample>& samples) {
  const char* device_path = to_string(device_comm_path(world));
  std::fprintf(text, "tessera-scaling: %s, %s\ncollectives (slowest rank, per call): host MPI allreduce; DeviceComm broadcast of "
              "backend memory (%s)\n%6s %14s %14s %14s %14s %14s %14s\n",
              sc::to_string(o.op), runtime.describe().c_str(), device_path, "ranks", "host 8 B [s]", "host large [s]",
              "large [B]", "dev small [s]", "dev large [s]", "dev large [B]");
  for (const auto& s : samples)
    std::fprintf(text, "%6d %14.4g %14.4g %14.4g %14.4g %14.4g %14.4g\n", s.ranks, s.small_seconds, s.large_seconds,
                 s.large_bytes, s.device_small_seconds, s.device_large_seconds, s.device_large_bytes);
  const auto net = sc::fit_network(samples);
  const auto device_net = sc::fit_device_network(samples);
  std::fprintf(text, "network model: host MPI (scalar collectives): latency %.4g s per tree round, bandwidth %.4g B/s; "
               "device %s (backend buffers, matmul panels): latency %.4g s per tree round, bandwidth %.4g B/s\n",
               net.latency, net.bandwidth, device_path, device_net.latency, device_net.bandwidth);
}

Json run_json(const Options& o, const Runtime& runtime, const Context& world,
              const std::vector<sc::CollectiveSample>& samples, const std::vector<ModeReport>& reports,
              const std::vector<ModeAnalysis>& analyses) {
  Json j = Json::object();
  j["app"] = "tessera-scaling";
  add_provenance(j, runtime);
  j["op"] = sc::to_string(o.op);
  j["dtype"] = io::to_string(o.dtype);
  j["backend"] = to_string(world.backend());
  j["threads"] = threads_json(runtime);
  j["world_size"] = runtime.world_size();
  j["host"] = runtime.hostname();
  j["runtime"] = runtime.describe();
  j["repeat"] = o.repeat;
  j["warmup"] = o.warmup;
  j["rounds"] = static_cast<int>(reports.front().points.front().rounds.size());
  j["min_rounds"] = o.rounds;
  j["max_rounds"] = o.max_rounds;
  j["seed"] = static_cast<unsigned long long>(o.seed);
  if (o.op == sc::Op::matmul) j["panel_width"] = o.panel_width;
  if (const char* job = std::getenv("SLURM_JOB_ID")) j["slurm_job_id"] = job;
  j["ranks"] = array_of(o.ranks);
  Json collectives = Json::array();
  for (const auto& s : samples) {
    Json c = Json::object();
    c["ranks"] = s.ranks;
    c["allreduce_8B_s"] = number(s.small_seconds);
    c["allreduce_large_s"] = number(s.large_seconds);
    c["large_bytes"] = number(s.large_bytes);
    c["device_bcast_small_s"] = number(s.device_small_seconds);
    c["device_small_bytes"] = number(s.device_small_bytes);
    c["device_bcast_large_s"] = number(s.device_large_seconds);
    c["device_large_bytes"] = number(s.device_large_bytes);
    collectives.push_back(c);
  }
  j["collectives"] = collectives;
  const auto net = sc::fit_network(samples);
  const auto device_net = sc::fit_device_network(samples);
  Json network = Json::object();
  // latency_s and bandwidth_Bps: the host path (kept under their old names); device_*: DeviceComm.
  network["latency_s"] = number(net.latency);
  network["bandwidth_Bps"] = number(net.bandwidth);
  network["path"] = to_string(DeviceCommPath::mpi_host);
  network["device_latency_s"] = number(device_net.latency);
  network["device_bandwidth_Bps"] = number(device_net.bandwidth);
  network["device_path"] = to_string(device_comm_path(world));
  j["network"] = network;
  for (const auto& a : analyses) j[sc::to_string(a.report->mode)] = mode_json(o, a);
  return j;
}

std::string run_csv(const Options& o, const std::vector<ModeReport>& reports) {
  std::ostringstream csv;
  csv << "op,mode,ranks,size,round,time_s,local_s,communication_s,fixup_s,host_s,other_s,checksum\n";
  csv.precision(17);
  for (const auto& r : reports)
    for (const auto& p : r.points)
      for (std::size_t k = 0; k < p.rounds.size(); ++k) {
        const auto& t = p.rounds[k].timing;
        csv << sc::to_string(o.op) << ',' << sc::to_string(r.mode) << ',' << p.ranks << ',' << p.size << ',' << k + 1
            << ',' << t.total << ',' << t.phases.local << ',' << t.phases.communication << ',' << t.phases.fixup
            << ',' << t.phases.host << ',' << p.rounds[k].other << ',' << p.rounds[k].checksum << '\n';
      }
  return csv.str();
}

void check_outputs_writable(const Options& o, const Communicator& world) {
  char error[1024] = {};
  if (world.rank() == 0) {
    const auto problem_of = [](const std::string& path) -> std::string {
      const auto slash = path.find_last_of('/');
      const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
      struct stat st {};
      if (path.empty() || path.back() == '/') return "'" + path + "' is not a file name";
      if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "'" + path + "' is a directory";
      if (stat(directory.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return "no such directory '" + directory + "'";
      if (access(directory.c_str(), W_OK | X_OK) != 0) return "cannot write in directory '" + directory + "' (permission denied)";
      return "";
    };
    for (const auto& [flag, path] : {std::pair<std::string, std::string>{"--json", o.json}, {"--csv", o.csv},
                                     {"--model-inputs", o.model_inputs}, {"--checkpoint", o.checkpoint}}) {
      if (path.empty()) continue;
      const std::string problem = problem_of(path);
      if (!problem.empty()) {
        std::snprintf(error, sizeof error, "%s: %s", flag.c_str(), problem.c_str());
        break;
      }
    }
    if (!error[0] && !o.json.empty() && !o.csv.empty() && same_file(o.json, o.csv))
      std::snprintf(error, sizeof error, "--csv: '%s' is also the --json file; give each report a file of its own",
                    o.csv.c_str());
    // A checkpoint is rewritten after every round: an existing file is only ever the study's own,
    // continued with --restart; anything else there stays untouched.
    struct stat st {};
    if (!error[0] && !o.checkpoint.empty() && o.restart.empty() && stat(o.checkpoint.c_str(), &st) == 0)
      std::snprintf(error, sizeof error,
                    "--checkpoint: '%s' exists; give --restart auto to continue the study it holds, or another file",
                    o.checkpoint.c_str());
    for (const auto& [flag, path] : {std::pair<std::string, std::string>{"--json", o.json}, {"--csv", o.csv},
                                     {"--model-inputs", o.model_inputs}}) {
      if (!error[0] && !path.empty() && !o.checkpoint.empty() && same_file(path, o.checkpoint))
        std::snprintf(error, sizeof error, "--checkpoint: '%s' is also the %s file", o.checkpoint.c_str(), flag.c_str());
    }
  }
  throw_root_error(world, error);
}

}  // namespace tessera::apps::scaling_study
