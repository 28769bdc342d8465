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
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/cuda/tuning/look_back.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"

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
  static std::size_t zeroed_bytes(index_t tiles) { return bytes(tiles); }
  static TileStatus64 on(void* storage, index_t) { return TileStatus64{static_cast<std::uint64_t*>(storage)}; }

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
  static std::size_t zeroed_bytes(index_t tiles) { return bytes(tiles); }
  static TileStatus128 on(void* storage, index_t) { return TileStatus128{static_cast<std::uint64_t*>(storage)}; }

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
  static std::size_t zeroed_bytes(index_t tiles) { return bytes(tiles); }
  static TileCountStatus on(void* storage, index_t) { return TileCountStatus{static_cast<std::uint64_t*>(storage)}; }

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

// Values of any other size (CUB's layout for non-primitive types): a 4-byte state per tile and two
// value arrays, one for aggregates and one for inclusive prefixes, so that a value a reader may be
// loading is never overwritten. A writer stores the value, fences, then stores the state; a reader
// loads the state, and where it is not INVALID fences and loads the value through L2.
template <class T>
struct TileStatusGeneric {
  using Value = T;
  std::uint32_t* states = nullptr;
  T* aggregates = nullptr;
  T* inclusives = nullptr;

  static constexpr std::size_t kAlign = alignof(T) > 16 ? alignof(T) : 16;
  static std::size_t state_bytes(index_t tiles) {
    return (sizeof(std::uint32_t) * static_cast<std::size_t>(tiles) + kAlign - 1) / kAlign * kAlign;
  }
  static std::size_t bytes(index_t tiles) {
    return state_bytes(tiles) + 2 * sizeof(T) * static_cast<std::size_t>(tiles);
  }
  static std::size_t zeroed_bytes(index_t tiles) { return state_bytes(tiles); }
  static TileStatusGeneric on(void* storage, index_t tiles) {
    char* base = static_cast<char*>(storage);
    TileStatusGeneric s;
    s.states = reinterpret_cast<std::uint32_t*>(base);
    s.aggregates = reinterpret_cast<T*>(base + state_bytes(tiles));
    s.inclusives = s.aggregates + tiles;
    return s;
  }

  __device__ __forceinline__ void publish(index_t tile, TileState state, const T& value) const {
    (state == kTileInclusive ? inclusives : aggregates)[tile] = value;
    __threadfence();
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(states + tile), "r"(static_cast<std::uint32_t>(state))
                 : "memory");
  }
  __device__ __forceinline__ TileState read(index_t tile, T& value) const {
    std::uint32_t state;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(state) : "l"(states + tile) : "memory");
    if (state != kTileInvalid) {
      __threadfence();
      value = load_cg((state == kTileInclusive ? inclusives : aggregates) + tile);
    }
    return static_cast<TileState>(state);
  }
};

template <class T>
using TileStatus = std::conditional_t<sizeof(T) == 4, TileStatus64<T>,
                                      std::conditional_t<sizeof(T) == 8, TileStatus128<T>, TileStatusGeneric<T>>>;

// Warp-wide look-back (every lane of one warp calls it): the combination, in tile order, of all tiles
// before `tile`, which must be > 0 (tile 0 publishes its inclusive prefix at once, so every look-back
// ends there at the latest). Waits only for predecessors that have not yet published anything;
// those took their tile index earlier (tile indices come from an atomic counter), so they are
// resident and never wait on us: no deadlock whatever the scheduling order of thread blocks. No
// identity is needed: each round folds the lanes from the nearest inclusive predecessor on
// (warp_reduce_suffix from that lane), and rounds meet in tile order.
//
// PartialDelayNs and PollDelayNs (0: none) put the warp to sleep (__nanosleep) right after the tile
// published its aggregate, and before each re-read of a predecessor that had not published yet.
// Reads issued at once mostly find the predecessors still INVALID: with thousands of tiles in
// flight the spinning warps' L2 traffic slows the other resident tiles' loads and stores. Sleeping
// as CUB's sm90 tunings do (~1.2 us, then ~0.1-0.6 us) made the scan 3-11% and select 16% faster
// on an H200. The callers' tunings choose the sleeps per architecture (tuning/scan.cuh,
// tuning/select.cuh); grids under kLookbackSleepMinTiles tiles do not sleep (tuning/look_back.cuh).

// Lane i (i >= first_lane) receives value[i] op ... op value[31]; lanes below first_lane take no part
// in any combination (their values may be anything).
template <class T, class Op>
__device__ __forceinline__ T warp_reduce_suffix_from(T value, Op& op, int first_lane) {
  const int lane = lane_id();
#pragma unroll
  for (int offset = 1; offset < kWarpThreads; offset *= 2) {
    const T other = shfl_down(value, offset);
    if (lane >= first_lane && lane + offset < kWarpThreads) value = op(value, other);
  }
  return value;
}

template <int PartialDelayNs = 0, int PollDelayNs = 0, class Status, class Op>
__device__ __forceinline__ typename Status::Value look_back(const Status& status, index_t tile, Op op) {
  using T = typename Status::Value;
  const bool sleep = gridDim.x >= kLookbackSleepMinTiles;
  if constexpr (PartialDelayNs > 0) {
    if (sleep) __nanosleep(PartialDelayNs);
  }
  const int lane = lane_id();
  constexpr bool kIdentity = has_identity_element<Op, T>::value;
  T exclusive;
  bool have = false;
  if constexpr (kIdentity) exclusive = identity_element<Op, T>();
  index_t window_end = tile;  // this round reads predecessors [window_end - 32, window_end)
  while (true) {
    const index_t predecessor = window_end - kWarpThreads + lane;
    T value;
    if constexpr (kIdentity) value = identity_element<Op, T>();
    // Before tile 0 there is nothing; such lanes sit below tile 0's lane, which is inclusive.
    TileState state = kTileInclusive;
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
    if constexpr (kIdentity) {
      // The library's operations (commutative, with an identity): one butterfly over the lanes.
      const T contribution = lane >= stop_lane ? value : identity_element<Op, T>();
      exclusive = op(warp_reduce(contribution, op), exclusive);
    } else {
      const T window = shfl_idx(warp_reduce_suffix_from(value, op, stop_lane), stop_lane);
      exclusive = have ? op(window, exclusive) : window;
      have = true;
    }
    if (inclusive_lanes) return exclusive;
    window_end -= kWarpThreads;
  }
}

// The scratch of one look-back pass: a tile counter (the order in which thread blocks claim tiles,
// so that no block waits on one not yet running; 16 bytes, keeping the status aligned) followed by
// the tile status, whose states are zeroed in stream order. Freed in stream order when it goes out
// of scope.
template <class Status>
struct LookbackScratch {
  LookbackScratch(const Queue& queue, index_t tiles)
      : buffer(queue, kCounterBytes + Status::bytes(tiles)),
        tile_counter(buffer.as<unsigned int>()),
        status(Status::on(static_cast<char*>(buffer.data()) + kCounterBytes, tiles)) {
    TESSERA_CUDA_CHECK(cudaMemsetAsync(buffer.data(), 0, kCounterBytes + Status::zeroed_bytes(tiles),
                                       reinterpret_cast<cudaStream_t>(queue.stream)));
  }
  static constexpr std::size_t kCounterBytes = 256;  // keeps any value array of the status aligned
  ScratchBuffer buffer;
  unsigned int* tile_counter;
  Status status;
};

// The tile a look-back pass's thread block takes: the next from LookbackScratch's counter (in the
// order blocks start, not blockIdx), so that every tile before it belongs to a block that started
// earlier. All threads of the block call it; one barrier.
__device__ __forceinline__ index_t take_tile(unsigned int* tile_counter) {
  __shared__ unsigned int taken;
  if (threadIdx.x == 0) taken = atomicAdd(tile_counter, 1u);
  __syncthreads();
  return taken;
}

// Where a look-back pass's thread block and this thread stand: the tile the block took (take_tile)
// and its first element, this thread's warp and lane, and the warp's first element (each warp owns
// Tuning::kWarpItems consecutive elements of the tile). All threads of the block call it.
struct TilePlace {
  index_t tile, tile_base, warp_base;
  int warp, lane;
};
template <class Tuning>
__device__ __forceinline__ TilePlace take_tile_place(unsigned int* tile_counter) {
  const index_t tile = take_tile(tile_counter);
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const int lane = lane_id();
  const index_t tile_base = tile * Tuning::kTileItems;
  return {tile, tile_base, tile_base + static_cast<index_t>(warp) * Tuning::kWarpItems, warp, lane};
}

// In the scan's arrangement (step j of lane l follows lane l - 1's step j; lane 0's step j + 1
// follows lane 31's step j), the element before this lane's first of step j: `last` is this lane's
// last element of step j, `previous_last` its last of step j - 1 (unread at j == 0), `before_warp`
// the element before the warp's first. All 32 lanes call it, j the same in each.
template <class T>
__device__ __forceinline__ T element_before_step(int j, const T& last, const T& previous_last, const T& before_warp) {
  const T from_lane_below = shfl_up(last, 1);
  if (j == 0) return lane_id() == 0 ? before_warp : from_lane_below;
  const T from_last_lane = shfl_idx(previous_last, kWarpThreads - 1);
  return lane_id() == 0 ? from_last_lane : from_lane_below;
}

}  // namespace tessera::kernels::cuda::detail
