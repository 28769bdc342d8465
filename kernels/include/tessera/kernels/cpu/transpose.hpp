// The CPU backend of the local transpose (contract in tessera/kernels/transpose.hpp): tiles of
// 32 x 32 elements, so that the lines a tile reads and the lines it writes both stay in L1, and
// contiguous runs of tiles (row by row) split over the threads.
#pragma once

#include <algorithm>
#include <cstring>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/parallel.hpp"

namespace tessera::kernels::cpu {

namespace detail {
// Calls move(r, c) for every element of a rows x cols block, tile by tile.
template <class Move>
void for_each_element_by_tiles(index_t rows, index_t cols, Move&& move) {
  constexpr index_t kTile = 32;
  const index_t tiles_down = (rows + kTile - 1) / kTile, tiles_across = (cols + kTile - 1) / kTile;
  const index_t tiles = tiles_down * tiles_across;
  const int threads = static_cast<int>(std::min<index_t>(threads_for(rows * cols), tiles));
  parallel_for_chunks(tiles, threads, [&](int, Chunk chunk) {
    for (index_t t = chunk.begin; t < chunk.end; ++t) {
      const index_t r0 = t / tiles_across * kTile, c0 = t % tiles_across * kTile;
      const index_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (index_t c = c0; c < c1; ++c)
        for (index_t r = r0; r < r1; ++r) move(r, c);
    }
  });
}
}  // namespace detail

// out[j * ld_out + i] = in[i * ld_in + j] for i < rows, j < cols.
template <class T>
void transpose(const T* in, index_t rows, index_t cols, index_t ld_in, T* out, index_t ld_out) {
  detail::for_each_element_by_tiles(rows, cols, [&](index_t r, index_t c) { out[c * ld_out + r] = in[r * ld_in + c]; });
}

// The same for elements of a size known only at run time.
inline void transpose_any_size(const void* in, index_t rows, index_t cols, index_t ld_in, void* out, index_t ld_out,
                               std::size_t element_bytes) {
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(out);
  detail::for_each_element_by_tiles(rows, cols, [&](index_t r, index_t c) {
    std::memcpy(dst + static_cast<std::size_t>(c * ld_out + r) * element_bytes,
                src + static_cast<std::size_t>(r * ld_in + c) * element_bytes, element_bytes);
  });
}

}  // namespace tessera::kernels::cpu
