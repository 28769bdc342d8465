// Helpers of the GPU sort tests: key data in the distributions the sorts meet, and the comparison of
// the CUDA sort with the CPU backend's on the same data.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/sort.hpp"

namespace tessera::gpu_test {

enum class KeyPattern { random_bits, few_unique, specials, sorted, reverse, all_equal };

inline const char* to_string(KeyPattern p) {
  switch (p) {
    case KeyPattern::random_bits: return "random-bits";
    case KeyPattern::few_unique: return "few-unique";
    case KeyPattern::specials: return "specials";
    case KeyPattern::sorted: return "sorted";
    case KeyPattern::reverse: return "reverse";
    case KeyPattern::all_equal: return "all-equal";
  }
  return "?";
}

template <class Key>
Key key_from_bits(std::uint64_t bits) {
  using Bits = typename kernels::RadixKey<Key>::Bits;
  const auto narrow = static_cast<Bits>(bits);
  Key key;
  std::memcpy(&key, &narrow, sizeof key);
  return key;
}

// Keys of a pattern: random bit patterns (every value, NaNs and infinities of floats included),
// 7 distinct values, a mix of NaN / infinities / signed zeros / extremes, an ascending or
// descending run of integers, or one value. Host threads; the value of element i depends only on
// (seed, i).
template <class Key>
std::vector<Key> make_keys(index_t n, KeyPattern pattern, std::uint64_t seed) {
  std::vector<Key> keys(static_cast<std::size_t>(n));
  const Key specials[] = {std::numeric_limits<Key>::has_quiet_NaN ? std::numeric_limits<Key>::quiet_NaN() : Key(7),
                          std::numeric_limits<Key>::has_quiet_NaN ? -std::numeric_limits<Key>::quiet_NaN() : Key(3),
                          std::numeric_limits<Key>::has_infinity ? std::numeric_limits<Key>::infinity() : Key(0),
                          std::numeric_limits<Key>::has_infinity ? -std::numeric_limits<Key>::infinity() : Key(1),
                          std::numeric_limits<Key>::is_signed ? -Key(0) : Key(2),
                          Key(0),
                          std::numeric_limits<Key>::max(),
                          std::numeric_limits<Key>::lowest(),
                          std::numeric_limits<Key>::min(),
                          static_cast<Key>(1),
                          static_cast<Key>(-1)};
  constexpr int kSpecials = sizeof(specials) / sizeof(specials[0]);
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < n; ++i) {
    const std::uint64_t bits = counter_bits(seed, static_cast<std::uint64_t>(i));
    Key key{};
    switch (pattern) {
      case KeyPattern::random_bits: key = key_from_bits<Key>(bits); break;
      case KeyPattern::few_unique: key = specials[bits % 7 + 2]; break;
      case KeyPattern::specials: key = bits % 4 == 0 ? key_from_bits<Key>(bits >> 2) : specials[(bits >> 2) % kSpecials]; break;
      case KeyPattern::sorted: key = static_cast<Key>(i % 1000003); break;
      case KeyPattern::reverse: key = static_cast<Key>((n - i) % 1000003); break;
      case KeyPattern::all_equal: key = specials[1]; break;
    }
    keys[static_cast<std::size_t>(i)] = key;
  }
  return keys;
}

template <class Key>
::testing::AssertionResult same_bits(const std::vector<Key>& got, const std::vector<Key>& want, const char* what) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << what << ": size " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(Key)) != 0) {
      auto failure = ::testing::AssertionFailure() << what << " differs first at " << i << " of " << got.size();
      if constexpr (std::is_arithmetic_v<Key>) failure << ": got " << got[i] << ", want " << want[i];
      return failure;
    }
  return ::testing::AssertionSuccess();
}

}  // namespace tessera::gpu_test
