// The command line of tessera-scaling: what is measured (--op, --mode, sizes, rank counts), how
// often (--repeat, --rounds, --max-rounds, --max-spread), what the analysis accepts
// (--max-fit-error), and where the reports go. Parsed with the apps' shared ArgParser; parsing is
// deterministic, so every rank reaches the same verdict without talking to the others.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "tessera/framework/io.hpp"
#include "model/scaling.hpp"

namespace tessera::apps::scaling_study {

// The largest --ping-bytes: 2^28 doubles, the most one allreduce of the ping moves.
inline constexpr index_t kMaxPingBytes = index_t(1) << 31;

struct Options {
  scaling::Op op = scaling::Op::sum;
  std::vector<scaling::Mode> modes{scaling::Mode::strong};
  std::optional<index_t> n, n_per_rank;
  std::vector<int> ranks;  // empty: powers of two up to P, and P
  int repeat = 3;          // timed calls per point per round
  int warmup = 1;
  int rounds = 6;          // rounds over all points, at least ...
  int max_rounds = 12;     // ... and at most, while some point's spread is above max_spread
  double max_spread = 0.2;     // a point is noisy when its 95% interval is wider than this x its median
  double max_fit_error = 0.25; // a fit or model check off by more than this (relative) is not used
  std::string json, csv;
  std::string backend = "auto";
  io::DType dtype = io::DType::float32;
  index_t panel_width = 512;
  index_t ping_bytes = index_t(4) << 20;  // at most kMaxPingBytes
  index_t probe_bytes = -1;  // per rank, the node-sharing probe's buffer (0: no probe; -1: 64M on cpu, 1G on cuda)
  std::string model_inputs;  // --model-inputs: the model's inputs and predictions as text
  std::string checkpoint;    // --checkpoint: the rounds so far, written after every round (resume.hpp)
  std::string restart;       // --restart: a checkpoint to continue from, or "auto" (the --checkpoint file where it exists)
  std::uint64_t seed = 42;
  bool probe_gpus = false;
  int threads = 0;  // OpenMP threads per rank; 0: OMP_NUM_THREADS, else the runtime's choice
  bool quiet = false;
  bool help = false;
  bool version = false;
};

// The parser of tessera-scaling's command line, with its summary for --help.
ArgParser make_parser();

// Registers the flags on `parser`, parses argv and fills in the defaults that depend on the
// operation and on the job's size. Throws UsageError for bad input.
Options parse_options(ArgParser& parser, int argc, char** argv, int world_size);

// "1,2,4" -> {1, 2, 4}: sorted, without duplicates, each in [1, world_size]; UsageError naming
// --ranks otherwise.
std::vector<int> parse_rank_list(std::string_view text, int world_size);

inline int element_bytes(io::DType dtype) { return static_cast<int>(io::size_of(dtype)); }

}  // namespace tessera::apps::scaling_study
