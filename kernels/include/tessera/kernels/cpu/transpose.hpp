// The CPU backend of the local transpose (contract in tessera/kernels/transpose.hpp): tiles of
// 16 x 16 elements, so that the lines a tile reads and the lines it writes both stay in L1, and
// contiguous runs of tiles (row by row) split over the threads. 16 rather than 32 or 64: 2,000 x
// 4,000 doubles in cache-warm huge-page memory took 9.1-9.6 ms with 16, 13.5 ms with 32 and
// 11-12 ms with 64 on a Debian 12 VM (2 cores, one thread).
#pragma once

#include <algorithm>
#include <cstring>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/parallel.hpp"

namespace tessera::kernels::cpu {

namespace detail {
inline constexpr index_t kTransposeTile = 16;

// Calls tile(r0, c0, rows, cols) for every tile of a rows x cols block.
template <class Tile>
void for_each_tile(index_t rows, index_t cols, Tile&& tile) {
  constexpr index_t kT = kTransposeTile;
  const index_t tiles_down = (rows + kT - 1) / kT, tiles_across = (cols + kT - 1) / kT;
  const index_t tiles = tiles_down * tiles_across;
  const int threads = static_cast<int>(std::min<index_t>(threads_for(rows * cols), tiles));
  parallel_for_chunks(tiles, threads, [&](int, Chunk chunk) {
    for (index_t t = chunk.begin; t < chunk.end; ++t) {
      const index_t r0 = t / tiles_across * kT, c0 = t % tiles_across * kT;
      tile(r0, c0, std::min<index_t>(kT, rows - r0), std::min<index_t>(kT, cols - c0));
    }
  });
}

// One tile: out[c * ld_out + r] = in[r * ld_in + c] for r < rows, c < cols. The pointers are
// locals and restrict-qualified, so that the compiler keeps them in registers (reached through a
// lambda's captured references they were reloaded after every store: half the rate on doubles).
template <class T>
inline void transpose_tile(const T* __restrict in, index_t rows, index_t cols, index_t ld_in, T* __restrict out,
                           index_t ld_out) {
  for (index_t c = 0; c < cols; ++c) {
    T* __restrict o = out + c * ld_out;
    for (index_t r = 0; r < rows; ++r) o[r] = in[r * ld_in + c];
  }
}
template <class T>
inline void transpose_full_tile(const T* __restrict in, index_t ld_in, T* __restrict out, index_t ld_out) {
  for (index_t c = 0; c < kTransposeTile; ++c) {
    T* __restrict o = out + c * ld_out;
#pragma GCC unroll 8
    for (index_t r = 0; r < kTransposeTile; ++r) o[r] = in[r * ld_in + c];
  }
}
}  // namespace detail

// out[j * ld_out + i] = in[i * ld_in + j] for i < rows, j < cols.
template <class T>
void transpose(const T* in, index_t rows, index_t cols, index_t ld_in, T* out, index_t ld_out) {
  detail::for_each_tile(rows, cols, [in, out, ld_in, ld_out](index_t r0, index_t c0, index_t tr, index_t tc) {
    const T* tile_in = in + r0 * ld_in + c0;
    T* tile_out = out + c0 * ld_out + r0;
    if (tr == detail::kTransposeTile && tc == detail::kTransposeTile)
      detail::transpose_full_tile(tile_in, ld_in, tile_out, ld_out);
    else
      detail::transpose_tile(tile_in, tr, tc, ld_in, tile_out, ld_out);
  });
}

// The same for elements of a size known only at run time.
inline void transpose_any_size(const void* in, index_t rows, index_t cols, index_t ld_in, void* out, index_t ld_out,
                               std::size_t element_bytes) {
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(out);
  detail::for_each_tile(rows, cols, [=](index_t r0, index_t c0, index_t tr, index_t tc) {
    for (index_t c = c0; c < c0 + tc; ++c)
      for (index_t r = r0; r < r0 + tr; ++r)
        std::memcpy(dst + static_cast<std::size_t>(c * ld_out + r) * element_bytes,
                    src + static_cast<std::size_t>(r * ld_in + c) * element_bytes, element_bytes);
  });
}

}  // namespace tessera::kernels::cpu
