// Device-wide histograms in one pass over the samples (agent and dispatch layers; contract in
// histogram.hpp, binnings in detail/histogram_bins.hpp).
//
// Privatised counting: each thread block counts its share of the samples into its own counters in
// shared memory and adds them to the 64-bit global counts once at the end (one atomic per non-zero
// slot), so that global memory sees no per-sample traffic beyond the reads. The counters:
//  - 32-bit, in several copies per thread block when the bins are few (warp w counts into copy
//    w % copies), so that warps do not contend for the same few words. A thread block counts at most
//    kMaxBlockSamples samples (the grid grows with n), so no counter wraps.
//  - 16-bit, two to a 32-bit word, where 32-bit counters do not fit the shared memory at two thread
//    blocks per SM (65536 bins take 128 KiB instead of 256). An add is an atomicAdd on the word; its
//    return value says exactly when the low half wrapped past 65535 (carrying one into the high
//    half) or the word past 2^32, and the thread that caused it adds the correction (+65536 to the
//    low slot and -1 to the high one, or +65536 to the high slot) to the global counts directly:
//    once per 65536 adds of a slot, and exact in any order, since all are additions.
//  - bin ranges in passes, where even 16-bit counters do not fit: pass p counts the bins
//    [p * pass_bins, (p + 1) * pass_bins) over all samples (and the samples in no bin in pass 0);
//  - global atomics on the 64-bit counts, beyond kMaxPasses passes.
// Equal slots within a warp are aggregated first (__match_any_sync: the lowest lane of each group
// adds the group's size), so that samples all in one bin cost one atomic per warp step rather than
// 32 serialised ones. Samples are read with 16-byte loads, whole tiles shared out evenly among
// thread blocks (as the reduction does, device_reduce.cuh); the scalar head, the tail and the tiles
// that do not divide are spread over all warps of the grid in warp-sized steps (every lane takes
// part in each step, so the warp-wide match has all lanes). Arbitrary edges are searched in shared
// memory where they fit beside the counters, in global memory (through L1) otherwise.
//
// The launch shape comes from the device: the opt-in shared memory per thread block
// (cudaDevAttrMaxSharedMemoryPerBlockOptin, cudaFuncSetAttribute) and per SM, the SM count, and
// the occupancy of the chosen kernel at the chosen shared memory.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/device_reduce.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/detail/histogram_bins.hpp"
#include "tessera/kernels/histogram.hpp"

namespace tessera::kernels::cuda::detail {

using kernels::detail::BinType;
using kernels::detail::EdgeKey;
using kernels::detail::kBinNone;

// Tuning of the histograms, the one place it lives.
struct HistogramTuning {
  static constexpr int kBlockThreads = 512;
  // 16-byte loads per thread and loop trip: 64 bytes in flight per thread, 32 KiB per thread block,
  // enough for HBM where only one thread block fits an SM (65536 bins).
  static constexpr int kLoadsInFlight = 4;
  // Warp-aggregated atomics (__match_any_sync) for every sample.
  static constexpr bool kAggregate = true;
  // Thread blocks per resident slot: every extra block adds one flush of all its counters.
  static constexpr int kWaves = 1;
  // 32-bit counters while one copy of them fits at this many thread blocks per SM.
  static constexpr int kMinBlocksPerSmFor32Bit = 2;
  // Bin-range passes (each reads the samples again) before global atomics are cheaper.
  static constexpr int kMaxPasses = 8;
  // __launch_bounds__'s minimum resident thread blocks per SM (caps the registers).
  static constexpr int kMinBlocksPerSm = 1;
};

// Samples one thread block may count between flushes: every 32-bit counter, and the sum of a slot
// over the copies, stays below 2^32.
inline constexpr index_t kMaxBlockSamples = index_t(1) << 31;

// How the counters of one launch are laid out.
struct HistogramLayout {
  int bins;        // all bins
  int pass_bins;   // bins counted per pass
  int passes;
  int copies;      // sub-histograms per thread block
  int copy_words;  // 32-bit words per sub-histogram (a multiple of 4)
  int key_bytes;   // edge keys at the start of shared memory (0: none, or kept in global memory)
};

// ---- binnings on the device --------------------------------------------------------------------------

// Each has prepare(shared): called by every thread at the start (keys to shared memory; the
// kernel's first barrier publishes them), and operator()(sample) -> bin.
template <class T>
struct DeviceEvenBinning {
  kernels::detail::EvenBinning<T> bins;
  __device__ __forceinline__ void prepare(unsigned char*) {}
  __device__ __forceinline__ int operator()(T x) const { return bins(x); }
};

template <class T>
struct DeviceBincountBinning {
  kernels::detail::BincountBinning<T> bins;
  __device__ __forceinline__ void prepare(unsigned char*) {}
  __device__ __forceinline__ int operator()(T x) const { return bins(x); }
};

template <class T>
struct DeviceEdgesBinning {
  using Key = EdgeKey<T>;
  const double* edges;  // bins + 1, device memory
  int bins;
  bool keys_shared;
  const Key* keys = nullptr;  // in shared memory, where keys_shared
  Key first{};
  Key last{};

  __device__ __forceinline__ void prepare(unsigned char* shared) {
    first = kernels::detail::lower_edge_key<T>(__ldg(edges));
    last = kernels::detail::upper_edge_key<T>(__ldg(edges + bins));
    if (keys_shared) {
      Key* k = reinterpret_cast<Key*>(shared);
      for (int i = static_cast<int>(threadIdx.x); i < bins; i += static_cast<int>(blockDim.x))
        k[i] = kernels::detail::lower_edge_key<T>(__ldg(edges + i));
      keys = k;
    }
  }
  __device__ __forceinline__ int operator()(T x) const {
    if (keys_shared) {
      const Key* k = keys;
      return kernels::detail::edges_bin(x, [k](int i) { return k[i]; }, bins, first, last);
    }
    const double* e = edges;
    return kernels::detail::edges_bin(x, [e](int i) { return kernels::detail::lower_edge_key<T>(__ldg(e + i)); },
                                      bins, first, last);
  }
};

// ---- counting (the agent) ------------------------------------------------------------------------------

// One warp's counting in one pass. CounterBits: 32 or 16 (shared memory), or 0 (global atomics).
template <class Tuning, int CounterBits>
struct HistogramCounter {
  unsigned int* copy;            // this warp's sub-histogram
  unsigned long long* counts;    // global: histogram_slots(bins)
  int bins;
  int base;                      // first bin of this pass
  int cap;                       // bins of this pass; slots cap .. cap + 2: below, above, NaN; cap + 3: none
  bool first_pass;
  unsigned lanes_below;

  __device__ __forceinline__ int slot_of(int bin) const {
    if (bin >= 0) {
      const unsigned relative = static_cast<unsigned>(bin - base);
      return relative < static_cast<unsigned>(cap) ? static_cast<int>(relative) : cap + 3;
    }
    return first_pass ? cap - 1 - bin : cap + 3;  // -1 -> cap, ..., -4 (kBinNone) -> cap + 3
  }

  // The global index of a slot; -1 for the none slot, and for the tail slots after the first pass
  // (where a carry from the last bin's 16-bit counter may reach them: neither it nor its correction
  // is counted then).
  __device__ __forceinline__ int global_of(int slot) const {
    return slot < cap ? base + slot : (first_pass && slot < cap + 3) ? bins + (slot - cap) : -1;
  }

  __device__ __forceinline__ void add_global(int slot, long long value) const {
    const int g = global_of(slot);
    if (g >= 0) atomicAdd(counts + g, static_cast<unsigned long long>(value));
  }

  __device__ __forceinline__ void add(int slot, unsigned inc) const {
    if constexpr (CounterBits == 32) {
      atomicAdd(copy + slot, inc);
    } else if constexpr (CounterBits == 16) {
      const unsigned shift = (slot & 1) * 16u;
      const unsigned delta = inc << shift;
      const unsigned old = atomicAdd(copy + (slot >> 1), delta);
      const bool low_wrap = shift == 0 && (old & 0xFFFFu) + inc > 0xFFFFu;
      const bool word_wrap = old > 0xFFFFFFFFu - delta;
      if (low_wrap | word_wrap) {
        const int low = slot & ~1;
        if (low_wrap) {
          add_global(low, 65536);
          add_global(low + 1, -1);
        }
        if (word_wrap) add_global(low + 1, 65536);
      }
    } else {
      add_global(slot, inc);
    }
  }

  // Every lane of the warp calls this with its sample's bin (kBinNone for none).
  __device__ __forceinline__ void count(int bin) const {
    const int slot = slot_of(bin);
    unsigned inc = 1;
    bool leader = true;
    if constexpr (Tuning::kAggregate) {
      const unsigned peers = __match_any_sync(kFullMask, slot);
      leader = (peers & lanes_below) == 0;
      inc = static_cast<unsigned>(__popc(peers));
    }
    if (leader && slot != cap + 3) add(slot, inc);
  }
};

template <class Tuning, int CounterBits, class T, class Binning>
__global__ void __launch_bounds__(Tuning::kBlockThreads, Tuning::kMinBlocksPerSm)
    histogram_kernel(const T* __restrict__ in, index_t n, Binning binning, HistogramLayout layout,
                     unsigned long long* __restrict__ counts, bool vector_ok) {
  extern __shared__ __align__(16) unsigned char shared[];
  constexpr int kThreads = Tuning::kBlockThreads;
  constexpr int kWarps = kThreads / kWarpThreads;
  using Vec = Vector<T>;
  constexpr int kItems = Vec::kItems;

  binning.prepare(shared);
  unsigned int* words = reinterpret_cast<unsigned int*>(shared + layout.key_bytes);
  const int warp = static_cast<int>(threadIdx.x) / kWarpThreads;
  const int lane = lane_id();

  // Whole tiles of the 16-byte-aligned body, shared out in runs of consecutive tiles (as the reduce).
  const index_t head = unaligned_head(in, n);
  const T* body = in + head;
  const index_t vector_count = (n - head) / kItems;
  constexpr index_t kTileVectors = static_cast<index_t>(kThreads) * Tuning::kLoadsInFlight;
  const index_t tiles = vector_count / kTileVectors;
  const index_t block = blockIdx.x;
  const index_t per_block = tiles / gridDim.x;
  const index_t extra = tiles % gridDim.x;
  const index_t first_tile = block * per_block + (block < extra ? block : extra);
  const index_t block_tiles = per_block + (block < extra ? 1 : 0);
  // The rest: the head, then everything after the whole tiles; in warp-sized steps over the grid.
  const index_t rest_start = head + tiles * kTileVectors * kItems;
  const index_t rest = head + (n - rest_start);
  const index_t grid_warp = block * kWarps + warp;
  const index_t grid_warps = static_cast<index_t>(gridDim.x) * kWarps;

  HistogramCounter<Tuning, CounterBits> counter;
  counter.copy = words + (warp % layout.copies) * layout.copy_words;
  counter.counts = counts;
  counter.bins = layout.bins;
  counter.lanes_below = (1u << lane) - 1u;

  for (int pass = 0; pass < layout.passes; ++pass) {
    counter.base = pass * layout.pass_bins;
    counter.cap = min(layout.pass_bins, layout.bins - counter.base);
    counter.first_pass = pass == 0;
    if constexpr (CounterBits != 0) {
      uint4* zero = reinterpret_cast<uint4*>(words);
      const int zero_vectors = layout.copies * layout.copy_words / 4;
      for (int i = static_cast<int>(threadIdx.x); i < zero_vectors; i += kThreads) zero[i] = make_uint4(0, 0, 0, 0);
    }
    __syncthreads();  // counters zeroed (and, in the first pass, the binning's keys in place)

    const T* tile = body + (first_tile * kTileVectors + threadIdx.x) * kItems;
    for (index_t t = 0; t < block_tiles; ++t, tile += kTileVectors * kItems) {
      Vec loaded[Tuning::kLoadsInFlight];
#pragma unroll
      for (int u = 0; u < Tuning::kLoadsInFlight; ++u) loaded[u] = load_items_readonly(tile + u * kThreads * kItems, vector_ok);
#pragma unroll
      for (int u = 0; u < Tuning::kLoadsInFlight; ++u) {
#pragma unroll
        for (int i = 0; i < kItems; ++i) counter.count(binning(loaded[u].item[i]));
      }
    }
    for (index_t step = grid_warp * kWarpThreads; step < rest; step += grid_warps * kWarpThreads) {
      const index_t r = step + lane;
      int bin = kBinNone;
      if (r < rest) bin = binning(in[r < head ? r : rest_start + (r - head)]);
      counter.count(bin);
    }
    __syncthreads();  // every count of the pass is in

    if constexpr (CounterBits != 0) {
      const int slots = counter.cap + (counter.first_pass ? 3 : 0);
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

// Shared memory facts of the current device, read once.
struct SharedMemoryInfo {
  int per_block_optin = 0;   // what one thread block may opt into
  int per_sm = 0;            // what an SM has for all its thread blocks
  int reserved_per_block = 0;
  int max_threads_per_sm = 0;
};

inline const SharedMemoryInfo& shared_memory_info() {
  constexpr int kMaxDevices = 64;
  static std::array<SharedMemoryInfo, kMaxDevices> cache{};
  static std::array<std::once_flag, kMaxDevices> once;
  const DeviceInfo& device = current_device_info();
  std::call_once(once[device.ordinal], [&device] {
    SharedMemoryInfo& info = cache[device.ordinal];
    info.per_block_optin = device.max_smem_optin;
    TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&info.per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device.ordinal));
    TESSERA_CUDA_CHECK(
        cudaDeviceGetAttribute(&info.reserved_per_block, cudaDevAttrReservedSharedMemoryPerBlock, device.ordinal));
    TESSERA_CUDA_CHECK(
        cudaDeviceGetAttribute(&info.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device.ordinal));
  });
  return cache[device.ordinal];
}

struct HistogramPlan {
  int counter_bits = 32;  // 32, 16, or 0 (global atomics)
  HistogramLayout layout{};
  std::size_t shared_bytes = 0;
};

inline int round_up4(long long words) { return static_cast<int>((words + 3) / 4 * 4); }

// The counters for `bins` bins: 32-bit copies at the highest occupancy that holds one (down to
// kMinBlocksPerSmFor32Bit thread blocks per SM), as many copies as that budget holds (up to one per
// warp); else 16-bit likewise (down to one thread block per SM); else 16-bit bin-range passes; else
// global atomics. key_bytes: edge keys wanted in shared memory (0 for none); they are kept only
// where the counters still fit in one pass beside them. max_blocks: the thread blocks per SM the
// kernel's registers and threads allow.
template <class Tuning>
HistogramPlan plan_histogram(int bins, std::size_t key_bytes, int max_blocks) {
  const SharedMemoryInfo& smem = shared_memory_info();
  constexpr int kWarps = Tuning::kBlockThreads / kWarpThreads;
  auto budget = [&](int blocks_per_sm, long long keys) {
    return std::min<long long>(smem.per_block_optin, smem.per_sm / blocks_per_sm - smem.reserved_per_block) - keys;
  };
  auto try_counters = [&](int bits, int min_blocks, long long keys, HistogramPlan& plan) {
    const long long slots = static_cast<long long>(bins) + 4;
    const int copy_words = round_up4(bits == 32 ? slots : (slots + 1) / 2);
    for (int blocks = max_blocks; blocks >= min_blocks; --blocks) {
      const long long copies = std::min<long long>(kWarps, budget(blocks, keys) / (4LL * copy_words));
      if (copies >= 1) {
        plan.counter_bits = bits;
        plan.layout = {bins, bins, 1, static_cast<int>(copies), copy_words, static_cast<int>(keys)};
        plan.shared_bytes = static_cast<std::size_t>(keys) + static_cast<std::size_t>(copies) * copy_words * 4;
        return true;
      }
    }
    return false;
  };
  HistogramPlan plan;
  const long long keys = static_cast<long long>((key_bytes + 15) / 16 * 16);
  if (keys > 0 && keys < smem.per_block_optin) {
    if (try_counters(32, Tuning::kMinBlocksPerSmFor32Bit, keys, plan) || try_counters(16, 1, keys, plan)) return plan;
  }
  if (try_counters(32, Tuning::kMinBlocksPerSmFor32Bit, 0, plan) || try_counters(16, 1, 0, plan)) return plan;
  // Passes of 16-bit counters at one thread block per SM.
  const long long words = budget(1, 0) / 4 / 4 * 4;
  const long long pass_bins = words * 2 - 4;
  const long long passes = (bins + pass_bins - 1) / pass_bins;
  if (pass_bins >= 1 && passes <= Tuning::kMaxPasses) {
    plan.counter_bits = 16;
    plan.layout = {bins, static_cast<int>(pass_bins), static_cast<int>(passes), 1, static_cast<int>(words), 0};
    plan.shared_bytes = static_cast<std::size_t>(words) * 4;
    return plan;
  }
  plan.counter_bits = 0;
  plan.layout = {bins, bins, 1, 1, 0, 0};
  plan.shared_bytes = 0;
  return plan;
}

// Resident thread blocks per SM of `Kernel` at `block_threads` threads with `shared_bytes` of
// dynamic shared memory, cached per (kernel, device, shared bytes): the occupancy calculator costs
// microseconds, a launch should not. The first call on a device opts the kernel into all the shared
// memory a thread block may have; each launch then asks for its share.
template <auto Kernel>
int histogram_blocks_per_sm(int block_threads, std::size_t shared_bytes) {
  constexpr int kMaxDevices = 64;
  struct Cache {
    bool opted_in = false;
    std::vector<std::pair<std::size_t, int>> blocks;  // (shared bytes, blocks per SM)
  };
  static std::array<Cache, kMaxDevices> cache{};
  static std::mutex mutex;
  const DeviceInfo& device = current_device_info();
  std::lock_guard<std::mutex> lock(mutex);
  Cache& c = cache[device.ordinal];
  if (!c.opted_in) {
    TESSERA_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, device.max_smem_optin));
    c.opted_in = true;
  }
  for (const auto& [bytes, blocks] : c.blocks)
    if (bytes == shared_bytes) return blocks;
  int blocks = 0;
  TESSERA_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, block_threads, shared_bytes));
  TESSERA_ASSERT(blocks > 0, "histogram: the kernel cannot be resident with the shared memory it was planned");
  c.blocks.emplace_back(shared_bytes, blocks);
  return blocks;
}

template <class Tuning, int CounterBits, class T, class Binning>
void launch_histogram(const T* in, index_t n, const Binning& binning, const HistogramPlan& plan,
                      unsigned long long* counts, cudaStream_t stream) {
  constexpr auto kernel = histogram_kernel<Tuning, CounterBits, T, Binning>;
  const DeviceInfo& device = current_device_info();
  const index_t wave =
      static_cast<index_t>(device.sm_count) * histogram_blocks_per_sm<kernel>(Tuning::kBlockThreads, plan.shared_bytes);
  const index_t tile_items = static_cast<index_t>(Tuning::kBlockThreads) * Tuning::kLoadsInFlight * Vector<T>::kItems;
  const index_t needed = std::max<index_t>(ceil_div<index_t>(n, kMaxBlockSamples), 1);
  const index_t grid = std::max(needed, std::clamp<index_t>(n / tile_items, 1, wave * Tuning::kWaves));
  TESSERA_ASSERT(grid <= 0x7fffffff, "histogram: more thread blocks than one grid can hold");
  kernel<<<static_cast<unsigned>(grid), Tuning::kBlockThreads, plan.shared_bytes, stream>>>(
      in, n, binning, plan.layout, counts, vector_aligned(in));
  TESSERA_CUDA_CHECK_LAUNCH();
}

// counts[0, histogram_slots(bins)) = the histogram of in[0, n) (device memory). key_bytes: the
// shared memory the binning's keys would take (0 for binnings without keys); the binning learns
// whether it got it through set_keys_shared.
template <class Tuning = HistogramTuning, class T, class Binning>
void device_histogram(const T* in, index_t n, Binning binning, int bins, std::size_t key_bytes, index_t* counts,
                      StreamHandle stream) {
  const cudaStream_t s = to_cuda(stream);
  auto* out = reinterpret_cast<unsigned long long*>(counts);
  TESSERA_CUDA_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(histogram_slots(bins)) * sizeof(index_t), s));
  if (n == 0) return;
  // The occupancy that registers and threads allow (the 32-bit kernel's, for all three).
  const int max_blocks = histogram_blocks_per_sm<histogram_kernel<Tuning, 32, T, Binning>>(Tuning::kBlockThreads, 0);
  const HistogramPlan plan = plan_histogram<Tuning>(bins, key_bytes, max_blocks);
  if constexpr (requires { binning.keys_shared; }) binning.keys_shared = plan.layout.key_bytes > 0;
  switch (plan.counter_bits) {
    case 32: launch_histogram<Tuning, 32>(in, n, binning, plan, out, s); break;
    case 16: launch_histogram<Tuning, 16>(in, n, binning, plan, out, s); break;
    default: launch_histogram<Tuning, 0>(in, n, binning, plan, out, s); break;
  }
}

// The range of in[0, n) into *range (device or pinned host memory): one reduction pass.
template <class T>
void device_sample_range(const T* in, index_t n, SampleRange<T>* range, StreamHandle stream) {
  device_reduce(in, n, kernels::detail::SampleRangeOf<T>{}, kernels::detail::CombineSampleRanges<T>{},
                kernels::detail::SampleRangeOf<T>::empty(), range, stream);
}

}  // namespace tessera::kernels::cuda::detail
