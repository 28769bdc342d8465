// The process-wide runtime: MPI initialisation and finalisation as one RAII object, the node-local
// rank, the binding of one GPU per rank, the choice of backend, and the fatal-error policy (a failed
// MPI or CUDA call anywhere aborts the whole job with file:line and the error text).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tessera/framework/context.hpp"

namespace tessera {

enum class BackendChoice { automatic, cpu, cuda };

// Parses "auto", "cpu" or "cuda"; throws UsageError naming the text otherwise.
BackendChoice parse_backend_choice(std::string_view text);

// OpenMP threads for a rank that nobody told how many to use: its share of its node, never more
// cores than its affinity mask holds nor more than the node's cores divided among the node's ranks,
// and at least one. mask_cores: cores in the rank's affinity mask; node_cores: cores in the union
// of the masks of the node's ranks; ranks_on_node: ranks on the node.
int default_cpu_threads(int mask_cores, int node_cores, int ranks_on_node);

class Runtime {
 public:
  // MPI_Init_thread (MPI_THREAD_FUNNELED: only the main thread calls MPI; OpenMP threads do not).
  // Installs the fatal-error handler. Does not touch any GPU yet.
  Runtime(int& argc, char**& argv);
  // Joins an MPI that another library initialised and will finalise (mpi4py in a Python program):
  // `comm` takes the part of MPI_COMM_WORLD (its ranks are the job: node-local ranks, GPU binding
  // and the world context are its), and the caller keeps it alive for the runtime's lifetime. Pass
  // a duplicate of the caller's communicator: the runtime sets MPI_ERRORS_RETURN on it, and
  // several runtimes over different communicators may coexist. Neither initialises nor finalises
  // MPI. A malformed TESSERA_INJECT_FAULT throws UsageError on every rank instead of ending the
  // process. Collective over comm; UsageError where MPI is not initialised.
  explicit Runtime(MPI_Comm comm);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Collective over MPI_COMM_WORLD. automatic: cuda where every rank sees a usable GPU, else cpu.
  // cuda where some rank has no GPU: throws UsageError on every rank (the same message, naming the
  // rank and host), so the caller exits non-zero without anyone hanging. Under cuda, world rank
  // binds device local_rank % visible_devices: right both for `srun --gpus-per-task=1` (one
  // visible device) and for `mpirun` on a whole node (all visible). Call once.
  //
  // It also sets the OpenMP threads of this rank's host work (the cpu backend's kernels):
  // `cpu_threads` where positive (an app's --threads), else what OMP_NUM_THREADS says where it is
  // set, else default_cpu_threads() from the affinity masks of the node's ranks. Ranks that share
  // cores would otherwise each start a thread per core and wait on each other's spinning threads.
  //
  // device >= 0 binds that device ordinal instead of local_rank % visible_devices under cuda (a
  // UsageError on every rank where some rank's ordinal is not one of its visible devices).
  Context start(BackendChoice choice, int cpu_threads = 0, int device = -1);

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int visible_devices() const { return visible_devices_; }
  const std::string& hostname() const { return hostname_; }
  // Distinct GPUs driven by the job (0 under cpu). Fewer than world_size() when ranks share GPUs
  // (more ranks than devices on a node): the world context then says so (Context::ranks_share_gpus),
  // and DeviceComm does not use NCCL, which needs one device per rank.
  int gpus_in_use() const { return gpus_in_use_; }
  // OpenMP threads of this rank after start(), and what chose them: "--threads", "OMP_NUM_THREADS",
  // "affinity mask" (the rank's mask held fewer cores than its share of the node) or "cores / ranks
  // on the node". The fewest and most threads of any rank of the job.
  int cpu_threads() const { return cpu_threads_; }
  const std::string& cpu_threads_chosen_by() const { return cpu_threads_chosen_by_; }
  int cpu_threads_min() const { return cpu_threads_min_; }
  int cpu_threads_max() const { return cpu_threads_max_; }
  // What start(choice, requested) sets, without setting it (for a probe before start).
  struct CpuThreads {
    int threads;
    std::string chosen_by;
  };
  CpuThreads plan_cpu_threads(int requested = 0) const;
  // Cores in this rank's affinity mask, and in the union of the masks of its node's ranks.
  int mask_cores() const { return mask_cores_; }
  int node_cores() const { return node_cores_; }
  // The distinct host names of the job, in the order of their lowest rank.
  const std::vector<std::string>& hostnames() const { return hostnames_; }

  // The world context after start(); null before.
  const Context& world() const { return world_; }

  // "4 ranks on 1 node, backend cpu, 1 OpenMP thread per rank (cores / ranks on the node)" or
  // "2 ranks on 1 node, backend cuda, 2 GPUs, rank 0 drives NVIDIA H100 ..." (this rank's view).
  std::string describe() const;
  // "1 OpenMP thread per rank (2 cores / 4 ranks on the node)": the choice start() made.
  std::string describe_cpu_threads() const;

 private:
  void join();
  void count_gpus_in_use();
  void choose_cpu_threads(int requested);

  MPI_Comm comm_ = MPI_COMM_WORLD;  // the job's ranks: MPI_COMM_WORLD, or the communicator joined
  bool owns_mpi_ = true;            // initialised here, and finalised by the destructor

  int world_rank_ = 0;
  int world_size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int visible_devices_ = 0;
  int nodes_ = 1;
  int gpus_in_use_ = 0;
  int mask_cores_ = 1;
  int node_cores_ = 1;
  int cpu_threads_ = 1;
  int cpu_threads_min_ = 1;
  int cpu_threads_max_ = 1;
  std::string cpu_threads_chosen_by_;
  std::string hostname_;
  std::vector<std::string> hostnames_;
  Context world_;
  kernels::Queue queue_;
};

}  // namespace tessera
