// A counter-based generator: the value of element i depends only on (seed, i), never on how the
// array is cut into blocks, so results can be compared across rank counts and backends. The bits
// are a splitmix64-style finalizer (Steele, Lea, Flood 2014) of the seed and the index; the
// conversions to floating point are exact (no rounding), so host and device give identical values.
#pragma once

#include <cstdint>
#include <type_traits>

#include "tessera/kernels/config.hpp"

namespace tessera {

TESSERA_HOST_DEVICE inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

TESSERA_HOST_DEVICE inline std::uint64_t counter_bits(std::uint64_t seed, std::uint64_t index) {
  return mix64(mix64(seed + 0x9E3779B97F4A7C15ull) ^ (index * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
}

// Default distribution of generated elements:
//   float:  multiples of 2^-23 in [-1, 1)      double: multiples of 2^-52 in [-1, 1)
//   int16, int32, int64: integers in [-1000, 1000]     int8: [-100, 100]
//   uint16, uint32, uint64: integers in [0, 2000]      uint8: [0, 200]
// Integer values stay small so that sums of large arrays do not overflow.
template <class T>
TESSERA_HOST_DEVICE inline T counter_value(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t bits = counter_bits(seed, index);
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(static_cast<std::int32_t>(bits >> 40)) * 0x1p-23f - 1.0f;
  } else if constexpr (std::is_same_v<T, double>) {
    return static_cast<double>(static_cast<std::int64_t>(bits >> 11)) * 0x1p-52 - 1.0;
  } else {
    static_assert(std::is_integral_v<T>, "counter_value: unsupported element type");
    constexpr std::uint64_t kHalf = sizeof(T) == 1 ? 100 : 1000;
    if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(static_cast<std::int64_t>(bits % (2 * kHalf + 1)) - static_cast<std::int64_t>(kHalf));
    } else {
      return static_cast<T>(bits % (2 * kHalf + 1));
    }
  }
}

}  // namespace tessera
