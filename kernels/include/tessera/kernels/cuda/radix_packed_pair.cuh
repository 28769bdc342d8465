// Packed pairs of the radix sort (device_radix_sort_packed): a key and its value held as one word,
// the key's radix bits above the value, so that a sort of the words by the key's bits moves each
// pair as one item (one rank, one exchange in shared memory, one scatter per pass).
//
//   key, value bytes   word                 the key's bits
//   4 + 4              std::uint64_t        [32, 64)
//   8 + 8              unsigned __int128    [64, 128)
//   4 + 8              RadixWord96          word[2] (the value: word[1] high, word[0] low)
//
// PackedPair<Word> packs and unpacks a word, maps the key's twiddle onto the word, and says how far
// above the word's bit 0 the key's bit 0 lies for the digit extraction (RadixDigit).
#pragma once

#include <cstdint>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/sort_order.hpp"

namespace tessera::kernels::cuda::detail {

// Twelve bytes on a 4-byte alignment, read and written as three 32-bit words (the words of 32
// consecutive items are 384 consecutive bytes); the key is word[2].
struct RadixWord96 {
  std::uint32_t word[3];
  RadixWord96() = default;
  TESSERA_HOST_DEVICE_INLINE constexpr explicit RadixWord96(std::uint32_t low) : word{low, 0u, 0u} {}
  TESSERA_HOST_DEVICE_INLINE constexpr RadixWord96(std::uint32_t low, std::uint32_t middle, std::uint32_t key)
      : word{low, middle, key} {}
  TESSERA_HOST_DEVICE_INLINE constexpr RadixWord96 operator~() const { return {~word[0], ~word[1], ~word[2]}; }
};
static_assert(sizeof(RadixWord96) == 12 && alignof(RadixWord96) == 4, "twelve bytes, 4-byte aligned");

}  // namespace tessera::kernels::cuda::detail

namespace tessera::kernels {

// A RadixWord96's key bits <-> radix bits: the key's twiddle on word[2], the value untouched.
template <>
struct RadixTwiddle<cuda::detail::RadixWord96> {
  RadixTwiddle<std::uint32_t> key;
  TESSERA_HOST_DEVICE_INLINE cuda::detail::RadixWord96 to_radix(cuda::detail::RadixWord96 w) const {
    w.word[2] = key.to_radix(w.word[2]);
    return w;
  }
  TESSERA_HOST_DEVICE_INLINE cuda::detail::RadixWord96 from_radix(cuda::detail::RadixWord96 w) const {
    w.word[2] = key.from_radix(w.word[2]);
    return w;
  }
};

}  // namespace tessera::kernels

namespace tessera::kernels::cuda::detail {

// Not a packed word: Key and Value name the word itself (the fields of a pass that no kernel of
// this word reads).
template <class Word>
struct PackedPair {
  using Key = Word;
  using Value = Word;
};

// A word of two unsigned halves, the key the upper one.
template <class Word, class Half>
struct PackedIntegerPair {
  using Key = Half;
  using Value = Half;
  static constexpr int kHalfBits = 8 * static_cast<int>(sizeof(Half));
  static constexpr int kKeyShift = kHalfBits;  // the key's bit 0 in the word
  TESSERA_HOST_DEVICE_INLINE static Word pack(Key key, Value value) { return (Word(key) << kHalfBits) | value; }
  TESSERA_HOST_DEVICE_INLINE static Key key(Word w) { return static_cast<Key>(w >> kHalfBits); }
  TESSERA_HOST_DEVICE_INLINE static Value value(Word w) { return static_cast<Value>(w); }
  static RadixTwiddle<Word> twiddle(RadixTwiddle<Key> t) {
    return {Word(t.sign_mask) << kHalfBits, Word(t.float_mask) << kHalfBits};
  }
};
template <>
struct PackedPair<std::uint64_t> : PackedIntegerPair<std::uint64_t, std::uint32_t> {};
template <>
struct PackedPair<unsigned __int128> : PackedIntegerPair<unsigned __int128, std::uint64_t> {};

template <>
struct PackedPair<RadixWord96> {
  using Key = std::uint32_t;
  using Value = std::uint64_t;
  static constexpr int kKeyShift = 0;  // RadixDigit reads word[2]
  TESSERA_HOST_DEVICE_INLINE static RadixWord96 pack(Key key, Value value) {
    return {static_cast<std::uint32_t>(value), static_cast<std::uint32_t>(value >> 32), key};
  }
  TESSERA_HOST_DEVICE_INLINE static Key key(RadixWord96 w) { return w.word[2]; }
  TESSERA_HOST_DEVICE_INLINE static Value value(RadixWord96 w) { return (Value(w.word[1]) << 32) | w.word[0]; }
  static RadixTwiddle<RadixWord96> twiddle(RadixTwiddle<Key> t) { return {t}; }
};

// The word of a pair of Key and Value bits (unsigned words of 4 or 8 bytes), void where the pair
// is not packed.
template <class Key, class Value>
using PackedWord = std::conditional_t<
    sizeof(Key) == 4 && sizeof(Value) == 4, std::uint64_t,
    std::conditional_t<sizeof(Key) == 8 && sizeof(Value) == 8, unsigned __int128,
                       std::conditional_t<sizeof(Key) == 4 && sizeof(Value) == 8, RadixWord96, void>>>;

}  // namespace tessera::kernels::cuda::detail
