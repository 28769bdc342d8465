// Block-wide ranking of 8-bit digits for the radix sort (as cub/block/block_radix_rank.cuh's
// BlockRadixRankMatchEarlyCounts): each key's position in the tile sorted stably by digit, and the
// tile's count of every digit, which the caller learns before the (longer) ranking proper, so
// that it can publish them to the tiles after it early.
//
// Keys are warp-striped: item u of lane l of warp w is the tile's element
//   w * ItemsPerThread * 32 + u * 32 + l,
// so that the order (warp, item, lane) is the tile's order, and ranks that keep it are stable.
//   1. each warp counts its digits in its own shared-memory row (shared atomics);
//   2. threads 0..255, one per digit, turn the rows into each warp's exclusive start for the digit
//      and the tile's count (handed to the caller's callback), then scan the counts over the
//      digits for the digit's start in the tile;
//   3. each warp ranks its items in order: the lanes holding the same digit find each other with
//      eight ballots ("warp match"; faster than match.any for 8-bit labels), the highest of them
//      advances the warp's counter of that digit by their number, and each lane's rank is the
//      counter before that plus its place among them.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/functional.hpp"

namespace tessera::kernels::cuda::detail {

constexpr int kRadixDigitBits = 8;
constexpr int kRadixDigits = 1 << kRadixDigitBits;

// Lanes whose label has the same low LabelBits bits as this lane's (all 32 lanes must call it).
// Per bit: one test that sets a predicate, the ballot of it, and a predicated NOT where this lane's
// bit is clear (CUB's form; written as C++, the same took 9 PTX instructions per bit).
template <int LabelBits>
__device__ __forceinline__ unsigned warp_match_label(unsigned label) {
  unsigned peers = kFullMask;
#pragma unroll
  for (int bit = 0; bit < LabelBits; ++bit) {
    unsigned same;
    asm("{\n\t.reg .pred p;\n\t"
        "and.b32 %0, %1, %2;\n\t"
        "setp.ne.u32 p, %0, 0;\n\t"
        "vote.ballot.sync.b32 %0, p, 0xffffffff;\n\t"
        "@!p not.b32 %0, %0;\n\t}"
        : "=r"(same)
        : "r"(label), "r"(1u << bit));
    peers &= same;
  }
  return peers;
}

// Hides a register's value from the compiler (an empty asm that may change it): what is computed
// from it after this point is computed again rather than kept live from before.
template <class T>
__device__ __forceinline__ void register_barrier(T& value) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8 || sizeof(T) == 12 || sizeof(T) == 16, "4-, 8-, 12- or 16-byte registers");
  if constexpr (sizeof(T) == 4) {
    asm volatile("" : "+r"(value));
  } else if constexpr (sizeof(T) == 8) {
    asm volatile("" : "+l"(value));
  } else if constexpr (sizeof(T) == 12) {
    auto* words = reinterpret_cast<unsigned*>(&value);
    asm volatile("" : "+r"(words[0]), "+r"(words[1]), "+r"(words[2]));
  } else {
    auto* halves = reinterpret_cast<unsigned long long*>(&value);
    asm volatile("" : "+l"(halves[0]), "+l"(halves[1]));
  }
}

__device__ __forceinline__ unsigned lanemask_le() {
  unsigned mask;
  asm("mov.u32 %0, %%lanemask_le;" : "=r"(mask));
  return mask;
}

// Ranks within a tile (below 2^16) two to a register: half the registers of an int per item, which
// is what keeps a thread block of 20 keys per thread within the registers of three blocks per SM.
template <int Items>
struct PackedRanks {
  unsigned pair[(Items + 1) / 2];
  __device__ __forceinline__ void set(int u, unsigned rank) {
    if (u % 2 == 0) {
      pair[u / 2] = rank;
    } else {
      pair[u / 2] |= rank << 16;
    }
  }
  __device__ __forceinline__ int operator[](int u) const {
    return static_cast<int>(u % 2 == 0 ? pair[u / 2] & 0xffffu : pair[u / 2] >> 16);
  }
};

// A thread's 8-bit digits, four to a register (the digits of the sorted tile's elements a thread
// stores, kept from the keys' store to the values').
template <int Items>
struct PackedDigits {
  unsigned quad[(Items + 3) / 4];
  __device__ __forceinline__ void set(int u, unsigned digit) {
    if (u % 4 == 0) {
      quad[u / 4] = digit;
    } else {
      quad[u / 4] |= digit << (8 * (u % 4));
    }
  }
  __device__ __forceinline__ unsigned operator[](int u) const { return quad[u / 4] >> (8 * (u % 4)) & 0xffu; }
};

// How the lanes holding one digit find each other: eight ballots, or (CUB's ATOMIC_OR variant) a
// shared-memory word per digit that every lane ORs its bit into.
enum class WarpMatch { ballots, atomic_or };

template <int BlockThreads, int ItemsPerThread, WarpMatch Match = WarpMatch::ballots>
struct BlockRadixRank {
  static_assert(BlockThreads * ItemsPerThread <= (1 << 16), "ranks are 16-bit");
  static_assert(BlockThreads % kWarpThreads == 0 && BlockThreads >= kRadixDigits,
                "one thread per digit: at least 256 threads in whole warps");
  static constexpr int kWarps = BlockThreads / kWarpThreads;
  static constexpr int kDigitWarps = kRadixDigits / kWarpThreads;

  struct Storage {
    int warp_digit[kWarps][kRadixDigits];  // counts, then each warp's running start per digit
    int digit_warp_totals[kDigitWarps];    // the block scan of the digit counts
    unsigned match[Match == WarpMatch::atomic_or ? kWarps : 1][kRadixDigits];  // lanes per digit, zero between items
  };

  // ranks[u]: the position of item u in the tile sorted stably by digit. For threads below 256,
  // digit_count / digit_start receive the tile's count of digit threadIdx.x and where it starts
  // in the sorted tile; on_counts(digit_count) runs in every thread (the count is 0 above 255)
  // once the counts are known, before the ranking. Contains barriers: every thread calls it.
  // The storage may be reused after a barrier that follows the call.
  // digit_of(keys[u]) is item u's digit, taken again where needed rather than held in registers
  // (one more live register per item costs a resident thread block per SM): a register barrier on
  // the keys after the counts keeps the compiler from holding the counts' digit addresses until
  // the ranking. The keys pass through that barrier, hence the non-const reference.
  // A whole tile whose keys all have one digit (common in the upper places of sorted or narrow
  // data) skips the ranking: its order is the tile order.
  template <class Key, class DigitOf, class CountsCallback>
  __device__ __forceinline__ static void rank(Storage& s, Key (&keys)[ItemsPerThread], DigitOf digit_of,
                                              bool whole_tile, PackedRanks<ItemsPerThread>& ranks, int& digit_count,
                                              int& digit_start, CountsCallback&& on_counts) {
    const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
    const int lane = lane_id();
    int* const row = s.warp_digit[warp];
#pragma unroll
    for (int d = lane; d < kRadixDigits; d += kWarpThreads) row[d] = 0;
    if constexpr (Match == WarpMatch::atomic_or) {
#pragma unroll
      for (int d = lane; d < kRadixDigits; d += kWarpThreads) s.match[warp][d] = 0;
    }
    __syncwarp();
#pragma unroll
    for (int u = 0; u < ItemsPerThread; ++u) atomicAdd(row + digit_of(keys[u]), 1);
#pragma unroll
    for (int u = 0; u < ItemsPerThread; ++u) register_barrier(keys[u]);
    __syncthreads();

    // Per digit: each warp's exclusive start among the warps, and the tile's count.
    const int digit = static_cast<int>(threadIdx.x);
    digit_count = 0;
    if (digit < kRadixDigits) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        const int count = s.warp_digit[w][digit];
        s.warp_digit[w][digit] = digit_count;
        digit_count += count;
      }
    }
    on_counts(digit_count);

    // The digits' starts: an exclusive scan of the counts over threads 0..255.
    const int inclusive = warp_inclusive_scan(digit_count, tessera::plus{});
    if (digit < kRadixDigits && lane == kWarpThreads - 1) s.digit_warp_totals[warp] = inclusive;
    __syncthreads();
    digit_start = 0;
    if (digit < kRadixDigits) {
      int before = 0;
#pragma unroll
      for (int w = 0; w < kDigitWarps; ++w) before += w < warp ? s.digit_warp_totals[w] : 0;
      digit_start = before + inclusive - digit_count;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) s.warp_digit[w][digit] += digit_start;
    }
    if (__syncthreads_or(whole_tile && digit_count == BlockThreads * ItemsPerThread)) {
      const int warp_first = warp * ItemsPerThread * kWarpThreads + lane;
#pragma unroll
      for (int u = 0; u < ItemsPerThread; ++u) ranks.set(u, static_cast<unsigned>(warp_first + u * kWarpThreads));
      return;
    }

    const unsigned lanes_up_to_me = lanemask_le();
#pragma unroll
    for (int u = 0; u < ItemsPerThread; ++u) {
      const unsigned digit_u = digit_of(keys[u]);
      unsigned peers;
      if constexpr (Match == WarpMatch::atomic_or) {
        atomicOr(&s.match[warp][digit_u], 1u << lane);
        __syncwarp();
        peers = s.match[warp][digit_u];
      } else {
        peers = warp_match_label<kRadixDigitBits>(digit_u);
      }
      const int leader = kWarpThreads - 1 - __clz(static_cast<int>(peers));
      const int place = __popc(peers & lanes_up_to_me);  // 1 for the lowest peer
      int start = 0;
      if (lane == leader) start = atomicAdd(row + digit_u, place);  // the leader's place: all peers
      start = __shfl_sync(kFullMask, start, leader);
      if constexpr (Match == WarpMatch::atomic_or) {
        // Every lane read the word before the shuffle (it needed the leader); clear it for the next item.
        if (lane == leader) s.match[warp][digit_u] = 0;
        __syncwarp();
      }
      ranks.set(u, static_cast<unsigned>(start + place - 1));
    }
  }
};

}  // namespace tessera::kernels::cuda::detail
