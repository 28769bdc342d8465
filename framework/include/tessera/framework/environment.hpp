// What a run ran on: the library versions and the devices of the job, the same for every report
// (the apps' and the benchmarks' JSON "environment" block, and their tables). Collective.
#pragma once

#include <string>
#include <vector>

#include "tessera/framework/context.hpp"

namespace tessera {

struct Environment {
  std::string tessera;       // the library's version
  std::string mpi;           // MPI_Get_library_version's first line ("Open MPI v4.1.4, ...")
  std::string hdf5;          // "1.10.8" and whether the library is parallel: "1.10.8 (parallel)"
  std::string cuda_runtime;  // "13.0" (the runtime the build links), empty without CUDA in the build
  std::string cuda_driver;   // the machine's driver, as CUDA numbers it ("13.0"); empty without one
  std::string nccl;          // "2.28.3", empty without NCCL in the build
  std::vector<std::string> devices;  // the distinct devices the job's ranks drive, in rank order ("cpu")
};

// Collective over ctx (the devices of all its ranks); every rank gets the same answer.
Environment describe_environment(const Context& ctx);

}  // namespace tessera
