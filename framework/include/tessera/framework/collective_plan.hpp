// What one call of an algorithm sends between ranks: its collective plan. Each algorithm declares
// its plan once, next to its code (a *_plan function in its header); the scaling app's cost model (apps/scaling/model)
// charges an operation from that plan, and the tests count the collectives a call enters
// (detail::collective_calls) against it, so that what the code does, what its documentation says
// and what the projections charge cannot drift apart.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/framework/fault.hpp"

namespace tessera {

// The collectives of the host (Communicator) and device (DeviceComm) paths. neighbor_exchange: the
// messages of a halo exchange, to and from a few neighbouring ranks, all in flight at once.
enum class Collective { allreduce, allgather, exscan, bcast, alltoallv, reduce_scatter, neighbor_exchange };
inline constexpr std::array<Collective, 7> kCollectives = {
    Collective::allreduce, Collective::allgather,      Collective::exscan,           Collective::bcast,
    Collective::alltoallv, Collective::reduce_scatter, Collective::neighbor_exchange};
const char* to_string(Collective kind);

// One collective of a plan. bytes: what each rank contributes: the vector reduced or broadcast, its
// own item of an allgather or exscan, the data it sends in an all-to-all, the whole vector it
// contributes to a reduce-scatter, what it sends to its neighbours in a neighbour exchange.
struct CollectiveCall {
  Collective kind = Collective::allreduce;
  double bytes = 0;
  friend bool operator==(const CollectiveCall&, const CollectiveCall&) = default;
};
using CollectivePlan = std::vector<CollectiveCall>;

// "allgather of 12 B" (one line per call, "; " between).
std::string describe(const CollectivePlan& plan);

namespace detail {
// How many collectives of `kind` this process has entered so far, and the bytes it contributed to
// them (as CollectiveCall::bytes counts them). Every Communicator and DeviceComm collective counts
// itself (TESSERA_COLLECTIVE), for the tests that hold each algorithm to its plan.
std::uint64_t collective_calls(Collective kind);
double collective_bytes(Collective kind);
void count_collective(Collective kind, double bytes);
}  // namespace detail

}  // namespace tessera

// At the top of each collective: counts it with this rank's bytes, and is its fault-injection site
// (fault.hpp), named after it.
#define TESSERA_COLLECTIVE(kind, bytes)                                    \
  do {                                                                     \
    ::tessera::detail::count_collective(kind, static_cast<double>(bytes)); \
    TESSERA_FAULT_POINT(::tessera::to_string(kind));                       \
  } while (0)
