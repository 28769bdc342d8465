// The framework's side of the collective plans: the counts of the collectives each rank entered
// (TESSERA_COLLECTIVE). Their names and descriptions are in collective_plan_text.cpp.
#include "tessera/framework/collective_plan.hpp"

#include <atomic>

namespace tessera {

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
