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
  Context(Communicator comm, kernels::Queue queue);

  bool is_null() const { return comm_.is_null(); }
  const Communicator& comm() const { return comm_; }
  int rank() const { return comm_.rank(); }
  int size() const { return comm_.size(); }
  bool is_root() const { return comm_.rank() == 0; }
  Backend backend() const { return queue_.backend; }
  const kernels::Queue& queue() const { return queue_; }

  // A context over the first `ranks` ranks of this one; null on the ranks outside it.
  Context first(int ranks) const;
  // A context over an arbitrary split of this one (row and column groups of a process grid).
  Context split(int color, int key) const;

 private:
  Communicator comm_;
  kernels::Queue queue_;
};

}  // namespace tessera
