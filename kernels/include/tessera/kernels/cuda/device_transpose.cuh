// Device-wide out-of-place transpose of a row-major rows x cols block with leading dimensions
// (agents and dispatch): out[j * ld_out + i] = in[i * ld_in + j]. Elements are moved, never
// interpreted, so the passes are instantiated per element size (1, 2, 4, 8, 16 bytes, as unsigned
// words) and any other size moves as a run of smaller words.
//
// Tile agents, each one thread block's work on one tile, all through shared memory:
//  - vector tiles, where both blocks' rows start on 16-byte boundaries (or, for 1- and 2-byte
//    elements, on 4-byte ones): every global and shared access is one whole vector. A tile is a grid
//    of units of V x V elements (V elements fill one vector); a thread loads the V rows of a unit,
//    transposes the V x V elements in registers (register moves for 4-, 8- and 16-byte elements,
//    byte permutes for 1 and 2), and stores the V output vectors into a transposed tile whose
//    vector slots are XOR-swizzled by row, so that both the stores and the row-wise loads that
//    follow touch each bank once per phase. Full tiles only: no bounds test in the hot loop.
//    Shifted vector tiles (1- to 8-byte elements, rows anywhere: an odd leading dimension) are the
//    same tiles with every global access still an aligned 16-byte vector: each row's 16 bytes are
//    cut from the two aligned vectors around them, and each transposed row is written as aligned
//    vectors assembled from two neighbouring slots, its first and last vector in pieces.
//  - scalar tiles (the classic padded tile, one element per access, several rows and columns per
//    thread): unaligned rows where the tuning does not take shifted vector tiles (up to 128 x 64
//    elements, so that many loads are in flight), and the 32 x 32 edges that vector tiles leave. A
//    full tile takes the path without bounds tests; only tiles on the edge test each element.
//  - skewed tiles in a two-dimensional grid (transpose_skewed_kernel): padded tiles, the tile's
//    place from the block index (no tile-index division, no second agent's registers), with each
//    output row cut on 32-byte sector boundaries, so that no sector inside an output row is written
//    in part by two thread blocks; the path for 4- and 8-byte rows off 16-byte boundaries, and for
//    16-byte elements on blocks whose sides are not multiples of 32 (tuning/transpose.cuh says which).
//  - skinny tiles, where one side is below 32 elements (a 3*10^7 x 7 block): all of the short side
//    and as much of the long side as fills the tile, so that each warp still reads and writes long
//    contiguous runs.
// Vector and scalar tiles run in one launch (a thread block picks its agent from its tile index,
// the same branch for all its threads). Tiles are numbered in 64-bit integers, grid-stride.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cuda/device_info.cuh"
#include "tessera/kernels/cuda/tuning/transpose.cuh"
#include "tessera/kernels/cuda_check.hpp"

namespace tessera::kernels::cuda::detail {

// The unsigned word that carries one element of `Bytes` bytes (aligned to its size).
template <int Bytes>
struct WordOf;
template <>
struct WordOf<1> { using type = unsigned char; };
template <>
struct WordOf<2> { using type = unsigned short; };
template <>
struct WordOf<4> { using type = unsigned int; };
template <>
struct WordOf<8> { using type = unsigned long long; };
template <>
struct WordOf<16> { using type = uint4; };
template <int Bytes>
using word_t = typename WordOf<Bytes>::type;

// Where the two blocks are: byte pointers, row pitches (leading dimension x element size), and the
// bytes of one input row of the block (cols x element size: shifted vector tiles read no further).
struct TransposeArgs {
  const unsigned char* in;
  unsigned char* out;
  std::size_t in_pitch;
  std::size_t out_pitch;
  std::size_t in_row_bytes;
};

// A rectangle of the input, [row0, row0 + rows) x [col0, col0 + cols), cut into tiles of
// tile_rows x tile_cols elements, numbered row by row; the last row and column of tiles may be
// partial (scalar tiles only).
struct TileRegion {
  index_t row0 = 0, col0 = 0, rows = 0, cols = 0;
  index_t tiles_across = 0;
  index_t tiles = 0;
};

inline TileRegion tile_region(index_t row0, index_t col0, index_t rows, index_t cols, index_t tile_rows,
                              index_t tile_cols) {
  TileRegion r{row0, col0, rows, cols, 0, 0};
  if (rows > 0 && cols > 0) {
    r.tiles_across = ceil_div(cols, tile_cols);
    r.tiles = ceil_div(rows, tile_rows) * r.tiles_across;
  }
  return r;
}

// A word of the input, read through the read-only path, and a word of the output, written with the
// default cache policy (evict-first loads and stores measured no faster: tuning/transpose.cuh).
template <class W>
__device__ __forceinline__ W load_word(const unsigned char* p) {
  return __ldg(reinterpret_cast<const W*>(p));
}

template <class W>
__device__ __forceinline__ void store_word(unsigned char* p, const W& w) {
  *reinterpret_cast<W*>(p) = w;
}

// ---- rows off 16-byte boundaries ----------------------------------------------------------------
// A row that starts `shift` bytes past a 16-byte boundary is still read and written in aligned
// 16-byte vectors: 16 bytes of the row are bytes [shift, shift + 16) of the two aligned vectors
// around them. Shifts are multiples of the element size, so each step below exists only for the
// element sizes that need it (8-byte elements: whole halves; 4-byte: whole words).

// Bytes [shift, shift + 16) of the 32 bytes lo, hi (lo first), 0 <= shift < 16.
template <int ElementBytes>
__device__ __forceinline__ uint4 bytes_at(const uint4& lo, const uint4& hi, unsigned shift) {
  unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  // Whole words first, by selects on static indices (a register array indexed at run time would
  // live in local memory).
  if (shift & 8) {
#pragma unroll
    for (int k = 0; k < 6; ++k) w[k] = w[k + 2];
  }
  if constexpr (ElementBytes <= 4) {
    if (shift & 4) {
#pragma unroll
      for (int k = 0; k < 5; ++k) w[k] = w[k + 1];
    }
  }
  if constexpr (ElementBytes <= 2) {
    const unsigned bits = 8 * (shift & 3);
#pragma unroll
    for (int k = 0; k < 4; ++k) w[k] = __funnelshift_r(w[k], w[k + 1], bits);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Part of an aligned 16-byte vector: bytes [from, to), 0 <= from <= to <= 16, both multiples of the
// element size, moved as aligned pieces of 1, 2, 4 and 8 bytes (at most four up to an 8-byte
// boundary, then at most four down). A vector held as two 8-byte halves.
template <int Piece>
__device__ __forceinline__ void load_piece(const unsigned char* vector, unsigned& from, unsigned long long& lo,
                                           unsigned long long& hi) {
  const auto v = static_cast<unsigned long long>(load_word<word_t<Piece>>(vector + from));
  if (from < 8) {
    lo |= v << (8 * from);
  } else {
    hi |= v << (8 * (from - 8));
  }
  from += Piece;
}

template <int Piece>
__device__ __forceinline__ void store_piece(unsigned char* vector, unsigned& from, unsigned long long lo,
                                            unsigned long long hi) {
  const unsigned long long v = from < 8 ? lo >> (8 * from) : hi >> (8 * (from - 8));
  store_word<word_t<Piece>>(vector + from, static_cast<word_t<Piece>>(v));
  from += Piece;
}

// Bytes [from, to) of the aligned vector at `vector`; the others are zero. Nothing outside them is read.
template <int ElementBytes>
__device__ __forceinline__ uint4 load_vector_part(const unsigned char* vector, unsigned from, unsigned to) {
  unsigned long long lo = 0, hi = 0;
  if constexpr (ElementBytes <= 1) if ((from & 1) && from + 1 <= to) load_piece<1>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 2) if ((from & 2) && from + 2 <= to) load_piece<2>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 4) if ((from & 4) && from + 4 <= to) load_piece<4>(vector, from, lo, hi);
  if ((from & 8) && from + 8 <= to) load_piece<8>(vector, from, lo, hi);
  if (from + 8 <= to) load_piece<8>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 4) if (from + 4 <= to) load_piece<4>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 2) if (from + 2 <= to) load_piece<2>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 1) if (from + 1 <= to) load_piece<1>(vector, from, lo, hi);
  return make_uint4(static_cast<unsigned>(lo), static_cast<unsigned>(lo >> 32), static_cast<unsigned>(hi),
                    static_cast<unsigned>(hi >> 32));
}

// Bytes [from, to) of v into the aligned vector at `vector`; nothing outside them is written (the
// rest of the vector belongs to a neighbouring tile, or lies outside the block).
template <int ElementBytes>
__device__ __forceinline__ void store_vector_part(unsigned char* vector, const uint4& v, unsigned from, unsigned to) {
  const unsigned long long lo = v.x | static_cast<unsigned long long>(v.y) << 32;
  const unsigned long long hi = v.z | static_cast<unsigned long long>(v.w) << 32;
  if constexpr (ElementBytes <= 1) if ((from & 1) && from + 1 <= to) store_piece<1>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 2) if ((from & 2) && from + 2 <= to) store_piece<2>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 4) if ((from & 4) && from + 4 <= to) store_piece<4>(vector, from, lo, hi);
  if ((from & 8) && from + 8 <= to) store_piece<8>(vector, from, lo, hi);
  if (from + 8 <= to) store_piece<8>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 4) if (from + 4 <= to) store_piece<4>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 2) if (from + 2 <= to) store_piece<2>(vector, from, lo, hi);
  if constexpr (ElementBytes <= 1) if (from + 1 <= to) store_piece<1>(vector, from, lo, hi);
}

__device__ __forceinline__ unsigned misalignment16(const void* p) {
  return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(p) & 15);
}

// ---- register transposes -----------------------------------------------------------------------
// A V x V block of elements held as V vectors of kWords 32-bit words (row k of the block in
// in[k]) becomes its transpose (column c in out[c]).

// Four rows of four bytes -> four columns (8 byte permutes).
__device__ __forceinline__ void transpose_4x4_bytes(unsigned a, unsigned b, unsigned c, unsigned d, unsigned (&t)[4]) {
  const unsigned ab_lo = __byte_perm(a, b, 0x5140);  // a0 b0 a1 b1
  const unsigned ab_hi = __byte_perm(a, b, 0x7362);  // a2 b2 a3 b3
  const unsigned cd_lo = __byte_perm(c, d, 0x5140);
  const unsigned cd_hi = __byte_perm(c, d, 0x7362);
  t[0] = __byte_perm(ab_lo, cd_lo, 0x5410);  // a0 b0 c0 d0
  t[1] = __byte_perm(ab_lo, cd_lo, 0x7632);
  t[2] = __byte_perm(ab_hi, cd_hi, 0x5410);
  t[3] = __byte_perm(ab_hi, cd_hi, 0x7632);
}

template <int ElementBytes, int V, int kWords>
__device__ __forceinline__ void transpose_registers(const unsigned (&in)[V][kWords], unsigned (&out)[V][kWords]) {
  if constexpr (ElementBytes >= 4) {
    // Whole words: register renaming only.
    constexpr int kElementWords = ElementBytes / 4;
#pragma unroll
    for (int c = 0; c < V; ++c)
#pragma unroll
      for (int k = 0; k < V; ++k)
#pragma unroll
        for (int w = 0; w < kElementWords; ++w) out[c][k * kElementWords + w] = in[k][c * kElementWords + w];
  } else if constexpr (ElementBytes == 2) {
    // 2 x 2 blocks of halves: rows 2i, 2i+1 of word j -> columns 2j, 2j+1 of word i.
#pragma unroll
    for (int i = 0; i < V / 2; ++i)
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        out[2 * j][i] = __byte_perm(in[2 * i][j], in[2 * i + 1][j], 0x5410);
        out[2 * j + 1][i] = __byte_perm(in[2 * i][j], in[2 * i + 1][j], 0x7632);
      }
  } else {
    // 4 x 4 blocks of bytes: rows 4i..4i+3 of word j -> columns 4j..4j+3 of word i.
#pragma unroll
    for (int i = 0; i < V / 4; ++i)
#pragma unroll
      for (int j = 0; j < kWords; ++j) {
        unsigned t[4];
        transpose_4x4_bytes(in[4 * i][j], in[4 * i + 1][j], in[4 * i + 2][j], in[4 * i + 3][j], t);
#pragma unroll
        for (int m = 0; m < 4; ++m) out[4 * j + m][i] = t[m];
      }
  }
}

template <int VecBytes>
__device__ __forceinline__ void load_vector_words(const unsigned char* p, unsigned (&w)[VecBytes / 4]) {
  if constexpr (VecBytes == 16) {
    const uint4 v = load_word<uint4>(p);
    w[0] = v.x;
    w[1] = v.y;
    w[2] = v.z;
    w[3] = v.w;
  } else {
    static_assert(VecBytes == 4, "vector tiles move 16- or 4-byte vectors");
    w[0] = load_word<unsigned>(p);
  }
}

// ---- agents --------------------------------------------------------------------------------------

// Vector tiles (see the top of the file). Shared memory holds the transposed tile: kTileCols rows
// (output rows) of kUnitRows vector slots, slot `chunk` of row `row` at chunk ^ ((row / V) % kSwizzle).
// Loading, the kSwizzle threads of one bank phase hold consecutive unit columns of one unit row,
// so they write one slot column of rows in different swizzle classes: distinct banks. Storing,
// they read consecutive slots of one row: a permutation of one 128-byte line.
//
// Shifted (16-byte vectors only): rows may start anywhere (an odd leading dimension: each row its
// own misalignment). Every global access is still an aligned 16-byte vector: a row's 16 bytes of a
// unit are cut from the two aligned vectors around them (bytes_at), and output vector `chunk` of a
// transposed row that starts t bytes past a boundary is the last t bytes of slot chunk - 1 and the
// first 16 - t of slot chunk. Each transposed row of the tile then spans kUnitRows + 1 aligned
// vectors, the first and the last shared with the tiles above and below: those two are written in
// pieces of their own bytes only. Reads stay inside the block's rows: a unit at either end of a row
// reads only the part of the vector beyond it that lies inside the row.
template <int ElementBytes, int VecBytes, int UnitRows, int UnitCols, int Threads, bool kShifted = false>
struct VectorTileAgent {
  static constexpr int V = VecBytes / ElementBytes;  // elements per vector
  static constexpr int kWords = VecBytes / 4;
  static constexpr int kTileRows = UnitRows * V;
  static constexpr int kTileCols = UnitCols * V;
  static constexpr int kUnitsPerThread = UnitRows * UnitCols / Threads;
  static constexpr int kSwizzle = 128 / VecBytes;  // vector slots per 128-byte line of banks
  static_assert(V >= 1 && VecBytes % ElementBytes == 0, "a vector holds whole elements");
  static_assert(UnitRows * UnitCols % Threads == 0, "every thread moves the same number of units");
  static_assert(UnitRows >= kSwizzle && (UnitRows & (UnitRows - 1)) == 0, "unit rows: a power of two, one bank line at least");
  static_assert(UnitCols % kSwizzle == 0 && Threads % kSwizzle == 0, "a bank phase within one unit row");
  static_assert(!kShifted || VecBytes == 16, "shifted tiles move 16-byte vectors");
  using Vec = word_t<VecBytes>;

  struct Storage {
    Vec slot[kTileCols * UnitRows];
  };

  __device__ static __forceinline__ int slot_of(int row, int chunk) {
    return row * UnitRows + (chunk ^ ((row / V) % kSwizzle));
  }

  // The V rows of a unit, 16 bytes each from `p` on (rows a.in_pitch apart, anywhere), `col_bytes`
  // into their rows. Inside the row (the vectors around the unit are whole vectors of the row), all
  // 2V loads go out before any is used; at either end of a row the vector beyond the unit is read
  // only in part.
  __device__ static __forceinline__ void load_shifted(const TransposeArgs& a, const unsigned char* p, index_t col_bytes,
                                                      unsigned (&rows)[V][kWords]) {
    uint4 lo[V], hi[V];
    if (col_bytes >= 16 && col_bytes + 32 <= static_cast<index_t>(a.in_row_bytes)) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const unsigned char* row = p + k * a.in_pitch;
        const unsigned char* vector = row - misalignment16(row);
        lo[k] = load_word<uint4>(vector);
        hi[k] = load_word<uint4>(vector + 16);
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const unsigned char* row = p + k * a.in_pitch;
        const unsigned shift = misalignment16(row);
        const unsigned char* vector = row - shift;
        // The aligned vector at `vector` starts col_bytes - shift bytes into the row (before it
        // where negative); the row holds in_row_bytes - (col_bytes - shift + 16) bytes from vector + 16 on.
        lo[k] = col_bytes >= shift ? load_word<uint4>(vector)
                                   : load_vector_part<ElementBytes>(vector, static_cast<unsigned>(shift - col_bytes), 16);
        const index_t beyond = static_cast<index_t>(a.in_row_bytes) - (col_bytes - shift + 16);
        hi[k] = beyond >= 16 ? load_word<uint4>(vector + 16)
                             : load_vector_part<ElementBytes>(vector + 16, 0, static_cast<unsigned>(beyond));
      }
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const uint4 v = bytes_at<ElementBytes>(lo[k], hi[k], misalignment16(p + k * a.in_pitch));
      rows[k][0] = v.x;
      rows[k][1] = v.y;
      rows[k][2] = v.z;
      rows[k][3] = v.w;
    }
  }

  // Output vector `chunk` of transposed row `row`, whose tile part starts at `line` (see above).
  __device__ static __forceinline__ void store_shifted(const Storage& s, unsigned char* line, int row, int chunk) {
    const unsigned t = misalignment16(line);
    const Vec current = s.slot[slot_of(row, chunk)];
    if (t == 0) {
      store_word<Vec>(line + chunk * VecBytes, current);
      return;
    }
    unsigned char* const first = line - t;  // the aligned vector holding the row's first bytes
    const Vec previous = s.slot[slot_of(row, chunk > 0 ? chunk - 1 : 0)];
    const uint4 v = bytes_at<ElementBytes>(previous, current, 16 - t);
    if (chunk > 0) {
      store_word<Vec>(first + chunk * VecBytes, v);
    } else {
      store_vector_part<ElementBytes>(first, v, t, 16);
    }
    if (chunk == UnitRows - 1)
      store_vector_part<ElementBytes>(first + UnitRows * VecBytes, bytes_at<ElementBytes>(current, current, 16 - t), 0, t);
  }

  __device__ static __forceinline__ void move(Storage& s, const TransposeArgs& a, index_t r0, index_t c0) {
    unsigned loaded[kUnitsPerThread][V][kWords];
    const unsigned char* tile_in = a.in + static_cast<std::size_t>(r0) * a.in_pitch + static_cast<std::size_t>(c0) * ElementBytes;
#pragma unroll
    for (int u = 0; u < kUnitsPerThread; ++u) {
      const int q = static_cast<int>(threadIdx.x) + u * Threads;
      const int unit_row = q / UnitCols, unit_col = q % UnitCols;
      const unsigned char* p = tile_in + static_cast<std::size_t>(unit_row * V) * a.in_pitch + unit_col * VecBytes;
      if constexpr (kShifted) {
        load_shifted(a, p, c0 * ElementBytes + unit_col * VecBytes, loaded[u]);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) load_vector_words<VecBytes>(p + k * a.in_pitch, loaded[u][k]);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnitsPerThread; ++u) {
      const int q = static_cast<int>(threadIdx.x) + u * Threads;
      const int unit_row = q / UnitCols, unit_col = q % UnitCols;
      unsigned columns[V][kWords];
      transpose_registers<ElementBytes, V, kWords>(loaded[u], columns);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        Vec v;
        static_assert(sizeof(v) == sizeof(columns[k]));
        __builtin_memcpy(&v, columns[k], sizeof v);
        s.slot[slot_of(unit_col * V + k, unit_row)] = v;
      }
    }
    __syncthreads();
    unsigned char* tile_out = a.out + static_cast<std::size_t>(c0) * a.out_pitch + static_cast<std::size_t>(r0) * ElementBytes;
#pragma unroll
    for (int j = 0; j < kUnitsPerThread * V; ++j) {
      const int q = static_cast<int>(threadIdx.x) + j * Threads;
      const int row = q / UnitRows, chunk = q % UnitRows;
      if constexpr (kShifted) {
        store_shifted(s, tile_out + static_cast<std::size_t>(row) * a.out_pitch, row, chunk);
      } else {
        store_word<Vec>(tile_out + static_cast<std::size_t>(row) * a.out_pitch + chunk * VecBytes,
                                    s.slot[slot_of(row, chunk)]);
      }
    }
    __syncthreads();  // the next tile of this thread block reuses the storage
  }

  __device__ static __forceinline__ void run(Storage& s, const TransposeArgs& a, const TileRegion& region, index_t tile) {
    const index_t tile_row = tile / region.tiles_across, tile_col = tile - tile_row * region.tiles_across;
    move(s, a, region.row0 + tile_row * kTileRows, region.col0 + tile_col * kTileCols);
  }
};

// No vector tiles (rows not aligned for vectors): the launch's vector region is empty.
struct NoVectorTiles {
  static constexpr int kTileRows = 1, kTileCols = 1;
  struct Storage {};
  __device__ static void run(Storage&, const TransposeArgs&, const TileRegion&, index_t) {}
};

// Scalar tiles of TileRows x TileCols elements (multiples of 32): the threads are 32 lanes by
// Threads / 32 warps; lane x of warp y reads elements (y + k * warps, x + 32 g) of the tile for each
// step k and column group g (all of them before any is stored: TileRows * TileCols / Threads loads
// in flight) and writes them into the transposed tile in shared memory; after the barrier it reads
// transposed row (y + k * warps) at column x + 32 g and writes it out. Rows of the transposed tile
// are padded by one element (4 bytes for smaller ones), so that a warp's column falls into distinct
// banks.
template <class E, int TileRows, int TileCols, int Threads>
struct ScalarTileAgent {
  static constexpr int kTileRows = TileRows, kTileCols = TileCols;
  static constexpr int kElementBytes = static_cast<int>(sizeof(E));
  static constexpr int kWarps = Threads / 32;
  static constexpr int kLoadSteps = TileRows / kWarps, kColumnGroups = TileCols / 32;
  static constexpr int kStoreSteps = TileCols / kWarps, kRowGroups = TileRows / 32;
  static constexpr int kStrideBytes = TileRows * kElementBytes + (kElementBytes < 4 ? 4 : kElementBytes);
  static_assert(Threads % 32 == 0 && TileRows % 32 == 0 && TileCols % 32 == 0 && TileRows % kWarps == 0 &&
                    TileCols % kWarps == 0,
                "scalar tiles: whole warps, whole steps");

  struct Storage {
    alignas(16) unsigned char bytes[TileCols * kStrideBytes];
  };

  __device__ static __forceinline__ E& at(Storage& s, int row, int col) {
    return *reinterpret_cast<E*>(s.bytes + row * kStrideBytes + col * kElementBytes);
  }

  template <bool kFull>
  __device__ static __forceinline__ void move(Storage& s, const TransposeArgs& a, index_t r0, index_t c0, int rows,
                                              int cols) {
    const int x = static_cast<int>(threadIdx.x) % 32, y = static_cast<int>(threadIdx.x) / 32;
    const unsigned char* src =
        a.in + static_cast<std::size_t>(r0) * a.in_pitch + static_cast<std::size_t>(c0 + x) * kElementBytes;
    E v[kColumnGroups][kLoadSteps];
#pragma unroll
    for (int g = 0; g < kColumnGroups; ++g)
#pragma unroll
      for (int k = 0; k < kLoadSteps; ++k) {
        const int r = y + k * kWarps, c = x + 32 * g;
        if (kFull || (r < rows && c < cols))
          v[g][k] = load_word<E>(src + static_cast<std::size_t>(r) * a.in_pitch + 32 * g * kElementBytes);
      }
#pragma unroll
    for (int g = 0; g < kColumnGroups; ++g)
#pragma unroll
      for (int k = 0; k < kLoadSteps; ++k) {
        const int r = y + k * kWarps, c = x + 32 * g;
        if (kFull || (r < rows && c < cols)) at(s, c, r) = v[g][k];
      }
    __syncthreads();
    unsigned char* dst =
        a.out + static_cast<std::size_t>(c0) * a.out_pitch + static_cast<std::size_t>(r0 + x) * kElementBytes;
#pragma unroll
    for (int g = 0; g < kRowGroups; ++g)
#pragma unroll
      for (int k = 0; k < kStoreSteps; ++k) {
        const int c = y + k * kWarps, r = x + 32 * g;
        if (kFull || (c < cols && r < rows))
          store_word<E>(dst + static_cast<std::size_t>(c) * a.out_pitch + 32 * g * kElementBytes, at(s, c, r));
      }
    __syncthreads();
  }

  __device__ static __forceinline__ void run(Storage& s, const TransposeArgs& a, const TileRegion& region, index_t tile) {
    const index_t tile_row = tile / region.tiles_across, tile_col = tile - tile_row * region.tiles_across;
    const index_t r0 = region.row0 + tile_row * TileRows, c0 = region.col0 + tile_col * TileCols;
    const int rows = static_cast<int>(min(index_t(TileRows), region.row0 + region.rows - r0));
    const int cols = static_cast<int>(min(index_t(TileCols), region.col0 + region.cols - c0));
    if (rows == TileRows && cols == TileCols) {
      move<true>(s, a, r0, c0, TileRows, TileCols);
    } else {
      move<false>(s, a, r0, c0, rows, cols);
    }
  }
};

// Vector tiles over the full tiles of the block, scalar tiles over the two strips they leave (the
// columns right of them over all rows, and the rows below them): one launch.
template <class VectorAgent, class ScalarAgent, int Threads>
__global__ void __launch_bounds__(Threads)
    transpose_tiles_kernel(TransposeArgs args, TileRegion vector_tiles, TileRegion right, TileRegion bottom) {
  __shared__ union Shared {
    typename VectorAgent::Storage vector;
    typename ScalarAgent::Storage scalar;
  } shared;
  const index_t total = vector_tiles.tiles + right.tiles + bottom.tiles;
  for (index_t tile = blockIdx.x; tile < total; tile += gridDim.x) {
    if (tile < vector_tiles.tiles) {
      VectorAgent::run(shared.vector, args, vector_tiles, tile);
    } else if (tile < vector_tiles.tiles + right.tiles) {
      ScalarAgent::run(shared.scalar, args, right, tile - vector_tiles.tiles);
    } else {
      ScalarAgent::run(shared.scalar, args, bottom, tile - vector_tiles.tiles - right.tiles);
    }
  }
}

// Skewed tiles in a two-dimensional grid (a thread block per column of tiles, walking down the rows
// of tiles; the tile's place from the block index, not a 64-bit division): padded tiles whose output
// rows are cut on 32-byte sector boundaries. Where a block's rows are not on sector boundaries, a
// plain padded tile (tr, tc) writes the sector at each end of each output row only in part, and the
// tile above or below it writes the rest of that sector much later; such sectors cost the writes
// their rate (geam pays the same on these layouts). Here output row C of the tile takes the input rows
// [r0 - t_C, r0 + kTile - t_C), where t_C counts the elements between the sector boundary at or
// below (C, r0) in the output and (C, r0): every whole sector inside an output row is written by one
// thread block, in aligned runs. The tile reads the kSkew = 32 / sizeof(E) rows above it as well
// (kTile + kSkew rows, the extra ones from L2: the tile above read them), and there is one more
// tile row than rows / kTile rounded up, so that the last rows are covered for every t_C. One
// element per access, all of a thread's loads in flight before the barrier (sm_90: 64 registers
// for 64 x 64 floats at 4 blocks of 256 threads per SM and for 32 x 32 doubles at 256 threads).
template <class E, int kTile, int Threads, int MinBlocksPerSm = 1>
__global__ void __launch_bounds__(Threads, MinBlocksPerSm)
    transpose_skewed_kernel(TransposeArgs a, index_t rows, index_t cols, index_t tiles_across, index_t tile_rows) {
  constexpr int kSector = 32;
  static_assert(kTile * sizeof(E) % kSector == 0, "a tile's side spans whole sectors");
  constexpr int kSkew = kSector / static_cast<int>(sizeof(E));
  constexpr int kWarps = Threads / 32, kGroups = kTile / 32, kSteps = kTile / kWarps;
  constexpr int kInRows = kTile + kSkew, kReadSteps = ceil_div(kInRows, kWarps);
  constexpr bool kEvenRead = kInRows % kWarps == 0;
  constexpr int kPad = sizeof(E) < 4 ? 4 / static_cast<int>(sizeof(E)) : 1;
  __shared__ E tile[kTile][kInRows + kPad];
  const int x = static_cast<int>(threadIdx.x) % 32, y = static_cast<int>(threadIdx.x) / 32;
  const auto out_address = reinterpret_cast<std::uintptr_t>(a.out);
  for (index_t tc = blockIdx.x; tc < tiles_across; tc += gridDim.x)
    for (index_t tr = blockIdx.y; tr < tile_rows; tr += gridDim.y) {
      const index_t r0 = tr * kTile, c0 = tc * kTile, first = r0 - kSkew;  // first: the first row read
      const bool full = first >= 0 && r0 + kTile <= rows && c0 + kTile <= cols;
      // Byte offset of this thread's first element from a.in: negative in the first row of tiles,
      // where those rows are not read. Pointers are formed only for elements that are read.
      const index_t pitch = static_cast<index_t>(a.in_pitch);
      const index_t offset = (first + y) * pitch + (c0 + x) * static_cast<index_t>(sizeof(E));
      E v[kGroups][kReadSteps];
#pragma unroll
      for (int g = 0; g < kGroups; ++g)
#pragma unroll
        for (int k = 0; k < kReadSteps; ++k) {
          const int r = y + k * kWarps, c = x + 32 * g;
          const index_t row = first + r;
          if ((kEvenRead || r < kInRows) && (full || (row >= 0 && row < rows && c0 + c < cols)))
            v[g][k] = load_word<E>(a.in + (offset + k * kWarps * pitch + 32 * g * static_cast<index_t>(sizeof(E))));
        }
#pragma unroll
      for (int g = 0; g < kGroups; ++g)
#pragma unroll
        for (int k = 0; k < kReadSteps; ++k)
          if (kEvenRead || y + k * kWarps < kInRows) tile[x + 32 * g][y + k * kWarps] = v[g][k];
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kSteps; ++k) {
        const int c = y + k * kWarps;
        if (full || c0 + c < cols) {
          const std::size_t at = static_cast<std::size_t>(c0 + c) * a.out_pitch + static_cast<std::size_t>(r0) * sizeof(E);
          const int t = static_cast<int>((out_address + at) % kSector) / static_cast<int>(sizeof(E));
          unsigned char* dst = a.out + at - static_cast<std::size_t>(t) * sizeof(E);
#pragma unroll
          for (int g = 0; g < kGroups; ++g) {
            const int j = x + 32 * g;
            const index_t r = r0 - t + j;
            if (full || (r >= 0 && r < rows))
              store_word<E>(dst + static_cast<std::size_t>(j) * sizeof(E), tile[c][kSkew - t + j]);
          }
        }
      }
      __syncthreads();
    }
}

template <class E, int kTile, int Threads, int MinBlocksPerSm = 1>
void launch_transpose_skewed(const TransposeArgs& args, index_t rows, index_t cols, StreamHandle stream) {
  constexpr auto kernel = transpose_skewed_kernel<E, kTile, Threads, MinBlocksPerSm>;
  constexpr index_t kSkew = 32 / static_cast<index_t>(sizeof(E));
  const index_t tiles_across = ceil_div<index_t>(cols, kTile), tile_rows = ceil_div<index_t>(rows + kSkew - 1, kTile);
  const dim3 grid(static_cast<unsigned>(std::min<index_t>(tiles_across, 0x7fffffff)),
                  static_cast<unsigned>(std::min<index_t>(tile_rows, 65535)));
  kernel<<<grid, Threads, 0, to_cuda(stream)>>>(args, rows, cols, tiles_across, tile_rows);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// Skinny blocks. Narrow (cols < 32): a tile is all `cols` columns of (Threads / cols) * Steps rows;
// thread t < (Threads / cols) * cols reads column t % cols of rows t / cols + k * (Threads / cols),
// which for a contiguous block is one run of the whole tile; the transposed tile is written out row
// by row (cols runs of the tile's rows). Wide (rows < 32): the mirror image. Rows of the transposed
// tile are an odd number of max(element, 4)-byte bank units long.
template <class E, int Threads, int Steps>
struct SkinnyTileAgent {
  static constexpr int kElementBytes = static_cast<int>(sizeof(E));
  static constexpr int kBankUnit = kElementBytes < 4 ? 4 : kElementBytes;
  static constexpr int kStorageBytes = Threads * Steps * (kElementBytes + 2 * kBankUnit);

  struct Storage {
    alignas(16) unsigned char bytes[kStorageBytes];
  };

  // Bytes of one transposed row of `elements` elements.
  __device__ static __forceinline__ int stride_bytes(int elements) {
    return (ceil_div(elements * kElementBytes, kBankUnit) | 1) * kBankUnit;
  }

  // A walk over the `length` x `lines` positions (position = line * length + offset) of a tile:
  // thread t visits t, t + Threads, ..., Steps of them, stepping line and offset without a division.
  struct Walk {
    int line, offset, line_step, offset_step;
    __device__ __forceinline__ Walk(int length)
        : line(static_cast<int>(threadIdx.x) / length),
          offset(static_cast<int>(threadIdx.x) % length),
          line_step(Threads / length),
          offset_step(Threads % length) {}
    __device__ __forceinline__ void next(int length) {
      line += line_step;
      offset += offset_step;
      if (offset >= length) {
        offset -= length;
        ++line;
      }
    }
  };

  // Narrow: the tile is rows [first, first + length) of all `cols` columns.
  __device__ static __forceinline__ void move_narrow(Storage& s, const TransposeArgs& a, int cols, index_t first,
                                                     int length) {
    const int per_step = Threads / cols;  // rows per step
    const int stride = stride_bytes(per_step * Steps);
    const int t = static_cast<int>(threadIdx.x);
    const int c = t % cols, r_first = t / cols;
    if (t < per_step * cols) {
      const unsigned char* src =
          a.in + static_cast<std::size_t>(first + r_first) * a.in_pitch + static_cast<std::size_t>(c) * kElementBytes;
      E v[Steps];
#pragma unroll
      for (int k = 0; k < Steps; ++k)
        if (r_first + k * per_step < length)
          v[k] = load_word<E>(src + static_cast<std::size_t>(k * per_step) * a.in_pitch);
#pragma unroll
      for (int k = 0; k < Steps; ++k)
        if (r_first + k * per_step < length)
          *reinterpret_cast<E*>(s.bytes + c * stride + (r_first + k * per_step) * kElementBytes) = v[k];
    }
    __syncthreads();
    // Output row c (input column c) is a run of `length` elements: the cols runs one after another.
    Walk w(length);
    unsigned char* dst = a.out + static_cast<std::size_t>(first) * kElementBytes;
#pragma unroll
    for (int k = 0; k < Steps; ++k) {
      if (w.line < cols)
        store_word<E>(dst + static_cast<std::size_t>(w.line) * a.out_pitch + w.offset * kElementBytes,
                                  *reinterpret_cast<const E*>(s.bytes + w.line * stride + w.offset * kElementBytes));
      w.next(length);
    }
    __syncthreads();
  }

  // Wide: the tile is columns [first, first + length) of all `rows` rows.
  __device__ static __forceinline__ void move_wide(Storage& s, const TransposeArgs& a, int rows, index_t first,
                                                   int length) {
    const int per_step = Threads / rows;  // columns per step
    const int stride = stride_bytes(rows);
    const int t = static_cast<int>(threadIdx.x);
    // Input row r is a run of `length` elements: the rows runs, all loads in flight before any store.
    {
      Walk w(length);
      const unsigned char* src = a.in + static_cast<std::size_t>(first) * kElementBytes;
      E v[Steps];
#pragma unroll
      for (int k = 0; k < Steps; ++k) {
        if (w.line < rows)
          v[k] = load_word<E>(src + static_cast<std::size_t>(w.line) * a.in_pitch + w.offset * kElementBytes);
        w.next(length);
      }
      Walk again(length);
#pragma unroll
      for (int k = 0; k < Steps; ++k) {
        if (again.line < rows) *reinterpret_cast<E*>(s.bytes + again.offset * stride + again.line * kElementBytes) = v[k];
        again.next(length);
      }
    }
    __syncthreads();
    const int r = t % rows, x_first = t / rows;
    if (t < per_step * rows) {
      unsigned char* dst =
          a.out + static_cast<std::size_t>(first + x_first) * a.out_pitch + static_cast<std::size_t>(r) * kElementBytes;
#pragma unroll
      for (int k = 0; k < Steps; ++k)
        if (x_first + k * per_step < length)
          store_word<E>(dst + static_cast<std::size_t>(k * per_step) * a.out_pitch,
                                    *reinterpret_cast<const E*>(s.bytes + (x_first + k * per_step) * stride + r * kElementBytes));
    }
    __syncthreads();
  }
};

// narrow: cols < 32 (tiles along the rows); otherwise rows < 32 (tiles along the columns).
template <class Agent, int Threads, int Steps>
__global__ void __launch_bounds__(Threads)
    transpose_skinny_kernel(TransposeArgs args, index_t rows, index_t cols, bool narrow, index_t tile_length,
                            index_t tiles) {
  __shared__ typename Agent::Storage shared;
  const index_t long_side = narrow ? rows : cols;
  for (index_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const index_t first = tile * tile_length;
    const int length = static_cast<int>(min(tile_length, long_side - first));
    if (narrow) {
      Agent::move_narrow(shared, args, static_cast<int>(cols), first, length);
    } else {
      Agent::move_wide(shared, args, static_cast<int>(rows), first, length);
    }
  }
}

// Any element size as `count` words of W (the largest power of two, at most 8 bytes, that divides
// the size and the addresses): a square tile of elements per step, one thread per word of the output,
// the input read through the read-only cache (a tile's input rows are few lines, read by all its
// threads). Bounds-tested throughout: the path of odd sizes and misaligned elements, not of speed.
template <class W, int Threads>
__global__ void __launch_bounds__(Threads)
    transpose_words_kernel(const W* __restrict__ in, W* __restrict__ out, index_t rows, index_t cols, index_t ld_in,
                           index_t ld_out, int count, index_t tiles_across, index_t tiles) {
  constexpr int kTile = TransposeWordsTuning::kTile;
  const int row_words = kTile * count;
  for (index_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const index_t tile_row = tile / tiles_across, tile_col = tile - tile_row * tiles_across;
    const index_t i0 = tile_row * kTile, j0 = tile_col * kTile;
    for (int idx = static_cast<int>(threadIdx.x); idx < kTile * row_words; idx += Threads) {
      const int jj = idx / row_words, x = idx - jj * row_words;
      const int ii = x / count, w = x - ii * count;
      const index_t i = i0 + ii, j = j0 + jj;
      if (i < rows && j < cols) out[(j * ld_out + i) * count + w] = __ldg(in + (i * ld_in + j) * count + w);
    }
  }
}

// ---- dispatch ------------------------------------------------------------------------------------

template <auto Kernel>
int transpose_grid(int threads, index_t tiles, int waves) {
  const DeviceInfo& device = current_device_info();
  const index_t wave = static_cast<index_t>(device.sm_count) * blocks_per_sm<Kernel>(threads);
  return static_cast<int>(std::clamp<index_t>(tiles, 1, std::min<index_t>(wave * waves, 0x7fffffff)));
}

// Vector tiles of VectorAgent over the full tiles, scalar tiles over the rest (VectorAgent =
// NoVectorTiles: scalar tiles everywhere).
template <class Tuning, class E, class VectorAgent, int Threads>
void launch_transpose_tiles(const TransposeArgs& args, index_t rows, index_t cols, StreamHandle stream) {
  constexpr bool kVectorTiles = !std::is_same_v<VectorAgent, NoVectorTiles>;
  using Scalar = ScalarTileAgent<E, kVectorTiles ? Tuning::kEdgeTile : Tuning::kScalarTileRows,
                                 kVectorTiles ? Tuning::kEdgeTile : Tuning::kScalarTileCols, Threads>;
  constexpr auto kernel = transpose_tiles_kernel<VectorAgent, Scalar, Threads>;
  const index_t full_rows = rows / VectorAgent::kTileRows * VectorAgent::kTileRows;
  const index_t full_cols = cols / VectorAgent::kTileCols * VectorAgent::kTileCols;
  TileRegion vector_tiles, right, bottom;
  if (kVectorTiles && full_rows > 0 && full_cols > 0) {
    vector_tiles = tile_region(0, 0, full_rows, full_cols, VectorAgent::kTileRows, VectorAgent::kTileCols);
    right = tile_region(0, full_cols, rows, cols - full_cols, Scalar::kTileRows, Scalar::kTileCols);
    bottom = tile_region(full_rows, 0, rows - full_rows, full_cols, Scalar::kTileRows, Scalar::kTileCols);
  } else {
    right = tile_region(0, 0, rows, cols, Scalar::kTileRows, Scalar::kTileCols);
  }
  const index_t tiles = vector_tiles.tiles + right.tiles + bottom.tiles;
  const int grid = transpose_grid<kernel>(Threads, tiles, Tuning::kWaves);
  kernel<<<grid, Threads, 0, to_cuda(stream)>>>(args, vector_tiles, right, bottom);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// Rows that no vector tiles above fit (not on 16-byte boundaries; for 1- and 2-byte elements, not
// on 4-byte ones either): skewed tiles, shifted vector tiles or scalar tiles, as Tuning::kSkewedTiles
// and kShiftedTiles say (in that order).
template <class Tuning, class E>
void launch_unaligned_tiles(const TransposeArgs& args, index_t rows, index_t cols, StreamHandle stream) {
  constexpr int kBytes = static_cast<int>(sizeof(E));
  constexpr bool kShifted = kBytes <= 8 && Tuning::kShiftedTiles;
  if constexpr (Tuning::kSkewedTiles) {
    launch_transpose_skewed<E, Tuning::kSkewedTile, Tuning::kSkewedThreads, Tuning::kSkewedBlocksPerSm>(args, rows, cols,
                                                                                                       stream);
  } else if constexpr (kShifted) {
    constexpr int kThreads = Tuning::kVectorThreads;
    using Shifted = VectorTileAgent<kBytes, 16, Tuning::kUnitRows, Tuning::kUnitCols, kThreads, true>;
    launch_transpose_tiles<Tuning, E, Shifted, kThreads>(args, rows, cols, stream);
  } else {
    launch_transpose_tiles<Tuning, E, NoVectorTiles, Tuning::kScalarThreads>(args, rows, cols, stream);
  }
}

// Transposes rows x cols elements of E (aligned to their size) at `in` (leading dimension ld_in)
// into `out` (leading dimension ld_out). Tuning: TransposeTuning, or another with its members.
template <class Tuning, class E>
void device_transpose(const E* in, index_t rows, index_t cols, index_t ld_in, E* out, index_t ld_out,
                      StreamHandle stream) {
  if (rows == 0 || cols == 0) return;
  constexpr int kBytes = static_cast<int>(sizeof(E));
  const TransposeArgs args{reinterpret_cast<const unsigned char*>(in), reinterpret_cast<unsigned char*>(out),
                           static_cast<std::size_t>(ld_in) * kBytes, static_cast<std::size_t>(ld_out) * kBytes,
                           static_cast<std::size_t>(cols) * kBytes};
  constexpr index_t kSkinny = 32;
  if (rows < kSkinny || cols < kSkinny) {
    constexpr int kThreads = Tuning::kSkinnyThreads, kSteps = Tuning::kSkinnySteps;
    using Agent = SkinnyTileAgent<E, kThreads, kSteps>;
    constexpr auto kernel = transpose_skinny_kernel<Agent, kThreads, kSteps>;
    const bool narrow = cols < kSkinny;
    const index_t short_side = narrow ? cols : rows, long_side = narrow ? rows : cols;
    const index_t tile_length = (kThreads / short_side) * kSteps;
    const index_t tiles = ceil_div(long_side, tile_length);
    const int grid = transpose_grid<kernel>(kThreads, tiles, Tuning::kWaves);
    kernel<<<grid, kThreads, 0, to_cuda(stream)>>>(args, rows, cols, narrow, tile_length, tiles);
    TESSERA_CUDA_CHECK_LAUNCH();
    return;
  }
  auto rows_aligned = [&](std::size_t bytes) {
    return is_aligned(in, bytes) && is_aligned(out, bytes) && args.in_pitch % bytes == 0 && args.out_pitch % bytes == 0;
  };
  if constexpr (kBytes == 16 && Tuning::kGridEdgeBlocks) {
    if (rows % Tuning::kGridEdgeMultiple != 0 || cols % Tuning::kGridEdgeMultiple != 0) {
      launch_transpose_skewed<E, 32, Tuning::kSkewedThreads>(args, rows, cols, stream);
      return;
    }
  }
  if (rows_aligned(16)) {
    constexpr int kThreads = Tuning::kVectorThreads;
    using Vector = VectorTileAgent<kBytes, 16, Tuning::kUnitRows, Tuning::kUnitCols, kThreads>;
    launch_transpose_tiles<Tuning, E, Vector, kThreads>(args, rows, cols, stream);
  } else if constexpr (kBytes < 4) {
    if (rows_aligned(4)) {
      constexpr int kThreads = Tuning::kWordThreads;
      using Vector = VectorTileAgent<kBytes, 4, Tuning::kWordUnits, Tuning::kWordUnits, kThreads>;
      launch_transpose_tiles<Tuning, E, Vector, kThreads>(args, rows, cols, stream);
    } else {
      launch_unaligned_tiles<Tuning, E>(args, rows, cols, stream);
    }
  } else {
    launch_unaligned_tiles<Tuning, E>(args, rows, cols, stream);
  }
}

// Large elements (TransposeWordsTuning::kLargeBytes and more: a row of a 3-D block, a slab's
// [n2] line): one warp per element, elements taken in the output's order, the element's words moved
// by the warp's lanes, so that every load and store of a warp is one contiguous run whatever the
// shape. The tiled kernel above would hand a whole tile of such elements to one thread block.
template <class W, int Threads>
__global__ void __launch_bounds__(Threads)
    transpose_large_kernel(const W* __restrict__ in, W* __restrict__ out, index_t rows, index_t cols, index_t ld_in,
                           index_t ld_out, int count) {
  const index_t elements = rows * cols;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const index_t warps = static_cast<index_t>(gridDim.x) * (Threads / 32);
  for (index_t e = static_cast<index_t>(blockIdx.x) * (Threads / 32) + static_cast<index_t>(threadIdx.x / 32); e < elements;
       e += warps) {
    const index_t j = e / rows, i = e - j * rows;  // output row j, column i
    const W* src = in + (i * ld_in + j) * count;
    W* dst = out + (j * ld_out + i) * count;
    for (int w = lane; w < count; w += 32) dst[w] = __ldg(src + w);
  }
}

// Elements of `count` words of W each (any size): a warp each from kLargeBytes on
// (transpose_large_kernel), square tiles of them below (transpose_words_kernel).
template <class W>
void device_transpose_words(const W* in, index_t rows, index_t cols, index_t ld_in, W* out, index_t ld_out, int count,
                            StreamHandle stream) {
  if (rows == 0 || cols == 0) return;
  using Tuning = TransposeWordsTuning;
  constexpr int kThreads = Tuning::kThreads;
  if (static_cast<std::size_t>(count) * sizeof(W) >= Tuning::kLargeBytes) {
    constexpr auto kernel = transpose_large_kernel<W, kThreads>;
    const int grid = transpose_grid<kernel>(kThreads, ceil_div<index_t>(rows * cols, kThreads / 32), Tuning::kWaves);
    kernel<<<grid, kThreads, 0, to_cuda(stream)>>>(in, out, rows, cols, ld_in, ld_out, count);
  } else {
    constexpr auto kernel = transpose_words_kernel<W, kThreads>;
    const index_t tiles_across = ceil_div<index_t>(cols, Tuning::kTile);
    const index_t tiles = ceil_div<index_t>(rows, Tuning::kTile) * tiles_across;
    const int grid = transpose_grid<kernel>(kThreads, tiles, Tuning::kWaves);
    kernel<<<grid, kThreads, 0, to_cuda(stream)>>>(in, out, rows, cols, ld_in, ld_out, count, tiles_across, tiles);
  }
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda::detail
