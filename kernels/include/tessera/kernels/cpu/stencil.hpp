// CPU stencils (the contract is in tessera/kernels/stencil.hpp): rows of the region split among the
// host threads, the inner loop along a row left to the compiler's vectoriser. Every term is added in
// the order the contract writes: the translation unit that instantiates the sweeps must not contract
// a product and a sum into a fused multiply-add (kernels/cpu/stencil.cpp is compiled with
// -ffp-contract=off), or results would differ from the cuda backend's in the last bit; the
// convolution's fused multiply-adds are std::fma, written out.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "tessera/kernels/cpu/parallel.hpp"
#include "tessera/kernels/stencil.hpp"

namespace tessera::kernels::cpu {

namespace detail {

// |a - b| as the unsigned integer of its bits: for non-negative values (and a positive NaN, which
// compares above infinity) the integers order as the values do, so the largest is found by an
// exact integer maximum, the same one the cuda backend takes with atomicMax.
template <class T>
using ChangeBits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

template <class T>
ChangeBits<T> change_bits(T a, T b) {
  const T d = a - b;
  ChangeBits<T> bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits & ~(ChangeBits<T>(1) << (8 * sizeof(T) - 1));
}

template <class T>
T from_change_bits(ChangeBits<T> bits) {
  T value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace detail

template <class T>
void stencil_2d_rows(const T* in, index_t in_ld, T* out, index_t out_ld, index_t rows, index_t cols,
                     const StencilWeights<T>& w, T* max_change) {
  if (rows <= 0 || cols <= 0) return;
  const bool nine = w.shape == StencilShape::nine_point;
  const int threads = threads_for(rows * cols);
  std::vector<detail::ChangeBits<T>> largest(static_cast<std::size_t>(threads), 0);
  parallel_for_chunks(rows, threads, [&](int chunk, Chunk part) {
    detail::ChangeBits<T> mine = 0;
    for (index_t r = part.begin; r < part.end; ++r) {
      const T* n = in + (r - 1) * in_ld;
      const T* c = in + r * in_ld;
      const T* s = in + (r + 1) * in_ld;
      T* o = out + r * out_ld;
      if (nine) {
        for (index_t j = 0; j < cols; ++j) {
          T acc = w.centre * c[j];
          acc = acc + w.north * n[j];
          acc = acc + w.south * s[j];
          acc = acc + w.west * c[j - 1];
          acc = acc + w.east * c[j + 1];
          acc = acc + w.north_west * n[j - 1];
          acc = acc + w.north_east * n[j + 1];
          acc = acc + w.south_west * s[j - 1];
          acc = acc + w.south_east * s[j + 1];
          o[j] = acc;
        }
      } else {
        for (index_t j = 0; j < cols; ++j) {
          T acc = w.centre * c[j];
          acc = acc + w.north * n[j];
          acc = acc + w.south * s[j];
          acc = acc + w.west * c[j - 1];
          acc = acc + w.east * c[j + 1];
          o[j] = acc;
        }
      }
      if (max_change)
        for (index_t j = 0; j < cols; ++j) mine = std::max(mine, detail::change_bits(o[j], c[j]));
    }
    largest[static_cast<std::size_t>(chunk)] = mine;
  });
  if (max_change) {
    detail::ChangeBits<T> all = 0;
    std::memcpy(&all, max_change, sizeof all);
    for (const auto bits : largest) all = std::max(all, bits);
    *max_change = detail::from_change_bits<T>(all);
  }
}

// Outputs [begin, end) of the convolution: each takes its taps in order, k = 0 .. 2r, one fused
// multiply-add each (std::fma) from -0, as the cuda backend does; 64 bytes of outputs at a time.
// The portable loop: on x86-64 processors with AVX and FMA, kernels/cpu/stencil.cpp runs the same
// multiply-adds in AVX intrinsics instead (4 vectors of outputs at a time), which compilers do not
// reliably make of this loop. Both, on the 2-core development VM (AMD EPYC, g++ 12 -O3, one thread,
// 2^22 floats, r = 8 / 16 / 64, 2026-12-01): this loop 16.2 / 32.3 / 126.9 ms, the intrinsics
// 2.4 / 4.9 / 17.8 ms.
template <class T>
void convolve_1d_outputs(const T* in, index_t begin, index_t end, const T* w, index_t taps, T* out) {
  constexpr index_t kB = 64 / sizeof(T);
  const index_t radius = (taps - 1) / 2;
  index_t i = begin;
  for (; i + kB <= end; i += kB) {
    const T* x = in + i + radius;  // x[j - k]: the input weights[k] multiplies for output i + j
    T acc[kB];
    for (index_t j = 0; j < kB; ++j) acc[j] = T(-0.0);
    for (index_t k = 0; k < taps; ++k) {
      const T wk = w[k];
      for (index_t j = 0; j < kB; ++j) acc[j] = std::fma(wk, x[j - k], acc[j]);
    }
    for (index_t j = 0; j < kB; ++j) out[i + j] = acc[j];
  }
  for (; i < end; ++i) {
    const T* x = in + i + radius;
    T acc = T(-0.0);
    for (index_t k = 0; k < taps; ++k) acc = std::fma(w[k], x[-k], acc);
    out[i] = acc;
  }
}

// f(byte offset of the row from the base, row bytes) for every row of the rectangles, in packed order.
template <class F>
void for_each_rectangle_row(std::span<const Rectangle> rectangles, std::size_t element_bytes, F&& f) {
  const auto e = static_cast<index_t>(element_bytes);
  for (const Rectangle& rect : rectangles) {
    const std::size_t row_bytes = static_cast<std::size_t>(rect.cols) * element_bytes;
    for (index_t p = 0; p < rect.planes; ++p)
      for (index_t r = 0; r < rect.rows; ++r) f((rect.offset + p * rect.plane_stride + r * rect.ld) * e, row_bytes);
  }
}

inline void copy_rectangles_out(const void* base, std::span<const Rectangle> rectangles, void* packed,
                                std::size_t element_bytes) {
  auto* dst = static_cast<unsigned char*>(packed);
  const auto* src = static_cast<const unsigned char*>(base);
  for_each_rectangle_row(rectangles, element_bytes, [&](index_t at, std::size_t bytes) {
    std::memcpy(dst, src + at, bytes);
    dst += bytes;
  });
}

inline void copy_rectangles_in(const void* packed, std::span<const Rectangle> rectangles, void* base,
                               std::size_t element_bytes) {
  const auto* src = static_cast<const unsigned char*>(packed);
  auto* dst = static_cast<unsigned char*>(base);
  for_each_rectangle_row(rectangles, element_bytes, [&](index_t at, std::size_t bytes) {
    std::memcpy(dst + at, src, bytes);
    src += bytes;
  });
}

}  // namespace tessera::kernels::cpu
