// Tile status for single-pass prefix computations with decoupled look-back (Merrill & Garland,
// "Single-pass Parallel Prefix Scan with Decoupled Look-back", NVIDIA TR 2016), shared by scan and
// select. Each tile publishes its aggregate (PARTIAL) as soon as it knows it, and its inclusive
// prefix (INCLUSIVE) once its predecessors' are known; a successor folds predecessors' values
// backwards, 32 at a time, until it meets an INCLUSIVE one.
//
// Memory ordering. Every tile's {state, value} travels in ONE word that is written and read with a
// single-copy-atomic relaxed gpu-scope access, so a reader never sees a state without its value and
// no fence is needed: 4-byte values in a 64-bit word, counts (select) in a 64-bit word as 2 state
// bits over a 62-bit count, 8-byte values in a 16-byte word (ld/st .b128, PTX ISA 8.3, sm_70+).
// An earlier layout kept 8-byte values in separate arrays behind a flag written with st.release
// and read with ld.acquire (fences, and two dependent loads per look-back step); packing alone took
// the 8-byte scan from 0.70-0.76x to 0.92-0.98x CUB and select (8-byte counts) from 0.77x to 0.93x
// on an H100 (docs/KERNELS.md).
// The storage is zeroed (all INVALID) in stream order before each launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

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
// 16-byte accesses; p must be 16-byte aligned.
__device__ __forceinline__ void load_relaxed_gpu_128(const std::uint64_t* p, std::uint64_t& lo, std::uint64_t& hi) {
  asm volatile(
      "{\n\t.reg .b128 word;\n\t"
      "ld.relaxed.gpu.global.b128 word, [%2];\n\t"
      "mov.b128 {%0, %1}, word;\n\t}"
      : "=l"(lo), "=l"(hi)
      : "l"(p)
      : "memory");
}
__device__ __forceinline__ void store_relaxed_gpu_128(std::uint64_t* p, std::uint64_t lo, std::uint64_t hi) {
  asm volatile(
      "{\n\t.reg .b128 word;\n\t"
      "mov.b128 word, {%1, %2};\n\t"
      "st.relaxed.gpu.global.b128 [%0], word;\n\t}" ::"l"(p),
      "l"(lo), "l"(hi)
      : "memory");
}

template <class To, class From>
__device__ __forceinline__ To bit_cast_device(From from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

// 4-byte values: {state, value} in one 64-bit word per tile.
template <class T>
struct TileStatus64 {
  static_assert(sizeof(T) == 4);
  using Value = T;
  std::uint64_t* words = nullptr;

  static std::size_t bytes(index_t tiles) { return sizeof(std::uint64_t) * static_cast<std::size_t>(tiles); }
  static TileStatus64 on(void* storage) { return TileStatus64{static_cast<std::uint64_t*>(storage)}; }

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

// 8-byte values: {value, state} in one 16-byte word per tile, read by the look-back with one
// 16-byte load.
template <class T>
struct TileStatus128 {
  static_assert(sizeof(T) == 8);
  using Value = T;
  std::uint64_t* words = nullptr;  // two per tile, 16-byte aligned

  static std::size_t bytes(index_t tiles) { return 2 * sizeof(std::uint64_t) * static_cast<std::size_t>(tiles); }
  static TileStatus128 on(void* storage) { return TileStatus128{static_cast<std::uint64_t*>(storage)}; }

  __device__ __forceinline__ void publish(index_t tile, TileState state, T value) const {
    store_relaxed_gpu_128(words + 2 * tile, bit_cast_device<std::uint64_t>(value), state);
  }
  __device__ __forceinline__ TileState read(index_t tile, T& value) const {
    std::uint64_t bits, state;
    load_relaxed_gpu_128(words + 2 * tile, bits, state);
    value = bit_cast_device<T>(bits);
    return static_cast<TileState>(state);
  }
};

// Counts of kept elements (select): the state in the top 2 bits over a 62-bit count, one 64-bit
// word per tile (a count never reaches 2^62).
struct TileCountStatus {
  using Value = index_t;
  static constexpr int kStateShift = 62;
  static constexpr std::uint64_t kCountMask = (std::uint64_t{1} << kStateShift) - 1;
  std::uint64_t* words = nullptr;

  static std::size_t bytes(index_t tiles) { return sizeof(std::uint64_t) * static_cast<std::size_t>(tiles); }
  static TileCountStatus on(void* storage) { return TileCountStatus{static_cast<std::uint64_t*>(storage)}; }

  __device__ __forceinline__ void publish(index_t tile, TileState state, index_t count) const {
    store_relaxed_gpu(words + tile, (static_cast<std::uint64_t>(state) << kStateShift) |
                                        (static_cast<std::uint64_t>(count) & kCountMask));
  }
  __device__ __forceinline__ TileState read(index_t tile, index_t& count) const {
    const std::uint64_t word = load_relaxed_gpu(words + tile);
    count = static_cast<index_t>(word & kCountMask);
    return static_cast<TileState>(word >> kStateShift);
  }
};

template <class T>
using TileStatus = std::conditional_t<sizeof(T) == 4, TileStatus64<T>, TileStatus128<T>>;

// Warp-wide look-back (every lane of one warp calls it): the combination of all tiles before
// `tile`, which must be > 0. Waits only for predecessors that have not yet published anything;
// those took their tile index earlier (tile indices come from an atomic counter), so they are
// resident and never wait on us: no deadlock whatever the scheduling order of thread blocks.
//
// PartialDelayNs and PollDelayNs (0: none) put the warp to sleep (__nanosleep) right after the tile
// published its aggregate, and before each re-read of a predecessor that had not published yet.
// Reads issued at once mostly find the predecessors still INVALID: with thousands of tiles in
// flight the spinning warps' L2 traffic slows the other resident tiles' loads and stores. Sleeping
// as CUB's sm90 tunings do (~1.2 us, then ~0.1-0.6 us) made the scan 3-11% and select 16% faster
// on an H200 (issue 5). Grids under kLookbackSleepMinTiles tiles do not sleep: few tiles
// poll, and the sleep would only add latency (CUB uses the same threshold).
constexpr unsigned kLookbackSleepMinTiles = 500;

template <int PartialDelayNs = 0, int PollDelayNs = 0, class T, class Op, class Status>
__device__ __forceinline__ T look_back(const Status& status, index_t tile, Op op, T identity) {
  const bool sleep = gridDim.x >= kLookbackSleepMinTiles;
  if constexpr (PartialDelayNs > 0) {
    if (sleep) __nanosleep(PartialDelayNs);
  }
  const int lane = lane_id();
  T exclusive = identity;
  index_t window_end = tile;  // this round reads predecessors [window_end - 32, window_end)
  while (true) {
    const index_t predecessor = window_end - kWarpThreads + lane;
    T value = identity;
    TileState state = kTileInclusive;  // before tile 0 there is nothing: an inclusive identity
    if (predecessor >= 0) state = status.read(predecessor, value);
    while (__any_sync(kFullMask, state == kTileInvalid)) {
      if constexpr (PollDelayNs > 0) {
        if (sleep) __nanosleep(PollDelayNs);
      }
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
template <class Status>
struct LookbackScratch {
  LookbackScratch(const Queue& queue, index_t tiles)
      : buffer(queue, kCounterBytes + Status::bytes(tiles)),
        tile_counter(buffer.as<unsigned int>()),
        status(Status::on(static_cast<char*>(buffer.data()) + kCounterBytes)) {
    TESSERA_CUDA_CHECK(cudaMemsetAsync(buffer.data(), 0, kCounterBytes + Status::bytes(tiles),
                                       reinterpret_cast<cudaStream_t>(queue.stream)));
  }
  static constexpr std::size_t kCounterBytes = 16;
  ScratchBuffer buffer;
  unsigned int* tile_counter;
  Status status;
};

}  // namespace tessera::kernels::cuda::detail
