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
//  - scalar tiles (the classic padded tile, one element per access, several rows and columns per
//    thread): unaligned rows where the tuning does not take skewed tiles (up to 128 x 64
//    elements, so that many loads are in flight), and the 32 x 32 edges that vector tiles leave. A
//    full tile takes the path without bounds tests; only tiles on the edge test each element.
//  - skewed tiles in a two-dimensional grid (transpose_skewed_kernel): padded tiles, the tile's
//    place from the block index (no tile-index division, no second agent's registers), with each
//    output row cut on 32-byte sector boundaries, so that no sector inside an output row is written
//    in part by two thread blocks; the path for 4- and 8-byte rows off 16-byte boundaries, and for
//    16-byte elements on blocks whose sides are not multiples of 32 (tuning/transpose.cuh says which).
//    For 1- and 2-byte elements (rows off 4-byte boundaries) the same cut with every global access
//    an aligned 4-byte word (transpose_skewed_words_kernel): each input row's words funnel-shifted
//    into place and transposed in registers on the way into shared memory, each output word cut
//    from two neighbouring words of its row; for 2-byte elements the rows first reach shared memory
//    by cp.async (transpose_skewed_words_kernel<..., kStaged>).
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
#include "tessera/kernels/cuda/async_copy.cuh"
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
// bytes of one input row of the block (cols x element size: skewed word tiles read no further).
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
template <int ElementBytes, int VecBytes, int UnitRows, int UnitCols, int Threads>
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
  using Vec = word_t<VecBytes>;

  struct Storage {
    Vec slot[kTileCols * UnitRows];
  };

  __device__ static __forceinline__ int slot_of(int row, int chunk) {
    return row * UnitRows + (chunk ^ ((row / V) % kSwizzle));
  }

  __device__ static __forceinline__ void move(Storage& s, const TransposeArgs& a, index_t r0, index_t c0) {
    unsigned loaded[kUnitsPerThread][V][kWords];
    const unsigned char* tile_in = a.in + static_cast<std::size_t>(r0) * a.in_pitch + static_cast<std::size_t>(c0) * ElementBytes;
#pragma unroll
    for (int u = 0; u < kUnitsPerThread; ++u) {
      const int q = static_cast<int>(threadIdx.x) + u * Threads;
      const int unit_row = q / UnitCols, unit_col = q % UnitCols;
      const unsigned char* p = tile_in + static_cast<std::size_t>(unit_row * V) * a.in_pitch + unit_col * VecBytes;
#pragma unroll
      for (int k = 0; k < V; ++k) load_vector_words<VecBytes>(p + k * a.in_pitch, loaded[u][k]);
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
      store_word<Vec>(tile_out + static_cast<std::size_t>(row) * a.out_pitch + chunk * VecBytes, s.slot[slot_of(row, chunk)]);
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

// The sector the skewed tiles cut each output row on, and their grid: a thread block per column of
// tiles (at most 2^31 - 1 of them), walking down the tile rows (at most 65535 at once); one more
// tile row than rows / tile_rows rounded up, so that the last rows are covered whatever the cut.
inline constexpr int kSkewSector = 32;

struct SkewedGrid {
  index_t tiles_across, tile_rows;
  dim3 grid;
};

inline SkewedGrid skewed_grid(index_t rows, index_t cols, index_t rows_per_tile, index_t cols_per_tile, index_t skew) {
  SkewedGrid g{ceil_div<index_t>(cols, cols_per_tile), ceil_div<index_t>(rows + skew - 1, rows_per_tile), dim3()};
  g.grid = dim3(static_cast<unsigned>(std::min<index_t>(g.tiles_across, 0x7fffffff)),
                static_cast<unsigned>(std::min<index_t>(g.tile_rows, 65535)));
  return g;
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
// element per access, all of a thread's loads in flight before the barrier: in registers (sm_90:
// 64 for 64 x 64 floats at 4 blocks of 256 threads per SM), or with kAsync by cp.async straight
// into the tile (32 x 32 doubles at 8 blocks of 256 threads, 32 registers).
template <class E, int kTile, int Threads, int MinBlocksPerSm = 1, bool kAsync = false>
__global__ void __launch_bounds__(Threads, MinBlocksPerSm)
    transpose_skewed_kernel(TransposeArgs a, index_t rows, index_t cols, index_t tiles_across, index_t tile_rows) {
  constexpr int kSector = kSkewSector;
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
      if constexpr (kAsync) {
        // Straight into the tile by cp.async: no register waits for the loads.
#pragma unroll
        for (int g = 0; g < kGroups; ++g)
#pragma unroll
          for (int k = 0; k < kReadSteps; ++k) {
            const int r = y + k * kWarps, c = x + 32 * g;
            const index_t row = first + r;
            if ((kEvenRead || r < kInRows) && (full || (row >= 0 && row < rows && c0 + c < cols)))
              copy_async<static_cast<int>(sizeof(E))>(&tile[c][r],
                                                      a.in + (offset + k * kWarps * pitch + 32 * g * static_cast<index_t>(sizeof(E))));
          }
        copy_async_commit();
        copy_async_wait<0>();
      } else {
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
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kSteps; ++k) {
        const int c = y + k * kWarps;
        if (full || c0 + c < cols) {
          const std::size_t at = static_cast<std::size_t>(c0 + c) * a.out_pitch + static_cast<std::size_t>(r0) * sizeof(E);
          const int t = static_cast<int>((out_address + at) % kSector) / static_cast<int>(sizeof(E));
          // Byte `dst` of the output holds tile row kSkew - t (negative in the first output row where
          // t > r0: only the rows r >= 0 are stored).
          const index_t dst = static_cast<index_t>(at) - static_cast<index_t>(t) * static_cast<index_t>(sizeof(E));
#pragma unroll
          for (int g = 0; g < kGroups; ++g) {
            const int j = x + 32 * g;
            const index_t r = r0 - t + j;
            if (full || (r >= 0 && r < rows))
              store_word<E>(a.out + (dst + static_cast<index_t>(j) * static_cast<index_t>(sizeof(E))), tile[c][kSkew - t + j]);
          }
        }
      }
      __syncthreads();
    }
}

template <class E, int kTile, int Threads, int MinBlocksPerSm = 1, bool kAsync = false>
void launch_transpose_skewed(const TransposeArgs& args, index_t rows, index_t cols, StreamHandle stream) {
  constexpr auto kernel = transpose_skewed_kernel<E, kTile, Threads, MinBlocksPerSm, kAsync>;
  const SkewedGrid g = skewed_grid(rows, cols, kTile, kTile, kSkewSector / static_cast<index_t>(sizeof(E)));
  kernel<<<g.grid, Threads, 0, to_cuda(stream)>>>(args, rows, cols, g.tiles_across, g.tile_rows);
  TESSERA_CUDA_CHECK_LAUNCH();
}

// Skewed tiles of 1- and 2-byte elements moved as 4-byte words (transpose_skewed_words_kernel): the
// skewed tiles above, whose one-element accesses would take four (bytes) or two (halves) times the
// instructions of a float's, with every global access an aligned word. A tile is kTileRows input
// rows by kTileCols columns, kInWords words of each input row and kOutWords of each output row.
// Warp y takes groups of kPerWord consecutive tile rows; for each it loads the rows' words as the
// aligned words around them (lane 31 one more), shifts each with its right-hand neighbour's (a
// funnel shift by the row's misalignment) into the row's own words, transposes each lane's kPerWord
// x kPerWord block of elements in registers (8 byte permutes for bytes, 2 for halves) and stores the
// kPerWord resulting words into the transposed tile: row c of it (output row c0 + c) holds the tile
// rows' elements of column c, a word per group. After the barrier a warp writes one output row, cut
// on sector boundaries as above: lane m's word is cut from two neighbouring words of that row by the
// row's phase ((kSkew - t) % kPerWord). Transposed row c starts at word c * kGroups + c / kPerWord:
// the stores of a warp (rows kPerWord apart from lane to lane) fall into 32 distinct banks, the
// output's loads are consecutive words. Full tiles take a path without bounds tests; on the edges,
// words that cross the block's ends are read and written a piece at a time (nothing outside the
// block is touched).
template <int kE>
__device__ __forceinline__ unsigned load_word_part(const unsigned char* word, int from, int to) {
  unsigned v = 0;
#pragma unroll
  for (int b = 0; b < 4; b += kE)
    if (b >= from && b < to) v |= static_cast<unsigned>(load_word<word_t<kE>>(word + b)) << (8 * b);
  return v;
}

// Bytes [from, to) of the word at byte `at` of `base` (at may be negative where from > -at: the
// pointer is formed only for the bytes stored).
template <int kE>
__device__ __forceinline__ void store_word_part(unsigned char* base, index_t at, unsigned v, int from, int to) {
#pragma unroll
  for (int b = 0; b < 4; b += kE)
    if (b >= from && b < to) store_word<word_t<kE>>(base + (at + b), static_cast<word_t<kE>>(v >> (8 * b)));
}

template <class E, int Threads, int kInWords, int kOutWords>
struct SkewedWordTile {
  static constexpr int kE = static_cast<int>(sizeof(E));
  static_assert(kE == 1 || kE == 2, "skewed word tiles move 1- and 2-byte elements");
  static_assert(kInWords % 32 == 0 && kOutWords % 32 == 0, "whole warps");
  static constexpr int kSector = kSkewSector;
  static constexpr int kPerWord = 4 / kE;
  static constexpr int kTileRows = kOutWords * kPerWord, kTileCols = kInWords * kPerWord;
  static constexpr int kSkew = kSector / kE, kInRows = kTileRows + kSkew;
  static constexpr int kGroups = kInRows / kPerWord;  // words of a transposed row
  // Bytes a full tile reads on each side of its columns: the aligned word at or below a row's first
  // byte, and the word past its last.
  static constexpr index_t kReachBefore = 4, kReachAfter = 4 * (kInWords + 1);
  static constexpr int kWarps = Threads / 32, kInHalves = kInWords / 32, kOutHalves = kOutWords / 32;
  static constexpr int kGroupSteps = ceil_div(kGroups, kWarps), kWriteSteps = kTileCols / kWarps;
  static constexpr int kBatch = std::max(1, std::min(kGroupSteps, 8 / (kPerWord * kInHalves)));
  static constexpr int kStorageWords = kTileCols * kGroups + kTileCols / kPerWord + 1;
  static constexpr std::size_t kStorageBytes = 4 * static_cast<std::size_t>(kStorageWords);
  static_assert(Threads % 32 == 0 && kTileCols % kWarps == 0, "whole warps, whole output steps");

  __device__ static __forceinline__ int word_at(int c, int g) { return c * kGroups + c / kPerWord + g; }

  // The kPerWord rows of group g, lane's words (lane + 32 h, and for the last lane word kInWords in
  // `extra`), shifted by `shift[i]` bits: transposed and stored.
  __device__ static __forceinline__ void transpose_store(unsigned* tile, int g, const unsigned (&w)[kPerWord][kInHalves],
                                                         const unsigned (&extra)[kPerWord], const unsigned (&shift)[kPerWord]) {
    const int lane = static_cast<int>(threadIdx.x) % 32;
#pragma unroll
    for (int h = 0; h < kInHalves; ++h) {
      unsigned s[kPerWord];
#pragma unroll
      for (int i = 0; i < kPerWord; ++i) {
        const unsigned right = __shfl_sync(0xffffffffu, w[i][h], (lane + 1) % 32);
        unsigned wrap = extra[i];
        if constexpr (kInHalves > 1) wrap = h + 1 < kInHalves ? __shfl_sync(0xffffffffu, w[i][h + 1 < kInHalves ? h + 1 : h], 0) : extra[i];
        s[i] = __funnelshift_r(w[i][h], lane == 31 ? wrap : right, shift[i]);
      }
      unsigned t[kPerWord];
      if constexpr (kE == 1) {
        transpose_4x4_bytes(s[0], s[1], s[2], s[3], t);
      } else {
        t[0] = __byte_perm(s[0], s[1], 0x5410);
        t[1] = __byte_perm(s[0], s[1], 0x7632);
      }
      unsigned* column = tile + word_at(kPerWord * (lane + 32 * h), g);
#pragma unroll
      for (int k = 0; k < kPerWord; ++k) column[k * kGroups] = t[k];  // rows c .. c + kPerWord - 1: same c / kPerWord
    }
  }

  // The tile's input rows loaded, transposed and stored into `tile` (before a barrier).
  template <bool kFull>
  __device__ static __forceinline__ void load(unsigned* tile, const TransposeArgs& a, index_t rows, index_t r0, index_t c0) {
    const int lane = static_cast<int>(threadIdx.x) % 32, y = static_cast<int>(threadIdx.x) / 32;
    const index_t first = r0 - kSkew, col_bytes = c0 * kE;
    const auto in_address = reinterpret_cast<std::uintptr_t>(a.in);
    if constexpr (kFull) {
      // Group g's first row starts kPerWord * g pitches after tile row 0.
      const std::uintptr_t start_0 = in_address + static_cast<std::uintptr_t>(first) * a.in_pitch + col_bytes;
#pragma unroll
      for (int k0 = 0; k0 < kGroupSteps; k0 += kBatch) {
        unsigned w[kBatch][kPerWord][kInHalves], extra[kBatch][kPerWord];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int g = y + (k0 + b) * kWarps;
          if (k0 + b < kGroupSteps && g < kGroups) {
#pragma unroll
            for (int i = 0; i < kPerWord; ++i) {
              const std::uintptr_t start = start_0 + static_cast<std::uintptr_t>(kPerWord * g + i) * a.in_pitch;
              const auto* base = reinterpret_cast<const unsigned*>(start & ~std::uintptr_t(3)) + lane;
#pragma unroll
              for (int h = 0; h < kInHalves; ++h) w[b][i][h] = __ldg(base + 32 * h);
              extra[b][i] = 0;
              if (lane == 31 && (start & 3) != 0) extra[b][i] = __ldg(base + kInWords - 31);
            }
          }
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int g = y + (k0 + b) * kWarps;
          if (k0 + b < kGroupSteps && g < kGroups) {
            unsigned shift[kPerWord];
#pragma unroll
            for (int i = 0; i < kPerWord; ++i)
              shift[i] = 8 * static_cast<unsigned>((start_0 + static_cast<std::uintptr_t>(kPerWord * g + i) * a.in_pitch) & 3);
            transpose_store(tile, g, w[b], extra[b], shift);
          }
        }
      }
    } else {
      const auto row_bytes = static_cast<index_t>(a.in_row_bytes);
      for (int g = y; g < kGroups; g += kWarps) {
        unsigned w[kPerWord][kInHalves] = {}, extra[kPerWord] = {}, shift[kPerWord];
#pragma unroll
        for (int i = 0; i < kPerWord; ++i) {
          const index_t row = first + kPerWord * g + i;
          const std::uintptr_t start = in_address + static_cast<std::uintptr_t>(row) * a.in_pitch + col_bytes;
          shift[i] = 8 * static_cast<unsigned>(start & 3);
          if (row >= 0 && row < rows) {
            const auto* base = reinterpret_cast<const unsigned char*>(start & ~std::uintptr_t(3));
            const index_t begin = static_cast<index_t>(start & 3) - col_bytes;
            auto part = [&](int j) {
              const index_t at = 4 * static_cast<index_t>(j);
              const int from = static_cast<int>(std::clamp<index_t>(begin - at, 0, 4));
              const int to = static_cast<int>(std::clamp<index_t>(begin + row_bytes - at, 0, 4));
              return from < to ? load_word_part<kE>(base + at, from, to) : 0u;
            };
#pragma unroll
            for (int h = 0; h < kInHalves; ++h) w[i][h] = part(lane + 32 * h);
            if (lane == 31) extra[i] = part(kInWords);
          }
        }
        transpose_store(tile, g, w, extra, shift);
      }
    }
  }

  // Each output row of the transposed tile written out (after the barrier that follows the tile's load).
  template <bool kFull>
  __device__ static __forceinline__ void write(const unsigned* tile, const TransposeArgs& a, index_t rows, index_t cols, index_t r0,
                                               index_t c0) {
    const int lane = static_cast<int>(threadIdx.x) % 32, y = static_cast<int>(threadIdx.x) / 32;
    const unsigned out_misalignment = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(a.out)) & (kSector - 1);
    std::size_t at = static_cast<std::size_t>(c0 + y) * a.out_pitch + static_cast<std::size_t>(r0) * kE;  // (c0 + c, r0)
    const std::size_t at_step = kWarps * a.out_pitch;
#pragma unroll 2
    for (int k = 0; k < kWriteSteps; ++k, at += at_step) {
      const int c = y + k * kWarps;
      if (!kFull && c0 + c >= cols) break;  // the same for the whole warp, and for every later step
      const unsigned t = ((out_misalignment + static_cast<unsigned>(at)) & (kSector - 1)) / kE;
      const unsigned top = kSkew - t;  // tile row of the output row's first element
      const unsigned shift = 8 * kE * (top % kPerWord);
      const unsigned* row = tile + word_at(c, static_cast<int>(top / kPerWord)) + lane;
      // The lane's first word: byte `dst` of the output, before its start where the output row's
      // first element lies in the word's upper bytes (then only those are stored).
      const index_t dst = static_cast<index_t>(at) - static_cast<index_t>(t) * kE + 4 * lane;
#pragma unroll
      for (int h = 0; h < kOutHalves; ++h) {
        const unsigned v = __funnelshift_r(row[32 * h], row[32 * h + 1], shift);
        const index_t word = dst + 128 * h;
        if constexpr (kFull) {
          store_word<unsigned>(a.out + word, v);
        } else {
          const index_t r = r0 - t + kPerWord * (lane + 32 * h);  // the word's first input row
          const int from = static_cast<int>(std::clamp<index_t>(-r, 0, kPerWord)) * kE;
          const int to = static_cast<int>(std::clamp<index_t>(rows - r, 0, kPerWord)) * kE;
          if (from == 0 && to == 4) {
            store_word<unsigned>(a.out + word, v);
          } else if (from < to) {
            store_word_part<kE>(a.out, word, v, from, to);
          }
        }
      }
    }
  }

};

// The word tiles fed by cp.async: a full tile's input rows are first copied into a staging area of
// shared memory in aligned 16-byte chunks (row i's from the 16-byte boundary at or below its first
// byte: kInWords / 4 + 1 chunks cover its words and the one after), so that all of the tile's loads
// are in flight at once and no register waits for them; the transposition then reads each lane's
// word and its right-hand neighbour from the staging area and goes on as above. Edge tiles take the
// register path (SkewedWordTile::load<false>). Staged rows are contiguous, kChunks chunks each: a
// warp's copies are consecutive 16-byte slots and its reads consecutive words.
template <class E, int Threads, int kInWords, int kOutWords>
struct SkewedStagedWordTile : SkewedWordTile<E, Threads, kInWords, kOutWords> {
  using Base = SkewedWordTile<E, Threads, kInWords, kOutWords>;
  using Base::kE, Base::kPerWord, Base::kTileRows, Base::kTileCols, Base::kSkew, Base::kInRows, Base::kGroups, Base::kWarps,
      Base::kInHalves, Base::kGroupSteps;
  static constexpr int kChunks = kInWords / 4 + 1, kStageStride = 4 * kChunks;  // words of a staged row
  static constexpr int kStageWords = kInRows * kStageStride;
  static constexpr std::size_t kStageOffset = (Base::kStorageBytes + 15) / 16 * 16;  // bytes: cp.async needs 16-byte alignment
  static constexpr std::size_t kStorageBytes = kStageOffset + 4 * static_cast<std::size_t>(kStageWords);
  // Bytes a full tile may read on each side of its columns: a row's chunks start up to 15 bytes
  // before its first column and end up to 16 after its last.
  static constexpr index_t kReachBefore = 16, kReachAfter = 4 * kInWords + 16;
  static_assert(kReachBefore >= Base::kReachBefore && kReachAfter >= Base::kReachAfter, "staged tiles reach no less");

  // Issue the copies of the tile at (r0, c0) into `stage` and commit them as one group.
  __device__ static __forceinline__ void stage(unsigned* stage, const TransposeArgs& a, index_t r0, index_t c0) {
    const std::uintptr_t start_0 =
        reinterpret_cast<std::uintptr_t>(a.in) + static_cast<std::uintptr_t>(r0 - kSkew) * a.in_pitch + static_cast<std::uintptr_t>(c0 * kE);
    for (int q = static_cast<int>(threadIdx.x); q < kInRows * kChunks; q += Threads) {
      const int i = q / kChunks, k = q - i * kChunks;
      const std::uintptr_t chunk = ((start_0 + static_cast<std::uintptr_t>(i) * a.in_pitch) & ~std::uintptr_t(15)) + 16 * k;
      copy_async_16(stage + i * kStageStride + 4 * k, reinterpret_cast<const void*>(chunk), 16);
    }
    copy_async_commit();
  }

  // The staged rows shifted into place, transposed and stored into the tile (after the copies'
  // wait and a barrier).
  __device__ static __forceinline__ void transpose_staged(unsigned* tile, const unsigned* stage, const TransposeArgs& a, index_t r0,
                                                          index_t c0) {
    const int lane = static_cast<int>(threadIdx.x) % 32, y = static_cast<int>(threadIdx.x) / 32;
    const unsigned start_0 = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(a.in) +
                                                   static_cast<std::uintptr_t>(r0 - kSkew) * a.in_pitch + static_cast<std::uintptr_t>(c0 * kE)) & 15u;
    const unsigned pitch = static_cast<unsigned>(a.in_pitch & 15);
#pragma unroll
    for (int k = 0; k < kGroupSteps; ++k) {
      const int g = y + k * kWarps;
      if (kGroupSteps * kWarps == kGroups || g < kGroups) {
        const unsigned* row[kPerWord];
        unsigned shift[kPerWord];
#pragma unroll
        for (int i = 0; i < kPerWord; ++i) {
          const int r = kPerWord * g + i;
          const unsigned offset = (start_0 + static_cast<unsigned>(r) * pitch) & 15u;  // of the row's first byte in its first chunk
          row[i] = stage + r * kStageStride + offset / 4 + lane;
          shift[i] = 8 * (offset & 3u);
        }
#pragma unroll
        for (int h = 0; h < kInHalves; ++h) {
          unsigned s[kPerWord];
#pragma unroll
          for (int i = 0; i < kPerWord; ++i) s[i] = __funnelshift_r(row[i][32 * h], row[i][32 * h + 1], shift[i]);
          unsigned t[kPerWord];
          if constexpr (kE == 1) {
            transpose_4x4_bytes(s[0], s[1], s[2], s[3], t);
          } else {
            t[0] = __byte_perm(s[0], s[1], 0x5410);
            t[1] = __byte_perm(s[0], s[1], 0x7632);
          }
          unsigned* column = tile + Base::word_at(kPerWord * (lane + 32 * h), g);
#pragma unroll
          for (int m = 0; m < kPerWord; ++m) column[m * kGroups] = t[m];
        }
      }
    }
  }
};

// The word tile of a launch: fed by cp.async (kStaged) or through registers.
template <class E, int Threads, int kInWords, int kOutWords, bool kStaged>
using SkewedWordTileOf = std::conditional_t<kStaged, SkewedStagedWordTile<E, Threads, kInWords, kOutWords>,
                                            SkewedWordTile<E, Threads, kInWords, kOutWords>>;

// Both word tiles, a tile at a time down each column of tiles: kStaged feeds full tiles by cp.async
// (SkewedStagedWordTile), otherwise through registers (SkewedWordTile); edge tiles always through
// registers, with bounds.
template <class E, int Threads, int MinBlocksPerSm, int kInWords, int kOutWords, bool kStaged>
__global__ void __launch_bounds__(Threads, MinBlocksPerSm)
    transpose_skewed_words_kernel(TransposeArgs a, index_t rows, index_t cols, index_t tiles_across, index_t tile_rows) {
  using Tile = SkewedWordTileOf<E, Threads, kInWords, kOutWords, kStaged>;
  extern __shared__ __align__(16) unsigned storage[];  // Tile::kStorageBytes: the transposed tile (then the staging area)
  unsigned* tile = storage;
  const auto row_bytes = static_cast<index_t>(a.in_row_bytes);
  for (index_t tc = blockIdx.x; tc < tiles_across; tc += gridDim.x) {
    const index_t c0 = tc * Tile::kTileCols, col_bytes = c0 * Tile::kE;
    // Every byte a full tile reads lies inside its own row.
    const bool inner_cols = col_bytes >= Tile::kReachBefore && col_bytes + Tile::kReachAfter <= row_bytes;
    for (index_t tr = blockIdx.y; tr < tile_rows; tr += gridDim.y) {
      const index_t r0 = tr * Tile::kTileRows;
      if (inner_cols && r0 >= Tile::kSkew && r0 + Tile::kTileRows <= rows) {
        if constexpr (kStaged) {
          unsigned* stage = storage + Tile::kStageOffset / 4;
          Tile::stage(stage, a, r0, c0);
          copy_async_wait<0>();
          __syncthreads();
          Tile::transpose_staged(tile, stage, a, r0, c0);
        } else {
          Tile::template load<true>(tile, a, rows, r0, c0);
        }
        __syncthreads();
        Tile::template write<true>(tile, a, rows, cols, r0, c0);
      } else {
        Tile::template load<false>(tile, a, rows, r0, c0);
        __syncthreads();
        Tile::template write<false>(tile, a, rows, cols, r0, c0);
      }
      __syncthreads();  // the next tile of this thread block reuses the storage
    }
  }
}

template <class E, int Threads, int MinBlocksPerSm = 1, int kInWords = 32, int kOutWords = 32, bool kStaged = false>
void launch_transpose_skewed_words(const TransposeArgs& args, index_t rows, index_t cols, StreamHandle stream) {
  using Tile = SkewedWordTileOf<E, Threads, kInWords, kOutWords, kStaged>;
  constexpr auto kernel = transpose_skewed_words_kernel<E, Threads, MinBlocksPerSm, kInWords, kOutWords, kStaged>;
  // Set before every launch: the same kernel instance may live in more than one loaded module.
  if constexpr (Tile::kStorageBytes > 48 * 1024)
    TESSERA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Tile::kStorageBytes)));
  const SkewedGrid g = skewed_grid(rows, cols, Tile::kTileRows, Tile::kTileCols, Tile::kSkew);
  kernel<<<g.grid, Threads, Tile::kStorageBytes, to_cuda(stream)>>>(args, rows, cols, g.tiles_across, g.tile_rows);
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
// on 4-byte ones either): skewed tiles (moved as words for 1- and 2-byte elements) or scalar tiles,
// as Tuning::kSkewedTiles says.
template <class Tuning, class E>
void launch_unaligned_tiles(const TransposeArgs& args, index_t rows, index_t cols, StreamHandle stream) {
  constexpr int kBytes = static_cast<int>(sizeof(E));
  constexpr bool kAsync = Tuning::kSkewedAsync;
  constexpr bool kStaged = Tuning::kSkewedWordsStaged;
  if constexpr (Tuning::kSkewedTiles && kBytes < 4) {
    launch_transpose_skewed_words<E, Tuning::kSkewedThreads, Tuning::kSkewedBlocksPerSm, Tuning::kSkewedInWords,
                                  Tuning::kSkewedOutWords, kStaged>(args, rows, cols, stream);
  } else if constexpr (Tuning::kSkewedTiles) {
    launch_transpose_skewed<E, Tuning::kSkewedTile, Tuning::kSkewedThreads, Tuning::kSkewedBlocksPerSm, kAsync>(args, rows, cols,
                                                                                                               stream);
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
