// The names of the collectives and the text of a plan (collective_plan.hpp): what the reports
// and the scaling model name collectives with.
#include <cstdio>

#include "tessera/framework/collective_plan.hpp"

namespace tessera {

const char* to_string(Collective kind) {
  switch (kind) {
    case Collective::allreduce: return "allreduce";
    case Collective::allgather: return "allgather";
    case Collective::exscan: return "exscan";
    case Collective::bcast: return "bcast";
    case Collective::alltoallv: return "alltoallv";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::neighbor_exchange: return "neighbor_exchange";
  }
  return "?";
}

std::string describe(const CollectivePlan& plan) {
  std::string text;
  for (const CollectiveCall& call : plan) {
    char bytes[32];
    std::snprintf(bytes, sizeof bytes, "%.0f", call.bytes);
    text += (text.empty() ? "" : "; ") + std::string(to_string(call.kind)) + " of " + bytes + " B";
  }
  return text.empty() ? "no collectives" : text;
}

}  // namespace tessera
