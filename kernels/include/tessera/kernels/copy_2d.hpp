// Strided copy of a row-major sub-matrix within backend memory (packing a panel of a matrix block
// into contiguous memory before it crosses ranks). Stream-ordered under cuda.
#pragma once

#include <cstddef>

#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

// dst[r * dst_ld + c] = src[r * src_ld + c] for r < rows, c < cols; leading dimensions and cols in
// elements of `element_bytes` bytes. dst and src are backend memory and do not overlap.
void copy_2d(const Queue& queue, void* dst, index_t dst_ld, const void* src, index_t src_ld, index_t rows,
             index_t cols, std::size_t element_bytes);

}  // namespace tessera::kernels
