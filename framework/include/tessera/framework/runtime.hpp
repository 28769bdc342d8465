// The process-wide runtime: MPI initialisation and finalisation as one RAII object, the node-local
// rank, the binding of one GPU per rank, the choice of backend, and the fatal-error policy (a failed
// MPI or CUDA call anywhere aborts the whole job with file:line and the error text).
#pragma once

#include <string>
#include <string_view>

#include "tessera/framework/context.hpp"

namespace tessera {

enum class BackendChoice { automatic, cpu, cuda };

// Parses "auto", "cpu" or "cuda"; throws UsageError naming the text otherwise.
BackendChoice parse_backend_choice(std::string_view text);

class Runtime {
 public:
  // MPI_Init_thread (MPI_THREAD_FUNNELED: only the main thread calls MPI; OpenMP threads do not).
  // Installs the fatal-error handler. Does not touch any GPU yet.
  Runtime(int& argc, char**& argv);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Collective over MPI_COMM_WORLD. automatic: cuda where every rank sees a usable GPU, else cpu.
  // cuda where some rank has no GPU: throws UsageError on every rank (the same message, naming the
  // rank and host), so the caller exits non-zero without anyone hanging. Under cuda, world rank
  // binds device local_rank % visible_devices: right both for `srun --gpus-per-task=1` (one
  // visible device) and for `mpirun` on a whole node (all visible). Call once.
  Context start(BackendChoice choice);

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int visible_devices() const { return visible_devices_; }
  const std::string& hostname() const { return hostname_; }
  // Distinct GPUs driven by the job (0 under cpu). Fewer than world_size() when ranks share GPUs
  // (more ranks than devices on a node): then NCCL, which needs one device per rank, is not used.
  int gpus_in_use() const { return gpus_in_use_; }

  // The world context after start(); null before.
  const Context& world() const { return world_; }

  // "4 ranks on 1 node, backend cuda, GPU per rank: NVIDIA H100 ..." (this rank's view).
  std::string describe() const;

 private:
  void count_gpus_in_use();

  int world_rank_ = 0;
  int world_size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int visible_devices_ = 0;
  int nodes_ = 1;
  int gpus_in_use_ = 0;
  std::string hostname_;
  Context world_;
  kernels::Queue queue_;
};

}  // namespace tessera
