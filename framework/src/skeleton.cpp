#include "tessera/framework/algorithms/skeleton.hpp"

#include <string>

namespace tessera::detail {

void throw_failed_rank(const char* algorithm, int rank) {
  throw UsageError(std::string(algorithm) + ": the local phase failed on rank " + std::to_string(rank) +
                   " (a functor threw there); this rank stopped too");
}

void require_same_layout(const Context& a, const Partition& pa, const Context& b, const Partition& pb,
                         const char* algorithm) {
  if (a.comm().get() != b.comm().get())
    throw UsageError(std::string(algorithm) + ": the arrays live on different contexts (communicators)");
  if (a.backend() != b.backend())
    throw UsageError(std::string(algorithm) + ": the arrays live on different backends");
  if (!(pa == pb))
    throw UsageError(std::string(algorithm) + ": the arrays have different partitions (sizes " +
                     std::to_string(pa.global_size()) + " and " + std::to_string(pb.global_size()) +
                     "); rebalance() one of them first");
}

}  // namespace tessera::detail
