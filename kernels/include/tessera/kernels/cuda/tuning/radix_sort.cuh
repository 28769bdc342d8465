// Tuning of the radix sort (device_radix_sort.cuh, agent_radix_sort.cuh), the one place it lives.
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every
// architecture, tuning/arch.cuh; none of these was measured on an sm_80 device).
#pragma once

#include <cstdint>
#include <type_traits>

#include "tessera/kernels/cuda/block_radix_rank.cuh"
#include "tessera/kernels/cuda/radix_packed_pair.cuh"
#include "tessera/kernels/sort_order.hpp"

namespace tessera::kernels::cuda::detail {

// The shape of one onesweep configuration: threads and keys per thread block, the resident blocks
// per SM the compiler must allow, the look-back's predecessors per round trip, and how a warp's
// lanes with one digit find each other (block_radix_rank.cuh).
template <class Bits, class Word, int BlockThreads, int ItemsPerThread, int MinBlocksPerSm, int LookbackBatch,
          WarpMatch Match = WarpMatch::ballots, bool StageValues = false, bool DynamicStorage = false,
          bool FitCarveout = false, bool ValuesInParts = false, bool PackedPairs = false>
struct RadixSortShape {
  static constexpr WarpMatch kWarpMatch = Match;
  static constexpr bool kHasValues = !std::is_same_v<Word, RadixNoValue>;
  // Values copied to shared memory (dynamic, a tile of them) by cp.async as soon as the tile's
  // keys are loaded, rather than read into registers after the keys are stored: their loads
  // overlap the ranking and no register holds them. 4-, 8- and 16-byte values.
  static constexpr bool kStageValues = StageValues && kHasValues;
  static_assert(!kStageValues || sizeof(Word) == 4 || sizeof(Word) == 8 || sizeof(Word) == 16,
                "staged values are copied 4, 8 or 16 bytes at a time");
  static constexpr int kBlockThreads = BlockThreads;
  static constexpr int kItemsPerThread = ItemsPerThread;
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm;
  static constexpr int kTileItems = kBlockThreads * kItemsPerThread;
  static constexpr int kLookbackBatch = LookbackBatch;
  // A portion's look-back counts must fit in 30 bits.
  static constexpr int kPortionItems = ((1 << 29) / kTileItems) * kTileItems;
  static constexpr int kStageBytes = kStageValues ? kTileItems * static_cast<int>(sizeof(Word)) : 0;
  // The pass's storage (a tile of keys, the ranking's counters) in dynamic shared memory before the
  // stage, rather than static: beyond the 48 KB a static tile may take.
  static constexpr bool kDynamicStorage = DynamicStorage;
  // The SM's shared-memory carveout: the smallest that keeps kMinBlocksPerSm blocks resident, the
  // rest left to L1 (where the tile's global loads land), rather than the largest (dynamic shared
  // memory) or the driver's choice (static only).
  static constexpr bool kFitCarveout = FitCarveout;
  // Staged values wider than the keys sorted part by part through the keys' area rather than in
  // the stage itself.
  static constexpr bool kValuesInParts = ValuesInParts;
  // Pairs sorted as one word per pair (Bits = that word, PackedWord; no Word), the key's radix bits
  // above the value; the first place reads and the last writes the arrays of keys and values
  // (device_radix_sort_packed, agent_radix_sort.cuh).
  static constexpr bool kPackedPairs = PackedPairs;
  static_assert(!kPackedPairs || ((sizeof(Bits) == 8 || sizeof(Bits) == 12 || sizeof(Bits) == 16) && !kHasValues),
                "packed pairs are 8-, 12- or 16-byte words without values");
};

// Values of 4, 8 or 16 bytes (naturally aligned) are staged in shared memory (kStageValues).
template <class Word>
inline constexpr bool kRadixSortStageValues =
    !std::is_same_v<Word, RadixNoValue> && (sizeof(Word) == 4 || sizeof(Word) == 8 || sizeof(Word) == 16) &&
    alignof(Word) == sizeof(Word);

// Items per thread: two resident thread blocks of 384 threads per SM (registers <= 80, no spills on
// sm_90; the pass's storage, a tile of keys or of values sorted where the keys were, static within
// 48 KB or dynamic; the staged values, dynamic, within the rest of the SM's 228 KB). Measured on an
// H100 with bench_sort --study-carveout (2^26 and 2^28 keys, 2026-11-25), each against CUB in the
// same run (ms at 2^28):
//   4-byte keys alone          32, storage dynamic, carveout fitted (4.88 against 5.21 for 24
//                              static; 33 spills)
//   4-byte keys, 4-byte values 34, staged, storage dynamic (8.85 against 9.02 for 30 static; 35
//                              spills), where one digit place is sorted; two or more: packed
//                              into 64-bit words (RadixSortPackedTuning)
//   4-byte keys, 8-byte values 24, staged, sorted part by part through the keys' area (12.42
//                              against 12.66-12.71 for 20 with the sorted tile in registers),
//                              where one digit place is sorted; two or more: packed into 96-bit
//                              words
//   8-byte keys                20, storage dynamic, carveout fitted (15.30 against 15.98 for 15
//                              static; 16.01 at 20 with the largest carveout)
//   8-byte keys, 8-byte values 18, staged, storage dynamic (31.51-31.55 against 32.25-32.27 for
//                              15), where one digit place is sorted; two or more: packed into
//                              128-bit words
// Values that are not staged (1, 2 bytes; odd sizes) are held in registers: 23 for 4-byte keys,
// fewer for wider values so that their tile fits the static shared memory. The same shapes build
// for sm_80 (one launch shape for every architecture), where the SM's 164 KB hold one block of the
// staged pairs' tiles; none was measured on an sm_80 device.
template <class Bits, class Word>
struct RadixSortItems {
  static constexpr bool kHasValues = !std::is_same_v<Word, RadixNoValue>;
  static constexpr int kValueBytes = kHasValues ? static_cast<int>(sizeof(Word)) : 0;
  static constexpr bool kStaged = kRadixSortStageValues<Word>;
  static constexpr int kWidestBytes = kValueBytes > static_cast<int>(sizeof(Bits)) ? kValueBytes : static_cast<int>(sizeof(Bits));
  static constexpr int kScaled = (sizeof(Bits) == 4 ? (kValueBytes <= 4 ? 23 : 30) : (kValueBytes <= 8 ? 30 : 24)) * 4 /
                                 (kWidestBytes < 4 ? 4 : kWidestBytes);
  // Keys alone, and staged values as wide as the keys, keep the pass's storage in dynamic shared
  // memory (tiles beyond the static 48 KB).
  static constexpr bool kDynamicStorage = !kHasValues || (kStaged && kValueBytes == static_cast<int>(sizeof(Bits)));
  // Keys alone take the smallest carveout that keeps their blocks resident (the rest L1: 8-byte
  // keys 4% faster than at the largest); the staged pairs need nearly all of the SM's shared memory
  // and take the largest (4-byte pairs 1% slower at the smallest that fits).
  static constexpr bool kFitCarveout = !kHasValues;
  // 4-byte keys with 8-byte staged values: the values sorted part by part through the keys' area.
  static constexpr bool kValuesInParts = sizeof(Bits) == 4 && kStaged && kValueBytes == 8;
  static constexpr int value = sizeof(Bits) == 4 && !kHasValues                   ? 32
                               : sizeof(Bits) == 4 && kStaged && kValueBytes == 4 ? 34
                               : kValuesInParts                                   ? 24
                               : sizeof(Bits) == 8 && !kHasValues                 ? 20
                               : kDynamicStorage                                  ? 18
                               : kScaled < 1                                      ? 1
                                                                                  : kScaled;
};
// 4-byte keys alone: the atomic-or warp match (5.22 ms against 5.65 ms with ballots at 24 static,
// bench_sort --study, 2026-11-24);
// pairs and 8-byte keys keep the ballots.
template <class Bits, class Word>
inline constexpr WarpMatch kRadixSortWarpMatch =
    sizeof(Bits) == 4 && std::is_same_v<Word, RadixNoValue> ? WarpMatch::atomic_or : WarpMatch::ballots;
// The tile's loads and the scattered stores of keys and values take the default cache policy.
// Evict-first hints measured slower for every kind (H100, 2026-11-25, one run, speedup over CUB at
// 2^26 / 2^28, bench/results/sort.json): ld.global.cs on the tile's loads or st.global.cs on the
// stores took 32-bit keys from 1.272 / 1.315 to 1.239 / 1.265 and 1.249 / 1.262, packed 4 + 4 from
// 1.055 / 1.062 to 1.012-1.030 / 1.016-1.018, 4 + 8 from 1.024 / 1.011 to 1.008-1.021 / 0.996-1.008,
// 64-bit keys from 1.081 / 1.105 to 1.026-1.051 / 1.049-1.054, staged 8 + 8 from 0.992 / 1.014 to
// 0.974-0.985 / 0.996-1.003: the next pass reads a pass's scattered writes long after, and evicting
// them first loses the L2's merging of partly written sectors.
template <class Bits, class Word>
struct RadixSortTuning : RadixSortShape<Bits, Word, 384, RadixSortItems<Bits, Word>::value, 2, 4,
                                        kRadixSortWarpMatch<Bits, Word>, kRadixSortStageValues<Word>,
                                        RadixSortItems<Bits, Word>::kDynamicStorage, RadixSortItems<Bits, Word>::kFitCarveout,
                                        RadixSortItems<Bits, Word>::kValuesInParts> {};

// Pairs of 4 + 4, 8 + 8 and 4 + 8 bytes: each pair one word (PackedWord, the key's radix bits above
// the value), sorted as keys alone by the bits of the key. A pass then moves the pair as one word
// through one rank, one exchange in shared memory and one scatter, where the staged pairs move two
// arrays through two; the same bytes of memory traffic.
// Values moved as unsigned words (RadixValueWord) of a width PackedWord takes.
template <class Bits, class Word>
inline constexpr bool kRadixSortPackPairs =
    (std::is_same_v<Word, std::uint32_t> || std::is_same_v<Word, std::uint64_t>) && !std::is_void_v<PackedWord<Bits, Word>>;
// The shape of the packed words (bench_sort --study-packed, H100, 2026-11-25, ms at 2^28 against
// CUB in the same run): 64-bit words as 64-bit keys alone, 20 per thread, carveout fitted (8.10-8.14
// against 8.51-8.61 for the staged 34; 18 and 22 8.22-8.26; the largest carveout 8.33-8.34);
// 128-bit words 12 per thread (28.04 against 31.30 staged; 10 28.67; 14 spills, 30.63); 96-bit
// words 16 per thread (11.88 against 12.20-12.24 for the staged 24 in parts; 14 12.14-12.21; 18
// spills, 12.33-12.42). The atomic-or warp match measured the same as the ballots for every word
// (within 0.5%).
template <class Key, class Value>
inline constexpr int kRadixSortPackedItems =
    sizeof(PackedWord<Key, Value>) == 8 ? RadixSortItems<std::uint64_t, RadixNoValue>::value
                                        : (sizeof(PackedWord<Key, Value>) == 12 ? 16 : 12);
template <class Key, class Value>
using RadixSortPackedTuning = RadixSortShape<PackedWord<Key, Value>, RadixNoValue, 384, kRadixSortPackedItems<Key, Value>, 2,
                                             4, WarpMatch::ballots, false, true, true, false, true>;

// The histogram pass: 128 threads of 16 keys (as CUB's sm80/sm90 histogram policy).
template <class Bits>
struct RadixHistogramTuning {
  static constexpr int kHistogramThreads = 128;
  static constexpr int kHistogramItems = 16;
  static constexpr int kMaxPlaces = static_cast<int>(sizeof(Bits));  // 8-bit places
};

// The search of sorted keys: one thread per needle.
struct SortedSearchTuning {
  static constexpr int kThreads = 128;
};

}  // namespace tessera::kernels::cuda::detail
