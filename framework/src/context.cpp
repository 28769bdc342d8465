#include "tessera/framework/context.hpp"

namespace tessera {

Context::Context(Communicator comm, kernels::Queue queue, bool ranks_share_gpus)
    : comm_(std::move(comm)), queue_(queue), ranks_share_gpus_(ranks_share_gpus) {}

Context Context::first(int ranks) const { return with_comm(comm_.first(ranks)); }

Context Context::split(int color, int key) const { return with_comm(comm_.split(color, key)); }

Context Context::with_comm(Communicator comm) const { return Context(std::move(comm), queue_, ranks_share_gpus_); }

Context Context::with_queue(kernels::Queue queue) const { return Context(comm_, queue, ranks_share_gpus_); }

}  // namespace tessera
