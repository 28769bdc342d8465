// Device-wide stable stream compaction in one pass (agent and dispatch layers). The same tile
// arrangement and look-back as the scan (device_scan.cuh), applied to the count of kept elements:
// within a warp step the kept flags of one vector slot are a ballot, so a lane's output position
// is a popcount of the lanes below it (no shuffles); warps and tiles are linked by a block scan of
// warp counts and a decoupled look-back over tile counts. No global atomic per element: one per
// tile, to take the tile index. Each warp's kept elements form one contiguous output range; they are
// packed in shared memory first and written out with coalesced stores.
//
// What is kept is the Keep policy's: the elements a predicate accepts (filter, copy_if), or the first
// element of each run of neighbours a predicate joins (unique: each element is judged with the one
// before it, which comes from the same lane, the lane below, the previous step's last lane or, for
// a warp's first element, from memory). A companion array of values (unique_by_key) follows the
// kept elements: their positions within the warp are staged beside them, and the values are read at
// those positions when the warp writes out.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "tessera/kernels/cuda/block.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/device_scan.cuh"
#include "tessera/kernels/cuda/ops.cuh"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/cuda/tile_status.cuh"
#include "tessera/kernels/cuda/tuning/select.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"

namespace tessera::kernels::cuda::detail {

// The elements pred accepts.
template <class Pred>
struct KeepIf {
  static constexpr bool kByNeighbour = false;
  Pred pred;
  template <class T>
  __device__ __forceinline__ bool operator()(const T& /*previous*/, const T& item, index_t /*index*/) const {
    return pred(item);
  }
};

// The first element of each run: index 0, and every element that pred does not join to the one
// before it.
template <class Pred>
struct KeepRunHeads {
  static constexpr bool kByNeighbour = true;
  Pred pred;
  template <class T>
  __device__ __forceinline__ bool operator()(const T& previous, const T& item, index_t index) const {
    return index == 0 || !pred(previous, item);
  }
};

// No companion array.
struct NoValues {};

template <class Tuning, class T, class Keep, class V>
__global__ void __launch_bounds__(Tuning::kBlockThreads, Tuning::kMinBlocksPerSm)
    select_single_pass_kernel(const T* __restrict__ in, const V* __restrict__ values, index_t n, Keep keeps,
                              T* __restrict__ out, V* __restrict__ values_out, index_t* __restrict__ kept_count,
                              TileCountStatus status, unsigned int* __restrict__ tile_counter, index_t tiles,
                              bool vector_in) {
  constexpr int kWarps = Tuning::kBlockThreads / kWarpThreads;
  constexpr int kV = Tuning::kVectorsPerThread;
  constexpr int kVI = Tuning::kVectorItems;
  constexpr bool kWithValues = !std::is_same_v<V, NoValues>;
  static_assert(kV * kVI <= 32, "kept flags of one thread must fit one 32-bit word");
  static_assert(Tuning::kWarpItems <= 65536, "a kept element's place in its warp must fit 16 bits");
  __shared__ int warp_counts[kWarps];
  __shared__ index_t warp_offsets[kWarps];
  // Two-phase scatter: each warp first packs its kept elements, in order, into its own region here;
  // once the tile's offset is known it copies them out with consecutive lanes writing consecutive
  // elements (full 128-byte stores, instead of one sparse store per vector slot).
  __shared__ SharedArray<T, Tuning::kBlockThreads * kV * kVI> staged;
  __shared__ SharedArray<std::uint16_t, kWithValues ? Tuning::kBlockThreads * kV * kVI : 1> staged_place;

  const auto [tile, tile_base, warp_base, warp, lane] = take_tile_place<Tuning>(tile_counter);
  const bool full_tile = tile_base + Tuning::kTileItems <= n;

  Vector<T> items[kV];
  load_warp_items<Tuning>(in, warp_base, n, full_tile && vector_in, items, T{});
  T before_warp{};  // the element before the warp's share (by-neighbour policies)
  if constexpr (Keep::kByNeighbour) {
    if (warp_base > 0 && warp_base <= n) before_warp = in[warp_base - 1];
  }

  const unsigned lanes_below = (1u << lane) - 1u;
  std::uint32_t kept_bits = 0;  // bit j*kVI + i: element i of vector j is kept
  int lane_offset[kV];          // kept elements of this warp before this lane's vector j
  int warp_kept = 0;
#pragma unroll
  for (int j = 0; j < kV; ++j) {
    int below = 0;
    int step_total = 0;
    T before_vector{};  // the element before this lane's vector j (by-neighbour policies)
    if constexpr (Keep::kByNeighbour)
      before_vector = element_before_step(j, items[j].item[kVI - 1], items[j > 0 ? j - 1 : 0].item[kVI - 1], before_warp);
#pragma unroll
    for (int i = 0; i < kVI; ++i) {
      const index_t index = warp_base + static_cast<index_t>(j * kWarpThreads + lane) * kVI + i;
      const bool keep =
          (full_tile || index < n) && keeps(i == 0 ? before_vector : items[j].item[i - 1], items[j].item[i], index);
      const unsigned ballot = __ballot_sync(kFullMask, keep);
      below += __popc(ballot & lanes_below);
      step_total += __popc(ballot);
      kept_bits |= static_cast<std::uint32_t>(keep) << (j * kVI + i);
    }
    lane_offset[j] = warp_kept + below;
    warp_kept += step_total;
  }
  if (lane == 0) warp_counts[warp] = warp_kept;
  T* warp_stage = staged.data() + warp * Tuning::kWarpItems;
  std::uint16_t* warp_places = staged_place.data() + (kWithValues ? warp * Tuning::kWarpItems : 0);
#pragma unroll
  for (int j = 0; j < kV; ++j) {
    int position = lane_offset[j];
#pragma unroll
    for (int i = 0; i < kVI; ++i) {
      if (kept_bits >> (j * kVI + i) & 1u) {
        if constexpr (kWithValues) warp_places[position] = static_cast<std::uint16_t>((j * kWarpThreads + lane) * kVI + i);
        warp_stage[position++] = items[j].item[i];
      }
    }
  }
  // The barrier also publishes each warp's staged elements to its own lanes.
  __syncthreads();

  if (warp == 0) {
    const Sum sum;
    const int count = lane < kWarps ? warp_counts[lane] : 0;
    const int inclusive = warp_inclusive_scan(count, sum);
    const int exclusive = warp_shift_exclusive(inclusive, 0);
    const index_t tile_kept = warp_broadcast(inclusive, kWarpThreads - 1);
    index_t tile_offset = 0;
    if (tile == 0) {
      if (lane == 0) status.publish(0, kTileInclusive, tile_kept);
    } else {
      if (lane == 0) status.publish(tile, kTilePartial, tile_kept);
      tile_offset = look_back<Tuning::Device::kPartialDelayNs, Tuning::Device::kPollDelayNs>(status, tile, sum);
      if (lane == 0) status.publish(tile, kTileInclusive, tile_offset + tile_kept);
    }
    if (lane < kWarps) warp_offsets[lane] = tile_offset + exclusive;
    if (lane == 0 && tile == tiles - 1) *kept_count = tile_offset + tile_kept;
  }
  __syncthreads();

  const index_t warp_offset = warp_offsets[warp];
  for (int e = lane; e < warp_kept; e += kWarpThreads) {
    out[warp_offset + e] = warp_stage[e];
    if constexpr (kWithValues) values_out[warp_offset + e] = values[warp_base + warp_places[e]];
  }
}

// The elements of in[0, n) that keep keeps, in order, into out (and, where values is not null, the
// values at their places into values_out); *kept_count = their number.
template <class T, class Keep, class V = NoValues>
void device_select_kept(const Queue& queue, const T* in, index_t n, Keep keep, T* out, index_t* kept_count,
                        const V* values = nullptr, V* values_out = nullptr) {
  const StreamHandle stream = queue.stream;
  if (n == 0) {
    TESSERA_CUDA_CHECK(cudaMemsetAsync(kept_count, 0, sizeof(index_t), to_cuda(stream)));
    return;
  }
  using Tuning = SelectTuning<T, !std::is_same_v<V, NoValues>>;
  const index_t tiles = ceil_div<index_t>(n, Tuning::kTileItems);
  TESSERA_ASSERT(tiles <= 0x7fffffff, "select: more tiles than one grid can hold");
  const LookbackScratch<TileCountStatus> scratch(queue, tiles);
  const auto status = scratch.status;
  unsigned int* const tile_counter = scratch.tile_counter;
  select_single_pass_kernel<Tuning><<<static_cast<unsigned>(tiles), Tuning::kBlockThreads, 0, to_cuda(stream)>>>(
      in, values, n, keep, out, values_out, kept_count, status, tile_counter, tiles,
      kVectorizable<T> && is_aligned(in, kVectorBytes));
  TESSERA_CUDA_CHECK_LAUNCH();
}

template <class T, class Pred>
void device_select(const Queue& queue, const T* in, index_t n, Pred pred, T* out, index_t* kept_count) {
  device_select_kept(queue, in, n, KeepIf<Pred>{pred}, out, kept_count);
}

}  // namespace tessera::kernels::cuda::detail
