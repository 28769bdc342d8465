#include "probe.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/framework/comm.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::apps::scaling_study {

int probe_gpus(const Runtime& runtime, int threads_requested) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string cvd = env ? env : "";
  std::vector<std::string> ids;
  std::stringstream in(cvd);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) ids.push_back(item);
  int visible = kernels::cuda_device_count();
  const char* source = "cuda";
  if (visible == 0) {
    visible = static_cast<int>(ids.size());
    source = "CUDA_VISIBLE_DEVICES";
  }
  const int device = visible > 0 ? runtime.local_rank() % visible : -1;
  const std::string gpu = device < 0 ? "none" : device < static_cast<int>(ids.size()) ? ids[device] : std::to_string(device);
  // The CPUs: the affinity mask, what Slurm gave the step on this node and per task, and the OpenMP
  // threads the runtime would use (OMP_NUM_THREADS where set).
  auto env_or = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v && *v ? v : "unset");
  };
  const auto threads = runtime.plan_cpu_threads(threads_requested);
  char line[768];
  std::snprintf(line, sizeof line,
                "gpu-probe rank=%d host=%s local_rank=%d local_size=%d cuda_visible_devices=%s visible=%d (%s) "
                "device=%d gpu=%s cpus=%d slurm_cpus_on_node=%s slurm_cpus_per_task=%s omp_num_threads=%s threads=%d",
                runtime.world_rank(), runtime.hostname().c_str(), runtime.local_rank(), runtime.local_size(),
                cvd.empty() ? "unset" : cvd.c_str(), visible, source, device, gpu.c_str(), runtime.mask_cores(),
                env_or("SLURM_CPUS_ON_NODE").c_str(), env_or("SLURM_CPUS_PER_TASK").c_str(),
                env_or("OMP_NUM_THREADS").c_str(), threads.threads);
  // Every rank gets every line (a few hundred bytes per rank); rank 0 prints them.
  const Communicator world = Communicator::borrow(MPI_COMM_WORLD);
  std::vector<char> all(sizeof line * static_cast<std::size_t>(runtime.world_size()));
  world.allgather(line, static_cast<index_t>(sizeof line), all.data());
  if (runtime.world_rank() == 0)
    for (int r = 0; r < runtime.world_size(); ++r) std::printf("%s\n", all.data() + r * sizeof line);
  std::fflush(stdout);
  return 0;
}

}  // namespace tessera::apps::scaling_study
