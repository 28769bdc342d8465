// Tuning of the radix sort (device_radix_sort.cuh, agent_radix_sort.cuh), the one place it lives.
// Measured on H100/H200 only: sm_80 runs the same values (one launch shape for every
// architecture, tuning/arch.cuh; none of these was measured on an sm_80 device).
#pragma once

#include <type_traits>

#include "tessera/kernels/cuda/block_radix_rank.cuh"
#include "tessera/kernels/sort_order.hpp"

namespace tessera::kernels::cuda::detail {

// The shape of one onesweep configuration: threads and keys per thread block, the resident blocks
// per SM the compiler must allow, the look-back's predecessors per round trip, and how a warp's
// lanes with one digit find each other (block_radix_rank.cuh).
template <class Bits, class Word, int BlockThreads, int ItemsPerThread, int MinBlocksPerSm, int LookbackBatch,
          WarpMatch Match = WarpMatch::ballots, bool EarlyValues = false>
struct RadixSortShape {
  static constexpr WarpMatch kWarpMatch = Match;
  // Values read from global memory as soon as the keys are ranked (their latency under the
  // look-back and the keys' stores), rather than after the keys are stored.
  static constexpr bool kEarlyValues = EarlyValues;
  static constexpr bool kHasValues = !std::is_same_v<Word, RadixNoValue>;
  static constexpr int kBlockThreads = BlockThreads;
  static constexpr int kItemsPerThread = ItemsPerThread;
  static constexpr int kMinBlocksPerSm = MinBlocksPerSm;
  static constexpr int kTileItems = kBlockThreads * kItemsPerThread;
  static constexpr int kLookbackBatch = LookbackBatch;
  // A portion's look-back counts must fit in 30 bits.
  static constexpr int kPortionItems = ((1 << 29) / kTileItems) * kTileItems;
};

// Tuning of the radix sort, the one place it lives (CUB's sm90 onesweep tunings as the starting
// point: 384 threads, about 20 4-byte items per thread, fewer for wider keys or values so that a
// tile of the widest of them fits the 48 KB of static shared memory). Two resident thread blocks
// per SM at least (registers <= 80, no spills on sm_90): 21 items per thread for 4-byte pairs, 14
// for 8-byte pairs; 15 for 4-byte keys with 8-byte values (their tile fills the shared memory).
template <class Bits, class Word>
struct RadixSortItems {
  static constexpr bool kHasValues = !std::is_same_v<Word, RadixNoValue>;
  static constexpr int kValueBytes = kHasValues ? static_cast<int>(sizeof(Word)) : 0;
  static constexpr int kWidestBytes = kValueBytes > static_cast<int>(sizeof(Bits)) ? kValueBytes : static_cast<int>(sizeof(Bits));
  // Items per thread for 4-byte elements; the widest element scales it down.
  static constexpr int kNominal = sizeof(Bits) == 4 ? (!kHasValues ? 24 : kValueBytes <= 4 ? 21 : 30)
                                                   : (kValueBytes < 8 ? 30 : kValueBytes == 8 ? 28 : 24);
  static constexpr int kScaled = kNominal * 4 / (kWidestBytes < 4 ? 4 : kWidestBytes);
  static constexpr int value = kScaled < 1 ? 1 : kScaled;
};
// 4-byte keys alone: 24 keys per thread and the atomic-or warp match (the fastest of the shapes
// bench_sort --study tries on an H100 at 2^28 keys: 5.22 ms against 5.65 ms for 20 keys per thread
// with ballots); pairs and 8-byte keys keep the ballots.
template <class Bits, class Word>
inline constexpr WarpMatch kRadixSortWarpMatch =
    sizeof(Bits) == 4 && std::is_same_v<Word, RadixNoValue> ? WarpMatch::atomic_or : WarpMatch::ballots;
template <class Bits, class Word>
struct RadixSortTuning
    : RadixSortShape<Bits, Word, 384, RadixSortItems<Bits, Word>::value, 2, 4, kRadixSortWarpMatch<Bits, Word>> {};

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
