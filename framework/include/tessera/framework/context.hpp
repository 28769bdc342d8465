// A Context is what a distributed operation runs on: a group of ranks (a Communicator), the backend
// of their memory, and this rank's queue. Cheap to copy. The Runtime makes the world context; the
// scaling study makes contexts over sub-groups of it.
#pragma once

#include <memory>
#include <string>

#include "tessera/framework/comm.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera {

class DeviceComm;

class Context {
 public:
  Context() = default;
  // ranks_share_gpus: whether two ranks of the job drive one GPU (Runtime::start counts the distinct
  // GPUs of the job and says so in the world context). DeviceComm reads it: NCCL needs one device
  // per rank, so with shared GPUs the cuda backend stages through the host instead.
  Context(Communicator comm, kernels::Queue queue, bool ranks_share_gpus = false);

  bool is_null() const { return comm_.is_null(); }
  const Communicator& comm() const { return comm_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  bool is_root() const { return comm_.rank() == 0; }
  Backend backend() const { return queue_.backend; }
  const kernels::Queue& queue() const { return queue_; }
  bool ranks_share_gpus() const { return ranks_share_gpus_; }

  // A context over the first `ranks` ranks of this one; null on the ranks outside it.
  Context first(int ranks) const;
  // A context over an arbitrary split of this one (row and column groups of a process grid).
  Context split(int color, int key) const;
  // This context with another group of the same job's ranks (a communicator made from this one's),
  // or with another queue on the same device; the rest as here.
  Context with_comm(Communicator comm) const;
  Context with_queue(kernels::Queue queue) const;

 private:
  Communicator comm_;
  kernels::Queue queue_;
  bool ranks_share_gpus_ = false;
};

}  // namespace tessera
