// Device-wide histograms in one pass over the samples (agent and dispatch layers; contract in
// histogram.hpp, binnings in detail/histogram_bins.hpp).
//
// Privatised counting: each thread block counts its share of the samples into its own counters in
// shared memory and adds them to the 64-bit global counts once at the end (one atomic per non-zero
// slot), so that global memory sees no per-sample traffic beyond the reads. The counters:
//  - 32-bit, in several copies per thread block when the bins are few (warp w counts into copy
//    w % copies), so that warps do not contend for the same few words. A thread block counts at most
//    kMaxBlockSamples samples (the grid grows with n), so no counter wraps.
//  - 16-bit, two to a 32-bit word, where 32-bit counters do not fit the shared memory at
//    kMinBlocksPerSmFor32Bit thread blocks per SM (65536 bins take 128 KiB instead of 256), with
//    kBlockThreads16 threads (one thread block per SM, so as many threads as it may have). The
//    samples go in windows of at most kWindowSamples per thread block; between windows the block
//    drains its counters: every half gives the value of its top kDrainBits16 bits (a multiple of
//    2^(16 - bits): 16384 with the default 2) to the global count of its slot (rarely: a bin must
//    take 16384 samples of the block) and keeps the rest. A half then starts a window below 16384
//    and ends it below 65536 (a window, 49152 samples, adds at most its samples), so no add can
//    carry into its neighbour, and the adds need no return value (which made every sample wait for
//    its atomic: 3x slower at 65536 bins).
//  - 16-bit bin ranges in passes, where even 16-bit counters do not fit: pass p counts the bins
//    [p * pass_bins, (p + 1) * pass_bins) over all samples (and the samples in no bin in pass 0);
//  - global atomics on the 64-bit counts, beyond kMaxPasses passes.
// A sample is one shared-memory atomic add: samples all in one bin, 32 lanes on one address, cost
// no more on an H100 than samples spread over the bins (measured: 90% of 2^28 floats in one of 16
// bins 0.414 ms, uniform 0.414 ms), so equal bins are not aggregated across the warp
// (aggregating them, __match_any_sync and one atomic per group by its lowest lane, took 3x as long on
// uniform samples and 2.5x on skewed ones). With 16-bit counters one address does cost (1.7x the
// uniform time at 65536 bins), so there a warp whose lanes' first samples of a tile mostly share a
// slot adds each thread's runs of equal slots among its samples of the tile at once
// (HistogramTuning::kCountRuns). Samples are read with 16-byte loads, whole tiles
// shared out evenly among thread blocks (as the reduction does, device_reduce.cuh); the scalar head,
// the tail and the tiles that do not divide are spread over all warps of the grid in warp-sized steps
// (every lane takes part in each step; a lane without a sample counts into a slot never read).
// Arbitrary edges are searched in shared memory where they fit beside the counters, in global memory
// (through L1) otherwise.
//
// The launch shape comes from the device: the opt-in shared memory per thread block
// (cudaDevAttrMaxSharedMemoryPerBlockOptin, cudaFuncSetAttribute) and per SM, the SM count, and
// the occupancy of the chosen kernel at the chosen shared memory. The tuning is HistogramTuning.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstddef>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/device_reduce.cuh"
#include "tessera/kernels/cuda/tuning/histogram.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/detail/histogram_bins.hpp"
#include "tessera/kernels/histogram.hpp"

namespace tessera::kernels::cuda::detail {

using kernels::detail::BinType;
using kernels::detail::EdgeKey;
using kernels::detail::kSlotNone;

// Samples one thread block may count with 32-bit counters: every counter, and the sum of a slot
// over the copies, stays below 2^32.
inline constexpr index_t kMaxBlockSamples = index_t(1) << 31;
// Samples one thread block counts between two drains of its 16-bit counters: a drain leaves every
// half below 2^(16 - drain bits), so a window may add 65536 less that.
template <class Tuning>
inline constexpr index_t kWindowSamples = 65536 - (index_t(1) << (16 - Tuning::kDrainBits16));

template <class Tuning, int CounterBits>
inline constexpr int kHistogramThreads = CounterBits == 16 ? Tuning::kBlockThreads16 : Tuning::kBlockThreads;
template <class Tuning, int CounterBits>
inline constexpr int kHistogramMinBlocks = CounterBits == 16 ? 1 : Tuning::kMinBlocksPerSm;

// How the counters of one launch are laid out.
struct HistogramLayout {
  int bins;        // all bins
  int pass_bins;   // bins counted per pass
  int passes;
  int copies;      // sub-histograms per thread block
  int copy_words;  // 32-bit words per sub-histogram (a multiple of 4)
  int binning_bytes;  // at the start of shared memory, the binning's (edge keys, a lookup table)
};

// ---- binnings on the device --------------------------------------------------------------------------

// Each has prepare(shared): called by every thread at the start (keys and tables to shared memory;
// the kernel's first barrier publishes them), operator()(sample) -> slot, and for the host the
// shared memory it needs: table_bytes() always, key_bytes() where it can have its keys there
// (keys_shared, set by the dispatch).
__host__ __device__ constexpr std::size_t round_up16(std::size_t bytes) { return (bytes + 15) / 16 * 16; }

template <class T>
struct DeviceEvenBinning {
  kernels::detail::EvenBinning<T> bins;
  bool keys_shared = false;
  std::size_t table_bytes() const { return 0; }
  std::size_t key_bytes() const { return 0; }
  __device__ __forceinline__ void prepare(unsigned char*) {}
  __device__ __forceinline__ int operator()(T x) const { return bins(x); }
};

template <class T>
struct DeviceBincountBinning {
  kernels::detail::BincountBinning<T> bins;
  bool keys_shared = false;
  std::size_t table_bytes() const { return 0; }
  std::size_t key_bytes() const { return 0; }
  __device__ __forceinline__ void prepare(unsigned char*) {}
  __device__ __forceinline__ int operator()(T x) const { return bins(x); }
};

// Given edges: the binary search of detail::edges_bin over the edge keys, in shared memory where
// they fit beside the counters (else read from the double edges through L1), shortened by the
// cells' lookup table (detail::EdgeCells), always in shared memory.
template <class T>
struct DeviceEdgesBinning {
  using Key = EdgeKey<T>;
  const double* edges;  // bins + 1, device memory
  int bins;
  bool keys_shared = false;
  const Key* keys = nullptr;   // in shared memory, where keys_shared
  const int* table = nullptr;  // cells + 1 entries, shared memory
  kernels::detail::EdgeCells cells{};
  Key first{}, last{};

  std::size_t table_bytes() const {
    return round_up16((static_cast<std::size_t>(kernels::detail::edge_cell_count(bins)) + 1) * sizeof(int));
  }
  __host__ __device__ std::size_t key_bytes() const { return round_up16(static_cast<std::size_t>(bins) * sizeof(Key)); }

  __device__ __forceinline__ Key global_key(int i) const { return kernels::detail::lower_edge_key<T>(__ldg(edges + i)); }

  __device__ __forceinline__ void prepare(unsigned char* shared) {
    first = global_key(0);
    last = kernels::detail::upper_edge_key<T>(__ldg(edges + bins));
    unsigned char* free = shared;
    if (keys_shared) {
      Key* k = reinterpret_cast<Key*>(free);
      for (int i = static_cast<int>(threadIdx.x); i < bins; i += static_cast<int>(blockDim.x)) k[i] = global_key(i);
      keys = k;
      free += key_bytes();
    }
    cells = kernels::detail::edge_cells<T>(first, last, bins);
    int* t = reinterpret_cast<int*>(free);
    const auto from_global = [this](int i) { return global_key(i); };
    for (int j = static_cast<int>(threadIdx.x); j <= cells.cells && cells.cells > 0; j += static_cast<int>(blockDim.x))
      t[j] = kernels::detail::edge_table_entry<T>(from_global, bins, cells, last, j);
    table = t;
  }

  __device__ __forceinline__ int operator()(T x) const {
    const int* t = table;
    const auto in_table = [t](int j) { return t[j]; };
    if (keys_shared) {
      const Key* k = keys;
      return kernels::detail::edges_bin(x, [k](int i) { return k[i]; }, bins, first, last, cells, in_table);
    }
    return kernels::detail::edges_bin(x, [this](int i) { return global_key(i); }, bins, first, last, cells, in_table);
  }
};

// The caller's binner (kernels::detail::UserBinning): nothing in shared memory, the binner's answer
// mapped to a slot of the front layout in registers: above 0, below 1, bin k at 2 + k, the invalid
// answers bins + 2, no sample bins + 3. For a signed answer that is min(answer + 2, bins + 2) in
// unsigned arithmetic (kBinAbove and kBinBelow land on 0 and 1, every other negative answer wraps
// past bins + 2), one instruction on sm_90 (VIADDMNMX), where the standard layout needs a
// comparison and a select more. The counters keep that layout in shared memory and turn it into the
// standard one (bins first) when they are added to the global counts (HistogramCounter). The same
// counting pass as the library's binnings.
template <class Binner>
struct DeviceUserBinning {
  static constexpr bool kFrontTails = true;
  kernels::detail::UserBinning<Binner> bins;
  bool keys_shared = false;
  std::size_t table_bytes() const { return 0; }
  std::size_t key_bytes() const { return 0; }
  __device__ __forceinline__ void prepare(unsigned char*) {}
  template <class T>
  __device__ __forceinline__ int operator()(const T& x) const {
    const auto b = bins.binner(x);
    using B = decltype(b);
    static_assert(std::is_integral_v<B>, "histogram: the binner must return an integer bin");
    using U = std::make_unsigned_t<std::common_type_t<B, int>>;
    const U count = static_cast<U>(bins.bins);
    if constexpr (std::is_signed_v<B>) {
      static_assert(kBinBelow == -1 && kBinAbove == -2);
      const U slot = static_cast<U>(b) + U(2);
      return static_cast<int>(slot < count + U(2) ? slot : count + U(2));
    } else {
      return static_cast<U>(b) < count ? static_cast<int>(b) + 2 : static_cast<int>(count) + 2;
    }
  }
};

// Whether a binning answers in the front layout (DeviceUserBinning) rather than the standard one.
template <class Binning>
inline constexpr bool kFrontTailsOf = requires { Binning::kFrontTails; };

// A slot of the front layout in the standard one (the invalid answers are the NaN slot, bins + 2,
// and no sample stays bins + kSlotNone).
__device__ __forceinline__ int standard_slot(int front, int bins) {
  static_assert(kernels::detail::kSlotBelow == 0 && kernels::detail::kSlotAbove == 1 &&
                kernels::detail::kSlotNaN == 2 && kernels::detail::kSlotNone == 3);
  return front >= bins + 2 ? front : front >= 2 ? front - 2 : bins + 1 - front;
}

// ---- counting (the agent) ------------------------------------------------------------------------------

// One warp's counting in one pass. CounterBits: 32 or 16 (shared memory), or 0 (global atomics).
// Slots of a pass: 0 .. cap - 1 its bins, cap .. cap + 2 below, above and NaN (first pass only),
// cap + 3 the slot of no sample (counted, never read). FrontTails: the binning answers in the
// front layout (DeviceUserBinning), which one pass in shared memory keeps as it is.
template <class Tuning, int CounterBits, bool MultiPass, bool FrontTails = false>
struct HistogramCounter {
  unsigned int* copy;            // this warp's sub-histogram
  unsigned long long* counts;    // global: histogram_slots(bins)
  int bins;
  int base;                      // first bin of this pass
  int cap;                       // bins of this pass
  bool first_pass;

  // A binning's slot (bin, or bins + tail) as a slot of this pass.
  __device__ __forceinline__ int pass_slot(int slot) const {
    if constexpr (!MultiPass) {
      return slot;
    } else {
      if (slot < bins) {
        const unsigned relative = static_cast<unsigned>(slot - base);
        return relative < static_cast<unsigned>(cap) ? static_cast<int>(relative) : cap + kSlotNone;
      }
      return first_pass ? cap + (slot - bins) : cap + kSlotNone;
    }
  }

  // Whether the counters keep the binning's front layout: in one pass in shared memory. Passes and
  // global atomics count in the standard layout (count() converts).
  static constexpr bool kFrontCounters = FrontTails && !MultiPass && CounterBits != 0;

  // The global index of a slot of this pass; -1 for the none slot, and for the tail slots after
  // the first pass.
  __device__ __forceinline__ int global_of(int slot) const {
    if constexpr (kFrontCounters) {
      return slot < bins + kSlotNone ? standard_slot(slot, bins) : -1;
    } else {
      return slot < cap ? base + slot : (first_pass && slot < cap + kSlotNone) ? bins + (slot - cap) : -1;
    }
  }

  __device__ __forceinline__ void add(int slot, unsigned inc) const {
    if constexpr (CounterBits == 32) {
      atomicAdd(copy + slot, inc);
    } else if constexpr (CounterBits == 16) {
      atomicAdd(copy + (slot >> 1), inc << ((slot & 1) * 16u));
    } else {
      if (slot != cap + kSlotNone) atomicAdd(counts + (slot < cap ? slot : bins + (slot - cap)), static_cast<unsigned long long>(inc));
    }
  }

  // The counter slot of a binning's slot (bins + kSlotNone for none).
  __device__ __forceinline__ int slot_of(int binning_slot) const {
    if constexpr (FrontTails && !kFrontCounters) {
      return pass_slot(standard_slot(binning_slot, bins));
    } else {
      return pass_slot(binning_slot);
    }
  }

  // Every lane of the warp calls this with its sample's slot (bins + kSlotNone for none).
  __device__ __forceinline__ void count(int binning_slot) const { add(slot_of(binning_slot), 1u); }
};

// Between two windows of 16-bit counting: every half gives the value of its top kDrainBits bits (a
// multiple of 2^(16 - kDrainBits)) to the global count of its slot and keeps the rest (see the top
// of this file). All threads; the caller surrounds it with barriers.
template <int kDrainBits, class Counter>
__device__ __forceinline__ void drain_16bit_counters(const Counter& counter, unsigned int* words, int copies,
                                                     int copy_words, int threads) {
  constexpr unsigned kHalfMask = ((1u << kDrainBits) - 1u) << (16 - kDrainBits);  // a half's top bits
  constexpr unsigned kMask = kHalfMask | (kHalfMask << 16);
  uint4* vectors = reinterpret_cast<uint4*>(words);
  const int vector_count = copies * copy_words / 4;
  for (int i = static_cast<int>(threadIdx.x); i < vector_count; i += threads) {
    uint4 v = vectors[i];
    if (((v.x | v.y | v.z | v.w) & kMask) == 0) continue;
    unsigned int* word = &v.x;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const unsigned high_bits = word[k] & kMask;
      if (high_bits == 0) continue;
      const int slot = ((i * 4 + k) % copy_words) * 2;  // the low half's slot
      if (const unsigned low = high_bits & 0xFFFFu) {
        const int g = counter.global_of(slot);
        if (g >= 0) atomicAdd(counter.counts + g, static_cast<unsigned long long>(low));
      }
      if (const unsigned high = high_bits >> 16) {
        const int g = counter.global_of(slot + 1);
        if (g >= 0) atomicAdd(counter.counts + g, static_cast<unsigned long long>(high));
      }
      word[k] -= high_bits;
    }
    vectors[i] = v;
  }
}

template <class Tuning, int CounterBits, bool MultiPass, class T, class Binning>
__global__ void __launch_bounds__((kHistogramThreads<Tuning, CounterBits>), (kHistogramMinBlocks<Tuning, CounterBits>))
    histogram_kernel(const T* __restrict__ in, index_t n, Binning binning, HistogramLayout layout,
                     unsigned long long* __restrict__ counts, bool vector_ok) {
  extern __shared__ __align__(16) unsigned char shared[];
  constexpr int kThreads = kHistogramThreads<Tuning, CounterBits>;
  constexpr int kWarps = kThreads / kWarpThreads;
  constexpr int kLoads = Tuning::kLoadsInFlight;
  using Vec = Vector<T>;
  constexpr int kItems = Vec::kItems;
  constexpr index_t kTileVectors = static_cast<index_t>(kThreads) * kLoads;
  // A window holds whole tiles, and what a block counts after its last window (less than a tile of
  // the grid's rest, plus the head and tail) fits another.
  static_assert(CounterBits != 16 || (2 * kTileVectors * kItems <= kWindowSamples<Tuning> &&
                                      kWindowSamples<Tuning> % (kTileVectors * kItems) == 0),
                "histogram: a window of the 16-bit counters holds two or more whole tiles");

  binning.prepare(shared);
  unsigned int* words = reinterpret_cast<unsigned int*>(shared + layout.binning_bytes);
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const int lane = lane_id();

  // Whole tiles of the 16-byte-aligned body, shared out in runs of consecutive tiles (as the reduce).
  const index_t head = unaligned_head(in, n);
  const T* body = in + head;
  const index_t vector_count = (n - head) / kItems;
  const index_t tiles = vector_count / kTileVectors;
  const index_t block = blockIdx.x;
  const index_t per_block = tiles / gridDim.x;
  const index_t extra = tiles % gridDim.x;
  const index_t first_tile = block * per_block + (block < extra ? block : extra);
  const index_t block_tiles = per_block + (block < extra ? 1 : 0);
  // 16-bit counters drain after every window of tiles; 32-bit ones count all tiles in one.
  const index_t window_tiles = CounterBits == 16 ? kWindowSamples<Tuning> / (kTileVectors * kItems) : block_tiles;
  // The rest: the head, then everything after the whole tiles; in warp-sized steps over the grid.
  const index_t rest_start = head + tiles * kTileVectors * kItems;
  const index_t rest = head + (n - rest_start);
  const index_t grid_warp = block * kWarps + warp;
  const index_t grid_warps = static_cast<index_t>(gridDim.x) * kWarps;

  HistogramCounter<Tuning, CounterBits, MultiPass, kFrontTailsOf<Binning>> counter;
  counter.copy = words + (warp % layout.copies) * layout.copy_words;
  counter.counts = counts;
  counter.bins = layout.bins;
  auto drain = [&] {
    if constexpr (CounterBits == 16) {
      __syncthreads();
      drain_16bit_counters<Tuning::kDrainBits16>(counter, words, layout.copies, layout.copy_words, kThreads);
      __syncthreads();
    }
  };

  for (int pass = 0; pass < (MultiPass ? layout.passes : 1); ++pass) {
    counter.base = pass * layout.pass_bins;
    counter.cap = MultiPass ? min(layout.pass_bins, layout.bins - counter.base) : layout.bins;
    counter.first_pass = pass == 0;
    if constexpr (CounterBits != 0) {
      uint4* zero = reinterpret_cast<uint4*>(words);
      const int zero_vectors = layout.copies * layout.copy_words / 4;
      for (int i = static_cast<int>(threadIdx.x); i < zero_vectors; i += kThreads) zero[i] = make_uint4(0, 0, 0, 0);
    }
    __syncthreads();  // counters zeroed (and, in the first pass, the binning's keys in place)

    const T* tile = body + (first_tile * kTileVectors + threadIdx.x) * kItems;
    for (index_t window = 0; window < block_tiles; window += window_tiles) {
      const index_t window_end = min(block_tiles, window + window_tiles);
      for (index_t t = window; t < window_end; ++t, tile += kTileVectors * kItems) {
        Vec loaded[kLoads];
#pragma unroll
        for (int u = 0; u < kLoads; ++u) loaded[u] = load_items_readonly(tile + u * kThreads * kItems, vector_ok);
        if constexpr (Tuning::kCountRuns != 0 && CounterBits == 16) {
          int run_slot = counter.slot_of(binning(loaded[0].item[0]));
          bool runs = true;
          if constexpr (Tuning::kCountRuns == 2) {
            const int lead = __shfl_sync(0xffffffffu, run_slot, 0);
            runs = __popc(__ballot_sync(0xffffffffu, run_slot == lead)) >= kWarpThreads / 2;
          }
          if (!runs) {
            counter.add(run_slot, 1u);
#pragma unroll
            for (int k = 1; k < kLoads * kItems; ++k) counter.count(binning(loaded[k / kItems].item[k % kItems]));
            continue;
          }
          // A run of equal slots in the thread's samples of the tile is one add: samples crowding
          // into one bin no longer put all 32 lanes of every add on one address.
          unsigned run = 1;
#pragma unroll
          for (int k = 1; k < kLoads * kItems; ++k) {
            const int slot = counter.slot_of(binning(loaded[k / kItems].item[k % kItems]));
            const bool same = slot == run_slot;
            if (!same) counter.add(run_slot, run);
            run = same ? run + 1 : 1u;
            run_slot = slot;
          }
          counter.add(run_slot, run);
        } else {
#pragma unroll
          for (int u = 0; u < kLoads; ++u) {
#pragma unroll
            for (int i = 0; i < kItems; ++i) counter.count(binning(loaded[u].item[i]));
          }
        }
      }
      drain();
    }
    for (index_t step = grid_warp * kWarpThreads; step < rest; step += grid_warps * kWarpThreads) {
      const index_t r = step + lane;
      counter.count(r < rest ? binning(in[r < head ? r : rest_start + (r - head)]) : layout.bins + kSlotNone);
    }
    __syncthreads();  // every count of the pass is in

    if constexpr (CounterBits != 0) {
      const int slots = counter.cap + (counter.first_pass ? kSlotNone : 0);
      for (int s = static_cast<int>(threadIdx.x); s < slots; s += kThreads) {
        unsigned int total = 0;
        for (int c = 0; c < layout.copies; ++c) {
          const unsigned int* copy = words + c * layout.copy_words;
          if constexpr (CounterBits == 32) total += copy[s];
          else total += (copy[s >> 1] >> ((s & 1) * 16)) & 0xFFFFu;
        }
        if (total) atomicAdd(counts + counter.global_of(s), static_cast<unsigned long long>(total));
      }
      __syncthreads();  // the counters are read before the next pass clears them
    }
  }
}

// ---- dispatch ------------------------------------------------------------------------------------------

struct HistogramPlan {
  int counter_bits = 32;  // 32, 16, or 0 (global atomics)
  HistogramLayout layout{};
  std::size_t shared_bytes = 0;
  bool keys_shared = false;  // the binning's keys in shared memory
};

inline int round_up4(long long words) { return static_cast<int>((words + 3) / 4 * 4); }

// The counters for `bins` bins:
//  - 32-bit copies at the highest occupancy that holds one, down to kMinBlocksPerSmFor32Bit thread
//    blocks per SM, as many copies as that budget holds (up to one per warp);
//  - else 16-bit copies in one thread block per SM;
//  - else 16-bit bin-range passes (up to kMaxPasses);
//  - else global atomics.
// fixed_bytes: what the binning always keeps in shared memory; key_bytes: what it may keep there
// too (edge keys; 0 for none), kept only where the counters still fit in one pass beside them.
// max_blocks32: the thread blocks per SM the 32-bit kernel's registers and threads allow.
template <class Tuning>
HistogramPlan plan_histogram(int bins, std::size_t fixed_bytes, std::size_t key_bytes, int max_blocks32) {
  const DeviceInfo& device = current_device_info();
  auto budget = [&](int blocks_per_sm, long long keys) {
    return std::min<long long>(device.max_smem_optin, device.max_smem_per_sm / blocks_per_sm - device.reserved_smem_per_block) - keys;
  };
  auto try_counters = [&](int bits, int max_blocks, int min_blocks, long long keys, HistogramPlan& plan) {
    const int warps = (bits == 16 ? Tuning::kBlockThreads16 : Tuning::kBlockThreads) / kWarpThreads;
    const long long slots = static_cast<long long>(bins) + 4;
    const int copy_words = round_up4(bits == 32 ? slots : (slots + 1) / 2);
    for (int blocks = max_blocks; blocks >= min_blocks; --blocks) {
      const long long copies = std::min<long long>(warps, budget(blocks, keys) / (4LL * copy_words));
      if (copies >= 1) {
        plan.counter_bits = bits;
        plan.layout = {bins, bins, 1, static_cast<int>(copies), copy_words, static_cast<int>(keys)};
        plan.shared_bytes = static_cast<std::size_t>(keys) + static_cast<std::size_t>(copies) * copy_words * 4;
        return true;
      }
    }
    return false;
  };
  auto try_single_pass = [&](long long keys, HistogramPlan& plan) {
    return try_counters(32, max_blocks32, Tuning::kMinBlocksPerSmFor32Bit, keys, plan) ||
           try_counters(16, 1, 1, keys, plan);
  };
  HistogramPlan plan;
  const auto fixed = static_cast<long long>(round_up16(fixed_bytes));
  const auto keys = static_cast<long long>(round_up16(key_bytes));
  if (keys > 0 && fixed + keys < device.max_smem_optin && try_single_pass(fixed + keys, plan)) {
    plan.keys_shared = true;
    return plan;
  }
  if (try_single_pass(fixed, plan)) return plan;
  // Passes of 16-bit counters at one thread block per SM.
  const long long words = budget(1, fixed) / 4 / 4 * 4;
  const long long pass_bins = words * 2 - 4;
  const long long passes = (bins + pass_bins - 1) / pass_bins;
  if (pass_bins >= 1 && passes <= Tuning::kMaxPasses) {
    plan.counter_bits = 16;
    plan.layout = {bins, static_cast<int>(pass_bins), static_cast<int>(passes), 1, static_cast<int>(words),
                   static_cast<int>(fixed)};
    plan.shared_bytes = static_cast<std::size_t>(fixed + words * 4);
    return plan;
  }
  plan.counter_bits = 0;
  plan.layout = {bins, bins, 1, 1, 0, static_cast<int>(fixed)};
  plan.shared_bytes = static_cast<std::size_t>(fixed);
  return plan;
}

// Lets `kernel` have all the shared memory a thread block may opt into, where `shared_bytes` needs
// more than the default 48 KiB. Set before every such launch and occupancy query: a host function
// pointer may name the same kernel template instance in more than one loaded module (the library
// and a program that instantiates it too), and the attribute belongs to the one the call reaches.
inline void histogram_opt_in(const void* kernel, std::size_t shared_bytes) {
  constexpr std::size_t kDefaultLimit = 48 * 1024;
  if (shared_bytes <= kDefaultLimit) return;
  TESSERA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          current_device_info().max_smem_optin));
}

// Resident thread blocks per SM of `kernel` at `block_threads` threads with `shared_bytes` of
// dynamic shared memory, cached per (kernel, device, shared bytes): the occupancy calculator costs
// microseconds, a launch should not.
inline int histogram_blocks_per_sm(const void* kernel, int block_threads, std::size_t shared_bytes) {
  struct Entry {
    const void* kernel;
    int device;
    std::size_t bytes;
    int blocks;
  };
  static std::vector<Entry> cache;
  static std::mutex mutex;
  const DeviceInfo& device = current_device_info();
  std::lock_guard<std::mutex> lock(mutex);
  for (const Entry& e : cache)
    if (e.kernel == kernel && e.device == device.ordinal && e.bytes == shared_bytes) return e.blocks;
  histogram_opt_in(kernel, shared_bytes);
  int blocks = 0;
  TESSERA_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block_threads, shared_bytes));
  TESSERA_ASSERT(blocks > 0, "histogram: the kernel cannot be resident with the shared memory it was planned");
  cache.push_back({kernel, device.ordinal, shared_bytes, blocks});
  return blocks;
}

// Calls f.template operator()<CounterBits>(kernel) with the kernel a plan runs.
template <class Tuning, class T, class Binning, class F>
decltype(auto) with_histogram_kernel(const HistogramPlan& plan, F&& f) {
  switch (plan.counter_bits) {
    case 32: return f.template operator()<32>(histogram_kernel<Tuning, 32, false, T, Binning>);
    case 16:
      if (plan.layout.passes > 1) return f.template operator()<16>(histogram_kernel<Tuning, 16, true, T, Binning>);
      return f.template operator()<16>(histogram_kernel<Tuning, 16, false, T, Binning>);
    default: break;
  }
  return f.template operator()<0>(histogram_kernel<Tuning, 0, false, T, Binning>);
}

// The plan for these bins (the occupancy of the 32-bit kernel read from the device), and the thread
// blocks per SM its kernel gets.
template <class Tuning, class T, class Binning>
std::pair<HistogramPlan, int> make_histogram_plan(const Binning& binning, int bins) {
  const int max_blocks32 = histogram_blocks_per_sm(reinterpret_cast<const void*>(histogram_kernel<Tuning, 32, false, T, Binning>),
                                                   kHistogramThreads<Tuning, 32>, 0);
  const HistogramPlan plan = plan_histogram<Tuning>(bins, binning.table_bytes(), binning.key_bytes(), max_blocks32);
  const int resident = with_histogram_kernel<Tuning, T, Binning>(plan, [&]<int CounterBits>(auto kernel) {
    return histogram_blocks_per_sm(reinterpret_cast<const void*>(kernel), kHistogramThreads<Tuning, CounterBits>,
                                   plan.shared_bytes);
  });
  return {plan, resident};
}

// counts[0, histogram_slots(bins)) = the histogram of in[0, n) (device memory). The binning says
// what shared memory it needs and learns whether its keys got it (keys_shared). The grid: one wave
// of the plan's kernel (kWaves), fewer for small inputs, more where n needs them (kMaxBlockSamples).
template <class Tuning = HistogramTuning, class T, class Binning>
void device_histogram(const T* in, index_t n, Binning binning, int bins, index_t* counts, StreamHandle stream) {
  const cudaStream_t s = to_cuda(stream);
  auto* out = reinterpret_cast<unsigned long long*>(counts);
  TESSERA_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(histogram_slots(bins)) * sizeof(index_t), s));
  if (n == 0) return;
  const auto [plan, resident] = make_histogram_plan<Tuning, T, Binning>(binning, bins);
  binning.keys_shared = plan.keys_shared;
  const DeviceInfo& device = current_device_info();
  with_histogram_kernel<Tuning, T, Binning>(plan, [&]<int CounterBits>(auto kernel) {
    constexpr int kThreads = kHistogramThreads<Tuning, CounterBits>;
    const index_t wave = static_cast<index_t>(device.sm_count) * resident;
    const index_t tile_items = static_cast<index_t>(kThreads) * Tuning::kLoadsInFlight * Vector<T>::kItems;
    const index_t needed = std::max<index_t>(ceil_div<index_t>(n, kMaxBlockSamples), 1);
    const index_t grid = std::max(needed, std::clamp<index_t>(n / tile_items, 1, wave * Tuning::kWaves));
    TESSERA_ASSERT(grid <= 0x7fffffff, "histogram: more thread blocks than one grid can hold");
    histogram_opt_in(reinterpret_cast<const void*>(kernel), plan.shared_bytes);
    kernel<<<static_cast<unsigned>(grid), kThreads, plan.shared_bytes, s>>>(in, n, binning, plan.layout, out,
                                                                             vector_aligned(in));
    TESSERA_CUDA_CHECK_LAUNCH();
    return 0;
  });
}

// ---- weighted histograms -------------------------------------------------------------------------------

inline constexpr int kWeightedThreads = 256;

// sums[slot] += weight, in the sum type (integers wrap as 64-bit unsigned sums).
template <class Acc>
__device__ __forceinline__ void add_weight(Acc* at, Acc weight) {
  if constexpr (std::is_integral_v<Acc>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(weight));
  } else {
    atomicAdd(at, weight);
  }
}

// Each thread block sums its samples' weights per slot in shared memory (`privatised`, where the
// slots fit) or straight into the global sums, in a grid-stride loop.
template <class T, class W, class Acc, class Binning>
__global__ void __launch_bounds__(kWeightedThreads)
    weighted_histogram_kernel(const T* __restrict__ in, const W* __restrict__ weights, index_t n, Binning binning,
                              int slots, Acc* __restrict__ sums, bool privatised) {
  extern __shared__ __align__(16) unsigned char shared[];
  Acc* partial = reinterpret_cast<Acc*>(shared);
  if (privatised) {
    for (int s = static_cast<int>(threadIdx.x); s < slots; s += kWeightedThreads) partial[s] = Acc(0);
    __syncthreads();
  }
  Acc* into = privatised ? partial : sums;
  const index_t stride = static_cast<index_t>(gridDim.x) * kWeightedThreads;
  const int nan_slot = slots - static_cast<int>(kHistogramTailSlots) + kernels::detail::kSlotNaN;
  for (index_t i = static_cast<index_t>(blockIdx.x) * kWeightedThreads + threadIdx.x; i < n; i += stride) {
    int at = binning(in[i]);
    if constexpr (kFrontTailsOf<Binning>) at = standard_slot(at, slots - static_cast<int>(kHistogramTailSlots));
    // The NaN slot counts samples (the invalid answers of a binner), not weights.
    add_weight(into + at, at == nan_slot ? Acc(1) : static_cast<Acc>(weights[i]));
  }
  if (privatised) {
    __syncthreads();
    for (int s = static_cast<int>(threadIdx.x); s < slots; s += kWeightedThreads)
      if (partial[s] != Acc(0)) add_weight(sums + s, partial[s]);
  }
}

// sums[0, histogram_slots(bins)) = the weights of in[0, n) summed per slot (device memory), the NaN
// slot counting its samples instead. The per-block sums live in shared memory where they fit in the
// default 48 KiB.
template <class T, class W, class Acc, class Binning>
void device_weighted_histogram(const T* in, const W* weights, index_t n, Binning binning, int bins, Acc* sums,
                               StreamHandle stream) {
  const cudaStream_t s = to_cuda(stream);
  const int slots = static_cast<int>(histogram_slots(bins));
  TESSERA_CUDA_CHECK(cudaMemsetAsync(sums, 0, static_cast<std::size_t>(slots) * sizeof(Acc), s));
  if (n == 0) return;
  const std::size_t shared_bytes = static_cast<std::size_t>(slots) * sizeof(Acc);
  const bool privatised = shared_bytes <= 48 * 1024;
  const DeviceInfo& device = current_device_info();
  const index_t grid = std::clamp<index_t>(ceil_div<index_t>(n, kWeightedThreads), 1,
                                           static_cast<index_t>(device.sm_count) * 8);
  weighted_histogram_kernel<T, W, Acc, Binning><<<static_cast<unsigned>(grid), kWeightedThreads,
                                                  privatised ? shared_bytes : 0, s>>>(in, weights, n, binning, slots,
                                                                                      sums, privatised);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// The range of in[0, n) into *range (device or pinned host memory): one reduction pass.
template <class T>
void device_sample_range(const Queue& queue, const T* in, index_t n, SampleRange<T>* range) {
  device_reduce(queue, in, n, kernels::detail::SampleRangeOf<T>{}, kernels::detail::CombineSampleRanges<T>{},
                kernels::detail::SampleRangeOf<T>::empty(), range);
}

}  // namespace tessera::kernels::cuda::detail
