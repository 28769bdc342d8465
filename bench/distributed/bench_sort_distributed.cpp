// tessera_bench_sort_distributed: the distributed sort (tessera::sort, and sort_with_indices for an
// argsort) per step, in the shape of tessera_bench_distributed. For each key type and each size per
// rank: warm-up calls, then --iters timed calls after a barrier each; per size
//   total       the slowest rank's mean time of one call, and the global rate in Gkeys/s
//   steps       local sort, splitters, exchange, merge (the slowest rank's mean of each)
//   alone       the same keys sorted by kernels::sort_keys / sort_pairs by themselves on each rank
//               (the slowest rank's mean): x = total / alone is the cost of being distributed
//   exchange    the bytes each rank sent and received in the exchange over the exchange's time, next
//               to an alltoallv of the same number of bytes per rank, evenly spread over the peers,
//               measured alone through the same DeviceComm path: the exchange's share of that rate
//   wrong       ranks whose block is out of order, or out of order with the block before it
// Keys: random bit patterns (uniform over every value of the type; floating point NaN-free).
// Flags, per-call statistics, VALID/INVALID lines and the JSON report: the harness (bench/common).
//
//   mpirun -np 4 tessera_bench_sort_distributed --backend cuda --min 16M --max 256M --types uint32,float
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "app.hpp"
#include "cli.hpp"
#include "harness.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/environment.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/sort.hpp"

namespace tessera {
namespace {

struct Options {
  std::string backend = "auto";
  std::vector<std::string> types = {"int32", "float", "int64", "double"};
  bool no_argsort = false;
  int iters = 10;  // from the harness
  int warmup = 2;
};

// The harness's flags (sizes: --min/--max keys per rank, or -b/-e bytes per rank; -f, -n, -w,
// --json) and this benchmark's own.
void add_options(bench::Harness& h, Options& o) {
  h.allow_element_sizes(index_t(1) << 16, index_t(1) << 20);
  h.add_option({"--backend"}, "auto|cpu|cuda", "where local work runs (default auto)",
               [&o](std::string_view v) { o.backend = std::string(v); });
  h.add_option({"--types"}, "LIST", "of int32,uint32,float,int64,uint64,double (default int32,float,int64,double)",
               [&o](std::string_view v) {
                 o.types.clear();
                 std::stringstream ss{std::string(v)};
                 for (std::string item; std::getline(ss, item, ',');)
                   if (!item.empty()) o.types.push_back(item);
                 for (const auto& t : o.types)
                   if (t != "int32" && t != "uint32" && t != "float" && t != "int64" && t != "uint64" && t != "double")
                     throw UsageError("--types: unknown key type '" + t + "'");
               });
  h.add_switch({"--no-argsort"}, "keys only (default: keys, then keys with their global indices)", &o.no_argsort);
}

struct Row {
  std::string type, op, path;
  index_t per_rank = 0, global = 0;
  double total = 0, local_alone = 0;  // seconds, slowest rank's mean
  SortPhaseTimes steps;               // slowest rank's mean of each step; exchange_bytes: mean over ranks
  double exchange_gbs = 0, alltoall_gbs = 0;
  int wrong = 0;
  std::vector<double> samples;  // per timed call, the slowest rank's time
};

void add_row(bench::Harness& h, const Row& r);

// Random bits of the key type (NaN patterns of floating point replaced), element i from (seed, i).
template <class Key>
std::vector<Key> host_keys(index_t n, index_t global_offset, std::uint64_t seed) {
  using Bits = typename kernels::RadixKey<Key>::Bits;
  std::vector<Key> keys(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    Bits bits = static_cast<Bits>(counter_bits(seed, static_cast<std::uint64_t>(global_offset + i)));
    Key key;
    std::memcpy(&key, &bits, sizeof key);
    if constexpr (std::is_floating_point_v<Key>) {
      if (std::isnan(key)) key = Key(0);
    }
    keys[static_cast<std::size_t>(i)] = key;
  }
  return keys;
}

// Ranks whose block is out of order, or below the last key of the nearest non-empty block before it.
template <class Key>
int count_wrong(const Context& ctx, const DistArray<Key>& sorted) {
  const std::vector<Key> mine = sorted.local_to_host();
  int bad = 0;
  for (std::size_t i = 1; i < mine.size(); ++i)
    if (kernels::radix_bits(mine[i]) < kernels::radix_bits(mine[i - 1])) bad = 1;
  struct Ends {
    std::uint64_t first = 0, last = 0;
    std::int32_t has = 0;
  } ends;
  if (!mine.empty()) ends = {kernels::radix_bits(mine.front()), kernels::radix_bits(mine.back()), 1};
  const std::vector<Ends> all = ctx.comm().allgather(ends);
  std::uint64_t previous = 0;
  bool seen = false;
  for (int r = 0; r < ctx.size(); ++r) {
    const Ends& e = all[static_cast<std::size_t>(r)];
    if (!e.has) continue;
    if (r == ctx.rank() && seen && e.first < previous) bad = 1;
    previous = e.last;
    seen = true;
  }
  return ctx.comm().allreduce(bad, ReduceOp::sum);
}

double mean_max(const Context& ctx, double sum, int iters) { return ctx.comm().allreduce(sum / iters, ReduceOp::max); }

// An alltoallv of `bytes` per rank, spread evenly over the ranks (the rank's own share included, as
// in the sort), timed alone: the rate at which sent plus received bytes to and from other ranks move.
double alltoall_alone_gbs(const Context& ctx, std::size_t bytes, const Options& o) {
  const int ranks = ctx.size();
  if (ranks == 1) return 0;
  const std::size_t each = bytes / static_cast<std::size_t>(ranks);
  // Array memory, as the sort's exchange buffers (plain device memory under cuda).
  DistArray<char> send(ctx, Partition::block(static_cast<index_t>(each * ranks) * ranks, ranks));
  DistArray<char> recv(ctx, Partition::block(static_cast<index_t>(each * ranks) * ranks, ranks));
  // One message to and from each rank, as the sort's keys go (its values follow as a second one).
  std::vector<DeviceComm::Message> sends, recvs;
  for (int p = 0; p < ranks; ++p) {
    const std::size_t at = each * static_cast<std::size_t>(p);
    sends.push_back({p, send.local_data() + at, each});
    recvs.push_back({p, recv.local_data() + at, each});
  }
  const DeviceComm comm(ctx);
  for (int i = 0; i < o.warmup; ++i) comm.alltoallv(sends, recvs);
  ctx.queue().synchronize();
  double elapsed = 0;
  for (int i = 0; i < o.iters; ++i) {
    ctx.comm().barrier();
    Stopwatch watch;
    comm.alltoallv(sends, recvs);
    ctx.queue().synchronize();
    elapsed += watch.seconds();
  }
  const double seconds = mean_max(ctx, elapsed, o.iters);
  const double moved = 2.0 * static_cast<double>(each) * (ranks - 1);  // sent + received, other ranks only
  return moved / seconds / 1e9;
}

template <class Key>
void bench_type(const Context& ctx, const Options& o, const std::string& type, std::vector<Row>& rows,
                bench::Harness& h) {
  for (const index_t per_rank : h.sizes(sizeof(Key))) {
    const index_t global = per_rank * ctx.size();
    DistArray<Key> keys(ctx, global);
    keys.local_from_host(host_keys<Key>(keys.local_size(), keys.global_offset(), 20240611u));
    for (const bool with_indices : {false, true}) {
      if (with_indices && o.no_argsort) continue;
      Row r;
      r.type = type;
      r.op = with_indices ? "argsort" : "keys";
      r.path = to_string(DeviceComm(ctx).path());
      r.per_rank = per_rank;
      r.global = global;
      DistArray<Key> sorted;
      DistArray<index_t> indices;
      auto call = [&](SortPhaseTimes* steps) {
        if (with_indices) {
          SortedPairs<Key, index_t> both = sort_with_indices(keys, nullptr, steps);
          sorted = std::move(both.keys);
          indices = std::move(both.values);
        } else {
          sorted = sort(keys, nullptr, steps);
        }
        ctx.queue().synchronize();
      };
      for (int i = 0; i < o.warmup; ++i) call(nullptr);
      SortPhaseTimes sum;
      double elapsed = 0;
      std::vector<double> samples;
      for (int i = 0; i < o.iters; ++i) {
        ctx.comm().barrier();
        Stopwatch watch;
        call(&sum);
        samples.push_back(watch.seconds());
        elapsed += samples.back();
      }
      r.total = mean_max(ctx, elapsed, o.iters);
      r.samples = bench::slowest_rank(ctx, samples);
      r.steps.local_sort = mean_max(ctx, sum.local_sort, o.iters);
      r.steps.splitters = mean_max(ctx, sum.splitters, o.iters);
      r.steps.exchange = mean_max(ctx, sum.exchange, o.iters);
      r.steps.merge = mean_max(ctx, sum.merge, o.iters);
      r.steps.exchange_bytes = ctx.comm().allreduce(sum.exchange_bytes / o.iters, ReduceOp::sum) / ctx.size();
      r.wrong = count_wrong(ctx, sorted);
      sorted = DistArray<Key>();
      indices = DistArray<index_t>();

      // The local sort alone, on the same block.
      {
        const index_t n = keys.local_size();
        kernels::ScratchBuffer out(ctx.queue(), std::max<std::size_t>(1, sizeof(Key) * n));
        kernels::ScratchBuffer index_in(ctx.queue(), with_indices ? sizeof(index_t) * n : 1);
        kernels::ScratchBuffer index_out(ctx.queue(), with_indices ? sizeof(index_t) * n : 1);
        if (with_indices) kernels::iota(ctx.queue(), index_in.as<index_t>(), n, keys.global_offset());
        auto local = [&] {
          if (with_indices) {
            kernels::sort_pairs(ctx.queue(), keys.local_data(), out.as<Key>(), index_in.as<index_t>(),
                                index_out.as<index_t>(), n);
          } else {
            kernels::sort_keys(ctx.queue(), keys.local_data(), out.as<Key>(), n);
          }
          ctx.queue().synchronize();
        };
        for (int i = 0; i < o.warmup; ++i) local();
        double local_elapsed = 0;
        for (int i = 0; i < o.iters; ++i) {
          Stopwatch watch;
          local();
          local_elapsed += watch.seconds();
        }
        r.local_alone = mean_max(ctx, local_elapsed, o.iters);
      }
      if (ctx.size() > 1) {
        const std::size_t record = sizeof(Key) + (with_indices ? sizeof(index_t) : 0);
        r.exchange_gbs = r.steps.exchange > 0 ? r.steps.exchange_bytes / r.steps.exchange / 1e9 : 0;
        r.alltoall_gbs = alltoall_alone_gbs(ctx, record * static_cast<std::size_t>(per_rank), o);
      }
      if (ctx.rank() == 0) {
        auto ms = [](double s) { return s * 1e3; };
        std::printf("%-7s %-8s %11lld %13lld %9.3f %8.3f %8.3f %8.3f %8.3f %8.3f %9.3f %6.2f %8.1f %8.1f %5.0f%% %5d  %s\n",
                    r.type.c_str(), r.op.c_str(), static_cast<long long>(r.per_rank), static_cast<long long>(r.global),
                    ms(r.total), r.global / r.total / 1e9, ms(r.steps.local_sort), ms(r.steps.splitters),
                    ms(r.steps.exchange), ms(r.steps.merge), ms(r.local_alone), r.total / r.local_alone,
                    r.exchange_gbs, r.alltoall_gbs, r.alltoall_gbs > 0 ? 100.0 * r.exchange_gbs / r.alltoall_gbs : 0.0,
                    r.wrong, r.path.c_str());
        std::fflush(stdout);
      }
      add_row(h, r);
      rows.push_back(r);
      kernels::release_cached_memory();
    }
  }
}

// The harness's row: the fields, the slowest rank's time per call, the exchange's share of the
// all-to-all alone (with more than one rank), VALID when no rank's block is out of order.
void add_row(bench::Harness& h, const Row& r) {
  bench::Row& row = h.row(r.type + " " + r.op + " n_per_rank=" + std::to_string(r.per_rank));
  row.set("type", r.type)
      .set("op", r.op)
      .set("per_rank", r.per_rank)
      .set("global", r.global)
      .set("total_s", r.total)
      .set("gkeys_per_s", r.global / r.total / 1e9)
      .set("local_sort_s", r.steps.local_sort)
      .set("splitters_s", r.steps.splitters)
      .set("exchange_s", r.steps.exchange)
      .set("merge_s", r.steps.merge)
      .set("local_alone_s", r.local_alone)
      .set("exchange_gbs", r.exchange_gbs)
      .set("alltoall_alone_gbs", r.alltoall_gbs)
      .set("wrong", r.wrong)
      .set("path", r.path);
  row.time(r.samples);
  if (r.alltoall_gbs > 0) row.share("alltoall_alone", r.exchange_gbs / r.alltoall_gbs);
  row.verdict(r.wrong == 0, std::to_string(r.wrong) + " ranks out of order");
  h.print_pending();
}

int run(int argc, char** argv) {
  Runtime runtime(argc, argv);
  bench::Harness h("tessera_bench_sort_distributed",
                   "The distributed sort (tessera::sort, sort_with_indices for an argsort) per step, next to the\n"
                   "local sort alone and the all-to-all alone. Sizes: keys per rank (--min/--max, default 64K to\n"
                   "1M) or bytes of keys per rank (-b/-e).",
                   {.minbytes = index_t(256) << 10, .maxbytes = index_t(4) << 20, .stepfactor = 4, .iters = 10, .warmup = 2});
  h.set_root(runtime.world_rank() == 0);
  Options o;
  Context ctx;
  try {
    add_options(h, o);
    if (!h.parse(argc, argv)) return 0;
    o.iters = h.iters();
    o.warmup = h.warmup();
    ctx = runtime.start(parse_backend_choice(o.backend));
    if (!h.json_path().empty()) apps::for_flag("--json", [&] { io::check_output_file(ctx, h.json_path()); });
  } catch (const UsageError& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "tessera_bench_sort_distributed: %s\n", e.what());
    return 2;
  }
  h.configuration()["ranks"] = ctx.size();
  h.configuration()["backend"] = runtime.describe();
  h.configuration()["device_path"] = to_string(DeviceComm(ctx).path());
  h.set_environment(bench::environment_json(describe_environment(ctx)));
  if (ctx.rank() == 0) {
    std::printf("# tessera_bench_sort_distributed: %s\n# times in ms: the slowest rank's mean over %d calls; "
                "local = the local-sort step; alone = kernels::sort_keys / sort_pairs by themselves; x = total / alone\n",
                runtime.describe().c_str(), o.iters);
    std::printf("%-7s %-8s %11s %13s %9s %8s %8s %8s %8s %8s %9s %6s %8s %8s %6s %5s  %s\n", "type", "op", "per rank",
                "global", "total", "Gkeys/s", "local", "split", "exchange", "merge", "alone", "x", "exch GB/s",
                "a2a GB/s", "share", "wrong", "path");
  }
  std::vector<Row> rows;
  for (const auto& t : o.types) {
    if (t == "int32") bench_type<std::int32_t>(ctx, o, t, rows, h);
    else if (t == "uint32") bench_type<std::uint32_t>(ctx, o, t, rows, h);
    else if (t == "float") bench_type<float>(ctx, o, t, rows, h);
    else if (t == "int64") bench_type<std::int64_t>(ctx, o, t, rows, h);
    else if (t == "uint64") bench_type<std::uint64_t>(ctx, o, t, rows, h);
    else bench_type<double>(ctx, o, t, rows, h);
  }
  int wrong = 0;
  for (const Row& r : rows) wrong += r.wrong;
  if (ctx.rank() == 0) std::printf("# %zu results, %d with ranks out of order\n", rows.size(), wrong);
  try {
    if (!h.json_path().empty()) apps::write_json_report(ctx, h.json_path(), h.report());
  } catch (const UsageError& e) {
    if (ctx.rank() == 0) std::fprintf(stderr, "tessera_bench_sort_distributed: %s\n", e.what());
    return 2;
  }
  return h.finish(/*written_elsewhere=*/true);
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::run(argc, argv); }
