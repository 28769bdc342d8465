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
#include "tessera/framework/algorithms.hpp"
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
  bool argsort = true;
  index_t min_elements = index_t(1) << 16;  // per rank
  index_t max_elements = index_t(1) << 20;
  index_t step_factor = 4;
  int iters = 10;
  int warmup = 2;
  std::string json;
};

const char* kUsage =
    "usage: tessera_bench_sort_distributed [flags]   (under mpirun / srun, one rank per GPU)\n"
    "  --backend auto|cpu|cuda      where local work runs (default auto)\n"
    "  --types LIST                 of int32,uint32,float,int64,uint64,double (default int32,float,int64,double)\n"
    "  --no-argsort                 keys only (default: keys, then keys with their global indices)\n"
    "  --min N, --max N             keys per rank (K, M, G: 1024^k; default 64K to 1M)\n"
    "  -f, --stepfactor F           multiply the size by F from one step to the next (default 4)\n"
    "  -n, --iters I                timed calls per size (default 10)\n"
    "  -w, --warmup W               untimed calls before them (default 2)\n"
    "  --json FILE                  write the results as JSON\n"
    "  -h, --help                   print this help\n";

Options parse(int argc, char** argv, bool* help) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(flag + ": missing value");
      return argv[++i];
    };
    if (flag == "--backend") o.backend = value();
    else if (flag == "--types") {
      o.types.clear();
      std::stringstream ss(value());
      for (std::string item; std::getline(ss, item, ',');)
        if (!item.empty()) o.types.push_back(item);
    } else if (flag == "--no-argsort") o.argsort = false;
    else if (flag == "--min") o.min_elements = apps::parse_size(value(), flag);
    else if (flag == "--max") o.max_elements = apps::parse_size(value(), flag);
    else if (flag == "-f" || flag == "--stepfactor") o.step_factor = apps::parse_size(value(), flag);
    else if (flag == "-n" || flag == "--iters") o.iters = static_cast<int>(std::min<index_t>(apps::parse_size(value(), flag), 1 << 30));
    else if (flag == "-w" || flag == "--warmup") o.warmup = static_cast<int>(std::min<index_t>(apps::parse_size(value(), flag), 1 << 30));
    else if (flag == "--json") o.json = value();
    else if (flag == "--help" || flag == "-h") *help = true;
    else throw UsageError("unknown flag '" + flag + "' (see --help)");
  }
  for (const auto& t : o.types)
    if (t != "int32" && t != "uint32" && t != "float" && t != "int64" && t != "uint64" && t != "double")
      throw UsageError("--types: unknown key type '" + t + "'");
  if (o.iters < 1) throw UsageError("--iters must be at least 1");
  if (o.step_factor < 2) throw UsageError("-f/--stepfactor: must be at least 2");
  if (o.min_elements < 1 || o.max_elements < o.min_elements) throw UsageError("--min/--max: need 1 <= min <= max");
  return o;
}

struct Row {
  std::string type, op, path;
  index_t per_rank = 0, global = 0;
  double total = 0, local_alone = 0;  // seconds, slowest rank's mean
  SortPhaseTimes steps;               // slowest rank's mean of each step; exchange_bytes: mean over ranks
  double exchange_gbs = 0, alltoall_gbs = 0;
  int wrong = 0;
};

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
void bench_type(const Context& ctx, const Options& o, const std::string& type, std::vector<Row>& rows) {
  for (index_t per_rank = o.min_elements; per_rank <= o.max_elements; per_rank *= o.step_factor) {
    const index_t global = per_rank * ctx.size();
    DistArray<Key> keys(ctx, global);
    keys.local_from_host(host_keys<Key>(keys.local_size(), keys.global_offset(), 20240611u));
    for (const bool with_indices : {false, true}) {
      if (with_indices && !o.argsort) continue;
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
      for (int i = 0; i < o.iters; ++i) {
        ctx.comm().barrier();
        Stopwatch watch;
        call(&sum);
        elapsed += watch.seconds();
      }
      r.total = mean_max(ctx, elapsed, o.iters);
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
      rows.push_back(r);
      kernels::release_cached_memory();
    }
  }
}

apps::Json rows_json(const std::string& device, int ranks, const std::vector<Row>& rows) {
  apps::Json list = apps::Json::array();
  for (const Row& r : rows) {
    apps::Json row = apps::Json::object();
    row["type"] = r.type;
    row["op"] = r.op;
    row["per_rank"] = r.per_rank;
    row["global"] = r.global;
    row["total_s"] = r.total;
    row["gkeys_per_s"] = r.global / r.total / 1e9;
    row["local_sort_s"] = r.steps.local_sort;
    row["splitters_s"] = r.steps.splitters;
    row["exchange_s"] = r.steps.exchange;
    row["merge_s"] = r.steps.merge;
    row["local_alone_s"] = r.local_alone;
    row["exchange_gbs"] = r.exchange_gbs;
    row["alltoall_alone_gbs"] = r.alltoall_gbs;
    row["wrong"] = r.wrong;
    row["path"] = r.path;
    list.push_back(row);
  }
  apps::Json j = apps::Json::object();
  j["benchmark"] = "tessera_bench_sort_distributed";
  j["ranks"] = ranks;
  j["device"] = device;
  j["rows"] = list;
  return j;
}

int run(int argc, char** argv) {
  Runtime runtime(argc, argv);
  bool help = false;
  Options o;
  Context ctx;
  try {
    o = parse(argc, argv, &help);
    if (help) {
      if (runtime.world_rank() == 0) std::fputs(kUsage, stdout);
      return 0;
    }
    ctx = runtime.start(parse_backend_choice(o.backend));
    if (!o.json.empty()) apps::for_flag("--json", [&] { io::check_output_file(ctx, o.json); });
  } catch (const UsageError& e) {
    if (runtime.world_rank() == 0) std::fprintf(stderr, "tessera_bench_sort_distributed: %s\n", e.what());
    return 2;
  }
  const std::string device = kernels::describe_device(ctx.queue());
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
    if (t == "int32") bench_type<std::int32_t>(ctx, o, t, rows);
    else if (t == "uint32") bench_type<std::uint32_t>(ctx, o, t, rows);
    else if (t == "float") bench_type<float>(ctx, o, t, rows);
    else if (t == "int64") bench_type<std::int64_t>(ctx, o, t, rows);
    else if (t == "uint64") bench_type<std::uint64_t>(ctx, o, t, rows);
    else bench_type<double>(ctx, o, t, rows);
  }
  int wrong = 0;
  for (const Row& r : rows) wrong += r.wrong;
  if (ctx.rank() == 0) std::printf("# %zu results, %d with ranks out of order\n", rows.size(), wrong);
  if (!o.json.empty()) {
    try {
      apps::write_json_report(ctx, o.json, rows_json(device, ctx.size(), rows));
    } catch (const UsageError& e) {
      if (ctx.rank() == 0) std::fprintf(stderr, "tessera_bench_sort_distributed: %s\n", e.what());
      return 2;
    }
  }
  return wrong ? 1 : 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::run(argc, argv); }
