// Helpers of the open-algorithm tests: sizes that cross the device kernels' tile and row edges, and
// the same data in the block and in a ragged partition.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "generic_test_types.hpp"
#include "mpi/algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera {
namespace test {

template <class T>
std::vector<T> random_values_for_io(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(gen());
  return v;
}

// Sizes: the algorithm sizes plus a few that cross the device kernels' tile and row edges.
inline std::vector<index_t> sizes(int ranks) {
  std::vector<index_t> n = test::algorithm_sizes(ranks);
  for (index_t extra : {index_t(4095), index_t(65537), index_t(262147)}) n.push_back(extra);
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  return n;
}

// The same data in the block partition and in a random ragged one (empty ranks likely).
template <class T>
std::vector<DistArray<T>> layouts(const std::vector<T>& global, std::uint64_t s) {
  const Context& world = test::world();
  std::vector<DistArray<T>> arrays;
  arrays.push_back(DistArray<T>::from_replicated(world, global));
  arrays.push_back(DistArray<T>::from_replicated(
      world, global, test::random_partition(static_cast<index_t>(global.size()), world.size(), s)));
  return arrays;
}


}  // namespace test
}  // namespace tessera
