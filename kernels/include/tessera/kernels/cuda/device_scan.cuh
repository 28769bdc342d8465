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

#include <cstdint>

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

// The scan of in[0, n) into out (in place allowed), seeded with init, in the queue's order (its
// device current: the caller's ScopedDevice).
template <class T, class Op>
void device_scan(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, Op op, T init) {
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

}  // namespace tessera::kernels::cuda::detail
