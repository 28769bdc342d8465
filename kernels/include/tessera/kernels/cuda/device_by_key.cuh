// The by-key operations on the device (agent and dispatch layers; contracts in by_key.hpp).
//
// reduce_by_key: one pass with decoupled look-back over (runs, fold) items (run_fold.hpp), in the
// scan's arrangement (device_scan.cuh): warp w of a tile owns kWarpItems consecutive elements; in
// step j lane l holds kSlotItems consecutive keys and their values, read with one load from each
// array. A run starts where pred does not join a key to the one before it, which comes from the
// same lane, the lane below, the previous step's last lane or, for the warp's first key, from
// memory; the run heads of a thread are one 32-bit word. A lane folds each step's items, the warp
// scans the 32 step totals (warp_scan_steps), warp 0 links the tile (link_tile), and every lane then
// walks its items with their prefixes: a run's first key goes to keys_out and its fold to
// values_out where the next element starts a run (the next head comes from the same word, the
// lane above, the next step's first lane or, after the warp's last key, from memory).
//
// unique and unique_by_key run select's pass with KeepRunHeads (device_select.cuh), called from
// by_key.hpp.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/block.cuh"
#include "tessera/kernels/cuda/device_scan.cuh"
#include "tessera/kernels/cuda/device_select.cuh"
#include "tessera/kernels/cuda/tile_status.cuh"
#include "tessera/kernels/cuda/tuning/by_key.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/detail/run_fold.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::kernels::cuda::detail {

// An unsigned word of `Bytes` bytes (1, 2, 4, 8 or 16): the load of kItems consecutive elements.
template <int Bytes>
struct SlotWord;
template <>
struct SlotWord<1> {
  using type = std::uint8_t;
};
template <>
struct SlotWord<2> {
  using type = std::uint16_t;
};
template <>
struct SlotWord<4> {
  using type = std::uint32_t;
};
template <>
struct SlotWord<8> {
  using type = uint2;
};
template <>
struct SlotWord<16> {
  using type = uint4;
};

// kItems consecutive elements from p: one load where `whole` (p then aligned to their total size,
// which is a power of two whenever kItems > 1), element by element otherwise.
template <int kItems, class T>
__device__ __forceinline__ void load_slot(const T* p, bool whole, T (&out)[kItems]) {
  if constexpr (kItems > 1) {
    if (whole) {
      using Word = typename SlotWord<static_cast<int>(kItems * sizeof(T))>::type;
      const Word word = *reinterpret_cast<const Word*>(p);
      static_assert(sizeof(word) == sizeof(out));
      memcpy(&out, &word, sizeof out);
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < kItems; ++i) out[i] = p[i];
}

template <class Tuning, class K, class V, class Count, class Pred, class Op>
__global__ void __launch_bounds__(Tuning::kBlockThreads, Tuning::kMinBlocksPerSm)
    reduce_by_key_kernel(const K* __restrict__ keys, const V* __restrict__ values, index_t n, Pred pred, Op op,
                         K* __restrict__ keys_out, V* __restrict__ values_out, index_t* __restrict__ runs,
                         TileStatus<RunFold<V, Count>> status, unsigned int* __restrict__ tile_counter,
                         bool whole_slots) {
  using Item = RunFold<V, Count>;
  constexpr int kWarps = Tuning::kBlockThreads / kWarpThreads;
  constexpr int kSteps = Tuning::kStepsPerThread;
  constexpr int kS = Tuning::kSlotItems;
  static_assert(kSteps * kS <= 32, "a thread's run heads must fit one 32-bit word");
  __shared__ SharedArray<Item, kWarps> warp_totals;
  __shared__ SharedArray<Item, kWarps> warp_prefixes;

  const auto [tile, tile_base, warp_base, warp, lane] = take_tile_place<Tuning>(tile_counter);
  const bool full_tile = tile_base + Tuning::kTileItems <= n;
  const auto index_of = [&](int j, int i) {
    return warp_base + static_cast<index_t>(j * kWarpThreads + lane) * kS + i;
  };

  // Places past the end hold the last element (a real key and value: no combination reads an
  // uninitialised one) and count as run heads, so nothing flows from them into a real element.
  K key[kSteps][kS];
  V value[kSteps][kS];
  if (full_tile) {
#pragma unroll
    for (int j = 0; j < kSteps; ++j) {
      load_slot<kS>(keys + index_of(j, 0), whole_slots, key[j]);
      load_slot<kS>(values + index_of(j, 0), whole_slots, value[j]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < kSteps; ++j)
#pragma unroll
      for (int i = 0; i < kS; ++i) {
        const index_t index = index_of(j, i) < n ? index_of(j, i) : n - 1;
        key[j][i] = keys[index];
        value[j][i] = values[index];
      }
  }
  // The keys around the warp's share: the one before its first (joins a run that began earlier)
  // and the one after its last (ends the last run here or not).
  const index_t warp_end = warp_base + Tuning::kWarpItems;
  K before_warp = key[0][0];
  K after_warp = key[0][0];
  if (warp_base > 0 && warp_base <= n) before_warp = keys[warp_base - 1];
  if (warp_end < n) after_warp = keys[warp_end];

  std::uint32_t heads = 0;  // bit j * kS + i: the element of step j, place i starts a run
#pragma unroll
  for (int j = 0; j < kSteps; ++j) {
    const K before = element_before_step(j, key[j][kS - 1], key[j > 0 ? j - 1 : 0][kS - 1], before_warp);
#pragma unroll
    for (int i = 0; i < kS; ++i) {
      const index_t index = index_of(j, i);
      const bool head = index == 0 || index >= n || !pred(i == 0 ? before : key[j][i - 1], key[j][i]);
      heads |= static_cast<std::uint32_t>(head) << (j * kS + i);
    }
  }

  const kernels::detail::CombineRuns<V, Op, Count> combine{op};
  const auto item_at = [&](int j, int i) {
    return Item{static_cast<Count>(heads >> (j * kS + i) & 1u), value[j][i]};
  };
  Item lane_prefix[kSteps];
  const Item warp_total = warp_scan_steps<kSteps>(
      [&](int j) {
        Item total = item_at(j, 0);
#pragma unroll
        for (int i = 1; i < kS; ++i) total = combine(total, item_at(j, i));
        return total;
      },
      lane_prefix, combine);
  if (lane == 0) warp_totals[warp] = warp_total;
  __syncthreads();
  if (warp == 0) link_tile<Tuning>(warp_totals, warp_prefixes, tile, Item{}, status, combine);
  __syncthreads();

  if (warp_base >= n) return;
  const Item warp_prefix = warp_prefixes[warp];
  // Whether the element after each of this lane's steps starts a run: the lane above's first, or
  // (lane 31) the next step's first in lane 0, or after the warp's last key the key from memory.
  const std::uint32_t heads_above = shfl_down(heads, 1);
  const std::uint32_t heads_of_first_lane = shfl_idx(heads, 0);
  const bool head_after_warp = warp_end >= n || !pred(key[kSteps - 1][kS - 1], after_warp);
#pragma unroll
  for (int j = 0; j < kSteps; ++j) {
    Item running = (j == 0 && lane == 0) ? warp_prefix : combine(warp_prefix, lane_prefix[j]);
#pragma unroll
    for (int i = 0; i < kS; ++i) {
      const index_t index = index_of(j, i);
      if (!full_tile && index >= n) break;
      const bool head = heads >> (j * kS + i) & 1u;
      running = combine(running, item_at(j, i));
      if (head) keys_out[running.runs - 1] = key[j][i];
      bool next_is_head;
      if (i + 1 < kS) {
        next_is_head = heads >> (j * kS + i + 1) & 1u;
      } else if (lane + 1 < kWarpThreads) {
        next_is_head = heads_above >> (j * kS) & 1u;
      } else if (j + 1 < kSteps) {
        next_is_head = heads_of_first_lane >> ((j + 1) * kS) & 1u;
      } else {
        next_is_head = head_after_warp;
      }
      if (next_is_head) values_out[running.runs - 1] = running.value;
      if (index + 1 == n) *runs = running.runs;
    }
  }
}

// reduce_by_key (by_key.hpp) of n > 0 elements, in the queue's order (its device current: the
// caller's ScopedDevice). Counts of runs in 32 bits where they fit (n < 2^31): a (count, 4-byte
// value) item is then 8 bytes, which the look-back's status packs with its state in one word.
template <class K, class V, class Pred, class Op>
void device_reduce_by_key(const Queue& queue, const K* keys, const V* values, index_t n, Pred pred, Op op, K* keys_out,
                          V* values_out, index_t* runs) {
  const auto launch = [&](auto zero) {
    using Count = decltype(zero);
    using Item = RunFold<V, Count>;
    using Tuning = ReduceByKeyTuning<K, V, Item>;
    const index_t tiles = ceil_div<index_t>(n, Tuning::kTileItems);
    TESSERA_ASSERT(tiles <= 0x7fffffff, "reduce_by_key: more tiles than one grid can hold");
    const LookbackScratch<TileStatus<Item>> scratch(queue, tiles);
    constexpr std::size_t kKeySlot = Tuning::kSlotItems * sizeof(K);
    constexpr std::size_t kValueSlot = Tuning::kSlotItems * sizeof(V);
    const bool whole_slots = reinterpret_cast<std::uintptr_t>(keys) % kKeySlot == 0 &&
                             reinterpret_cast<std::uintptr_t>(values) % kValueSlot == 0;
    reduce_by_key_kernel<Tuning, K, V, Count><<<static_cast<unsigned>(tiles), Tuning::kBlockThreads, 0,
                                                 to_cuda(queue.stream)>>>(keys, values, n, pred, op, keys_out,
                                                                          values_out, runs, scratch.status,
                                                                          scratch.tile_counter, whole_slots);
    TESSERA_CUDA_CHECK_LAUNCH();
  };
  if (n < (index_t(1) << 31)) {
    launch(std::int32_t{0});
  } else {
    launch(index_t{0});
  }
}

}  // namespace tessera::kernels::cuda::detail
