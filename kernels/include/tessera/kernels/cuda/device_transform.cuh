// Element-wise device passes (agent + dispatch): transform (one or two inputs), transform_index and
// for_each_index. Tiles of chunks of K elements, K chosen so that each input and the output move in
// whole 16-byte vectors (float -> double: one 16-byte load, two 16-byte stores per chunk), Unroll
// chunks per thread in flight. Where the arrays do not reach a 16-byte
// boundary at the same element (or an element type does not fill vectors), chunks are one element:
// still coalesced, only narrower. Scalar head and tail around the vector body.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/tuning/transform.cuh"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda::detail {

template <class... Ts>
inline constexpr bool kAllVectorizable = (kVectorizable<Ts> && ...);

template <class... Ts>
inline constexpr int kChunkItems = kAllVectorizable<Ts...> ? std::max({Vector<Ts>::kItems...}) : 1;

// The shape of a pass over n elements: [0, head) and [tail, n) element by element, the chunks of K
// in between. When the arrays disagree on where 16-byte boundaries fall, K-element chunks are still
// used but loaded element by element (vector_ok false).
struct ChunkShape {
  index_t head;
  index_t chunks;
  index_t tail;
  bool vector_ok;
};

template <int K>
inline ChunkShape chunk_shape(index_t n, index_t head, bool vector_ok) {
  if (!vector_ok) head = 0;
  head = std::min(head, n);
  const index_t chunks = (n - head) / K;
  return {head, chunks, head + chunks * K, vector_ok};
}

// The one loop every pass shares: one tile of BlockThreads x Unroll chunks per thread block (thread t
// takes chunks t, t + BlockThreads, ...: each load instruction of a warp is 512 contiguous bytes).
// ChunkOp has a nested type Loaded and two __device__ members:
//   Loaded load(index_t first, bool vector_ok) const          reads the inputs of K elements at first
//   void store(index_t first, bool vector_ok, const Loaded&)   computes them and writes them out
// ElementOp: __device__ void operator()(index_t i) const for one element of the head or the tail.
// A thread issues the loads of all its chunks before any store (the compiler cannot move a load
// above a store to memory that might alias it). Measured on an H100, 2^28 floats: load-compute-store
// per chunk in a grid-stride loop ran at 0.93-0.97x thrust::transform, loads first in the same loop
// at 0.87-0.88x; a tile per block is what cub::DeviceTransform does too.
template <int BlockThreads, int Unroll, int K, class ChunkOp, class ElementOp>
__global__ void __launch_bounds__(BlockThreads)
    elementwise_kernel(ChunkShape shape, index_t n, ChunkOp chunk_op, ElementOp element_op) {
  const index_t thread = static_cast<index_t>(blockIdx.x) * BlockThreads + threadIdx.x;
  if (thread < shape.head) element_op(thread);
  if (shape.tail + thread < n) element_op(shape.tail + thread);
  const index_t tile = static_cast<index_t>(blockIdx.x) * BlockThreads * Unroll + threadIdx.x;
  if (tile + (Unroll - 1) * BlockThreads < shape.chunks) {
    typename ChunkOp::Loaded loaded[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) loaded[u] = chunk_op.load(shape.head + (tile + u * BlockThreads) * K, shape.vector_ok);
#pragma unroll
    for (int u = 0; u < Unroll; ++u) chunk_op.store(shape.head + (tile + u * BlockThreads) * K, shape.vector_ok, loaded[u]);
  } else {
    for (index_t c = tile; c < shape.chunks; c += BlockThreads) {
      const index_t first = shape.head + c * K;
      chunk_op.store(first, shape.vector_ok, chunk_op.load(first, shape.vector_ok));
    }
  }
}

template <class Tuning = TransformTuning, int K, class ChunkOp, class ElementOp>
void launch_elementwise(const ChunkShape& shape, index_t n, ChunkOp chunk_op, ElementOp element_op,
                        StreamHandle stream) {
  if (n == 0) return;
  constexpr auto kernel = elementwise_kernel<Tuning::kBlockThreads, Tuning::kUnroll, K, ChunkOp, ElementOp>;
  // One tile per thread block, and at least one block (the head and the tail are under K elements).
  const index_t tiles = ceil_div<index_t>(shape.chunks, static_cast<index_t>(Tuning::kBlockThreads) * Tuning::kUnroll);
  TESSERA_ASSERT(tiles <= 0x7fffffff, "element-wise pass: more tiles than one grid can hold");
  const int grid = static_cast<int>(tiles > 0 ? tiles : 1);
  kernel<<<grid, Tuning::kBlockThreads, 0, to_cuda(stream)>>>(shape, n, chunk_op, element_op);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// ---- the passes -----------------------------------------------------------------------------------------

template <int K, class In, class Out, class F>
struct UnaryChunk {
  struct Loaded {
    In x[K];
  };
  const In* in;
  Out* out;
  F f;
  __device__ __forceinline__ Loaded load(index_t first, bool vector_ok) const {
    Loaded l;
    load_chunk<K>(in + first, vector_ok, l.x);
    return l;
  }
  __device__ __forceinline__ void store(index_t first, bool vector_ok, const Loaded& l) const {
    Out y[K];
#pragma unroll
    for (int k = 0; k < K; ++k) y[k] = f(l.x[k]);
    store_chunk<K>(out + first, vector_ok, y);
  }
};

template <class In, class Out, class F>
struct UnaryElement {
  const In* in;
  Out* out;
  F f;
  __device__ __forceinline__ void operator()(index_t i) const { out[i] = f(in[i]); }
};

template <class Tuning = TransformTuning, class In, class Out, class F>
void device_transform(const In* in, index_t n, Out* out, F f, StreamHandle stream) {
  constexpr int K = kChunkItems<In, Out>;
  const bool vector_ok = kAllVectorizable<In, Out> && vector_aligned(in) && vector_aligned(out) &&
                         unaligned_head(in, n) == unaligned_head(out, n);
  const ChunkShape shape = chunk_shape<K>(n, unaligned_head(in, n), vector_ok);
  launch_elementwise<Tuning, K>(shape, n, UnaryChunk<K, In, Out, F>{in, out, f}, UnaryElement<In, Out, F>{in, out, f},
                                stream);
}

template <int K, class A, class B, class Out, class F>
struct BinaryChunk {
  struct Loaded {
    A x[K];
    B y[K];
  };
  const A* a;
  const B* b;
  Out* out;
  F f;
  __device__ __forceinline__ Loaded load(index_t first, bool vector_ok) const {
    Loaded l;
    load_chunk<K>(a + first, vector_ok, l.x);
    load_chunk<K>(b + first, vector_ok, l.y);
    return l;
  }
  __device__ __forceinline__ void store(index_t first, bool vector_ok, const Loaded& l) const {
    Out z[K];
#pragma unroll
    for (int k = 0; k < K; ++k) z[k] = f(l.x[k], l.y[k]);
    store_chunk<K>(out + first, vector_ok, z);
  }
};

template <class A, class B, class Out, class F>
struct BinaryElement {
  const A* a;
  const B* b;
  Out* out;
  F f;
  __device__ __forceinline__ void operator()(index_t i) const { out[i] = f(a[i], b[i]); }
};

template <class A, class B, class Out, class F>
void device_transform(const A* a, const B* b, index_t n, Out* out, F f, StreamHandle stream) {
  constexpr int K = kChunkItems<A, B, Out>;
  const index_t head = unaligned_head(a, n);
  const bool vector_ok = kAllVectorizable<A, B, Out> && vector_aligned(a) && vector_aligned(b) &&
                         vector_aligned(out) && head == unaligned_head(b, n) && head == unaligned_head(out, n);
  const ChunkShape shape = chunk_shape<K>(n, head, vector_ok);
  launch_elementwise<TransformTuning, K>(shape, n, BinaryChunk<K, A, B, Out, F>{a, b, out, f},
                                         BinaryElement<A, B, Out, F>{a, b, out, f}, stream);
}

template <int K, class Out, class F>
struct IndexChunk {
  struct Loaded {};
  index_t first;
  Out* out;
  F f;
  __device__ __forceinline__ Loaded load(index_t, bool) const { return {}; }
  __device__ __forceinline__ void store(index_t i, bool vector_ok, const Loaded&) const {
    Out y[K];
#pragma unroll
    for (int k = 0; k < K; ++k) y[k] = f(first + i + k);
    store_chunk<K>(out + i, vector_ok, y);
  }
};

template <class Out, class F>
struct IndexElement {
  index_t first;
  Out* out;
  F f;
  __device__ __forceinline__ void operator()(index_t i) const { out[i] = f(first + i); }
};

template <class Out, class F>
void device_transform_index(index_t first, index_t n, Out* out, F f, StreamHandle stream) {
  constexpr int K = kChunkItems<Out>;
  const bool vector_ok = kVectorizable<Out> && vector_aligned(out);
  const ChunkShape shape = chunk_shape<K>(n, unaligned_head(out, n), vector_ok);
  launch_elementwise<TransformTuning, K>(shape, n, IndexChunk<K, Out, F>{first, out, f},
                                         IndexElement<Out, F>{first, out, f}, stream);
}

template <class F>
struct ForEachChunk {
  struct Loaded {};
  index_t first;
  F f;
  __device__ __forceinline__ Loaded load(index_t, bool) const { return {}; }
  __device__ __forceinline__ void store(index_t i, bool, const Loaded&) const { f(first + i); }
};

template <class F>
struct ForEachElement {
  index_t first;
  F f;
  __device__ __forceinline__ void operator()(index_t i) const { f(first + i); }
};

template <class F>
void device_for_each_index(index_t first, index_t n, F f, StreamHandle stream) {
  const ChunkShape shape = chunk_shape<1>(n, 0, false);
  launch_elementwise<TransformTuning, 1>(shape, n, ForEachChunk<F>{first, f}, ForEachElement<F>{first, f}, stream);
}

}  // namespace tessera::kernels::cuda::detail
