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

// The whole of `array` on rank 0 compared with `want` (rank 0 reports the first difference; every
// rank takes part in the gather and none stops early, so the ranks stay in step).
template <class T>
void expect_gathered(const DistArray<T>& array, const std::vector<T>& want, const std::string& what) {
  const std::vector<T> got = array.gather(0);
  if (test::world().rank() != 0) return;
  EXPECT_EQ(got.size(), want.size()) << what;
  if (got.size() != want.size()) return;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i])) {
      ADD_FAILURE() << what << ": first difference at global index " << i << " of " << got.size();
      return;
    }
}

// Sizes of the tests of the newer algorithms: 0, 1, primes, 2^k +- 1, and around the rank count
// (more ranks than elements), with one that spans several device tiles.
inline std::vector<index_t> small_sizes(int ranks) {
  std::vector<index_t> n = {0, 1, 2, 3, 7, 31, 33, 97, 127, 257, 1023, 4093, 4099, 65537};
  for (index_t extra : {index_t(ranks) - 1, index_t(ranks), index_t(ranks) + 1}) n.push_back(extra);
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  return n;
}

}  // namespace test
}  // namespace tessera
