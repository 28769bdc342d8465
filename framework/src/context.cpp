#include "tessera/framework/context.hpp"

namespace tessera {

Context::Context(Communicator comm, kernels::Queue queue) : comm_(std::move(comm)), queue_(queue) {}

Context Context::first(int ranks) const { return Context(comm_.first(ranks), queue_); }

Context Context::split(int color, int key) const { return Context(comm_.split(color, key), queue_); }

}  // namespace tessera
