// Inputs of the generic GPU tests: element offsets that break 16-byte alignment, and random values
// from std::mt19937_64 (independent of the code under test).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "tessera/kernels/config.hpp"

namespace tessera::gpu_test {

// Element offsets of the input within its allocation: 0 (16-byte aligned) and two that are not.
inline constexpr index_t kOffsets[] = {0, 1, 3};

// n values in [-1, 1) from std::mt19937_64 (independent of the code under test).
template <class T>
std::vector<T> uniform(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(dist(gen));
  return v;
}

template <class T>
std::vector<T> full_range(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(gen());
  return v;
}

}  // namespace tessera::gpu_test
