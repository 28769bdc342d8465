// 16-byte vector access to arrays of 4- and 8-byte elements: one LDG.E.128 / STG.E.128 moves 4 or 2
// elements, which is what reaches full HBM bandwidth with few load instructions in flight.
#pragma once

#include <cstdint>

namespace tessera::kernels::cuda::detail {

constexpr int kVectorBytes = 16;

template <class T>
struct alignas(kVectorBytes) Vector {
  static constexpr int kItems = kVectorBytes / static_cast<int>(sizeof(T));
  T item[kItems];
};

// Elements before the first 16-byte boundary of `p` (at most n): the scalar head of a vector loop.
template <class T>
__host__ __device__ inline std::int64_t unaligned_head(const T* p, std::int64_t n) {
  const auto misalignment = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p) % kVectorBytes);
  const std::int64_t head = misalignment == 0 ? 0 : (kVectorBytes - misalignment) / static_cast<std::int64_t>(sizeof(T));
  return head < n ? head : n;
}

template <class T>
__device__ __forceinline__ Vector<T> load_vector(const T* p) {
  return *reinterpret_cast<const Vector<T>*>(p);
}

// Read-only, non-coherent path for inputs that no thread of the kernel writes.
template <class T>
__device__ __forceinline__ Vector<T> load_vector_readonly(const T* p) {
  Vector<T> v;
  if constexpr (sizeof(T) == 4) {
    const int4 raw = __ldg(reinterpret_cast<const int4*>(p));
    static_assert(sizeof(raw) == sizeof(v));
    __builtin_memcpy(&v, &raw, sizeof v);
  } else {
    const longlong2 raw = __ldg(reinterpret_cast<const longlong2*>(p));
    static_assert(sizeof(raw) == sizeof(v));
    __builtin_memcpy(&v, &raw, sizeof v);
  }
  return v;
}

template <class T>
__device__ __forceinline__ void store_vector(T* p, const Vector<T>& v) {
  *reinterpret_cast<Vector<T>*>(p) = v;
}

}  // namespace tessera::kernels::cuda::detail
