// Device-wide reduction in one pass (agent + dispatch layers for reduce and count_if).
//
// A grid of exactly one wave (SM count x resident blocks per SM) streams the input with 16-byte
// loads, several in flight per thread; each thread block folds its share to one partial; the last
// thread block to finish (a counter bumped after a fence, the "threadFenceReduction" pattern) folds
// the partials and writes the result to device memory. One kernel, no host loop, no device-wide
// synchronisation; the order in which partials are combined is fixed (block order), so a result
// is reproducible run to run on the same device.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "block.cuh"
#include "device_info.cuh"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda_check.hpp"
#include "tessera/kernels/memory.hpp"
#include "vector_io.cuh"

namespace tessera::kernels::cuda::detail {

// Tuning of the reduction, the one place it lives: 256 threads, 4 independent 16-byte loads per
// thread and loop trip (64 bytes in flight per thread, ~128 KiB per SM at full occupancy: well
// past what Little's law asks of HBM3 at ~3 TB/s).
struct ReduceTuning {
  static constexpr int kBlockThreads = 256;
  static constexpr int kLoadsInFlight = 4;
};

struct Identity {
  template <class T>
  __device__ __forceinline__ T operator()(T x) const { return x; }
};

// In: element type read; Acc: accumulator type; Transform maps In -> Acc; Op folds Acc.
template <int BlockThreads, int LoadsInFlight, class In, class Acc, class Transform, class Op>
__global__ void __launch_bounds__(BlockThreads)
    reduce_single_pass_kernel(const In* __restrict__ in, index_t n, Transform transform, Op op, Acc identity,
                              Acc* __restrict__ block_partials, unsigned int* __restrict__ blocks_done,
                              Acc* __restrict__ out) {
  __shared__ Acc warp_partials[BlockThreads / kWarpThreads];
  __shared__ bool is_last_block;

  using Vec = Vector<In>;
  constexpr int kItems = Vec::kItems;
  const index_t thread_rank = static_cast<index_t>(blockIdx.x) * BlockThreads + threadIdx.x;
  const index_t thread_count = static_cast<index_t>(gridDim.x) * BlockThreads;

  // One accumulator per element of the vectors in flight: no dependency chain between the adds of
  // one loop trip (a single accumulator serialises 8-16 dependent adds per trip, which costs ~10%
  // of the bandwidth for floating-point sums whose adds cannot be reassociated by the compiler).
  Acc acc[LoadsInFlight][kItems];
#pragma unroll
  for (int u = 0; u < LoadsInFlight; ++u)
#pragma unroll
    for (int i = 0; i < kItems; ++i) acc[u][i] = identity;
  // Scalar head up to the first 16-byte boundary, then whole vectors, then the scalar tail.
  const index_t head = unaligned_head(in, n);
  if (thread_rank < head) acc[0][0] = op(acc[0][0], transform(in[thread_rank]));
  const In* body = in + head;
  const index_t vector_count = (n - head) / kItems;
  index_t v = thread_rank;
  for (; v + (LoadsInFlight - 1) * thread_count < vector_count; v += LoadsInFlight * thread_count) {
    Vec loaded[LoadsInFlight];
#pragma unroll
    for (int u = 0; u < LoadsInFlight; ++u) loaded[u] = load_vector_readonly(body + (v + u * thread_count) * kItems);
#pragma unroll
    for (int u = 0; u < LoadsInFlight; ++u)
#pragma unroll
      for (int i = 0; i < kItems; ++i) acc[u][i] = op(acc[u][i], transform(loaded[u].item[i]));
  }
  for (; v < vector_count; v += thread_count) {
    const Vec loaded = load_vector_readonly(body + v * kItems);
#pragma unroll
    for (int i = 0; i < kItems; ++i) acc[0][i] = op(acc[0][i], transform(loaded.item[i]));
  }
  const index_t tail_start = head + vector_count * kItems;
  if (tail_start + thread_rank < n) acc[0][0] = op(acc[0][0], transform(in[tail_start + thread_rank]));
  Acc thread_total = identity;
#pragma unroll
  for (int u = 0; u < LoadsInFlight; ++u)
#pragma unroll
    for (int i = 0; i < kItems; ++i) thread_total = op(thread_total, acc[u][i]);

  const Acc block_total = block_reduce<BlockThreads>(thread_total, op, identity, warp_partials);
  if (threadIdx.x == 0) {
    block_partials[blockIdx.x] = block_total;
    // Release: the partial must be visible device-wide before the counter says it is there.
    __threadfence();
    is_last_block = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last_block) return;
  // Acquire side of the pattern: every other block fenced before its increment.
  __threadfence();
  Acc total = identity;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += BlockThreads) total = op(total, __ldcg(block_partials + b));
  // Thread-strided folding above meets partials in a fixed order, so the result is deterministic.
  total = block_reduce<BlockThreads>(total, op, identity, warp_partials);
  if (threadIdx.x == 0) *out = total;
}

// Dispatch: the grid is one full wave of the device, or fewer blocks where the input is small.
template <class In, class Acc, class Transform, class Op>
void device_reduce(const In* in, index_t n, Transform transform, Op op, Acc identity, Acc* out, StreamHandle stream) {
  using Tuning = ReduceTuning;
  constexpr auto kernel =
      reduce_single_pass_kernel<Tuning::kBlockThreads, Tuning::kLoadsInFlight, In, Acc, Transform, Op>;
  const DeviceInfo& device = current_device_info();
  const index_t items_per_block_pass =
      static_cast<index_t>(Tuning::kBlockThreads) * Tuning::kLoadsInFlight * Vector<In>::kItems;
  const index_t wave = static_cast<index_t>(device.sm_count) * blocks_per_sm<kernel>(Tuning::kBlockThreads);
  const int grid = static_cast<int>(std::clamp<index_t>(ceil_div<index_t>(n, items_per_block_pass), 1, wave));

  // Scratch: the per-block partials, then the completion counter (zeroed per call, in stream order).
  const std::size_t partial_bytes = ceil_div<std::size_t>(sizeof(Acc) * grid, 16) * 16;
  Queue queue{Backend::cuda, device.ordinal, stream};
  ScratchBuffer scratch(queue, partial_bytes + sizeof(unsigned int));
  auto* partials = scratch.as<Acc>();
  auto* blocks_done = reinterpret_cast<unsigned int*>(static_cast<char*>(scratch.data()) + partial_bytes);
  TESSERA_CUDA_CHECK(cudaMemsetAsync(blocks_done, 0, sizeof(unsigned int), to_cuda(stream)));
  kernel<<<grid, Tuning::kBlockThreads, 0, to_cuda(stream)>>>(in, n, transform, op, identity, partials, blocks_done,
                                                                 out);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda::detail
