// The stencils' lane-level pieces (device_stencil.cuh describes the family): products and sums
// rounded on their own (__fmul_rn / __fadd_rn, which nvcc never contracts into a fused multiply-add,
// so that results match the cpu backend bit for bit) and the convolution's fused multiply-add
// (__fmaf_rn / __fma_rn, std::fma on the cpu backend), the change bits of the residual, and a lane's
// slice of a row: its load with the neighbours at the warp's edges, the neighbours from the lanes
// beside it (shuffles), the 5- and 9-point arithmetic on three rows of slices, and the store.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/vector_io.cuh"
#include "tessera/kernels/cuda/warp.cuh"
#include "tessera/kernels/stencil.hpp"

namespace tessera::kernels::cuda::detail {

// ---- rounding without contraction ----------------------------------------------------------------

template <class T>
__device__ __forceinline__ T mul_rn(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return __fmul_rn(a, b);
  else if constexpr (std::is_same_v<T, double>) return __dmul_rn(a, b);
  else return a * b;
}

template <class T>
__device__ __forceinline__ T add_rn(T a, T b) {
  if constexpr (std::is_same_v<T, float>) return __fadd_rn(a, b);
  else if constexpr (std::is_same_v<T, double>) return __dadd_rn(a, b);
  else return a + b;
}

// a * b + c rounded once (the convolution's taps; std::fma on the cpu backend).
template <class T>
__device__ __forceinline__ T fma_rn(T a, T b, T c) {
  if constexpr (std::is_same_v<T, float>) return __fmaf_rn(a, b, c);
  else return __fma_rn(a, b, c);
}

// |a - b| as the integer of its bits (see cpu/stencil.hpp): ordered as the values, a NaN above all.
template <class T>
using ChangeBits = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;

template <class T>
__device__ __forceinline__ ChangeBits<T> change_bits(T a, T b) {
  const T d = a - b;
  ChangeBits<T> bits;
  __builtin_memcpy(&bits, &d, sizeof bits);
  return bits & ~(ChangeBits<T>(1) << (8 * sizeof(T) - 1));
}

// ---- a lane's slice of a row ---------------------------------------------------------------------------

// One lane's kItems consecutive elements of a row, and on the lanes at the warp's edges the element
// beside them (lane 0: west of item[0]; lane 31: east of item[kItems - 1]).
template <class T, int kItems>
struct RowSlice {
  T item[kItems];
  T edge;
};

// The same with the neighbours in x resolved: west of item[0] and east of item[kItems - 1].
template <class T, int kItems>
struct RowNeighbourhood {
  T item[kItems];
  T west;
  T east;
};

// Where a lane's slice lies in a row, worked out once per tile (the same for every row): which of
// its elements may be read (columns -1 .. cols) and written (0 .. cols - 1), and where the element
// beside it lies that the warp's edge lanes read. Loads and stores then take a pointer to the
// slice's first element in the row (x0, relative to the region, is negative in the first slice when
// the region does not start on a 16-byte boundary).
template <int kItems>
struct LaneColumns {
  bool whole_load = false;   // every element readable: whole vectors
  bool whole_store = false;  // every element written: whole vectors
  bool edge_readable = false;
  int edge = 0;              // the element beside the slice, relative to its first: -1 or kItems
  unsigned readable = 0;     // bit k: element k readable
  unsigned written = 0;      // bit k: element k inside the region

  __device__ __forceinline__ LaneColumns(index_t x0, index_t cols, int lane) {
    whole_load = x0 >= -1 && x0 + kItems <= cols + 1;
    whole_store = x0 >= 0 && x0 + kItems <= cols;
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      if (x0 + k >= -1 && x0 + k <= cols) readable |= 1u << k;
      if (x0 + k >= 0 && x0 + k < cols) written |= 1u << k;
    }
    edge = lane == 0 ? -1 : kItems;
    edge_readable = (lane == 0 || lane == kWarpThreads - 1) && x0 + edge >= -1 && x0 + edge <= cols;
  }
};

// The lane's slice of a row, from a pointer to its first element.
template <class T, int kItems, bool kVector>
__device__ __forceinline__ RowSlice<T, kItems> load_slice(const T* slice, const LaneColumns<kItems>& lane) {
  RowSlice<T, kItems> s;
  if (kVector && lane.whole_load) {
    if constexpr (kVector) {
      constexpr int kV = Vector<T>::kItems;
#pragma unroll
      for (int v = 0; v < kItems / kV; ++v) {
        const Vector<T> loaded = load_vector_readonly(slice + v * kV);
#pragma unroll
        for (int k = 0; k < kV; ++k) s.item[v * kV + k] = loaded.item[k];
      }
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) s.item[k] = lane.readable >> k & 1u ? __ldg(slice + k) : T(0);
  }
  s.edge = lane.edge_readable ? __ldg(slice + lane.edge) : T(0);
  return s;
}

// Every lane of the warp calls this (shuffles).
template <class T, int kItems>
__device__ __forceinline__ RowNeighbourhood<T, kItems> resolve(const RowSlice<T, kItems>& s, int lane) {
  RowNeighbourhood<T, kItems> n;
#pragma unroll
  for (int k = 0; k < kItems; ++k) n.item[k] = s.item[k];
  const T from_west = shfl_up(s.item[kItems - 1], 1);
  const T from_east = shfl_down(s.item[0], 1);
  n.west = lane == 0 ? s.edge : from_west;
  n.east = lane == kWarpThreads - 1 ? s.edge : from_east;
  return n;
}

template <class T, int kItems>
__device__ __forceinline__ T west_of(const RowNeighbourhood<T, kItems>& r, int k) {
  return k == 0 ? r.west : r.item[k - 1];
}
template <class T, int kItems>
__device__ __forceinline__ T east_of(const RowNeighbourhood<T, kItems>& r, int k) {
  return k == kItems - 1 ? r.east : r.item[k + 1];
}

// One cell: each product and sum rounded on its own, in the order of the weights (the cpu
// backend's order); the corners for nine_point only. Every sweep computes its cells here.
template <class T, bool kNine>
__device__ __forceinline__ T stencil_point(const StencilWeights<T>& w, T centre, T north, T south, T west, T east,
                                           T north_west, T north_east, T south_west, T south_east) {
  T acc = mul_rn(w.centre, centre);
  acc = add_rn(acc, mul_rn(w.north, north));
  acc = add_rn(acc, mul_rn(w.south, south));
  acc = add_rn(acc, mul_rn(w.west, west));
  acc = add_rn(acc, mul_rn(w.east, east));
  if constexpr (kNine) {
    acc = add_rn(acc, mul_rn(w.north_west, north_west));
    acc = add_rn(acc, mul_rn(w.north_east, north_east));
    acc = add_rn(acc, mul_rn(w.south_west, south_west));
    acc = add_rn(acc, mul_rn(w.south_east, south_east));
  }
  return acc;
}

template <class T, int kItems, bool kNine>
__device__ __forceinline__ void apply_stencil(const RowNeighbourhood<T, kItems>& n, const RowNeighbourhood<T, kItems>& c,
                                              const RowNeighbourhood<T, kItems>& s, const StencilWeights<T>& w,
                                              T (&result)[kItems]) {
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    if constexpr (kNine)
      result[k] = stencil_point<T, true>(w, c.item[k], n.item[k], s.item[k], west_of(c, k), east_of(c, k), west_of(n, k),
                                         east_of(n, k), west_of(s, k), east_of(s, k));
    else
      result[k] = stencil_point<T, false>(w, c.item[k], n.item[k], s.item[k], west_of(c, k), east_of(c, k), T{}, T{}, T{}, T{});
  }
}

template <class T, int kItems, bool kVector>
__device__ __forceinline__ void store_slice(T* slice, const LaneColumns<kItems>& lane, const T (&result)[kItems]) {
  if (kVector && lane.whole_store) {
    store_chunk(slice, true, result);
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (lane.written >> k & 1u) slice[k] = result[k];
  }
}

}  // namespace tessera::kernels::cuda::detail
