// 16-byte vector access to arrays of any trivially copyable element: one LDG.E.128 / STG.E.128 moves
// 16 / sizeof(T) elements where sizeof(T) divides 16 (1-, 2-, 4-, 8- and 16-byte elements), which is
// what reaches full HBM bandwidth with few load instructions in flight. Other sizes (a 12- or
// 24-byte struct) move one element per "vector"; the kernels' loops are the same.
#pragma once

#include <cstdint>
#include <type_traits>

namespace tessera::kernels::cuda::detail {

constexpr int kVectorBytes = 16;

// True when whole elements fill a 16-byte vector.
template <class T>
inline constexpr bool kVectorizable = sizeof(T) <= kVectorBytes && kVectorBytes % sizeof(T) == 0;

template <class T, bool = kVectorizable<T>>
struct alignas(kVectorBytes) VectorStorage {
  static constexpr int kItems = kVectorBytes / static_cast<int>(sizeof(T));
  T item[kItems];
};
template <class T>
struct VectorStorage<T, false> {
  static constexpr int kItems = 1;
  T item[1];
};

template <class T>
using Vector = VectorStorage<T>;

// True when some element of the array at `p` starts on a 16-byte boundary (always for elements whose
// alignment is their size, as built-in types; not for, say, an 8-byte struct of two floats at an
// address 4 past a boundary). Where false, a "vector" is read element by element (load_items).
template <class T>
inline constexpr bool kMayMisalign = kVectorizable<T> && alignof(T) < sizeof(T);

template <class T>
__host__ __device__ inline bool vector_aligned(const T* p) {
  if constexpr (!kVectorizable<T>) {
    return true;
  } else {
    return reinterpret_cast<std::uintptr_t>(p) % kVectorBytes % sizeof(T) == 0;
  }
}

// Elements before the first 16-byte boundary of `p` (at most n): the scalar head of a vector loop.
// 0 when T does not fill vectors (every "vector" is one element) or no element is on a boundary.
template <class T>
__host__ __device__ inline std::int64_t unaligned_head(const T* p, std::int64_t n) {
  if constexpr (!kVectorizable<T>) {
    return 0;
  } else {
    if constexpr (kMayMisalign<T>) {
      if (!vector_aligned(p)) return 0;
    }
    const auto misalignment = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p) % kVectorBytes);
    const std::int64_t head = misalignment == 0 ? 0 : (kVectorBytes - misalignment) / static_cast<std::int64_t>(sizeof(T));
    return head < n ? head : n;
  }
}

template <class T>
__device__ __forceinline__ Vector<T> load_vector(const T* p) {
  return *reinterpret_cast<const Vector<T>*>(p);
}

// Read-only, non-coherent path for inputs that no thread of the kernel writes.
template <class T>
__device__ __forceinline__ Vector<T> load_vector_readonly(const T* p) {
  Vector<T> v;
  if constexpr (kVectorizable<T> && sizeof(T) >= 8) {
    // 8-byte halves: each element's two words stay a register pair (an int4 load of doubles cost
    // min/max reductions 11 more registers and a resident block per SM).
    const longlong2 raw = __ldg(reinterpret_cast<const longlong2*>(p));
    static_assert(sizeof(raw) == sizeof(v));
    __builtin_memcpy(&v, &raw, sizeof v);
  } else if constexpr (kVectorizable<T>) {
    const int4 raw = __ldg(reinterpret_cast<const int4*>(p));
    static_assert(sizeof(raw) == sizeof(v));
    __builtin_memcpy(&v, &raw, sizeof v);
  } else if constexpr (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
    // Word by word through the read-only path (__ldg takes built-in types only).
    constexpr int kWords = static_cast<int>(sizeof(T) / 4);
    unsigned int words[kWords];
#pragma unroll
    for (int w = 0; w < kWords; ++w) words[w] = __ldg(reinterpret_cast<const unsigned int*>(p) + w);
    __builtin_memcpy(&v, words, sizeof v);
  } else {
    v.item[0] = *p;
  }
  return v;
}

// One vector's elements: a 16-byte load where vector_ok (which callers take from vector_aligned and
// which is constant-true for elements aligned to their size), element loads otherwise.
template <class T>
__device__ __forceinline__ Vector<T> load_items_readonly(const T* p, bool vector_ok) {
  if constexpr (kMayMisalign<T>) {
    if (!vector_ok) {
      Vector<T> v;
#pragma unroll
      for (int k = 0; k < Vector<T>::kItems; ++k) v.item[k] = p[k];
      return v;
    }
  }
  (void)vector_ok;
  return load_vector_readonly(p);
}

template <class T>
__device__ __forceinline__ void store_vector(T* p, const Vector<T>& v) {
  *reinterpret_cast<Vector<T>*>(p) = v;
}

// Loads K consecutive elements at p: whole 16-byte vectors where vector_ok, elements otherwise.
template <int K, class T>
__device__ __forceinline__ void load_chunk(const T* p, bool vector_ok, T (&items)[K]) {
  if constexpr (kVectorizable<T> && K % Vector<T>::kItems == 0) {
    if (vector_ok) {
      constexpr int kV = Vector<T>::kItems;
#pragma unroll
      for (int v = 0; v < K / kV; ++v) {
        const Vector<T> loaded = load_vector_readonly(p + v * kV);
#pragma unroll
        for (int k = 0; k < kV; ++k) items[v * kV + k] = loaded.item[k];
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) items[k] = p[k];
}

// Stores K consecutive elements at p: whole 16-byte vectors where vector_ok, elements otherwise.
template <int K, class T>
__device__ __forceinline__ void store_chunk(T* p, bool vector_ok, const T (&items)[K]) {
  if constexpr (kVectorizable<T> && K % Vector<T>::kItems == 0) {
    if (vector_ok) {
      constexpr int kV = Vector<T>::kItems;
#pragma unroll
      for (int v = 0; v < K / kV; ++v) {
        Vector<T> result;
#pragma unroll
        for (int k = 0; k < kV; ++k) result.item[k] = items[v * kV + k];
        store_vector(p + v * kV, result);
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) p[k] = items[k];
}

// A load through L2 only (ld.cg): for values other thread blocks of the same kernel wrote before a
// fence, which this SM's L1 must not serve from an older line.
template <class T>
__device__ __forceinline__ T load_cg(const T* p) {
  if constexpr (std::is_arithmetic_v<T>) {
    return __ldcg(p);
  } else if constexpr (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
    constexpr int kWords = static_cast<int>(sizeof(T) / 4);
    unsigned int words[kWords];
#pragma unroll
    for (int w = 0; w < kWords; ++w) words[w] = __ldcg(reinterpret_cast<const unsigned int*>(p) + w);
    T value;
    __builtin_memcpy(&value, words, sizeof value);
    return value;
  } else {
    const volatile unsigned char* bytes = reinterpret_cast<const volatile unsigned char*>(p);
    unsigned char copy[sizeof(T)];
#pragma unroll
    for (int b = 0; b < static_cast<int>(sizeof(T)); ++b) copy[b] = bytes[b];
    T value;
    __builtin_memcpy(&value, copy, sizeof value);
    return value;
  }
}

}  // namespace tessera::kernels::cuda::detail
