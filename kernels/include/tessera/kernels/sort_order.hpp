// The order the sorts use: each key type maps to unsigned "radix bits" whose unsigned order is the
// key's order, so that a radix sort, a comparison and a search all agree (host and device code).
//   unsigned integers   the bits themselves
//   signed integers     the two's complement bits with the sign bit flipped
//   float, double       IEEE total order: a set sign bit inverts all bits, a clear one sets the sign
//                       bit, so -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN
// The map is one XOR with a mask made from the sign bit, the same formula for every type
// (RadixTwiddle), which lets one compiled kernel serve all key types of a width.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tessera/kernels/config.hpp"

namespace tessera::kernels {

template <class Key>
struct RadixKey;

template <>
struct RadixKey<std::uint32_t> {
  using Bits = std::uint32_t;
  static constexpr Bits kSignMask = 0, kFloatMask = 0;
};
template <>
struct RadixKey<std::int32_t> {
  using Bits = std::uint32_t;
  static constexpr Bits kSignMask = Bits(1) << 31, kFloatMask = 0;
};
template <>
struct RadixKey<float> {
  using Bits = std::uint32_t;
  static constexpr Bits kSignMask = Bits(1) << 31, kFloatMask = ~Bits(0);
};
template <>
struct RadixKey<std::uint64_t> {
  using Bits = std::uint64_t;
  static constexpr Bits kSignMask = 0, kFloatMask = 0;
};
template <>
struct RadixKey<std::int64_t> {
  using Bits = std::uint64_t;
  static constexpr Bits kSignMask = Bits(1) << 63, kFloatMask = 0;
};
template <>
struct RadixKey<double> {
  using Bits = std::uint64_t;
  static constexpr Bits kSignMask = Bits(1) << 63, kFloatMask = ~Bits(0);
};

template <class Key, class = void>
struct is_radix_key : std::false_type {};
template <class Key>
struct is_radix_key<Key, std::void_t<typename RadixKey<Key>::Bits>> : std::true_type {};
template <class Key>
inline constexpr bool is_radix_key_v = is_radix_key<Key>::value;

// Key bits <-> radix bits: x ^ (sign_mask | (float_mask & all-ones-if-negative)). With both masks
// zero the map is the identity (the passes between the first and the last of a sort use that).
template <class Bits>
struct RadixTwiddle {
  Bits sign_mask = 0;
  Bits float_mask = 0;
  static constexpr int kTopBit = 8 * static_cast<int>(sizeof(Bits)) - 1;

  TESSERA_HOST_DEVICE_INLINE Bits to_radix(Bits key) const {
    return key ^ (sign_mask | (float_mask & (Bits(0) - (key >> kTopBit))));
  }
  // Radix bits with a clear top bit came from a negative float (all bits inverted).
  TESSERA_HOST_DEVICE_INLINE Bits from_radix(Bits radix) const {
    return radix ^ (sign_mask | (float_mask & (Bits(0) - ((~radix) >> kTopBit))));
  }
};

template <class Key>
TESSERA_HOST_DEVICE_INLINE typename RadixKey<Key>::Bits radix_bits(Key key) {
  using Bits = typename RadixKey<Key>::Bits;
  Bits bits;
  std::memcpy(&bits, &key, sizeof bits);
  return RadixTwiddle<Bits>{RadixKey<Key>::kSignMask, RadixKey<Key>::kFloatMask}.to_radix(bits);
}

// a before b in the sorts' order (a strict weak ordering for every key value, NaN included).
struct radix_less {
  template <class Key>
  TESSERA_HOST_DEVICE_INLINE bool operator()(const Key& a, const Key& b) const {
    return radix_bits(a) < radix_bits(b);
  }
};

// How the sorts move a value: as an unsigned word where its size and alignment allow, as aligned
// raw bytes otherwise.
template <class Value>
struct alignas(alignof(Value)) RadixValueBytes {
  unsigned char bytes[sizeof(Value)];
};
struct alignas(16) RadixValue16 {
  std::uint64_t lo, hi;
};
template <class Value>
using RadixValueWord = std::conditional_t<
    alignof(Value) == sizeof(Value) && sizeof(Value) == 1, std::uint8_t,
    std::conditional_t<
        alignof(Value) == sizeof(Value) && sizeof(Value) == 2, std::uint16_t,
        std::conditional_t<
            alignof(Value) == sizeof(Value) && sizeof(Value) == 4, std::uint32_t,
            std::conditional_t<alignof(Value) == sizeof(Value) && sizeof(Value) == 8, std::uint64_t,
                               std::conditional_t<alignof(Value) == sizeof(Value) && sizeof(Value) == 16,
                                                  RadixValue16, RadixValueBytes<Value>>>>>>;

// No values: the keys-only sorts pass a null array of this type.
struct RadixNoValue {};

}  // namespace tessera::kernels
