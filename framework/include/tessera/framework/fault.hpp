// Fault injection, for proving that one failing rank ends the whole job instead of leaving the
// others blocked. TESSERA_INJECT_FAULT="RANK:SITE[:COUNT]" makes world rank RANK fail at the
// COUNT-th (default first) passage through the named site, as a failed MPI or CUDA call would:
// through tessera::fatal, with file:line. Sites: allreduce, exscan, allgather, bcast, barrier,
// alltoallv, reduce_scatter, neighbor_exchange, and write (an HDF5 output fully written, before it
// gets its final name).
#pragma once

#include <string>

namespace tessera::detail {

// Why TESSERA_INJECT_FAULT is malformed (not RANK:SITE[:COUNT], an unknown site, a rank the job does
// not have), or "" when it is unset or well formed. The runtime refuses to start on a malformed one.
std::string check_fault_injection(int world_size);

// Called at the top of each instrumented operation; returns at once when no fault is armed.
void fault_point(const char* site, const char* file, int line);

}  // namespace tessera::detail

#define TESSERA_FAULT_POINT(site) ::tessera::detail::fault_point(site, __FILE__, __LINE__)
