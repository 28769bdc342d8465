// Tile status for single-pass prefix computations with decoupled look-back (Merrill & Garland,
// "Single-pass Parallel Prefix Scan with Decoupled Look-back", NVIDIA TR 2016), shared by scan and
// select. Each tile publishes its aggregate (PARTIAL) as soon as it knows it, and its inclusive
// prefix (INCLUSIVE) once its predecessors' are known; a successor folds predecessors' values
// backwards, 32 at a time, until it meets an INCLUSIVE one.
//
// Memory ordering. 4-byte values travel with their flag in one 64-bit word, written and read with
// single-copy-atomic relaxed gpu-scope accesses, so a reader never sees a flag without its value.
// 8-byte values live in their own arrays (one slot per tile and kind, each written once); the
// writer stores the value, then the flag with st.release.gpu; the reader loads the flag with
// ld.acquire.gpu, then the value with a gpu-scope load that bypasses L1, where a stale copy could
// sit. The storage is zeroed (all INVALID) in stream order before each launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "warp.cuh"

namespace tessera::kernels::cuda::detail {

enum TileState : std::uint32_t { kTileInvalid = 0, kTilePartial = 1, kTileInclusive = 2 };

__device__ __forceinline__ std::uint64_t load_relaxed_gpu(const std::uint64_t* p) {
  std::uint64_t v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_relaxed_gpu(std::uint64_t* p, std::uint64_t v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ std::uint32_t load_acquire_gpu(const std::uint32_t* p) {
  std::uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void store_release_gpu(std::uint32_t* p, std::uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

template <class To, class From>
__device__ __forceinline__ To bit_cast_device(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

template <class T, bool Packed = (sizeof(T) <= 4)>
struct TileStatus;

// 4-byte values: {state, value} in one 64-bit word per tile.
template <class T>
struct TileStatus<T, true> {
  std::uint64_t* words = nullptr;

  static std::size_t bytes(index_t tiles) { return sizeof(std::uint64_t) * static_cast<std::size_t>(tiles); }
  static std::size_t bytes_to_zero(index_t tiles) { return bytes(tiles); }
  static TileStatus on(void* storage, index_t) { return TileStatus{static_cast<std::uint64_t*>(storage)}; }

  __device__ __forceinline__ void publish(index_t tile, TileState state, T value) const {
    const std::uint32_t bits = bit_cast_device<std::uint32_t>(value);
    store_relaxed_gpu(words + tile, (static_cast<std::uint64_t>(state) << 32) | bits);
  }
  __device__ __forceinline__ TileState read(index_t tile, T& value) const {
    const std::uint64_t word = load_relaxed_gpu(words + tile);
    value = bit_cast_device<T>(static_cast<std::uint32_t>(word));
    return static_cast<TileState>(word >> 32);
  }
};

// 8-byte values: flags, then the aggregates, then the inclusive prefixes.
template <class T>
struct TileStatus<T, false> {
  std::uint32_t* flags = nullptr;
  std::uint64_t* aggregates = nullptr;
  std::uint64_t* inclusive = nullptr;

  static std::size_t flag_bytes(index_t tiles) {
    return (sizeof(std::uint32_t) * static_cast<std::size_t>(tiles) + 15) / 16 * 16;
  }
  static std::size_t bytes(index_t tiles) {
    return flag_bytes(tiles) + 2 * sizeof(std::uint64_t) * static_cast<std::size_t>(tiles);
  }
  static std::size_t bytes_to_zero(index_t tiles) { return flag_bytes(tiles); }
  static TileStatus on(void* storage, index_t tiles) {
    auto* base = static_cast<char*>(storage);
    TileStatus s;
    s.flags = reinterpret_cast<std::uint32_t*>(base);
    s.aggregates = reinterpret_cast<std::uint64_t*>(base + flag_bytes(tiles));
    s.inclusive = s.aggregates + tiles;
    return s;
  }

  __device__ __forceinline__ void publish(index_t tile, TileState state, T value) const {
    std::uint64_t* slot = (state == kTileInclusive ? inclusive : aggregates) + tile;
    store_relaxed_gpu(slot, bit_cast_device<std::uint64_t>(value));
    store_release_gpu(flags + tile, state);
  }
  __device__ __forceinline__ TileState read(index_t tile, T& value) const {
    const auto state = static_cast<TileState>(load_acquire_gpu(flags + tile));
    value = T{};
    if (state != kTileInvalid)
      value = bit_cast_device<T>(load_relaxed_gpu((state == kTileInclusive ? inclusive : aggregates) + tile));
    return state;
  }
};

// Warp-wide look-back (every lane of one warp calls it): the combination of all tiles before
// `tile`, which must be > 0. Waits only for predecessors that have not yet published anything;
// those took their tile index earlier (tile indices come from an atomic counter), so they are
// resident and never wait on us: no deadlock whatever the scheduling order of thread blocks.
template <class T, class Op, class Status>
__device__ __forceinline__ T look_back(const Status& status, index_t tile, Op op, T identity) {
  const int lane = lane_id();
  T exclusive = identity;
  index_t window_end = tile;  // this round reads predecessors [window_end - 32, window_end)
  while (true) {
    const index_t predecessor = window_end - kWarpThreads + lane;
    T value = identity;
    TileState state = kTileInclusive;  // before tile 0 there is nothing: an inclusive identity
    if (predecessor >= 0) state = status.read(predecessor, value);
    while (__any_sync(kFullMask, state == kTileInvalid)) {
      if (state == kTileInvalid) state = status.read(predecessor, value);
    }
    const unsigned inclusive_lanes = __ballot_sync(kFullMask, state == kTileInclusive);
    // The nearest inclusive predecessor ends the look-back; tiles before it are already in it.
    const int stop_lane = inclusive_lanes ? 31 - __clz(static_cast<int>(inclusive_lanes)) : 0;
    const T contribution = lane >= stop_lane ? value : identity;
    exclusive = op(warp_reduce(contribution, op), exclusive);
    if (inclusive_lanes) return exclusive;
    window_end -= kWarpThreads;
  }
}

// The scratch of one look-back pass: a tile counter (the order in which thread blocks claim tiles,
// so that no block waits on one not yet running; 16 bytes, keeping the status aligned) followed by
// the tile status, zeroed in stream order. Freed in stream order when it goes out of scope.
template <class Value>
struct LookbackScratch {
  LookbackScratch(const Queue& queue, index_t tiles)
      : buffer(queue, kCounterBytes + TileStatus<Value>::bytes(tiles)),
        tile_counter(buffer.as<unsigned int>()),
        status(TileStatus<Value>::on(static_cast<char*>(buffer.data()) + kCounterBytes, tiles)) {
    TESSERA_CUDA_CHECK(cudaMemsetAsync(buffer.data(), 0, kCounterBytes + TileStatus<Value>::bytes_to_zero(tiles),
                                       reinterpret_cast<cudaStream_t>(queue.stream)));
  }
  static constexpr std::size_t kCounterBytes = 16;
  ScratchBuffer buffer;
  unsigned int* tile_counter;
  TileStatus<Value> status;
};

}  // namespace tessera::kernels::cuda::detail
