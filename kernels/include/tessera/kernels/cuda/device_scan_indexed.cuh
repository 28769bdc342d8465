// scan_indexed on the device (agent and dispatch layers; contract in scan_indexed.hpp): one pass
// with decoupled look-back, as the scan (device_scan.cuh). Each thread block takes the next tile
// from an atomic counter; warp w of a tile owns kWarpItems consecutive indices and lane l the
// kItemsPerThread consecutive ones from warp_base + l * kItemsPerThread (a lane's items are computed
// by the caller's functor, so there are no vector loads to arrange for). A lane folds its items, the
// warp scans the 32 lane totals with shuffles, one warp scans the warps' totals and does the
// look-back (link_tile, device_scan.cuh), and every lane then visits its items with their prefixes,
// in index order.
//
// Past the end of the last tile, lanes hold copies of item(n - 1) (a real value, so no combination
// reads an uninitialised one); no prefix of a real index depends on them, and the total is taken
// where index n - 1 is visited.
#pragma once

#include <cuda_runtime.h>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/block.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/device_scan.cuh"
#include "tessera/kernels/cuda/tile_status.cuh"
#include "tessera/kernels/cuda/tuning/scan_indexed.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::kernels::cuda::detail {

template <class Tuning, class T, class Item, class Op, class Visit>
__global__ void __launch_bounds__(Tuning::kBlockThreads, Tuning::kMinBlocksPerSm)
    scan_indexed_kernel(index_t n, Item item, Op op, T seed, Visit visit, T* total, TileStatus<T> status,
                        unsigned int* tile_counter) {
  constexpr int kWarps = Tuning::kBlockThreads / kWarpThreads;
  constexpr int kItems = Tuning::kItemsPerThread;
  __shared__ SharedArray<T, kWarps> warp_totals;
  __shared__ SharedArray<T, kWarps> warp_prefixes;

  const auto [tile, tile_base, warp_base, warp, lane] = take_tile_place<Tuning>(tile_counter);
  const index_t first = warp_base + static_cast<index_t>(lane) * kItems;

  T items[kItems];
  if (first + kItems <= n) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) items[k] = item(first + k);
  } else {
    const T last = item(n - 1);
#pragma unroll
    for (int k = 0; k < kItems; ++k) items[k] = first + k < n ? item(first + k) : last;
  }
  T lane_total = items[0];
#pragma unroll
  for (int k = 1; k < kItems; ++k) lane_total = op(lane_total, items[k]);

  // Lane order within the warp; lane 0's exclusive prefix within the warp is nothing (the warp's).
  const T inclusive = warp_inclusive_scan(lane_total, op);
  const T lane_exclusive = shfl_up(inclusive, 1);
  if (lane == kWarpThreads - 1) warp_totals[warp] = inclusive;
  __syncthreads();

  if (warp == 0) link_tile<Tuning>(warp_totals, warp_prefixes, tile, seed, status, op);
  __syncthreads();

  if (first >= n) return;
  const T warp_prefix = warp_prefixes[warp];
  T running = lane == 0 ? warp_prefix : op(warp_prefix, lane_exclusive);
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    const index_t i = first + k;
    if (i < n) {
      visit(i, static_cast<const T&>(running), static_cast<const T&>(items[k]));
      running = op(running, items[k]);
      if (i == n - 1 && total != nullptr) *total = running;
    }
  }
}

template <class T>
__global__ void store_value_kernel(T* out, T value) {
  *out = value;
}

template <class Item, class Op, class T, class Visit>
void device_scan_indexed(const Queue& queue, index_t n, Item item, Op op, T seed, Visit visit, T* total) {
  const StreamHandle stream = queue.stream;
  if (n == 0) {
    if (total) {
      store_value_kernel<<<1, 1, 0, to_cuda(stream)>>>(total, seed);
      TESSERA_CUDA_CHECK_LAUNCH();
    }
    return;
  }
  using Tuning = ScanIndexedTuning<T>;
  const index_t tiles = ceil_div<index_t>(n, Tuning::kTileItems);
  TESSERA_ASSERT(tiles <= 0x7fffffff, "scan_indexed: more tiles than one grid can hold");
  const LookbackScratch<TileStatus<T>> scratch(queue, tiles);
  scan_indexed_kernel<Tuning, T><<<static_cast<unsigned>(tiles), Tuning::kBlockThreads, 0, to_cuda(stream)>>>(
      n, item, op, seed, visit, total, scratch.status, scratch.tile_counter);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda::detail
