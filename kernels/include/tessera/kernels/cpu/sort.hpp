// The CPU backend of the local sort (contract in tessera/kernels/sort.hpp): an LSD radix sort of
// 8-bit digits on host threads. Keys arrive as their raw bits with the RadixTwiddle of their type;
// values as opaque words (RadixValueWord), or RadixNoValue for keys alone.
//
// One read of the input converts the keys to radix bits and counts, per thread chunk, the digits of
// every place at once. A place whose digit is the same for every key moves nothing and is skipped
// (integers of a small range, sorted bit ranges). Each other place is one counting pass over the
// chunks (the first place reuses the counts of the conversion) and one stable scatter: chunk c
// writes digit d from sum over digits below d of all chunks plus digit d of chunks before c, in
// input order. The output converts back from radix bits in the last pass's destination.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/parallel.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/sort_order.hpp"

namespace tessera::kernels::cpu {

inline constexpr int kRadixDigitBits = 8;
inline constexpr int kRadixDigits = 1 << kRadixDigitBits;

namespace detail {

template <class T>
std::unique_ptr<T[]> uninitialized_array(index_t n, const char* what) {
  require_host_memory(sizeof(T) * static_cast<std::size_t>(n), what);
  return std::unique_ptr<T[]>(new T[static_cast<std::size_t>(n)]);
}

template <class T>
void parallel_copy(const T* in, T* out, index_t n, int chunks) {
  if (in == out || n == 0) return;
  parallel_for_chunks(n, chunks, [&](int, Chunk c) {
    std::memcpy(out + c.begin, in + c.begin, sizeof(T) * static_cast<std::size_t>(c.size()));
  });
}

}  // namespace detail

// keys_out[0, n) = keys_in sorted by radix bits [begin_bit, end_bit), stable; values follow. In
// place (keys_in == keys_out, values_in == values_out) allowed.
template <class Bits, class Word>
void radix_sort(RadixTwiddle<Bits> twiddle, const Bits* keys_in, Bits* keys_out, const Word* values_in,
                Word* values_out, index_t n, int begin_bit, int end_bit) {
  constexpr bool kHasValues = !std::is_same_v<Word, RadixNoValue>;
  using Counts = std::array<index_t, kRadixDigits>;
  if (n == 0) return;
  const int places = (end_bit - begin_bit + kRadixDigitBits - 1) / kRadixDigitBits;
  const int chunks = threads_for(n);
  auto digit_of = [&](Bits radix, int place) {
    const int shift = begin_bit + place * kRadixDigitBits;
    const int bits = std::min(kRadixDigitBits, end_bit - shift);
    return static_cast<int>((radix >> shift) & ((Bits(1) << bits) - 1));
  };
  if (places == 0) {
    detail::parallel_copy(keys_in, keys_out, n, chunks);
    if constexpr (kHasValues) detail::parallel_copy(values_in, values_out, n, chunks);
    return;
  }

  // Convert to radix bits in keys_out, counting every place per chunk.
  std::vector<Counts> counts(static_cast<std::size_t>(chunks) * places, Counts{});
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    Counts* mine = counts.data() + static_cast<std::size_t>(c) * places;
    for (index_t i = chunk.begin; i < chunk.end; ++i) {
      const Bits radix = twiddle.to_radix(keys_in[i]);
      keys_out[i] = radix;
      for (int p = 0; p < places; ++p) ++mine[p][digit_of(radix, p)];
    }
  });
  std::vector<int> moving;  // the places whose digits differ between keys
  for (int p = 0; p < places; ++p) {
    Counts total{};
    for (int c = 0; c < chunks; ++c)
      for (int d = 0; d < kRadixDigits; ++d) total[d] += counts[static_cast<std::size_t>(c) * places + p][d];
    if (std::none_of(total.begin(), total.end(), [&](index_t t) { return t == n; })) moving.push_back(p);
  }
  const int moves = static_cast<int>(moving.size());

  std::unique_ptr<Bits[]> key_spare;
  std::unique_ptr<Word[]> value_spare;
  if (moves > 0) key_spare = detail::uninitialized_array<Bits>(n, "the radix sort's spare keys");
  if constexpr (kHasValues) {
    if (moves > 0) value_spare = detail::uninitialized_array<Word>(n, "the radix sort's spare values");
  }
  Bits* key_buffers[2] = {keys_out, key_spare.get()};
  // Values: the last move must land in values_out; when the input is values_out itself and the
  // number of moves is odd, the first move cannot write there, and the result is copied back.
  const bool values_in_place = static_cast<const void*>(values_in) == static_cast<const void*>(values_out);
  auto value_destination = [&](int move) -> Word* {
    const bool to_out = (moves % 2 == 1 && values_in_place) ? move % 2 == 1 : (moves - 1 - move) % 2 == 0;
    return to_out ? values_out : value_spare.get();
  };

  int current = 0;  // keys in key_buffers[current]
  const Word* value_source = values_in;
  std::vector<Counts> chunk_counts(static_cast<std::size_t>(chunks));
  for (int move = 0; move < moves; ++move) {
    const int place = moving[static_cast<std::size_t>(move)];
    const Bits* source = key_buffers[current];
    Bits* destination = key_buffers[1 - current];
    if (move == 0) {
      for (int c = 0; c < chunks; ++c) chunk_counts[static_cast<std::size_t>(c)] = counts[static_cast<std::size_t>(c) * places + place];
    } else {
      parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
        Counts& mine = chunk_counts[static_cast<std::size_t>(c)];
        mine.fill(0);
        for (index_t i = chunk.begin; i < chunk.end; ++i) ++mine[digit_of(source[i], place)];
      });
    }
    // Chunk c's first position for digit d.
    index_t running = 0;
    for (int d = 0; d < kRadixDigits; ++d)
      for (int c = 0; c < chunks; ++c) {
        index_t& slot = chunk_counts[static_cast<std::size_t>(c)][d];
        const index_t count = slot;
        slot = running;
        running += count;
      }
    Word* value_destination_now = nullptr;
    if constexpr (kHasValues) value_destination_now = value_destination(move);
    parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
      Counts next = chunk_counts[static_cast<std::size_t>(c)];
      for (index_t i = chunk.begin; i < chunk.end; ++i) {
        const Bits radix = source[i];
        const index_t to = next[digit_of(radix, place)]++;
        destination[to] = radix;
        if constexpr (kHasValues) value_destination_now[to] = value_source[i];
      }
    });
    current = 1 - current;
    if constexpr (kHasValues) value_source = value_destination_now;
  }

  // Back from radix bits, into keys_out.
  const Bits* sorted = key_buffers[current];
  parallel_for_chunks(n, chunks, [&](int, Chunk chunk) {
    for (index_t i = chunk.begin; i < chunk.end; ++i) keys_out[i] = twiddle.from_radix(sorted[i]);
  });
  if constexpr (kHasValues) detail::parallel_copy(value_source, values_out, n, chunks);
}

// positions[j] = the number of sorted[i] that order before needles[j] (or before or equal, upper).
template <class Bits>
void sorted_search(RadixTwiddle<Bits> twiddle, const Bits* sorted, index_t n, const Bits* needles, index_t m,
                   bool upper, index_t* positions) {
  parallel_for(m, [&](index_t j) {
    const Bits needle = twiddle.to_radix(needles[j]);
    index_t low = 0, high = n;  // the answer lies in [low, high]
    while (low < high) {
      const index_t mid = low + (high - low) / 2;
      const Bits probe = twiddle.to_radix(sorted[mid]);
      if (upper ? !(needle < probe) : probe < needle) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    positions[j] = low;
  });
}

}  // namespace tessera::kernels::cpu
