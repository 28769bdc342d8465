#include "measurement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>

#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/dist_matrix.hpp"

namespace tessera::apps::scaling_study {
namespace sc = tessera::scaling;

MedianInterval median_interval(std::vector<double> x) {
  MedianInterval m;
  if (x.empty()) return m;
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  m.median = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
  // below[j] = P(B <= j), B ~ Binomial(n, 1/2), in logs for large n.
  auto log_choose = [n](std::size_t i) {
    return std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1);
  };
  std::size_t k = 1;
  double below = 0;  // P(B <= k - 1)
  double level = 1 - 2 * std::exp(log_choose(0) - double(n) * std::log(2.0));
  for (std::size_t next = 2; next <= n / 2; ++next) {
    below += std::exp(log_choose(next - 2) - double(n) * std::log(2.0));
    const double b = below + std::exp(log_choose(next - 1) - double(n) * std::log(2.0));
    if (1 - 2 * b < 0.95) break;
    k = next;
    level = 1 - 2 * b;
  }
  m.low = x[k - 1];
  m.high = x[n - k];
  m.level = std::max(0.0, level);
  return m;
}

CollectivePlan operation_plan(scaling::Op op, io::DType dtype) {
  return io::dispatch(dtype, [&]<class T>() -> CollectivePlan {
    switch (op) {
      case scaling::Op::sum: return reduce_plan<T>(ReduceOp::sum);
      case scaling::Op::scan: return scan_plan<T>();
      case scaling::Op::filter: return filter_plan<T>();
      case scaling::Op::matmul: return {};
    }
    return {};
  });
}

void Progress::done(const std::string& what) {
  ++done_;
  if (show_)
    std::fprintf(stderr, "tessera-scaling: [%zu/%zu] %s done; %zu left; %.1f s elapsed\n", done_, total_, what.c_str(),
                 total_ - done_, elapsed_.seconds());
}

void wait_for_all(const Context& world) { world.comm().barrier_sleeping(std::chrono::microseconds(200)); }

namespace {

// Runs `call` warmup + repeat times on ctx (the apps' shared measure: per repeat the slowest rank,
// then medians). call(PhaseTimes*) performs one complete operation.
template <class Call>
void time_repeats(const Context& ctx, const Options& o, Call&& call, PointResult& point) {
  CommonOptions repeats;
  repeats.repeat = o.repeat;
  repeats.warmup = o.warmup;
  point.timing = measure(ctx, repeats, call);
  point.other = std::max(0.0, point.timing.total - point.timing.phases.total());
}

template <class T>
void run_vector_point(const Context& ctx, const Options& o, PointResult& point) {
  DistArray<T> array(ctx, point.size);
  array.generate(o.seed);
  switch (o.op) {
    case sc::Op::sum: {
      T result{};
      time_repeats(ctx, o, [&](PhaseTimes* t) { result = reduce(array, ReduceOp::sum, t); },
                   point);
      point.checksum = static_cast<double>(result);
      break;
    }
    case sc::Op::scan: {
      // The output is allocated once, outside the timing: cudaMalloc / cudaFree of a gigabyte cost
      // about a millisecond each, as much as the scan itself, and would pose as serial work.
      DistArray<T> out(ctx, array.partition());
      time_repeats(ctx, o,
                   [&](PhaseTimes* t) {
                     scan(array, out, ScanKind::inclusive, t);
                     ctx.queue().synchronize();
                   },
                   point);
      // The last element of an inclusive scan is the total.
      if (point.size > 0) {
        const int owner = out.partition().owner(point.size - 1);
        double last = 0;
        if (ctx.rank() == owner) last = static_cast<double>(out.local_to_host().back());
        point.checksum = ctx.comm().bcast_value(last, owner);
      }
      break;
    }
    case sc::Op::filter: {
      DistArray<T> kept;
      time_repeats(ctx, o,
                   [&](PhaseTimes* t) {
                     kept = filter(array, greater_than<T>(T(0)), t);
                     ctx.queue().synchronize();
                   },
                   point);
      point.checksum = static_cast<double>(kept.global_size());
      break;
    }
    case sc::Op::matmul: break;
  }
}

template <class T>
void run_matmul_point(const Context& ctx, const Options& o, PointResult& point) {
  const auto grid = ProcessGrid::create(ctx);
  DistMatrix<T> a(grid, point.size, point.size), b(grid, point.size, point.size);
  a.generate(o.seed);
  b.generate(o.seed + 1);
  MatmulOptions options;
  options.panel_width = o.panel_width;
  DistMatrix<T> c;
  time_repeats(ctx, o,
               [&](PhaseTimes* t) {
                 c = matmul(a, b, options, t);
                 ctx.queue().synchronize();
               },
               point);
  double local_sum = 0;
  for (T v : c.local_to_host()) local_sum += static_cast<double>(v);
  point.checksum = ctx.comm().allreduce(local_sum, ReduceOp::sum);
}

}  // namespace

void run_point(const Context& ctx, const Options& o, PointResult& point) {
  io::dispatch(o.dtype, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      if (o.op == sc::Op::matmul) return run_matmul_point<T>(ctx, o, point);
    }
    run_vector_point<T>(ctx, o, point);
  });
}

// Backend memory (device memory under cuda) for the device pings, zeroed so that every path moves

std::vector<ModeReport> plan_points(const Options& o) {
  std::vector<ModeReport> reports;
  for (const sc::Mode mode : o.modes) {
    const char* flag = mode == sc::Mode::strong ? "--n" : "--n-per-rank";
    ModeReport report{mode, mode == sc::Mode::strong ? *o.n : *o.n_per_rank, {}};
    for (const int ranks : o.ranks) {
      PointSeries series;
      series.ranks = ranks;
      index_t grown = 0;
      if (mode == sc::Mode::weak && o.op != sc::Op::matmul && __builtin_mul_overflow(report.size_arg, ranks, &grown))
        throw UsageError(std::string(flag) + ": " + std::to_string(report.size_arg) + " elements per rank at " +
                         std::to_string(ranks) + " ranks pass 2^63 - 1 elements");
      series.size = sc::problem_at(o.op, mode, report.size_arg, element_bytes(o.dtype), series.ranks).size;
      // A block whose byte count does not fit in 64 bits is refused here, alike on every rank.
      const long double elements = o.op == sc::Op::matmul
                                       ? static_cast<long double>(series.size) * series.size / series.ranks
                                       : std::ceil(static_cast<long double>(series.size) / series.ranks);
      if (elements * element_bytes(o.dtype) >= 0x1p64L)
        throw UsageError(std::string(flag) + ": the " + sc::to_string(mode) + "-scaling point at " +
                         std::to_string(series.ranks) + " rank(s) needs more than 2^64 bytes per rank");
      report.points.push_back(series);
    }
    reports.push_back(std::move(report));
  }
  return reports;
}

std::size_t largest_point_bytes(const Options& o, const std::vector<ModeReport>& plan) {
  long double largest = 0;
  const long double bytes = element_bytes(o.dtype);
  for (const ModeReport& report : plan)
    for (const PointSeries& series : report.points) {
      const long double n = static_cast<long double>(series.size), p = series.ranks;
      long double elements = 0;
      if (o.op == sc::Op::matmul) {
        int rows = 1, cols = 1;
        sc::grid_dims(series.ranks, rows, cols);
        const long double block_rows = std::ceil(n / rows), block_cols = std::ceil(n / cols);
        const long double panel = std::min<long double>(static_cast<long double>(o.panel_width), n);
        elements = 3 * block_rows * block_cols + 2 * panel * (block_rows + block_cols);  // A, B, C, two panels each
      } else {
        elements = 2 * std::ceil(n / p);  // the array and the operation's output
      }
      largest = std::max(largest, elements * bytes);
    }
  return largest >= static_cast<long double>(SIZE_MAX) ? SIZE_MAX : static_cast<std::size_t>(largest);
}

std::vector<ModeReport> measure_modes(const Context& world, const std::vector<Context>& contexts, const Options& o,
                                      std::vector<ModeReport> reports, Progress& progress, int rounds_done,
                                      const AfterRound& after_round) {
  // Every point runs once per round, in an order that rotates from round to round, so that a slow
  // spell of the machine (other jobs, a descheduled rank) lands on all points alike and shows as
  // spread instead of as one point's bias. Rounds go on past --rounds, up to --max-rounds, while a
  // point's 95% interval is wider than --max-spread of its median.
  const bool root = world.is_root();
  std::vector<std::pair<std::size_t, std::size_t>> slots;  // (mode, rank count) of each point
  for (std::size_t m = 0; m < reports.size(); ++m)
    for (std::size_t i = 0; i < reports[m].points.size(); ++i) slots.emplace_back(m, i);
  const auto more_rounds = [&](int round) {
    int more = 0;
    if (root && round < o.max_rounds) {
      more = round < o.rounds ? 1 : 0;
      for (const auto& report : reports)
        for (const auto& series : report.points)
          if (series.spread() > o.max_spread) more = 1;
    }
    return world.comm().bcast_value(more, 0) != 0;
  };
  if (rounds_done > 0) {
    if (rounds_done > o.rounds) progress.add(static_cast<std::size_t>(rounds_done - o.rounds) * slots.size());
    progress.credit(static_cast<std::size_t>(rounds_done) * slots.size());
    if (!more_rounds(rounds_done)) return reports;
    if (rounds_done >= o.rounds) progress.add(slots.size());
  }
  for (int round = rounds_done + 1;; ++round) {
    for (std::size_t k = 0; k < slots.size(); ++k) {
      const auto [m, i] = slots[(k + static_cast<std::size_t>(round - 1)) % slots.size()];
      PointSeries& series = reports[m].points[i];
      PointResult point;
      point.ranks = series.ranks;
      point.size = series.size;
      if (!contexts[i].is_null()) run_point(contexts[i], o, point);
      if (root) series.rounds.push_back(point);
      wait_for_all(world);
      progress.done("round " + std::to_string(round) + ": " + sc::to_string(reports[m].mode) + " at " +
                    std::to_string(point.ranks) + " ranks");
    }
    if (after_round) after_round(reports, round);
    if (!more_rounds(round)) break;
    if (round >= o.rounds) progress.add(slots.size());
  }
  return reports;
}

}  // namespace tessera::apps::scaling_study
