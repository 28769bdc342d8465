// Device-wide inclusive / exclusive scan with any associative operation, in one pass with decoupled
// look-back (agent and dispatch layers). Each thread block takes the next tile from an atomic
// counter, so that a tile's predecessors are always resident (see tile_status.cuh). Every combination
// keeps index order (lower indices on the left), so the operation need not commute, and no identity
// is needed: every prefix starts from the caller's init (the carry-in), and the places that have no
// predecessor (the first vector of a warp, the first warp of a tile) take the prefix from outside.
//
// Arrangement of a tile (no shared-memory transpose): warp w owns kWarpItems consecutive elements;
// in step j of kVectorsPerThread, lane l holds one 16-byte vector, elements
// warp_base + (j*32 + l)*V .. +V. A thread folds its vector sequentially, the warp scans the 32
// vector totals with shuffles (5 steps for 4..8 elements), and a running warp carry links the
// steps. Loads and stores are 16 bytes wide and fully coalesced; the shuffle count per element is
// ~1.75 for 4-byte types, which leaves the kernel bound by memory, not by instructions.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>

#include "tessera/kernels/cuda/async_copy.cuh"
#include "tessera/kernels/cuda/block.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/cuda/tile_status.cuh"
#include "tessera/kernels/cuda/tuning/scan.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"

namespace tessera::kernels::cuda::detail {

// Loads one warp's share of a tile: vectors where the whole tile is inside and both arrays are
// 16-byte aligned, guarded scalars otherwise. Places past the end hold `pad` (any value of T: they
// come after every real element, so no real result depends on them).
template <class Tuning, class T>
__device__ __forceinline__ void load_warp_items(const T* in, index_t warp_base, index_t n, bool full_vector_tile,
                                                Vector<T> (&items)[Tuning::kVectorsPerThread], const T& pad) {
  const int lane = lane_id();
  if (full_vector_tile) {
#pragma unroll
    for (int j = 0; j < Tuning::kVectorsPerThread; ++j)
      items[j] = load_vector(in + warp_base + static_cast<index_t>(j * kWarpThreads + lane) * Tuning::kVectorItems);
  } else {
#pragma unroll
    for (int j = 0; j < Tuning::kVectorsPerThread; ++j)
#pragma unroll
      for (int i = 0; i < Tuning::kVectorItems; ++i) {
        const index_t index = warp_base + static_cast<index_t>(j * kWarpThreads + lane) * Tuning::kVectorItems + i;
        items[j].item[i] = index < n ? in[index] : pad;
      }
  }
}

// The general form of a warp's scan over kSteps steps, for any associative op (no identity): in
// step j lane l holds step_total(j), the fold of its items of that step, which come after lane
// l - 1's and before lane l + 1's; step j + 1 follows step j's lane 31. Returns the warp's total
// (every lane) and leaves each step's prefix within the warp in lane_prefix (lane_prefix[0] of
// lane 0 unspecified: the warp's first items have none). All 32 lanes must call it.
template <int kSteps, class T, class StepTotal, class Op>
__device__ __forceinline__ T warp_scan_steps(StepTotal step_total_of, T (&lane_prefix)[kSteps], Op op) {
  const int lane = lane_id();
  T warp_carry;  // the warp's total so far; set at j == 0
#pragma unroll
  for (int j = 0; j < kSteps; ++j) {
    const T inclusive = warp_inclusive_scan(static_cast<T>(step_total_of(j)), op);
    const T shifted = shfl_up(inclusive, 1);  // lane l - 1's inclusive value
    const T step_total = warp_broadcast(inclusive, kWarpThreads - 1);
    if (j == 0) {
      lane_prefix[0] = shifted;
      warp_carry = step_total;
    } else {
      lane_prefix[j] = lane == 0 ? warp_carry : op(warp_carry, shifted);
      warp_carry = op(warp_carry, step_total);
    }
  }
  return warp_carry;
}

// The prefix of each of this lane's vectors within the warp's share (lane_prefix), and the warp's
// total (returned, the same in every lane). The warp's first vector (j == 0 in lane 0) has no prefix
// within the warp: lane_prefix[0] of lane 0 is unspecified (the identity where the op has one).
// All 32 lanes must call it.
template <class Tuning, class T, class Op>
__device__ __forceinline__ T warp_scan_items(const Vector<T> (&items)[Tuning::kVectorsPerThread],
                                             T (&lane_prefix)[Tuning::kVectorsPerThread], Op op) {
  const int lane = lane_id();
  if constexpr (has_identity_element<Op, T>::value) {
    // With an identity (the library's operations on arithmetic types: the precompiled scans), the
    // first vector's prefix is the identity and every step is the same: fewer registers than the
    // general form below, which 8-byte scans (capped at 64 registers) would otherwise spill.
    const T identity = identity_element<Op, T>();
    T warp_carry = identity;
#pragma unroll
    for (int j = 0; j < Tuning::kVectorsPerThread; ++j) {
      T vector_total = items[j].item[0];
#pragma unroll
      for (int i = 1; i < Tuning::kVectorItems; ++i) vector_total = op(vector_total, items[j].item[i]);
      const T inclusive = warp_inclusive_scan(vector_total, op);
      lane_prefix[j] = op(warp_carry, warp_shift_exclusive(inclusive, identity));
      warp_carry = op(warp_carry, warp_broadcast(inclusive, kWarpThreads - 1));
    }
    return warp_carry;
  } else {
    return warp_scan_steps<Tuning::kVectorsPerThread>(
        [&](int j) {
          T vector_total = items[j].item[0];
#pragma unroll
          for (int i = 1; i < Tuning::kVectorItems; ++i) vector_total = op(vector_total, items[j].item[i]);
          return vector_total;
        },
        lane_prefix, op);
  }
}

// Writes the scanned items of one warp's share, seeded with warp_prefix (everything before the warp's
// share): vectors where the whole tile is inside and both arrays are 16-byte aligned, guarded scalars
// otherwise.
template <class Tuning, ScanKind Kind, class T, class Op>
__device__ __forceinline__ void store_warp_scan(T* out, index_t warp_base, index_t n, bool full_vector_tile,
                                                const Vector<T> (&items)[Tuning::kVectorsPerThread],
                                                const T (&lane_prefix)[Tuning::kVectorsPerThread], const T& warp_prefix,
                                                Op op) {
  const int lane = lane_id();
#pragma unroll
  for (int j = 0; j < Tuning::kVectorsPerThread; ++j) {
    T running;
    if constexpr (has_identity_element<Op, T>::value) {
      running = op(warp_prefix, lane_prefix[j]);  // lane_prefix[0] of lane 0 is the identity
    } else {
      running = (j == 0 && lane == 0) ? warp_prefix : op(warp_prefix, lane_prefix[j]);
    }
    Vector<T> result;
#pragma unroll
    for (int i = 0; i < Tuning::kVectorItems; ++i) {
      if constexpr (Kind == ScanKind::exclusive) {
        result.item[i] = running;
        running = op(running, items[j].item[i]);
      } else {
        running = op(running, items[j].item[i]);
        result.item[i] = running;
      }
    }
    const index_t first = warp_base + static_cast<index_t>(j * kWarpThreads + lane) * Tuning::kVectorItems;
    if (full_vector_tile) {
      store_vector(out + first, result);
    } else {
#pragma unroll
      for (int i = 0; i < Tuning::kVectorItems; ++i)
        if (first + i < n) out[first + i] = result.item[i];
    }
  }
}

// Warp 0 of a tile (all 32 lanes) links it to its predecessors: the scan of the warps' totals
// (warp_totals, kWarps of them), the tile's aggregate published before the look-back so that
// successors can use it, the tile's prefix from the look-back (carry_in for tile 0), and each
// warp's prefix left in warp_prefixes. The look-back's sleeps are Tuning::Device's.
template <class Tuning, class T, int kWarps, class Status, class Op>
__device__ __forceinline__ void link_tile(SharedArray<T, kWarps>& warp_totals, SharedArray<T, kWarps>& warp_prefixes,
                                          index_t tile, const T& carry_in, const Status& status, Op op) {
  const int lane = lane_id();
  T warp_total;
  if constexpr (has_identity_element<Op, T>::value) {
    warp_total = lane < kWarps ? warp_totals[lane] : identity_element<Op, T>();
  } else {
    warp_total = warp_totals[lane < kWarps ? lane : kWarps - 1];  // lanes past kWarps: any real value
  }
  const T inclusive = warp_inclusive_scan(warp_total, op);
  const T shifted = shfl_up(inclusive, 1);
  const T tile_aggregate = warp_broadcast(inclusive, kWarps - 1);
  T tile_prefix;
  if (tile == 0) {
    tile_prefix = carry_in;
    if (lane == 0) status.publish(0, kTileInclusive, op(carry_in, tile_aggregate));
  } else {
    if (lane == 0) status.publish(tile, kTilePartial, tile_aggregate);
    tile_prefix = look_back<Tuning::Device::kPartialDelayNs, Tuning::Device::kPollDelayNs>(status, tile, op);
    if (lane == 0) status.publish(tile, kTileInclusive, op(tile_prefix, tile_aggregate));
  }
  if (lane < kWarps) warp_prefixes[lane] = lane == 0 ? tile_prefix : op(tile_prefix, shifted);
}

template <class Tuning, class T, ScanKind Kind, class Op>
__global__ void __launch_bounds__(Tuning::kBlockThreads, Tuning::kMinBlocksPerSm)
    scan_single_pass_kernel(const T* in, T* out, index_t n, Op op, T carry_in, TileStatus<T> status,
                            unsigned int* tile_counter, bool vector_io) {
  constexpr int kWarps = Tuning::kBlockThreads / kWarpThreads;
  constexpr int kV = Tuning::kVectorsPerThread;
  __shared__ SharedArray<T, kWarps> warp_totals;
  __shared__ SharedArray<T, kWarps> warp_prefixes;

  const auto [tile, tile_base, warp_base, warp, lane] = take_tile_place<Tuning>(tile_counter);
  const bool full_vector_tile = vector_io && tile_base + Tuning::kTileItems <= n;

  // Every input element is read into registers before the barrier below, and written only after
  // it: in-place scans (in == out) are safe, and no other tile touches this tile's elements.
  Vector<T> items[kV];
  load_warp_items<Tuning>(in, warp_base, n, full_vector_tile, items, carry_in);

  T lane_prefix[kV];
  const T warp_carry = warp_scan_items<Tuning>(items, lane_prefix, op);
  if (lane == 0) warp_totals[warp] = warp_carry;
  __syncthreads();

  if (warp == 0) link_tile<Tuning>(warp_totals, warp_prefixes, tile, carry_in, status, op);
  __syncthreads();

  store_warp_scan<Tuning, Kind>(out, warp_base, n, full_vector_tile, items, lane_prefix, warp_prefixes[warp], op);
}

// ---- the pipelined single-pass scan (sm_90) ----------------------------------------------------------
//
// Persistent thread blocks (at most one wave; ScanPipelineTuning) in which each warp has one role,
// so that no tile's aggregate waits for another tile's scan:
//   warp 0 (one lane) takes the next tile from the counter, once the ring's slot for it is free, and
//           fetches the whole tile into the slot with one bulk copy (the last tile, if partial, is
//           read from global memory by the warps below instead);
//   warp 1  reduces each tile as it lands, one chunk of kWarpItems at a time, and publishes the
//           tile's aggregate (tile 0: its inclusive prefix) at once;
//   warp 2  looks back for each tile's prefix, publishes the tile's inclusive prefix and leaves each
//           scanning warp its prefix;
//   warps 3 .. 3 + kScanWarps - 1 scan their chunks of each tile from the ring, in the single-pass
//           kernel's arrangement (warp_scan_items, store_warp_scan), and free the slot.
// Each hand-over is an mbarrier per slot: full (the producer's arrival and the copy's bytes),
// reduced, ready and empty (an arrival from every lane of the warps that hand over, each after its
// own accesses: the release of one lane does not order its warp's other lanes' writes for
// compute-sanitizer's racecheck, which then reports them). A tile's look-back waits only
// for tiles taken before it, whose blocks' reducing warps publish their aggregates once the data
// lands, whatever their other warps are doing: every wait ends. A slot of the ring with tile -1
// ends every role's loop. Index order is kept as in the single-pass kernel, so any associative
// operation works. In place is safe: a tile's elements are read (into the ring, or by its own
// warps before they write) before they are written, and no other tile touches them.
// The fold of K values as a balanced tree (a commutative, associative operation): depth log2 K
// instead of K - 1 dependent steps.
template <int K, class T, class Op>
__device__ __forceinline__ T tree_fold(const T (&v)[K], Op& op) {
  if constexpr (K == 1) {
    return v[0];
  } else {
    constexpr int kHalf = K / 2;
    T low[kHalf], high[K - kHalf];
#pragma unroll
    for (int i = 0; i < kHalf; ++i) low[i] = v[i];
#pragma unroll
    for (int i = 0; i < K - kHalf; ++i) high[i] = v[kHalf + i];
    return op(tree_fold(low, op), tree_fold(high, op));
  }
}

template <class Tuning, class T>
struct ScanPipelineLayout {
  static constexpr int kStages = Tuning::kStages;
  static constexpr int kScanWarps = Tuning::kScanWarps;
  static constexpr std::size_t kTileBytes = sizeof(T) * Tuning::kTileItems;
  static constexpr std::size_t kTiles = 0;  // the ring: kStages tiles
  static constexpr std::size_t kChunkExclusive = kTiles + kStages * kTileBytes;       // T [kStages][kScanWarps]
  static constexpr std::size_t kWarpPrefix = kChunkExclusive + sizeof(T) * kStages * kScanWarps;  // T [kStages][kScanWarps]
  static constexpr std::size_t kAggregate = kWarpPrefix + sizeof(T) * kStages * kScanWarps;     // T [kStages]
  static constexpr std::size_t kTileOf = (kAggregate + sizeof(T) * kStages + 7) / 8 * 8;        // index_t [kStages]
  static constexpr std::size_t kBarriers = kTileOf + sizeof(index_t) * kStages;  // 4 x [kStages] mbarriers
  static constexpr std::size_t kBytes = kBarriers + 4 * sizeof(unsigned long long) * kStages;
  static_assert(kTileBytes % 16 == 0, "whole 16-byte pieces per bulk copy");
};

template <class Tuning, class T, ScanKind Kind, class Op>
__global__ void __launch_bounds__(Tuning::kThreads, Tuning::kMinBlocks)
    scan_pipelined_kernel(const T* in, T* out, index_t n, Op op, T carry_in, TileStatus<T> status,
                          unsigned int* tile_counter, index_t tiles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using L = ScanPipelineLayout<Tuning, T>;
  constexpr int kStages = Tuning::kStages;
  constexpr int kScanWarps = Tuning::kScanWarps;
  constexpr int kV = Tuning::kVectorsPerThread;
  extern __shared__ __align__(16) unsigned char pipeline_shared[];
  T* const ring = reinterpret_cast<T*>(pipeline_shared + L::kTiles);
  T* const chunk_exclusive = reinterpret_cast<T*>(pipeline_shared + L::kChunkExclusive);
  T* const warp_prefix = reinterpret_cast<T*>(pipeline_shared + L::kWarpPrefix);
  T* const aggregate = reinterpret_cast<T*>(pipeline_shared + L::kAggregate);
  volatile index_t* const tile_of = reinterpret_cast<volatile index_t*>(pipeline_shared + L::kTileOf);
  auto* const bars = reinterpret_cast<unsigned long long*>(pipeline_shared + L::kBarriers);
  const auto full = [&](unsigned s) { return shared_address(bars + s); };
  const auto reduced = [&](unsigned s) { return shared_address(bars + kStages + s); };
  const auto ready = [&](unsigned s) { return shared_address(bars + 2 * kStages + s); };
  const auto empty = [&](unsigned s) { return shared_address(bars + 3 * kStages + s); };
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const int lane = lane_id();
  if (threadIdx.x == 0) {
    for (unsigned s = 0; s < kStages; ++s) {
      mbarrier_init(full(s), 1);
      mbarrier_init(reduced(s), kWarpThreads);
      mbarrier_init(ready(s), kWarpThreads);
      mbarrier_init(empty(s), kScanWarps * kWarpThreads);
    }
    mbarrier_init_fence();
  }
  __syncthreads();
  // The elements of one chunk (kWarpItems from `first`) in the scan's arrangement: from the ring
  // where the tile is whole, from global memory (places past n hold carry_in) where it is the last.
  const auto load_chunk = [&](unsigned s, int chunk, index_t first, bool whole, Vector<T>(&items)[kV]) {
    if (whole) {
      const Vector<T>* slot = reinterpret_cast<const Vector<T>*>(ring + std::size_t(s) * Tuning::kTileItems +
                                                                 std::size_t(chunk) * Tuning::kWarpItems);
#pragma unroll
      for (int j = 0; j < kV; ++j) items[j] = slot[j * kWarpThreads + lane];
    } else {
      load_warp_items<Tuning>(in, first, n, false, items, carry_in);
    }
  };

  if (warp == 0) {  // the producer
    if (lane != 0) return;
    for (unsigned it = 0;; ++it) {
      const unsigned s = it % kStages, round = it / kStages;
      if (round > 0) mbarrier_wait(empty(s), (round - 1) & 1u);
      const index_t tile = atomicAdd(tile_counter, 1u);
      const bool live = tile < tiles;
      tile_of[s] = live ? tile : -1;
      const index_t first = tile * Tuning::kTileItems;
      if (live && first + Tuning::kTileItems <= n) {
        mbarrier_arrive_expect_tx(full(s), static_cast<unsigned>(L::kTileBytes));
        bulk_copy_to_shared(shared_address(ring + std::size_t(s) * Tuning::kTileItems), in + first,
                            static_cast<unsigned>(L::kTileBytes), full(s));
      } else {
        mbarrier_arrive(full(s));
      }
      if (!live) return;
    }
  }

  if (warp == 1) {  // the reducer
    for (unsigned it = 0;; ++it) {
      const unsigned s = it % kStages, round = it / kStages;
      mbarrier_wait(full(s), round & 1u);
      const index_t tile = tile_of[s];
      if (tile < 0) {
        mbarrier_arrive(reduced(s));
        return;
      }
      const index_t first = tile * Tuning::kTileItems;
      const bool whole = first + Tuning::kTileItems <= n;
      T mine{};  // lane c < kScanWarps: chunk c's total (lanes above take no part in the scan below)
      if constexpr (has_identity_element<Op, T>::value) {
        // The library's operations (commutative, with an identity): each lane folds its items of
        // every chunk as a tree, then the chunks' butterflies run side by side.
        T partial[kScanWarps];
#pragma unroll
        for (int c = 0; c < kScanWarps; ++c) {
          Vector<T> items[kV];
          load_chunk(s, c, first + index_t(c) * Tuning::kWarpItems, whole, items);
          T vector_total[kV];
#pragma unroll
          for (int j = 0; j < kV; ++j) vector_total[j] = tree_fold(items[j].item, op);
          partial[c] = tree_fold(vector_total, op);
        }
#pragma unroll
        for (int offset = kWarpThreads / 2; offset > 0; offset /= 2)
#pragma unroll
          for (int c = 0; c < kScanWarps; ++c) partial[c] = op(partial[c], shfl_xor(partial[c], offset));
#pragma unroll
        for (int c = 0; c < kScanWarps; ++c)
          if (lane == c) mine = partial[c];
      } else {
#pragma unroll 1
        for (int c = 0; c < kScanWarps; ++c) {
          Vector<T> items[kV];
          load_chunk(s, c, first + index_t(c) * Tuning::kWarpItems, whole, items);
          T total;
#pragma unroll
          for (int j = 0; j < kV; ++j) {
            T vector_total = items[j].item[0];
#pragma unroll
            for (int i = 1; i < Tuning::kVectorItems; ++i) vector_total = op(vector_total, items[j].item[i]);
            const T step = warp_reduce_ordered(vector_total, op);
            total = j == 0 ? step : op(total, step);
          }
          if (lane == c) mine = total;
        }
      }
      const T inclusive = warp_inclusive_scan(mine, op);
      const T shifted = shfl_up(inclusive, 1);
      const T tile_aggregate = warp_broadcast(inclusive, kScanWarps - 1);
      if (lane < kScanWarps) chunk_exclusive[s * kScanWarps + lane] = shifted;  // lane 0's: unused
      if (lane == 0) {
        aggregate[s] = tile_aggregate;
        if (tile == 0) status.publish(0, kTileInclusive, op(carry_in, tile_aggregate));
        else status.publish(tile, kTilePartial, tile_aggregate);
      }
      mbarrier_arrive(reduced(s));
    }
  }

  if (warp == 2) {  // the look-back
    for (unsigned it = 0;; ++it) {
      const unsigned s = it % kStages, round = it / kStages;
      mbarrier_wait(reduced(s), round & 1u);
      const index_t tile = tile_of[s];
      if (tile < 0) {
        mbarrier_arrive(ready(s));
        return;
      }
      T tile_prefix = carry_in;
      if (tile > 0) {
        tile_prefix = look_back<0, Tuning::Device::kPollDelayNs>(status, tile, op);
        if (lane == 0) status.publish(tile, kTileInclusive, op(tile_prefix, aggregate[s]));
      }
      if (lane < kScanWarps)
        warp_prefix[s * kScanWarps + lane] = lane == 0 ? tile_prefix : op(tile_prefix, chunk_exclusive[s * kScanWarps + lane]);
      mbarrier_arrive(ready(s));
    }
  }

  // The scanning warps.
  const int chunk = warp - Tuning::kRoleWarps;
  for (unsigned it = 0;; ++it) {
    const unsigned s = it % kStages, round = it / kStages;
    mbarrier_wait(ready(s), round & 1u);
    const index_t tile = tile_of[s];
    if (tile < 0) return;
    const index_t first = tile * Tuning::kTileItems;
    const bool whole = first + Tuning::kTileItems <= n;
    const index_t warp_base = first + index_t(chunk) * Tuning::kWarpItems;
    Vector<T> items[kV];
    load_chunk(s, chunk, warp_base, whole, items);
    T lane_prefix[kV];
    (void)warp_scan_items<Tuning>(items, lane_prefix, op);
    store_warp_scan<Tuning, Kind>(out, warp_base, n, whole, items, lane_prefix, warp_prefix[s * kScanWarps + chunk], op);
    mbarrier_arrive(empty(s));
  }
#endif
}

template <class Tuning, class T, ScanKind Kind, class Op>
inline constexpr auto kScanPipelinedKernel = &scan_pipelined_kernel<Tuning, T, Kind, Op>;

// Whether the pipelined kernel runs on the current device: its code there was compiled for sm_90
// or later and its ring fits in a block's shared memory. Once per device.
template <class Tuning, class T, ScanKind Kind, class Op>
bool scan_pipelined_available() {
  constexpr int kMaxDevices = 64;
  static std::array<std::once_flag, kMaxDevices> once;
  static std::array<bool, kMaxDevices> available{};
  const DeviceInfo& info = current_device_info();
  std::call_once(once[info.ordinal], [&] {
    cudaFuncAttributes attributes{};
    TESSERA_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kScanPipelinedKernel<Tuning, T, Kind, Op>));
    available[info.ordinal] = ScanPipelineLayout<Tuning, T>::kBytes <= static_cast<std::size_t>(info.max_smem_optin) &&
                              attributes.ptxVersion >= 90 && attributes.binaryVersion >= 90;
  });
  return available[info.ordinal];
}

// The scan of in[0, n) into out by the pipelined kernel, for elements of 4 or 8 bytes with both
// arrays on 16-byte boundaries, on a device it runs on (sm_90); false, and nothing queued, elsewhere.
template <class T, class Op, class Tuning = ScanPipelineTuning<T>>
bool device_scan_pipelined(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, Op op, T init) {
  if constexpr (!(kVectorizable<T> && (sizeof(T) == 4 || sizeof(T) == 8))) {
    return false;
  } else {
    using L = ScanPipelineLayout<Tuning, T>;
    if (!is_aligned(in, kVectorBytes) || !is_aligned(out, kVectorBytes)) return false;
    auto launch = [&]<ScanKind Kind>() {
      constexpr auto kernel = kScanPipelinedKernel<Tuning, T, Kind, Op>;
      if (!scan_pipelined_available<Tuning, T, Kind, Op>()) return false;
      if (n == 0) return true;
      TESSERA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(L::kBytes)));
      const index_t resident =
          static_cast<index_t>(current_device_info().sm_count) * blocks_per_sm<kernel>(Tuning::kThreads, L::kBytes);
      if (resident == 0) return false;
      const index_t tiles = ceil_div<index_t>(n, Tuning::kTileItems);
      TESSERA_ASSERT(tiles <= 0x7fffffff, "scan: more tiles than the counter can hold");
      const LookbackScratch<TileStatus<T>> scratch(queue, tiles);
      const auto grid = static_cast<unsigned>(std::min(tiles, resident));
      kernel<<<grid, Tuning::kThreads, L::kBytes, to_cuda(queue.stream)>>>(in, out, n, op, init, scratch.status,
                                                                         scratch.tile_counter, tiles);
      TESSERA_CUDA_CHECK_LAUNCH();
      return true;
    };
    return kind == ScanKind::inclusive ? launch.template operator()<ScanKind::inclusive>()
                                       : launch.template operator()<ScanKind::exclusive>();
  }
}

// The scan of in[0, n) by the one-tile-per-block kernel (scan_single_pass_kernel).
template <class T, class Op>
void device_scan_one_pass(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, Op op, T init) {
  const StreamHandle stream = queue.stream;
  if (n == 0) return;
  using Tuning = ScanTuning<T>;
  const index_t tiles = ceil_div<index_t>(n, Tuning::kTileItems);
  TESSERA_ASSERT(tiles <= 0x7fffffff, "scan: more tiles than one grid can hold");
  const LookbackScratch<TileStatus<T>> scratch(queue, tiles);
  const auto status = scratch.status;
  unsigned int* const tile_counter = scratch.tile_counter;
  const bool vector_io = kVectorizable<T> && is_aligned(in, kVectorBytes) && is_aligned(out, kVectorBytes);
  const auto grid = static_cast<unsigned>(tiles);
  if (kind == ScanKind::inclusive) {
    scan_single_pass_kernel<Tuning, T, ScanKind::inclusive>
        <<<grid, Tuning::kBlockThreads, 0, to_cuda(stream)>>>(in, out, n, op, init, status, tile_counter, vector_io);
  } else {
    scan_single_pass_kernel<Tuning, T, ScanKind::exclusive>
        <<<grid, Tuning::kBlockThreads, 0, to_cuda(stream)>>>(in, out, n, op, init, status, tile_counter, vector_io);
  }
  TESSERA_CUDA_CHECK_LAUNCH();
}

// The scan of in[0, n) into out (in place allowed), seeded with init, in the queue's order (its
// device current: the caller's ScopedDevice): the pipelined kernel from ScanPipelineTuning's
// kMinItems elements where it runs, the one-tile-per-block kernel otherwise.
template <class T, class Op>
void device_scan(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, Op op, T init) {
  if (n == 0) return;
  if constexpr (kVectorizable<T> && (sizeof(T) == 4 || sizeof(T) == 8)) {
    if (n >= ScanPipelineTuning<T>::kMinItems && device_scan_pipelined(queue, in, out, n, kind, op, init)) return;
  }
  device_scan_one_pass(queue, in, out, n, kind, op, init);
}

}  // namespace tessera::kernels::cuda::detail
