// Helpers shared by the multi-rank tests of the distributed algorithms (tests/mpi/test_*.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/framework/partition.hpp"

namespace tessera::test {

// N in {0, 1, P-1, P, P+1, a prime, large} and the odd sizes up to 4099: more ranks than elements
// included (0, 1 and P-1 < P).
inline std::vector<index_t> algorithm_sizes(int ranks) {
  std::vector<index_t> n = odd_sizes(4099);
  for (index_t extra : {index_t(ranks) - 1, index_t(ranks), index_t(ranks) + 1, index_t(97), index_t(100003)})
    n.push_back(extra);
  std::sort(n.begin(), n.end());
  n.erase(std::unique(n.begin(), n.end()), n.end());
  return n;
}

// A ragged partition of n over `ranks` parts from random cut points (the same on every rank for
// one seed), with empty parts likely.
inline Partition random_partition(index_t n, int ranks, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::vector<index_t> cuts = {0, n};
  for (int r = 0; r + 1 < ranks; ++r) cuts.push_back(n ? static_cast<index_t>(gen() % static_cast<std::uint64_t>(n + 1)) : 0);
  std::sort(cuts.begin(), cuts.end());
  std::vector<index_t> counts;
  for (int r = 0; r < ranks; ++r) counts.push_back(cuts[static_cast<std::size_t>(r) + 1] - cuts[static_cast<std::size_t>(r)]);
  return Partition::from_counts(counts);
}

// Serial sum of the first `count` values in a wider type: int64 for integers (the test data are
// small enough never to wrap), long double for floating point.
template <class T>
using Wide = std::conditional_t<std::is_integral_v<T>, std::int64_t, long double>;

}  // namespace tessera::test
