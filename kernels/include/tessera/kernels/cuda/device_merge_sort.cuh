// The comparator sort on the device (agent and dispatch layers; contract in merge_sort.hpp): a
// stable merge sort, as cub::DeviceMergeSort and thrust::sort with a comparator do it.
//   block sort   each thread block sorts one tile: every thread sorts its kItemsPerThread
//                consecutive elements in registers (odd-even transposition, which never swaps equal
//                elements), then log2(threads) rounds merge runs in shared memory, each thread
//                finding its share of the merged run by a merge-path search (Green, McColl and
//                Bader, "GPU merge path", 2012) and merging it serially
//   merge passes runs of tile << p elements merge pairwise: one small kernel finds, for every tile
//                of the output, where its share starts in the two runs (merge path), then each
//                thread block loads its two pieces into shared memory and merges them as above.
// Stability: on equal keys the merge takes the left run's element first, and the left run holds the
// lower indices. Keys move with their values (when there are values). Ping-pong between the output
// and one temporary buffer of n elements (the queue's pool), the first pass chosen so that the last
// one writes the output.
#pragma once

#include <cuda_runtime.h>

#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/block.cuh"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/tuning/merge_sort.cuh"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera::kernels::cuda::detail {

// The value type of a sort of keys alone: nothing is loaded or stored.
struct NoSortValue {};

template <class K, class V>
inline constexpr std::size_t kSortElementBytes = sizeof(K) + (std::is_same_v<V, NoSortValue> ? 0 : sizeof(V));

// The number of elements of a[0, la) among the first `diag` elements of the stable merge of a and b
// (a first on ties).
template <class K, class Comp>
__device__ __forceinline__ index_t merge_path(const K* a, index_t la, const K* b, index_t lb, index_t diag, Comp& comp) {
  index_t lo = diag > lb ? diag - lb : 0;
  index_t hi = diag < la ? diag : la;
  while (lo < hi) {
    const index_t mid = (lo + hi) / 2;
    if (comp(b[diag - 1 - mid], a[mid])) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Merges `count` (<= Items) elements of the stable merge of a[ai, la) and b[bi, lb) into registers.
template <int Items, bool HasValues, class K, class V, class Comp>
__device__ __forceinline__ void serial_merge(const K* a_keys, const V* a_values, int ai, int la, const K* b_keys,
                                             const V* b_values, int bi, int lb, int count, Comp& comp,
                                             K (&keys)[Items], V (&values)[Items]) {
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    if (k < count) {
      const bool take_b = ai >= la || (bi < lb && comp(b_keys[bi], a_keys[ai]));
      if (take_b) {
        keys[k] = b_keys[bi];
        if constexpr (HasValues) values[k] = b_values[bi];
        ++bi;
      } else {
        keys[k] = a_keys[ai];
        if constexpr (HasValues) values[k] = a_values[ai];
        ++ai;
      }
    }
  }
}

template <class Tuning, class K, class V, class Comp>
__global__ void __launch_bounds__(Tuning::kBlockThreads)
    merge_sort_block_kernel(const K* keys_in, const V* values_in, K* keys_out, V* values_out, index_t n, Comp comp) {
  constexpr bool kHasValues = !std::is_same_v<V, NoSortValue>;
  constexpr int kThreads = Tuning::kBlockThreads;
  constexpr int kItems = Tuning::kItemsPerThread;
  constexpr int kTile = Tuning::kTileItems;
  __shared__ SharedArray<K, kTile> shared_keys;
  __shared__ SharedArray<V, kHasValues ? kTile : 1> shared_values;
  const int tid = static_cast<int>(threadIdx.x);
  const index_t tile_base = static_cast<index_t>(blockIdx.x) * kTile;
  const int valid = static_cast<int>(n - tile_base < kTile ? n - tile_base : kTile);

  for (int j = tid; j < valid; j += kThreads) {
    shared_keys[j] = keys_in[tile_base + j];
    if constexpr (kHasValues) shared_values[j] = values_in[tile_base + j];
  }
  __syncthreads();

  K keys[kItems];
  V values[kItems];
  const int mine = tid * kItems;
  int count = valid - mine;
  count = count < 0 ? 0 : (count > kItems ? kItems : count);
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (k < count) {
      keys[k] = shared_keys[mine + k];
      if constexpr (kHasValues) values[k] = shared_values[mine + k];
    }
  // Odd-even transposition: kItems rounds sort kItems elements; only a strictly smaller right
  // neighbour swaps, so equal keys keep their order.
#pragma unroll
  for (int round = 0; round < kItems; ++round)
#pragma unroll
    for (int j = round & 1; j + 1 < kItems; j += 2)
      if (j + 1 < count && comp(keys[j + 1], keys[j])) {
        const K key = keys[j];
        keys[j] = keys[j + 1];
        keys[j + 1] = key;
        if constexpr (kHasValues) {
          const V value = values[j];
          values[j] = values[j + 1];
          values[j + 1] = value;
        }
      }

  for (int run = kItems; run < kTile; run *= 2) {
    __syncthreads();  // the shared arrays' last readers are done
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (k < count) {
        shared_keys[mine + k] = keys[k];
        if constexpr (kHasValues) shared_values[mine + k] = values[k];
      }
    __syncthreads();
    // This thread's group merges runs [group, group + run) and [group + run, group + 2 run); its
    // outputs are positions [mine, mine + kItems) of the group's merged run, cut at `valid`.
    const int group = mine / (2 * run) * (2 * run);
    if (group < valid) {
      const int a_end = group + run < valid ? group + run : valid;
      const int b_end = group + 2 * run < valid ? group + 2 * run : valid;
      const int la = a_end - group, lb = b_end - a_end;
      const int diag = mine - group < la + lb ? mine - group : la + lb;
      const int diag_end = diag + kItems < la + lb ? diag + kItems : la + lb;
      const int split = static_cast<int>(merge_path(shared_keys.data() + group, la, shared_keys.data() + a_end, lb, diag, comp));
      serial_merge<kItems, kHasValues>(shared_keys.data() + group, shared_values.data() + group, split, la,
                                       shared_keys.data() + a_end, shared_values.data() + a_end, diag - split, lb,
                                       diag_end - diag, comp, keys, values);
      count = diag_end - diag;
    } else {
      count = 0;
    }
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (k < count) {
      shared_keys[mine + k] = keys[k];
      if constexpr (kHasValues) shared_values[mine + k] = values[k];
    }
  __syncthreads();
  for (int j = tid; j < valid; j += kThreads) {
    keys_out[tile_base + j] = shared_keys[j];
    if constexpr (kHasValues) values_out[tile_base + j] = shared_values[j];
  }
}

// The runs of one merge pass: [group, group + run) and [group + run, group + 2 run), cut at n.
struct MergeGroup {
  index_t a_begin, la, b_begin, lb;
  __device__ __forceinline__ MergeGroup(index_t position, index_t run, index_t n) {
    a_begin = position / (2 * run) * (2 * run);
    const index_t a_end = a_begin + run < n ? a_begin + run : n;
    const index_t b_end = a_begin + 2 * run < n ? a_begin + 2 * run : n;
    la = a_end > a_begin ? a_end - a_begin : 0;
    b_begin = a_end;
    lb = b_end > a_end ? b_end - a_end : 0;
  }
};

// splits[t] = where output tile t's share of its group starts in the group's first run.
template <class Tuning, class K, class Comp>
__global__ void merge_sort_partition_kernel(const K* keys, index_t n, index_t run, index_t tiles, index_t* splits,
                                            Comp comp) {
  const index_t t = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t > tiles) return;
  const index_t position = t * Tuning::kTileItems < n ? t * Tuning::kTileItems : n;
  const MergeGroup g(position, run, n);
  const index_t diag = position - g.a_begin;
  splits[t] = merge_path(keys + g.a_begin, g.la, keys + g.b_begin, g.lb, diag < g.la + g.lb ? diag : g.la + g.lb, comp);
}

template <class Tuning, class K, class V, class Comp>
__global__ void __launch_bounds__(Tuning::kBlockThreads)
    merge_sort_pass_kernel(const K* keys_in, const V* values_in, K* keys_out, V* values_out, index_t n, index_t run,
                           const index_t* splits, Comp comp) {
  constexpr bool kHasValues = !std::is_same_v<V, NoSortValue>;
  constexpr int kThreads = Tuning::kBlockThreads;
  constexpr int kItems = Tuning::kItemsPerThread;
  constexpr int kTile = Tuning::kTileItems;
  __shared__ SharedArray<K, kTile> shared_keys;
  __shared__ SharedArray<V, kHasValues ? kTile : 1> shared_values;
  const int tid = static_cast<int>(threadIdx.x);
  const index_t tile = blockIdx.x;
  const index_t out_begin = tile * kTile;
  const index_t out_end = out_begin + kTile < n ? out_begin + kTile : n;
  const MergeGroup g(out_begin, run, n);
  // A tile never straddles two groups (2 run is a multiple of the tile), so its share is one piece
  // of each run: [s0, s1) of the first, [d0 - s0, d1 - s1) of the second.
  const index_t d0 = out_begin - g.a_begin, d1 = out_end - g.a_begin;
  const index_t s0 = splits[tile];
  const index_t s1 = d1 == g.la + g.lb ? g.la : splits[tile + 1];
  const int ca = static_cast<int>(s1 - s0), cb = static_cast<int>((d1 - s1) - (d0 - s0));
  const K* a_keys = keys_in + g.a_begin + s0;
  const K* b_keys = keys_in + g.b_begin + (d0 - s0);
  for (int j = tid; j < ca + cb; j += kThreads) {
    if (j < ca) {
      shared_keys[j] = a_keys[j];
      if constexpr (kHasValues) shared_values[j] = values_in[g.a_begin + s0 + j];
    } else {
      shared_keys[j] = b_keys[j - ca];
      if constexpr (kHasValues) shared_values[j] = values_in[g.b_begin + (d0 - s0) + (j - ca)];
    }
  }
  __syncthreads();

  K keys[kItems];
  V values[kItems];
  const int total = ca + cb;
  const int diag = tid * kItems < total ? tid * kItems : total;
  const int diag_end = diag + kItems < total ? diag + kItems : total;
  const int split = static_cast<int>(merge_path(shared_keys.data(), ca, shared_keys.data() + ca, cb, diag, comp));
  serial_merge<kItems, kHasValues>(shared_keys.data(), shared_values.data(), split, ca, shared_keys.data() + ca,
                                   shared_values.data() + ca, diag - split, cb, diag_end - diag, comp, keys, values);
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kItems; ++k)
    if (diag + k < diag_end) {
      shared_keys[diag + k] = keys[k];
      if constexpr (kHasValues) shared_values[diag + k] = values[k];
    }
  __syncthreads();
  for (int j = tid; j < total; j += kThreads) {
    keys_out[out_begin + j] = shared_keys[j];
    if constexpr (kHasValues) values_out[out_begin + j] = shared_values[j];
  }
}

// Sorts keys_in[0, n) (with values_in, unless V is NoSortValue) into keys_out (values_out), stably
// by comp; in place allowed. In the queue's order (its device current: the caller's ScopedDevice).
template <class K, class V, class Comp>
void device_merge_sort(const Queue& queue, const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                       index_t n, Comp comp) {
  constexpr bool kHasValues = !std::is_same_v<V, NoSortValue>;
  using Tuning = MergeSortTuning<kSortElementBytes<K, V>>;
  const cudaStream_t stream = to_cuda(queue.stream);
  if (n == 0) return;
  const index_t tiles = ceil_div<index_t>(n, Tuning::kTileItems);
  TESSERA_ASSERT(tiles <= 0x7fffffff, "sort: more tiles than one grid can hold");
  int passes = 0;
  for (index_t run = Tuning::kTileItems; run < n; run *= 2) ++passes;
  ScratchBuffer temporary_keys(queue, passes > 0 ? static_cast<std::size_t>(n) * sizeof(K) : 0);
  ScratchBuffer temporary_values(queue, passes > 0 && kHasValues ? static_cast<std::size_t>(n) * sizeof(V) : 0);
  ScratchBuffer splits(queue, passes > 0 ? static_cast<std::size_t>(tiles + 1) * sizeof(index_t) : 0);
  // The buffers of the block sort's output and of each pass's, alternating so that the last is the output.
  K* key_buffers[2] = {keys_out, temporary_keys.as<K>()};
  V* value_buffers[2] = {values_out, temporary_values.as<V>()};
  int at = passes % 2;
  merge_sort_block_kernel<Tuning><<<static_cast<unsigned>(tiles), Tuning::kBlockThreads, 0, stream>>>(
      keys_in, values_in, key_buffers[at], value_buffers[at], n, comp);
  TESSERA_CUDA_CHECK_LAUNCH();
  constexpr int kPartitionThreads = 256;
  for (index_t run = Tuning::kTileItems; run < n; run *= 2) {
    const auto partition_blocks = static_cast<unsigned>(ceil_div<index_t>(tiles + 1, kPartitionThreads));
    merge_sort_partition_kernel<Tuning><<<partition_blocks, kPartitionThreads, 0, stream>>>(
        key_buffers[at], n, run, tiles, splits.as<index_t>(), comp);
    TESSERA_CUDA_CHECK_LAUNCH();
    merge_sort_pass_kernel<Tuning><<<static_cast<unsigned>(tiles), Tuning::kBlockThreads, 0, stream>>>(
        key_buffers[at], value_buffers[at], key_buffers[1 - at], value_buffers[1 - at], n, run, splits.as<index_t>(),
        comp);
    TESSERA_CUDA_CHECK_LAUNCH();
    at = 1 - at;
  }
}

}  // namespace tessera::kernels::cuda::detail
