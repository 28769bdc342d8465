// scaling: strong and weak scaling of one distributed operation from a single launch of P ranks.
// Each point runs on the sub-communicator of the first p ranks (the others wait, asleep, at a world
// barrier), once per round, in rounds until the 95% interval of each point's median is known; a
// projection whose model misses a held-out point beyond --max-fit-error is withheld. The analysis
// (Amdahl, Karp-Flatt, Gustafson, the cost model and its projection) lives in
// model/scaling.hpp and is explained in docs/SCALING.md. The driver's parts:
//   options.cpp      the command line (on the apps' shared parser, apps/common)
//   pings.cpp        the latency and bandwidth pings of the network models
//   measurement.cpp  the points, their rounds and medians
//   two_level.cpp    the two levels of the network (within a node, among nodes)
//   report.cpp       the analysis, the table, the JSON and the CSV
//   resume.cpp       --checkpoint and --restart: the rounds so far, and a study that goes on from them
//   probe.cpp        --probe-gpus
#include <mpi.h>
#include <sys/stat.h>

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "app.hpp"
#include "measurement.hpp"
#include "options.hpp"
#include "pings.hpp"
#include "probe.hpp"
#include "report.hpp"
#include "resume.hpp"
#include "tessera/build_config.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/memory.hpp"
#include "two_level.hpp"
#include "tessera/framework/io.hpp"

namespace apps = tessera::apps;
namespace study = tessera::apps::scaling_study;
namespace sc = tessera::scaling;

namespace {

int run(tessera::Runtime& runtime, int argc, char** argv) {
  apps::ArgParser parser = study::make_parser();
  const study::Options o = study::parse_options(parser, argc, argv, runtime.world_size());
  const bool root = runtime.world_rank() == 0;
  if (o.help) {
    if (root) std::fputs(parser.help_text().c_str(), stdout);
    return apps::kExitOk;
  }
  if (o.version) {
    if (root)
      std::printf("tessera-scaling (Tessera) %s, cuda %d, nccl %d, parallel hdf5 %d\n", apps::version_text().c_str(),
                  TESSERA_HAVE_CUDA, TESSERA_HAVE_NCCL, TESSERA_HDF5_PARALLEL);
    return apps::kExitOk;
  }
  if (o.probe_gpus) return study::probe_gpus(runtime, o.threads);
  // Everything the study can refuse is refused here, before the first progress line: the outputs,
  // the sizes of every point and the memory the largest one takes.
  study::check_outputs_writable(o, tessera::Communicator::borrow(MPI_COMM_WORLD));
  std::vector<study::ModeReport> plan = study::plan_points(o);
  const tessera::Context world = runtime.start(tessera::parse_backend_choice(o.backend), o.threads);
  tessera::require_memory(world, study::largest_point_bytes(o, plan),
                          std::string(o.modes.size() > 1 ? "--n/--n-per-rank" : o.modes[0] == sc::Mode::strong ? "--n" : "--n-per-rank") +
                              ": the largest point of the study");
  if (root && !o.quiet) std::fprintf(stderr, "tessera-scaling: %s\n", runtime.describe().c_str());

  // Progress: the pings, then every point once per round (at least --rounds rounds).
  study::Progress progress(root && !o.quiet, 1 + o.ranks.size() * (1 + o.modes.size() * static_cast<std::size_t>(o.rounds)));

  // Sub-communicators once: each point of each mode reuses them.
  std::vector<tessera::Context> contexts;
  for (int p : o.ranks) contexts.push_back(world.first(p));

  // A resumed study: the rounds its checkpoint holds (resume.hpp), measured on the points of this plan: read
  // before anything is measured, so that a checkpoint of another study is refused at once.
  const tessera::Context root_only = world.first(1);
  const std::string signature = study::study_signature(o, plan, world.size(), tessera::to_string(world.backend()));
  int rounds_done = 0;
  std::string restart = o.restart;
  if (restart == "auto") {
    struct stat st {};
    int exists = root && ::stat(o.checkpoint.c_str(), &st) == 0 ? 1 : 0;
    exists = world.comm().bcast_value(exists, 0);
    restart = exists ? o.checkpoint : "";
  }
  if (!restart.empty()) {
    rounds_done = study::restore_rounds(world, root_only, restart, plan, signature);
    if (root && !o.quiet)
      std::fprintf(stderr, "tessera-scaling: resumed from %s after %d round%s\n", restart.c_str(), rounds_done,
                   rounds_done == 1 ? "" : "s");
  }
  // The machine: the pings of the network models and the operation's own collectives at every
  // group size, then the node-sharing probe at 1..G ranks of node 0.
  const tessera::CollectivePlan op_plan = study::operation_plan(o.op, o.dtype);
  study::Machine machine;
  for (std::size_t i = 0; i < o.ranks.size(); ++i) {
    sc::CollectiveSample s;
    std::vector<sc::CollectiveTiming> timed;
    if (!contexts[i].is_null()) {
      s = study::ping(contexts[i], o.ping_bytes);
      if (o.ranks[i] > 1) timed = study::time_plan(contexts[i], op_plan);
    }
    if (root) {
      machine.samples.push_back(s);
      machine.collectives.insert(machine.collectives.end(), timed.begin(), timed.end());
    }
    study::wait_for_all(world);
    progress.done("collectives at " + std::to_string(o.ranks[i]) + " ranks");
  }
  const std::vector<sc::CollectiveSample>& samples = machine.samples;

  // The two levels of the network: collectives within one node and among the nodes (two_level.hpp).
  const auto layout = apps::two_level::discover_layout(world);
  machine.ranks_per_node = layout.ranks_per_node;
  {
    const std::int64_t probe_bytes =
        o.probe_bytes >= 0 ? o.probe_bytes : (world.backend() == tessera::Backend::cuda ? std::int64_t(1) << 30 : std::int64_t(64) << 20);
    study::SharingProbe probe = study::probe_node_sharing(world, layout.block ? layout.ranks_per_node : 1, probe_bytes);
    machine.sharing = probe.sharing;
    machine.probe_repetitions = std::move(probe.repetitions);
    progress.done("node-sharing probe at 1.." + std::to_string(layout.ranks_per_node) + " ranks");
  }
  const auto level_samples = apps::two_level::measure(world, layout, o.ping_bytes);

  study::AfterRound save;
  if (!o.checkpoint.empty())
    save = [&](const std::vector<study::ModeReport>& so_far, int done) {
      study::save_rounds(world, root_only, o.checkpoint, so_far, done, signature);
    };
  const std::vector<study::ModeReport> reports =
      study::measure_modes(world, contexts, o, std::move(plan), progress, rounds_done, save);
  if (!root) return 0;

  std::vector<study::ModeAnalysis> analyses;
  for (const auto& r : reports) analyses.push_back(study::analyse_mode(o, r, machine));
  study::print_collectives(stdout, o, runtime, world, samples);
  study::print_machine(stdout, machine);
  for (const auto& a : analyses) study::print_mode(stdout, o, a);
  apps::Json j = study::run_json(o, runtime, world, samples, reports, analyses);
  j["machine"] = study::machine_json(machine);
  const std::string verdict = study::overall_verdict(o, analyses);
  j["model_check_verdict"] = verdict;
  apps::two_level::Study levels{o.op, study::element_bytes(o.dtype), o.panel_width, study::operation_plan(o.op, o.dtype),
                                samples, machine.sharing, {}};
  for (const auto& r : reports)
    levels.modes.push_back({r.mode, r.size_arg, study::critical_path(study::measurements(r), machine, levels.plan)});
  j["two_level"] = apps::two_level::report(layout, level_samples, levels, stdout);
  std::printf("\ntessera-scaling: %s\n", verdict.c_str());
  std::fflush(stdout);

  int status = 0;
  const auto write = [&](const char* flag, const std::string& path, const std::string& text) {
    if (path.empty()) return;
    const std::string problem = tessera::io::write_whole_file(path, text);
    if (problem.empty()) return;
    std::fprintf(stderr, "tessera-scaling: %s: %s\n", flag, problem.c_str());
    status = apps::kExitUsage;
  };
  write("--json", o.json, j.dump(2) + "\n");
  write("--csv", o.csv, study::run_csv(o, reports));
  write("--model-inputs", o.model_inputs, study::model_inputs_text(o, machine, analyses));
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  // The apps' error policy (apps/common/app.hpp): bad input, found alike on every rank, is one line
  // on rank 0 and exit status 2; anything else may be on one rank only, so it ends the whole job
  // rather than leave the other ranks waiting in a collective.
  try {
    return run(runtime, argc, argv);
  } catch (const tessera::UsageError& e) {
    if (runtime.world_rank() == 0) {
      std::fprintf(stderr, "tessera-scaling: %s\n", e.what());
      std::fflush(stderr);
    }
    return apps::kExitUsage;
  } catch (const std::bad_alloc& e) {
    // A point that does not fit in memory, maybe on this rank only: one line from this rank, and the
    // whole job ends with the usage status.
    std::fprintf(stderr, "tessera-scaling: out of memory on rank %d: %s (lower --n or --n-per-rank)\n",
                 runtime.world_rank(),
                 dynamic_cast<const tessera::OutOfMemory*>(&e) ? e.what() : "cannot allocate host memory");
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, apps::kExitUsage);
    return apps::kExitUsage;
  } catch (const std::exception& e) {
    tessera::fatal(__FILE__, __LINE__, "scaling", e.what());
  }
}
