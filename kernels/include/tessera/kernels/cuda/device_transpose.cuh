// Device-wide out-of-place transpose of a row-major rows x cols block with leading dimensions
// (agents and dispatch): out[j * ld_out + i] = in[i * ld_in + j]. Elements are moved, never
// interpreted, so the passes are instantiated per element size (1, 2, 4, 8, 16 bytes, as unsigned
// words) and any other size moves as a run of smaller words.
//
// Three tile agents, each one thread block's work on one tile, all through shared memory:
//  - vector tiles, where both blocks' rows start on 16-byte boundaries (or, for 1- and 2-byte
//    elements, on 4-byte ones): every global and shared access is one whole vector. A tile is a grid
//    of units of V x V elements (V elements fill one vector); a thread loads the V rows of a unit,
//    transposes the V x V elements in registers (register moves for 4-, 8- and 16-byte elements,
//    byte permutes for 1 and 2), and stores the V output vectors into a transposed tile whose
//    vector slots are XOR-swizzled by row, so that both the stores and the row-wise loads that
//    follow touch each bank once per phase. Full tiles only: no bounds test in the hot loop.
//  - scalar tiles (the classic padded tile, one element per access, several rows and columns per
//    thread): unaligned rows (up to 128 x 64 elements, so that many loads are in flight), and the
//    32 x 32 edges that vector tiles leave. A full tile takes the path without bounds tests; only
//    tiles on the edge test each element.
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

// The one place the transpose is tuned, per element size. Measured on an H100 with
// tessera_bench_transpose --variants (2026-11-24; median ms of 10-15 calls):
//   vector tiles: kUnitRows x kUnitCols units of V x V elements (V = 16 / ElementBytes),
//     kVectorThreads threads, each moving kUnitRows * kUnitCols / kVectorThreads units. Both unit
//     counts are at least 8 (the swizzle's period: 8 16-byte slots span the 32 banks), so that each
//     side of a tile is a run of at least 128 bytes. float 16384^2: 16 x 16 units, 128 threads
//     0.750; 256 threads 0.756; 8 x 8 and 64 threads 0.807; 32 x 16 and 256 threads 0.747;
//     evict-first loads and stores (kStreaming) 0.744-0.753. double 16384 x 8192: 32 x 32 and 256
//     threads 0.749, 16 x 16 and 128 or 256 threads 0.746-0.747. int8 32768^2: 16 x 8 and 128
//     threads 0.781, 8 x 8 and 64 threads 0.798, 8 x 16 and 128 threads 0.789.
//   4-byte vector tiles (1- and 2-byte elements on rows aligned to 4 bytes but not 16): 32 x 32
//     units of 4 x 4 bytes or 2 x 2 halves.
//   scalar tiles (rows not on 16-byte boundaries): kScalarTileRows x kScalarTileCols elements,
//     kScalarThreads threads; more loads in flight per thread and longer runs per row pay.
//     float 16383 x 16385: 32 x 32 and 128 threads 1.702, 64 x 32 1.478, 32 x 64 1.566, 64 x 64
//     and 256 threads 1.545, 128 x 64 and 256 threads 1.335. double 8191 x 16385: 32 x 32 1.161,
//     64 x 32 1.137, 64 x 64 1.088. int8 32767 x 32769: 32 x 32 3.529, 64 x 64 3.306, 64 x 128
//     3.500. int16 32767 x 16385: 32 x 32 2.712, 64 x 64 2.291.
//   edge tiles: the scalar tiles of the strips beside vector tiles, kEdgeTile square. Small: the
//     launch's registers and shared memory are the larger of its two agents' (64 x 64 edge tiles
//     took double 16384 x 8192 from 0.749 to 0.803 and float 1000^2 from 0.010 to 0.013).
//   skinny tiles: kSkinnySteps elements per thread.
//   kWaves: the grid is at most this many waves of resident thread blocks; each block then loops.
template <int ElementBytes>
struct TransposeTuning {
  static constexpr int kUnitRows = ElementBytes == 1 ? 16 : ElementBytes >= 8 ? 32 : 16;
  static constexpr int kUnitCols = ElementBytes == 1 ? 8 : ElementBytes >= 8 ? 32 : 16;
  static constexpr int kVectorThreads = ElementBytes >= 8 ? 256 : 128;
  static constexpr int kWordUnits = 32;
  static constexpr int kWordThreads = 256;
  static constexpr int kScalarTileRows = ElementBytes == 16 ? 32 : ElementBytes == 4 ? 128 : 64;
  static constexpr int kScalarTileCols = ElementBytes == 16 ? 32 : 64;
  static constexpr int kScalarThreads = ElementBytes == 16 ? 128 : 256;
  static constexpr int kEdgeTile = 32;
  static constexpr int kSkinnyThreads = 256;
  static constexpr int kSkinnySteps = ElementBytes <= 2 ? 16 : 32 / ElementBytes;
  static constexpr int kWaves = 32;
  static constexpr bool kStreaming = false;  // evict-first loads and stores (ld.global.cs / st.global.cs)
};

// Where the two blocks are: byte pointers and row pitches (leading dimension x element size).
struct TransposeArgs {
  const unsigned char* in;
  unsigned char* out;
  std::size_t in_pitch;
  std::size_t out_pitch;
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

template <class W, bool kStreaming>
__device__ __forceinline__ W load_word(const unsigned char* p) {
  if constexpr (kStreaming) {
    return __ldcs(reinterpret_cast<const W*>(p));
  } else {
    return __ldg(reinterpret_cast<const W*>(p));
  }
}

template <class W, bool kStreaming>
__device__ __forceinline__ void store_word(unsigned char* p, const W& w) {
  if constexpr (kStreaming) {
    __stcs(reinterpret_cast<W*>(p), w);
  } else {
    *reinterpret_cast<W*>(p) = w;
  }
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

template <int VecBytes, bool kStreaming>
__device__ __forceinline__ void load_vector_words(const unsigned char* p, unsigned (&w)[VecBytes / 4]) {
  if constexpr (VecBytes == 16) {
    const uint4 v = load_word<uint4, kStreaming>(p);
    w[0] = v.x;
    w[1] = v.y;
    w[2] = v.z;
    w[3] = v.w;
  } else {
    static_assert(VecBytes == 4, "vector tiles move 16- or 4-byte vectors");
    w[0] = load_word<unsigned, kStreaming>(p);
  }
}

// ---- agents --------------------------------------------------------------------------------------

// Vector tiles (see the top of the file). Shared memory holds the transposed tile: kTileCols rows
// (output rows) of kUnitRows vector slots, slot `chunk` of row `row` at chunk ^ ((row / V) % kSwizzle).
// Loading, the kSwizzle threads of one bank phase hold consecutive unit columns of one unit row,
// so they write one slot column of rows in different swizzle classes: distinct banks. Storing,
// they read consecutive slots of one row: a permutation of one 128-byte line.
template <int ElementBytes, int VecBytes, int UnitRows, int UnitCols, int Threads, bool kStreaming>
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
      for (int k = 0; k < V; ++k) load_vector_words<VecBytes, kStreaming>(p + k * a.in_pitch, loaded[u][k]);
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
      store_word<Vec, kStreaming>(tile_out + static_cast<std::size_t>(row) * a.out_pitch + chunk * VecBytes,
                                  s.slot[slot_of(row, chunk)]);
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
template <class E, int TileRows, int TileCols, int Threads, bool kStreaming>
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
          v[g][k] = load_word<E, kStreaming>(src + static_cast<std::size_t>(r) * a.in_pitch + 32 * g * kElementBytes);
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
          store_word<E, kStreaming>(dst + static_cast<std::size_t>(c) * a.out_pitch + 32 * g * kElementBytes, at(s, c, r));
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

// Skinny blocks. Narrow (cols < 32): a tile is all `cols` columns of (Threads / cols) * Steps rows;
// thread t < (Threads / cols) * cols reads column t % cols of rows t / cols + k * (Threads / cols),
// which for a contiguous block is one run of the whole tile; the transposed tile is written out row
// by row (cols runs of the tile's rows). Wide (rows < 32): the mirror image. Rows of the transposed
// tile are an odd number of max(element, 4)-byte bank units long.
template <class E, int Threads, int Steps, bool kStreaming>
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
          v[k] = load_word<E, kStreaming>(src + static_cast<std::size_t>(k * per_step) * a.in_pitch);
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
        store_word<E, kStreaming>(dst + static_cast<std::size_t>(w.line) * a.out_pitch + w.offset * kElementBytes,
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
          v[k] = load_word<E, kStreaming>(src + static_cast<std::size_t>(w.line) * a.in_pitch + w.offset * kElementBytes);
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
          store_word<E, kStreaming>(dst + static_cast<std::size_t>(k * per_step) * a.out_pitch,
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
// the size and the addresses): a 32 x 32-element tile per step, one thread per word of the output,
// the input read through the read-only cache (a tile's input rows are few lines, read by all its
// threads). Bounds-tested throughout: the path of odd sizes and misaligned elements, not of speed.
template <class W, int Threads>
__global__ void __launch_bounds__(Threads)
    transpose_words_kernel(const W* __restrict__ in, W* __restrict__ out, index_t rows, index_t cols, index_t ld_in,
                           index_t ld_out, int count, index_t tiles_across, index_t tiles) {
  constexpr int kTile = 32;
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
                                 kVectorTiles ? Tuning::kEdgeTile : Tuning::kScalarTileCols, Threads, Tuning::kStreaming>;
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

// Transposes rows x cols elements of E (aligned to their size) at `in` (leading dimension ld_in)
// into `out` (leading dimension ld_out). Tuning: TransposeTuning, or another with its members.
template <class Tuning, class E>
void device_transpose(const E* in, index_t rows, index_t cols, index_t ld_in, E* out, index_t ld_out,
                      StreamHandle stream) {
  if (rows == 0 || cols == 0) return;
  constexpr int kBytes = static_cast<int>(sizeof(E));
  const TransposeArgs args{reinterpret_cast<const unsigned char*>(in), reinterpret_cast<unsigned char*>(out),
                           static_cast<std::size_t>(ld_in) * kBytes, static_cast<std::size_t>(ld_out) * kBytes};
  constexpr index_t kSkinny = 32;
  if (rows < kSkinny || cols < kSkinny) {
    constexpr int kThreads = Tuning::kSkinnyThreads, kSteps = Tuning::kSkinnySteps;
    using Agent = SkinnyTileAgent<E, kThreads, kSteps, Tuning::kStreaming>;
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
  if (rows_aligned(16)) {
    constexpr int kThreads = Tuning::kVectorThreads;
    using Vector = VectorTileAgent<kBytes, 16, Tuning::kUnitRows, Tuning::kUnitCols, kThreads, Tuning::kStreaming>;
    launch_transpose_tiles<Tuning, E, Vector, kThreads>(args, rows, cols, stream);
  } else if constexpr (kBytes < 4) {
    if (rows_aligned(4)) {
      constexpr int kThreads = Tuning::kWordThreads;
      using Vector = VectorTileAgent<kBytes, 4, Tuning::kWordUnits, Tuning::kWordUnits, kThreads, Tuning::kStreaming>;
      launch_transpose_tiles<Tuning, E, Vector, kThreads>(args, rows, cols, stream);
    } else {
      launch_transpose_tiles<Tuning, E, NoVectorTiles, Tuning::kScalarThreads>(args, rows, cols, stream);
    }
  } else {
    launch_transpose_tiles<Tuning, E, NoVectorTiles, Tuning::kScalarThreads>(args, rows, cols, stream);
  }
}

// Elements of `count` words of W each (any size); see transpose_words_kernel.
template <class W>
void device_transpose_words(const W* in, index_t rows, index_t cols, index_t ld_in, W* out, index_t ld_out, int count,
                            StreamHandle stream) {
  if (rows == 0 || cols == 0) return;
  constexpr int kThreads = 256;
  constexpr auto kernel = transpose_words_kernel<W, kThreads>;
  const index_t tiles_across = ceil_div<index_t>(cols, 32);
  const index_t tiles = ceil_div<index_t>(rows, 32) * tiles_across;
  const int grid = transpose_grid<kernel>(kThreads, tiles, 32);
  kernel<<<grid, kThreads, 0, to_cuda(stream)>>>(in, out, rows, cols, ld_in, ld_out, count, tiles_across, tiles);
  TESSERA_CUDA_CHECK_LAUNCH();
}

}  // namespace tessera::kernels::cuda::detail
