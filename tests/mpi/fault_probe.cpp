// Runs allreduces in a loop on every rank. With TESSERA_INJECT_FAULT=RANK:allreduce:K set, rank RANK
// fails at its K-th allreduce while the other ranks are already inside that collective.
// With TESSERA_PROBE_STALL=RANK:K, rank RANK stops before its K-th allreduce and sleeps (a rank
// that is lost without exiting): the others wait inside the collective until the MPI watchdog
// (TESSERA_MPI_TIMEOUT) ends them.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tessera/framework/framework.hpp"

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  tessera::Context ctx = runtime.start(tessera::BackendChoice::cpu);
  int stall_rank = -1, stall_at = -1;
  if (const char* stall = std::getenv("TESSERA_PROBE_STALL")) std::sscanf(stall, "%d:%d", &stall_rank, &stall_at);
  std::int64_t total = 0;
  for (int i = 0; i < 50; ++i) {
    if (ctx.rank() == stall_rank && i + 1 == stall_at) std::this_thread::sleep_for(std::chrono::hours(1));
    total += ctx.comm().allreduce<std::int64_t>(ctx.rank() + i, tessera::ReduceOp::sum);
  }
  if (ctx.is_root()) std::printf("fault probe finished: %lld\n", static_cast<long long>(total));
  return 0;
}
