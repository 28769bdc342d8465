// The per-thread-block work of the Onesweep radix sort (Adinets and Merrill 2022; the agents of
// cub/agent/agent_radix_sort_histogram.cuh and agent_radix_sort_onesweep.cuh):
//
//   histogram  a thread block counts, in shared memory, the digits of every place of its share of
//              the keys, and adds its counts to the global ones; the last block to finish turns
//              each place's counts into the digits' starting positions (an exclusive scan).
//   onesweep   one tile of one place: load the tile's keys, rank their digits in the thread block
//              (block_radix_rank.cuh), publish the tile's digit counts, learn from the tiles before
//              it how many keys of each digit precede the tile (decoupled look-back, one thread per
//              digit), put the keys in sorted order in shared memory, and write them from there to
//              their global positions, so that consecutive threads write consecutive addresses
//              wherever the digit is the same. Values follow the keys through shared memory; those
//              of 4, 8 or 16 bytes are copied there (cp.async) as soon as the tile starts, so that
//              their loads overlap the keys' work and no register holds them meanwhile.
//
// Pairs of 4 + 4, 8 + 8 and 4 + 8 bytes are sorted as keys alone: one word per pair, the key's
// radix bits above the value (Tuning::kPackedPairs, radix_packed_pair.cuh), read from the two
// input arrays by the first place and written to the two output arrays by the last
// (kRadixSplitIn / kRadixSplitOut), and between them kept in a spare array or in an array laid
// over the two output arrays (kRadixSegmentedIn / kRadixSegmentedOut).
//
// The look-back word of (tile, digit) is 32 bits: a flag in the top two bits (a tile's own count,
// or the inclusive count of the tile and all tiles before it) over a 30-bit count; 0 means nothing
// published yet. A sort longer than a portion (< 2^30 keys) runs one onesweep pass per portion,
// each starting from the digit positions where the previous portion ended.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/async_copy.cuh"
#include "tessera/kernels/cuda/block_radix_rank.cuh"
#include "tessera/kernels/cuda/radix_packed_pair.cuh"
#include "tessera/kernels/cuda/tile_status.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/sort_order.hpp"

namespace tessera::kernels::cuda::detail {

constexpr std::uint32_t kLookbackCount = 1u << 30;      // flag: the tile's own digit count
constexpr std::uint32_t kLookbackInclusive = 1u << 31;  // flag: count of this tile and all before it
constexpr std::uint32_t kLookbackValueMask = kLookbackCount - 1;

__device__ __forceinline__ std::uint32_t load_relaxed_gpu_u32(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_relaxed_gpu_u32(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Where one pass takes its digit: bits [shift, shift + bits) of the radix bits.
struct RadixDigit {
  int shift = 0;
  unsigned mask = 0;  // (1 << bits) - 1

  template <class Bits>
  __device__ __forceinline__ unsigned operator()(Bits radix) const {
    return static_cast<unsigned>(radix >> shift) & mask;
  }
  __device__ __forceinline__ unsigned operator()(const RadixWord96& radix) const { return (radix.word[2] >> shift) & mask; }
};

// ---- histogram ---------------------------------------------------------------------------------

template <class Tuning, class Bits>
struct RadixHistogramStorage {
  unsigned counts[Tuning::kMaxPlaces][kRadixDigits];
  bool last_block;
};

// digit_starts[p][d] (global memory, zero before the first block starts): the count of digit d of
// place p; once every block is done, the number of keys whose digit at place p is below d.
template <class Tuning, class Bits>
__device__ __forceinline__ void radix_histogram_agent(RadixHistogramStorage<Tuning, Bits>& s, const Bits* keys,
                                                      index_t n, RadixTwiddle<Bits> twiddle, int begin_bit,
                                                      int end_bit, index_t* digit_starts, unsigned* blocks_done) {
  constexpr int kThreads = Tuning::kHistogramThreads;
  constexpr int kItems = Tuning::kHistogramItems;
  constexpr index_t kTile = index_t(kThreads) * kItems;
  const int places = (end_bit - begin_bit + kRadixDigitBits - 1) / kRadixDigitBits;
  for (int i = static_cast<int>(threadIdx.x); i < Tuning::kMaxPlaces * kRadixDigits; i += kThreads)
    (&s.counts[0][0])[i] = 0;
  __syncthreads();

  // Places unrolled (a uniform test per place, not a loop), whole tiles without per-key guards.
  RadixDigit digit_of[Tuning::kMaxPlaces];
#pragma unroll
  for (int p = 0; p < Tuning::kMaxPlaces; ++p) {
    const int shift = begin_bit + p * kRadixDigitBits;
    const int bits = end_bit - shift < kRadixDigitBits ? end_bit - shift : kRadixDigitBits;
    digit_of[p] = RadixDigit{shift, bits > 0 ? (1u << bits) - 1 : 0u};
  }
  auto count_tile = [&](const Bits* tile_keys, int valid_items, auto whole) {
    constexpr bool kWhole = decltype(whole)::value;
    Bits radix[kItems];
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int i = u * kThreads + static_cast<int>(threadIdx.x);
      radix[u] = (kWhole || i < valid_items) ? twiddle.to_radix(tile_keys[i]) : Bits(0);
    }
#pragma unroll
    for (int p = 0; p < Tuning::kMaxPlaces; ++p) {
      if (p < places) {
#pragma unroll
        for (int u = 0; u < kItems; ++u)
          if (kWhole || u * kThreads + static_cast<int>(threadIdx.x) < valid_items)
            atomicAdd(&s.counts[p][digit_of[p](radix[u])], 1u);
      }
    }
  };
  const index_t whole_tiles = n / kTile;
  for (index_t tile = blockIdx.x; tile < whole_tiles; tile += gridDim.x)
    count_tile(keys + tile * kTile, static_cast<int>(kTile), std::true_type{});
  if (blockIdx.x == gridDim.x - 1 && whole_tiles * kTile < n)
    count_tile(keys + whole_tiles * kTile, static_cast<int>(n - whole_tiles * kTile), std::false_type{});
  __syncthreads();

  for (int i = static_cast<int>(threadIdx.x); i < places * kRadixDigits; i += kThreads) {
    const unsigned count = (&s.counts[0][0])[i];
    if (count) atomicAdd(reinterpret_cast<unsigned long long*>(digit_starts + i), static_cast<unsigned long long>(count));
  }
  // The last block to finish scans: its reads see every block's additions (each block's adds
  // precede its fence and its count of blocks_done).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) s.last_block = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!s.last_block) return;
  __threadfence();

  // One warp per place: lane l owns digits 8l .. 8l+7.
  constexpr int kDigitsPerLane = kRadixDigits / kWarpThreads;
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const int lane = lane_id();
  for (int p = warp; p < places; p += kThreads / kWarpThreads) {
    index_t* const row = digit_starts + p * kRadixDigits + lane * kDigitsPerLane;
    index_t count[kDigitsPerLane];
    index_t lane_total = 0;
#pragma unroll
    for (int j = 0; j < kDigitsPerLane; ++j) {
      count[j] = static_cast<index_t>(__ldcg(reinterpret_cast<const unsigned long long*>(row + j)));
      lane_total += count[j];
    }
    index_t start = warp_inclusive_scan(lane_total, tessera::plus{}) - lane_total;
#pragma unroll
    for (int j = 0; j < kDigitsPerLane; ++j) {
      row[j] = start;
      start += count[j];
    }
  }
}

// ---- onesweep pass -----------------------------------------------------------------------------

template <class Tuning, class Bits, class Word>
struct OnesweepStorage {
  using Rank = BlockRadixRank<Tuning::kBlockThreads, Tuning::kItemsPerThread, Tuning::kWarpMatch>;
  static constexpr bool kHasValues = !std::is_same_v<Word, RadixNoValue>;
  // Staged values wider than the keys are put in sorted order within the stage itself, or part by
  // part in the keys' area (Tuning::kValuesInParts), so that this storage stays the size of a tile
  // of keys; otherwise they go where the keys were.
  static constexpr bool kSortValuesInStage = Tuning::kStageValues && sizeof(Word) > sizeof(Bits);
  union {
    Bits keys[Tuning::kTileItems];
    Word values[kHasValues && !kSortValuesInStage ? Tuning::kTileItems : 1];
    typename Rank::Storage rank;
  };
  // Where the sorted tile's element i of each digit goes: destination[digit] + i (global memory),
  // for the keys, then for the values.
  union Destination {
    Bits* keys;
    Word* values;
    typename PackedPair<Bits>::Key* split_keys;  // packed pairs written as two arrays: the keys' array
  } destination[kRadixDigits];
  // Packed pairs written as two arrays: where the values of each digit go.
  typename PackedPair<Bits>::Value* split_values[Tuning::kPackedPairs ? kRadixDigits : 1];
  // Packed pairs written to a segmented array: the position of each digit's element 0 (as
  // destination, as a position), and whether a digit's run crosses from one segment into the next.
  index_t positions[Tuning::kPackedPairs ? kRadixDigits : 1];
  unsigned straddles;
  unsigned tile;
};

// What one onesweep launch (one place, one portion) needs.
template <class Bits, class Word>
struct OnesweepPass {
  const Bits* keys_in;      // the portion's first key
  Bits* keys_out;           // the whole output (positions are global)
  const Word* values_in;    // the portion's first value (keys only: null)
  Word* values_out;
  int portion_items;        // keys in this portion, < 2^30
  const index_t* digit_starts;   // where this portion's keys of each digit start
  index_t* next_digit_starts;    // where the next portion's start (null for the last portion)
  std::uint32_t* lookback;       // [tile][digit] words, zero before the launch
  unsigned* tile_counter;        // zero before the launch
  RadixDigit digit;
  RadixTwiddle<Bits> twiddle;
  bool convert_in;   // keys_in holds key bits (the first place), else radix bits
  bool convert_out;  // keys_out gets key bits (the last place), else radix bits
  // Packed pairs (Tuning::kPackedPairs; Bits a word of PackedPair): the input read from an array of
  // keys and one of values (kRadixSplitIn: the portion's first key and value; keys_in unused), the
  // output written to two (kRadixSplitOut: the whole output; keys_out unused).
  const typename PackedPair<Bits>::Key* split_keys_in;
  const typename PackedPair<Bits>::Value* split_values_in;
  typename PackedPair<Bits>::Key* split_keys_out;
  typename PackedPair<Bits>::Value* split_values_out;
  // Packed pairs read from or written to an array of words laid over three pieces of memory
  // (kRadixSegmentedIn/Out; keys_in/keys_out unused): positions [0, segment_end[0]) in segment[0],
  // [segment_end[0], segment_end[1]) in segment[1], [segment_end[1], n) in segment[2].
  // portion_first: the portion's first position.
  Bits* segment[3];
  index_t segment_end[2];
  index_t portion_first;
};

// Which segment of OnesweepPass::segment holds position p, its first position, and p's address.
template <class Bits, class Word>
__device__ __forceinline__ int segment_of(const OnesweepPass<Bits, Word>& pass, index_t p) {
  return p < pass.segment_end[0] ? 0 : (p < pass.segment_end[1] ? 1 : 2);
}
template <class Bits, class Word>
__device__ __forceinline__ index_t segment_first(const OnesweepPass<Bits, Word>& pass, int k) {
  return k == 0 ? 0 : pass.segment_end[k - 1];
}
template <class Bits, class Word>
__device__ __forceinline__ Bits* segment_address(const OnesweepPass<Bits, Word>& pass, index_t p) {
  const int k = segment_of(pass, p);
  return pass.segment[k] + (p - segment_first(pass, k));
}
// The pointer b with b + p the address of every position p of segment k (integer arithmetic: b
// itself may point outside the segment).
template <class Bits, class Word>
__device__ __forceinline__ Bits* segment_origin(const OnesweepPass<Bits, Word>& pass, int k) {
  return reinterpret_cast<Bits*>(reinterpret_cast<std::uintptr_t>(pass.segment[k]) -
                                 static_cast<std::uintptr_t>(segment_first(pass, k)) * sizeof(Bits));
}

// Where a pass of packed pairs reads and writes two arrays (keys, values), or a segmented array of
// words, rather than one array of words (a compile-time choice: one kernel with the choices as
// run-time branches exceeds the registers of two blocks per SM in ptxas's allocation).
constexpr int kRadixSplitIn = 1;
constexpr int kRadixSplitOut = 2;
constexpr int kRadixSegmentedIn = 4;
constexpr int kRadixSegmentedOut = 8;

// stage: shared memory for a tile of values (Tuning::kStageValues), else unused.
// Split: one of kRadixSplitIn and kRadixSegmentedIn and/or one of kRadixSplitOut and
// kRadixSegmentedOut (packed pairs only), else 0. Only the first place reads, and only the last
// writes, the two arrays; the segmented words are radix bits (never converted).
template <class Tuning, class Bits, class Word, int Split = 0>
__device__ __forceinline__ void onesweep_agent(OnesweepStorage<Tuning, Bits, Word>& s, Word* stage,
                                               const OnesweepPass<Bits, Word>& pass) {
  constexpr bool kSplitIn = (Split & kRadixSplitIn) != 0;
  constexpr bool kSplitOut = (Split & kRadixSplitOut) != 0;
  constexpr bool kSegmentedIn = (Split & kRadixSegmentedIn) != 0;
  constexpr bool kSegmentedOut = (Split & kRadixSegmentedOut) != 0;
  static_assert(Split == 0 || Tuning::kPackedPairs, "only packed pairs read or write two arrays or segments");
  static_assert(!(kSplitIn && kSegmentedIn) && !(kSplitOut && kSegmentedOut), "one kind of input, one of output");
  constexpr int kThreads = Tuning::kBlockThreads;
  constexpr int kItems = Tuning::kItemsPerThread;
  constexpr int kTileItems = Tuning::kTileItems;
  constexpr bool kHasValues = OnesweepStorage<Tuning, Bits, Word>::kHasValues;
  using Rank = typename OnesweepStorage<Tuning, Bits, Word>::Rank;

  // Tiles in the order thread blocks start, so that every tile's predecessors are running or done
  // and the look-back never waits on a block that cannot run.
  if (threadIdx.x == 0) {
    s.tile = atomicAdd(pass.tile_counter, 1u);
    if constexpr (kSegmentedOut) s.straddles = 0;
  }
  __syncthreads();
  const int tile = static_cast<int>(s.tile);
  const int tile_base = tile * kTileItems;
  const int tile_items = min(kTileItems, pass.portion_items - tile_base);
  const bool full_tile = tile_items == kTileItems;
  const bool last_tile = tile_base + kTileItems >= pass.portion_items;
  const int lane = lane_id();
  const int warp_first = (static_cast<int>(threadIdx.x) / kWarpThreads) * kItems * kWarpThreads + lane;

  // Warp-striped load; places past the end get the largest radix value, so they rank after every
  // key of the tile and are never stored. Only the first place converts key bits to radix bits (a
  // branch on a launch parameter, not per key).
  const Bits pad = pass.convert_in ? pass.twiddle.from_radix(~Bits(0)) : ~Bits(0);
  // item(i): the key (or packed word) at tile position i; load_guarded tests every position.
  Bits keys[kItems];
  auto load_guarded = [&](auto item) {
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int i = warp_first + u * kWarpThreads;
      keys[u] = i < tile_items ? item(i) : pad;
    }
  };
  auto load_tile = [&](auto item) {
    if (full_tile) {
#pragma unroll
      for (int u = 0; u < kItems; ++u) keys[u] = item(warp_first + u * kWarpThreads);
    } else {
      load_guarded(item);
    }
  };
  auto load_array = [&](const Bits* tile_in) {
    load_tile([&](int i) { return tile_in[i]; });
  };
  if constexpr (kSplitIn) {
    const auto* const tile_keys = pass.split_keys_in + tile_base;
    const auto* const tile_values = pass.split_values_in + tile_base;
    load_tile([&](int i) {
      return PackedPair<Bits>::pack(tile_keys[i], tile_values[i]);
    });
  } else if constexpr (kSegmentedIn) {
    // A tile within one segment loads as from one array; the one tile across a segment's end
    // finds each position's segment.
    const index_t first = pass.portion_first + tile_base;
    const int k = segment_of(pass, first);
    if (k == segment_of(pass, first + tile_items - 1)) {
      load_array(segment_origin(pass, k) + first);
    } else {
      load_guarded([&](int i) { return *segment_address(pass, first + i); });
    }
  } else {
    load_array(pass.keys_in + tile_base);
  }
  if constexpr (kHasValues && Tuning::kStageValues) {
    // The tile's values, in tile order, copied to `stage` while the keys are ranked and stored:
    // whole 16-byte pieces where the values start on 16 bytes, element by element otherwise.
    const Word* const first = pass.values_in + tile_base;
    int copied = 0;
    if ((reinterpret_cast<std::uintptr_t>(first) & 15u) == 0) {
      const int pieces = tile_items * static_cast<int>(sizeof(Word)) / 16;
      for (int c = static_cast<int>(threadIdx.x); c < pieces; c += kThreads)
        copy_async_16(reinterpret_cast<char*>(stage) + 16 * c, reinterpret_cast<const char*>(first) + 16 * c, 16);
      copied = pieces * 16 / static_cast<int>(sizeof(Word));
    }
    for (int i = copied + static_cast<int>(threadIdx.x); i < tile_items; i += kThreads)
      copy_async<sizeof(Word)>(stage + i, first + i);
    copy_async_commit();
  }
  if (pass.convert_in) {
#pragma unroll
    for (int u = 0; u < kItems; ++u) keys[u] = pass.twiddle.to_radix(keys[u]);
  }

  PackedRanks<kItems> ranks;
  int digit_count = 0, digit_start = 0;
  const int digit = static_cast<int>(threadIdx.x);
  std::uint32_t* const my_lookback = pass.lookback + static_cast<std::size_t>(tile) * kRadixDigits + digit;
  Rank::rank(s.rank, keys, pass.digit, full_tile, ranks, digit_count, digit_start, [&](int count) {
    // Published as soon as it is known; tile 0 has nothing before it.
    if (digit < kRadixDigits)
      store_relaxed_gpu_u32(my_lookback, static_cast<std::uint32_t>(count) | (tile == 0 ? kLookbackInclusive : kLookbackCount));
  });
  __syncthreads();  // the rank storage is done with; the tile's keys take its place

#pragma unroll
  for (int u = 0; u < kItems; ++u) s.keys[ranks[u]] = keys[u];

  // Values that are not staged are read into registers once the keys are stored.
  constexpr bool kValuesInRegisters = kHasValues && !Tuning::kStageValues;
  Word values[kValuesInRegisters ? kItems : 1];
  auto load_values = [&] {
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int i = warp_first + u * kWarpThreads;
      if (full_tile || i < tile_items) values[u] = pass.values_in[tile_base + i];
    }
  };
  if (digit < kRadixDigits) {
    // Look-back: the keys of this digit in the portion's tiles before this one, kLookbackBatch
    // predecessors per round trip (their words are read at once, then added in order up to the
    // nearest inclusive one; tile 0's is always inclusive, so no round reads below it).
    constexpr int kBatch = Tuning::kLookbackBatch;
    int inclusive = digit_count;
    for (int before = tile - 1; before >= 0; before -= kBatch) {
      std::uint32_t value[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
        value[b] = before - b >= 0 ? load_relaxed_gpu_u32(pass.lookback + static_cast<std::size_t>(before - b) * kRadixDigits + digit)
                                   : kLookbackInclusive;
      bool reached = false;
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        if (reached) break;
        while (value[b] == 0)
          value[b] = load_relaxed_gpu_u32(pass.lookback + static_cast<std::size_t>(before - b) * kRadixDigits + digit);
        inclusive += static_cast<int>(value[b] & kLookbackValueMask);
        reached = (value[b] & kLookbackInclusive) != 0;
      }
      if (reached) break;
    }
    if (tile > 0) store_relaxed_gpu_u32(my_lookback, static_cast<std::uint32_t>(inclusive) | kLookbackInclusive);
    const index_t portion_start = pass.digit_starts[digit];
    const index_t offset = portion_start + (inclusive - digit_count) - digit_start;
    if constexpr (kSplitOut) {
      s.destination[digit].split_keys = pass.split_keys_out + offset;
      s.split_values[digit] = pass.split_values_out + offset;
    } else if constexpr (kSegmentedOut) {
      // This tile's run of the digit, positions offset + [digit_start, digit_start + digit_count):
      // within one segment (every run but at most one per segment boundary) it is written as to
      // one array.
      const index_t run_first = offset + digit_start;
      const int k = segment_of(pass, run_first);
      s.destination[digit].keys = segment_origin(pass, k) + offset;
      s.positions[digit] = offset;
      if (digit_count > 0 && segment_of(pass, run_first + digit_count - 1) != k) s.straddles = 1;
    } else {
      s.destination[digit].keys = pass.keys_out + offset;
    }
    if (last_tile && pass.next_digit_starts) pass.next_digit_starts[digit] = portion_start + inclusive;
  }
  __syncthreads();

  // From shared memory in tile order: runs of one digit go to consecutive global addresses. Only
  // the last place converts back to key bits.
  PackedDigits<kItems> sorted_digits;
  auto store_keys = [&](auto convert, auto full) {
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int i = static_cast<int>(threadIdx.x) + u * kThreads;
      const Bits radix = s.keys[i];
      const unsigned d = pass.digit(radix);
      sorted_digits.set(u, d);
      if (decltype(full)::value || i < tile_items) {
        const Bits out = decltype(convert)::value ? pass.twiddle.from_radix(radix) : radix;
        if constexpr (kSplitOut) {
          s.destination[d].split_keys[i] = PackedPair<Bits>::key(out);
          s.split_values[d][i] = PackedPair<Bits>::value(out);
        } else {
          s.destination[d].keys[i] = out;
        }
      }
    }
  };
  if constexpr (kSegmentedOut) {
    if (s.straddles) {
      // A run crosses a segment boundary: every key finds its position's segment.
#pragma unroll
      for (int u = 0; u < kItems; ++u) {
        const int i = static_cast<int>(threadIdx.x) + u * kThreads;
        const Bits radix = s.keys[i];
        if (i < tile_items) *segment_address(pass, s.positions[pass.digit(radix)] + i) = radix;
      }
      return;
    }
  }
  if (pass.convert_out) {
    if (full_tile) {
      store_keys(std::true_type{}, std::true_type{});
    } else {
      store_keys(std::true_type{}, std::false_type{});
    }
  } else {
    if (full_tile) {
      store_keys(std::false_type{}, std::true_type{});
    } else {
      store_keys(std::false_type{}, std::false_type{});
    }
  }

  if constexpr (kHasValues) {
    if constexpr (kValuesInRegisters) load_values();
    if constexpr (Tuning::kStageValues) copy_async_wait<0>();
    // Every key is read back from shared memory, every key destination used; the staged values
    // are visible to every thread.
    __syncthreads();
    if (digit < kRadixDigits) s.destination[digit].values = pass.values_out + (s.destination[digit].keys - pass.keys_out);
#pragma unroll
    for (auto& pair : ranks.pair) register_barrier(pair);
    Word* sorted_values = s.values;
    if constexpr (OnesweepStorage<Tuning, Bits, Word>::kSortValuesInStage && Tuning::kValuesInParts) {
      // Values wider than the keys, sorted part by part into the keys' area (free once the keys
      // are stored): each part is the sorted positions of kPartItems of each thread's items, as
      // many values as the area holds; no register holds a tile of them.
      constexpr int kPartItems = kItems * static_cast<int>(sizeof(Bits)) / static_cast<int>(sizeof(Word));
      static_assert(kPartItems >= 1, "the keys' area holds at least one value per thread");
      Word* const area = reinterpret_cast<Word*>(s.keys);
#pragma unroll
      for (int first = 0; first < kItems; first += kPartItems) {
        const int last = first + kPartItems < kItems ? first + kPartItems : kItems;
        const int low = first * kThreads, high = last * kThreads;
        if (first > 0) __syncthreads();  // the previous part is written out
#pragma unroll
        for (int u = 0; u < kItems; ++u) {
          const int i = warp_first + u * kWarpThreads;
          const int r = ranks[u];
          if ((full_tile || i < tile_items) && r >= low && r < high) area[r - low] = stage[i];
        }
        __syncthreads();
#pragma unroll
        for (int u = first; u < last; ++u) {
          const int i = static_cast<int>(threadIdx.x) + u * kThreads;
          if (full_tile || i < tile_items) {
            // The address before the value (as below).
            Word* const out = s.destination[sorted_digits[u]].values + i;
            *out = area[i - low];
          }
        }
      }
      return;
    } else if constexpr (OnesweepStorage<Tuning, Bits, Word>::kSortValuesInStage) {
      Word staged[kItems];
#pragma unroll
      for (int u = 0; u < kItems; ++u) {
        const int i = warp_first + u * kWarpThreads;
        if (full_tile || i < tile_items) staged[u] = stage[i];
      }
      __syncthreads();  // every staged value is read
#pragma unroll
      for (int u = 0; u < kItems; ++u) {
        const int i = warp_first + u * kWarpThreads;
        if (full_tile || i < tile_items) stage[ranks[u]] = staged[u];
      }
      sorted_values = stage;
    } else {
#pragma unroll
      for (int u = 0; u < kItems; ++u) {
        const int i = warp_first + u * kWarpThreads;
        if constexpr (Tuning::kStageValues) {
          if (full_tile || i < tile_items) s.values[ranks[u]] = stage[i];
        } else {
          if (full_tile || i < tile_items) s.values[ranks[u]] = values[u];
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int i = static_cast<int>(threadIdx.x) + u * kThreads;
      if (full_tile || i < tile_items) {
        // The destination's address is read before the value: the order the measured kernels were
        // compiled from (with the value read first, the pairs' passes schedule differently).
        Word* const out = s.destination[sorted_digits[u]].values + i;
        *out = sorted_values[i];
      }
    }
  }
}

}  // namespace tessera::kernels::cuda::detail
