// The environment block of the reports (environment.hpp).
#include "tessera/framework/environment.hpp"

#include <hdf5.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "tessera/build_config.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/kernels/queue.hpp"
#include "transport.hpp"

namespace tessera {
namespace {

std::string cuda_version_text(int v) {
  return v > 0 ? std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) : std::string();
}

}  // namespace

Environment describe_environment(const Context& ctx) {
  Environment e;
  e.tessera = TESSERA_VERSION_STRING;
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  TESSERA_MPI_CHECK(MPI_Get_library_version(library, &length));
  e.mpi = std::string(library, strnlen(library, static_cast<std::size_t>(std::max(length, 0))));  // no NUL
  e.mpi = e.mpi.substr(0, e.mpi.find('\n'));
  unsigned major = 0, minor = 0, release = 0;
  if (H5get_libversion(&major, &minor, &release) >= 0)
    e.hdf5 = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release) +
             (TESSERA_HDF5_PARALLEL ? " (parallel)" : " (serial)");
  const kernels::CudaVersions cuda = kernels::cuda_versions();
  e.cuda_runtime = cuda_version_text(cuda.runtime);
  e.cuda_driver = cuda_version_text(cuda.driver);
#if TESSERA_HAVE_NCCL
  e.nccl = detail::nccl_version();
#endif
  // Each rank's device, gathered in rank order; repeats dropped.
  char mine[256] = {};
  std::snprintf(mine, sizeof mine, "%s", kernels::describe_device(ctx.queue()).c_str());
  std::string all(static_cast<std::size_t>(ctx.size()) * sizeof mine, '\0');
  ctx.comm().allgather(mine, static_cast<index_t>(sizeof mine), all.data());
  for (int r = 0; r < ctx.size(); ++r) {
    const std::string device(all.c_str() + static_cast<std::size_t>(r) * sizeof mine);
    if (std::find(e.devices.begin(), e.devices.end(), device) == e.devices.end()) e.devices.push_back(device);
  }
  return e;
}

}  // namespace tessera
