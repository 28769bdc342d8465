// Runs allreduces in a loop on every rank. With TESSERA_INJECT_FAULT=RANK:allreduce:K set, rank RANK
// fails at its K-th allreduce while the other ranks are already inside that collective.
#include <cstdio>

#include "tessera/framework/framework.hpp"

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  tessera::Context ctx = runtime.start(tessera::BackendChoice::cpu);
  std::int64_t total = 0;
  for (int i = 0; i < 50; ++i) total += ctx.comm().allreduce<std::int64_t>(ctx.rank() + i, tessera::ReduceOp::sum);
  if (ctx.is_root()) std::printf("fault probe finished: %lld\n", static_cast<long long>(total));
  return 0;
}
