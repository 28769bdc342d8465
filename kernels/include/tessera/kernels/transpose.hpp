// Local out-of-place transpose of a row-major block, also of a sub-block with leading dimensions:
//
//   out[j * ld_out + i] = in[i * ld_in + j]     for i < rows, j < cols
//
// `in` is rows x cols with leading dimension ld_in >= cols; `out` receives the cols x rows
// transpose with leading dimension ld_out >= rows. Both are backend memory and do not overlap.
// Elements are moved, never interpreted: one precompiled instance per element size serves every
// trivially copyable type from any translation unit (under cuda: 16-byte vector tiles where both
// blocks' rows start on 16-byte boundaries (4-byte vectors for 1- and 2-byte elements on rows on
// 4-byte boundaries), tiles whose output rows are cut on 32-byte sector boundaries where they do
// not, skinny tiles where a side is under 32 elements; any size,
// including sizes that are not powers of two). Stream-ordered under cuda.
#pragma once

#include <cstddef>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

// Elements of `element_bytes` bytes (any positive size). Where element_bytes is 1, 2, 4, 8 or 16,
// elements aligned to their size take the fast passes; others move as runs of smaller words.
void transpose_bytes(const Queue& queue, const void* in, index_t rows, index_t cols, index_t ld_in, void* out,
                     index_t ld_out, std::size_t element_bytes);

template <class T>
void transpose(const Queue& queue, const T* in, index_t rows, index_t cols, index_t ld_in, T* out, index_t ld_out) {
  static_assert(std::is_trivially_copyable_v<T>, "transpose: the element type must be trivially copyable");
  transpose_bytes(queue, in, rows, cols, ld_in, out, ld_out, sizeof(T));
}

// Contiguous blocks: ld_in = cols, ld_out = rows.
template <class T>
void transpose(const Queue& queue, const T* in, index_t rows, index_t cols, T* out) {
  transpose(queue, in, rows, cols, cols, out, rows);
}

}  // namespace tessera::kernels
