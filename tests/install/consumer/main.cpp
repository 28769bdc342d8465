// A program outside the Tessera tree: sums 0 + 1 + ... + (n-1) over the ranks and checks the value
// against n(n-1)/2.
#include <cstdio>

#include "tessera/framework/framework.hpp"

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  tessera::Context ctx = runtime.start(tessera::BackendChoice::cpu);
  const tessera::index_t n = 1001;
  tessera::DistArray<std::int64_t> a(ctx, n);
  a.iota(0);
  std::int64_t local = 0;
  for (std::int64_t x : a.local_to_host()) local += x;
  const std::int64_t total = ctx.comm().allreduce(local, tessera::ReduceOp::sum);
  const bool ok = total == n * (n - 1) / 2;
  if (ctx.is_root()) std::printf("consumer: sum %lld, expected %lld: %s\n", static_cast<long long>(total),
                                 static_cast<long long>(n * (n - 1) / 2), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
