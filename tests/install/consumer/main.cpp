// A program outside the Tessera tree, compiled by a plain C++ compiler: the open algorithms with its
// own function objects on the CPU backend. Sums 0 + 1 + ... + (n-1) (n(n-1)/2), counts the
// multiples of 3 (ceil(n/3)), and the largest element and its index; then the checks of surface.cpp.
#include <cstdio>

#include "tessera/framework/framework.hpp"

int public_surface_errors(const tessera::Context& ctx);

struct IsMultipleOf3 {
  TESSERA_HOST_DEVICE bool operator()(std::int64_t x) const { return x % 3 == 0; }
};

int main(int argc, char** argv) {
  tessera::Runtime runtime(argc, argv);
  tessera::Context ctx = runtime.start(tessera::BackendChoice::cpu);
  const tessera::index_t n = 1001;
  tessera::DistArray<std::int64_t> a(ctx, n);
  a.iota(0);
  const std::int64_t total = tessera::reduce(a, tessera::plus{});
  const tessera::index_t thirds = tessera::count_if(a, IsMultipleOf3{});
  const tessera::ValueIndex<std::int64_t> largest = tessera::max_element(a);
  const int surface_errors = public_surface_errors(ctx);
  const bool ok = surface_errors == 0 && total == n * (n - 1) / 2 && thirds == (n + 2) / 3 && largest.value == n - 1 && largest.index == n - 1;
  if (ctx.is_root())
    std::printf("consumer: sum %lld, expected %lld; multiples of 3 %lld, expected %lld; max at %lld: %s\n",
                static_cast<long long>(total), static_cast<long long>(n * (n - 1) / 2),
                static_cast<long long>(thirds), static_cast<long long>((n + 2) / 3),
                static_cast<long long>(largest.index), ok ? "ok" : "WRONG");
  if (ctx.is_root() && surface_errors != 0) std::printf("consumer: %d wrong results in surface.cpp\n", surface_errors);
  return ok ? 0 : 1;
}
