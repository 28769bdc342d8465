#include "tessera/framework/collective_plan.hpp"

#include <atomic>
#include <cstdio>

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

namespace detail {
namespace {
std::atomic<std::uint64_t> calls[kCollectives.size()];
std::atomic<double> bytes_of[kCollectives.size()];
}  // namespace
std::uint64_t collective_calls(Collective kind) { return calls[static_cast<std::size_t>(kind)].load(); }
double collective_bytes(Collective kind) { return bytes_of[static_cast<std::size_t>(kind)].load(); }
void count_collective(Collective kind, double bytes) {
  const auto i = static_cast<std::size_t>(kind);
  calls[i].fetch_add(1, std::memory_order_relaxed);
  double seen = bytes_of[i].load(std::memory_order_relaxed);
  while (!bytes_of[i].compare_exchange_weak(seen, seen + bytes, std::memory_order_relaxed)) {
  }
}
}  // namespace detail

}  // namespace tessera
