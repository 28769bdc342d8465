// Shared helpers for the test suites: seeds, the sizes every algorithm is tried on, random host data
// from a generator independent of the code under test, and the world context of MPI test binaries.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "tessera/framework/context.hpp"
#include "tessera/kernels/config.hpp"

namespace tessera::test {

// The seed of this run: TESSERA_TEST_SEED if set, else a fixed default. Failure messages print it.
std::uint64_t seed();

// "seed=... n=..." for failure messages.
std::string where(index_t n, std::uint64_t s = seed());

// 0, 1, warp and tile edges, primes, 2^k +- 1; all at most max_size.
std::vector<index_t> odd_sizes(index_t max_size = (index_t(1) << 20) + 1);

// n random values from std::mt19937_64: integers in [-1000, 1000], floats in [-1, 1).
template <class T>
std::vector<T> random_vector(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::vector<T> v(static_cast<std::size_t>(n));
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<std::int64_t> dist(-1000, 1000);
    for (auto& x : v) x = static_cast<T>(dist(gen));
  } else {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (auto& x : v) x = static_cast<T>(dist(gen));
  }
  return v;
}

// The world context of an MPI test binary: the ranks of the pass that runs now (mpi_gtest_main runs
// the suite at each rank count of --ranks on the first ranks of the launch; see there).
const Context& world();
void set_world(const Context& ctx);
// Every rank of the launch (mpiexec -n N), whichever pass runs: for the few facts the runtime fixes
// for the whole launch at its start (OpenMP threads per rank).
const Context& launch();
void set_launch(const Context& ctx);

// An environment variable set for a scope, and put back as it was after it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* saved = std::getenv(name);
    if (saved) saved_ = saved;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (saved_) ::setenv(name_, saved_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

}  // namespace tessera::test
