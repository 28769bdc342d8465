#include "options.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tessera/framework/runtime.hpp"

namespace tessera::apps::scaling_study {
namespace sc = tessera::scaling;

ArgParser make_parser() {
  return ArgParser("tessera-scaling",
                   "Strong and weak scaling of one distributed operation over the sub-communicators of one "
                   "launch,\nwith the Amdahl, Karp-Flatt and Gustafson analysis and the cost-model projection "
                   "(docs/SCALING.md).\nSizes (--n, --n-per-rank, --ping-bytes) take 1000000, 1e6, 2^20, 64M, 1G.");
}

std::vector<int> parse_rank_list(std::string_view text, int world_size) {
  if (text.empty()) throw UsageError("--ranks: empty list");
  std::vector<int> ranks;
  for (std::size_t begin = 0;;) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view item = text.substr(begin, comma - begin);
    if (item.empty()) throw UsageError("--ranks: empty entry in '" + std::string(text) + "'");
    const auto p = parse_integer(item, "--ranks", 1, std::numeric_limits<int>::max());
    if (p > world_size)
      throw UsageError("--ranks: " + std::string(item) + " ranks asked for, but the job has only " +
                       std::to_string(world_size));
    ranks.push_back(static_cast<int>(p));
    if (comma == text.size()) break;
    begin = comma + 1;
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  return ranks;
}

namespace {

void add_options(ArgParser& p, Options& o, int world_size) {
  p.add_option("--op", "sum|scan|filter|matmul", "the operation measured (default sum)",
               [&o](std::string_view v) { o.op = sc::parse_op(std::string(v)); });
  p.add_option("--mode", "strong|weak|both", "which scaling study (default strong)", [&o](std::string_view v) {
    if (v == "strong") o.modes = {sc::Mode::strong};
    else if (v == "weak") o.modes = {sc::Mode::weak};
    else if (v == "both") o.modes = {sc::Mode::strong, sc::Mode::weak};
    else throw UsageError("--mode: unknown mode '" + std::string(v) + "' (expected strong, weak or both)");
  });
  p.add_option("--n", "N",
               "strong scaling: global elements (matmul: matrix side) (default 2^22; matmul 512)",
               [&o](std::string_view v) { o.n = parse_size(v, "--n"); });
  p.add_option("--n-per-rank", "N",
               "weak scaling: elements per rank (matmul: side at 1 rank, grows as p^(1/3))\n" +
                   std::string(34, ' ') + "(default 2^20; matmul 256)",
               [&o](std::string_view v) { o.n_per_rank = parse_size(v, "--n-per-rank"); });
  p.add_option("--ranks", "1,2,4,...", "sub-communicator sizes to measure (default: 1, 2, 4, ... up to P, and P)",
               [&o, world_size](std::string_view v) { o.ranks = parse_rank_list(v, world_size); });
  p.add_option("--repeat", "R", "timed calls per point in each round; a round's time is their median (default 3)",
               [&o](std::string_view v) { o.repeat = static_cast<int>(parse_integer(v, "--repeat", 1, 1000000)); });
  p.add_option("--rounds", "K",
               "rounds over all points, at least (default 6); a point's time is the median over rounds",
               [&o](std::string_view v) { o.rounds = static_cast<int>(parse_integer(v, "--rounds", 1, 100000)); });
  p.add_option("--max-rounds", "K", "more rounds, up to K, while a point is noisy (default 12, at least --rounds)",
               [&o](std::string_view v) { o.max_rounds = static_cast<int>(parse_integer(v, "--max-rounds", 1, 100000)); });
  p.add_option("--max-spread", "F",
               "a point whose 95% interval of the median is wider than F x the median is noisy (default 0.2)",
               [&o](std::string_view v) {
                 o.max_spread = parse_real(v, "--max-spread");
                 if (!(o.max_spread >= 0) || !std::isfinite(o.max_spread))
                   throw UsageError("--max-spread: '" + std::string(v) + "' is not a non-negative number");
               });
  p.add_option("--max-fit-error", "F",
               "no projection when the model misses a held-out point by more than F (relative),\n" +
                   std::string(34, ' ') + "and a fit off by more than F is marked as not describing the points (default 0.25)",
               [&o](std::string_view v) {
                 o.max_fit_error = parse_real(v, "--max-fit-error");
                 if (!(o.max_fit_error >= 0) || !std::isfinite(o.max_fit_error))
                   throw UsageError("--max-fit-error: '" + std::string(v) + "' is not a non-negative number");
               });
  add_warmup_option(p, &o.warmup);
  p.add_option("--json", "FILE", "write the JSON report to FILE", [&o](std::string_view v) { o.json = v; });
  p.add_option("--csv", "FILE", "write one CSV row per measured point to FILE", [&o](std::string_view v) { o.csv = v; });
  p.add_option("--backend", "auto|cpu|cuda", "where local work runs (default auto)", [&o](std::string_view v) {
    parse_backend_choice(v);  // refuses what it does not know, naming it
    o.backend = v;
  });
  add_threads_option(p, &o.threads);
  p.add_option("--dtype", "float32|float64|int32|int64", "element type (default float32)", [&o](std::string_view v) {
    const auto dtype = io::parse_dtype(v);
    if (!dtype)
      throw UsageError("--dtype: unknown type '" + std::string(v) + "' (expected float32, float64, int32 or int64)");
    o.dtype = *dtype;
  });
  p.add_option("--panel-width", "B", "matmul: SUMMA panel width (default 512)", [&o](std::string_view v) {
    o.panel_width = parse_count(v, "--panel-width", 1, std::numeric_limits<index_t>::max());
  });
  p.add_option("--ping-bytes", "BYTES", "size of the bandwidth-bound allreduce ping (default 4M)",
               [&o](std::string_view v) {
                 o.ping_bytes = parse_size(v, "--ping-bytes");
                 if (o.ping_bytes < 8)
                   throw UsageError("--ping-bytes: '" + std::string(v) + "' is less than one double (8 bytes)");
                 if (o.ping_bytes > kMaxPingBytes)
                   throw UsageError("--ping-bytes: '" + std::string(v) + "' is more than 2G, the largest ping");
               });
  p.add_option("--probe-bytes", "BYTES",
               "per rank, the buffer the node-sharing probe streams at 1..G ranks of node 0 at once "
               "(default 64M under cpu, larger than a CPU's caches, and 1G under cuda; 0: no probe, every rank charged its one-rank rate)",
               [&o](std::string_view v) {
                 o.probe_bytes = parse_size(v, "--probe-bytes");
                 if (o.probe_bytes > kMaxPingBytes)
                   throw UsageError("--probe-bytes: '" + std::string(v) + "' is more than 2G per rank");
               });
  p.add_option("--model-inputs", "FILE",
               "write the cost model's inputs (points, probe, collectives, network) and its predictions as "
               "text, for replaying the model (tests/scaling/data)",
               [&o](std::string_view v) { o.model_inputs = std::string(v); });
  p.add_option("--checkpoint", "FILE.h5",
               "after every round, write the rounds measured so far to FILE.h5 (rewritten whole, under a\n" +
                   std::string(34, ' ') + "temporary name first), for --restart",
               [&o](std::string_view v) { o.checkpoint = std::string(v); });
  p.add_option("--restart", "FILE.h5|auto",
               "continue the study whose rounds FILE.h5 holds (the same op, type, points, --repeat, --seed,\n" +
                   std::string(34, ' ') + "backend and job size) with its next round; auto: the --checkpoint file where it exists",
               [&o](std::string_view v) { o.restart = std::string(v); });
  p.add_option("--seed", "S", "generator seed: element i depends on (S, i) only (default 42)",
               [&o](std::string_view v) { o.seed = parse_unsigned(v, "--seed"); });
  p.add_switch("--quiet", "no progress lines on stderr", &o.quiet);
  p.add_switch("--probe-gpus",
               "print each rank's host, node-local rank, CUDA_VISIBLE_DEVICES, the GPU the runtime\n" +
                   std::string(34, ' ') + "binds (local_rank % visible devices), its CPUs and OpenMP threads, then exit",
               &o.probe_gpus);
  p.add_switch("--help", "print this help", &o.help);
  p.add_switch("--version", "print the version", &o.version);
}

}  // namespace

Options parse_options(ArgParser& parser, int argc, char** argv, int world_size) {
  Options o;
  add_options(parser, o, world_size);
  // -h, the one short flag scaling has always taken; ArgParser knows only --flags.
  if (argc == 2 && std::string_view(argv[1]) == "-h") {
    o.help = true;
    return o;
  }
  parser.parse(argc, argv);
  if (o.help || o.version) return o;
  const bool matmul = o.op == sc::Op::matmul;
  if (matmul && (o.dtype == io::DType::int32 || o.dtype == io::DType::int64))
    throw UsageError(std::string("--dtype ") + io::to_string(o.dtype) + ": matmul runs on float32 or float64 only");
  if (parser.given("--max-rounds") && o.max_rounds < o.rounds)
    throw UsageError("--max-rounds: " + std::to_string(o.max_rounds) + " is less than --rounds " + std::to_string(o.rounds));
  o.max_rounds = std::max(o.max_rounds, o.rounds);
  if (o.restart == "auto" && o.checkpoint.empty())
    throw UsageError("--restart auto: continues from the --checkpoint file; give --checkpoint FILE.h5 too");
  if (!o.n) o.n = matmul ? 512 : index_t(1) << 22;
  if (!o.n_per_rank) o.n_per_rank = matmul ? 256 : index_t(1) << 20;
  if (o.ranks.empty()) {
    for (int p = 1; p < world_size; p *= 2) o.ranks.push_back(p);
    o.ranks.push_back(world_size);
  }
  return o;
}

}  // namespace tessera::apps::scaling_study
