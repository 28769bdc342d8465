#include "support/test_support.hpp"

#include <algorithm>
#include <cstdlib>

namespace tessera::test {
namespace {
Context g_world;
Context g_launch;
}

std::uint64_t seed() {
  static const std::uint64_t s = [] {
    const char* env = std::getenv("TESSERA_TEST_SEED");
    return env && *env ? std::strtoull(env, nullptr, 0) : std::uint64_t{20261122};
  }();
  return s;
}

std::string where(index_t n, std::uint64_t s) {
  return "seed=" + std::to_string(s) + " n=" + std::to_string(n) + " (rerun with TESSERA_TEST_SEED=" +
         std::to_string(s) + ")";
}

std::vector<index_t> odd_sizes(index_t max_size) {
  const std::vector<index_t> all = {0,    1,    2,    3,    7,    31,   32,    33,     127,    255,    256,
                                    257,  1023, 1024, 1025, 4093, 4099, 65535, 65537, 99991, (1 << 20) - 1,
                                    (1 << 20) + 1};
  std::vector<index_t> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out), [&](index_t n) { return n <= max_size; });
  return out;
}

const Context& world() { return g_world; }
void set_world(const Context& ctx) { g_world = ctx; }
const Context& launch() { return g_launch; }
void set_launch(const Context& ctx) { g_launch = ctx; }

}  // namespace tessera::test
