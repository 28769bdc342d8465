// The paths of the transpose for rows that are not on 16-byte boundaries, each forced through the
// tuning (TransposeTuning::kSkewedTiles, kSkewedInWords/kSkewedOutWords, kSkewedWordsStaged,
// kSkewedAsync), against the CPU backend on the same random bytes: skewed tiles (moved as words for
// 1- and 2-byte elements, with the tuning's words a row and with 32; each element size loaded both
// ways, by registers and by cp.async) and scalar tiles, 1-, 2-, 4- and 8-byte elements (16-byte
// elements always start their rows on 16-byte boundaries), shapes around the edges of both kinds of
// tiles, and layouts in which every row has its own misalignment (odd leading dimensions), one
// block is aligned and the other is not, and blocks start off a 16-byte (and, for 1- and 2-byte
// elements, a 4-byte) boundary. The output allocation is poisoned first: the padding past each
// output row and the guard zones must still hold the poison. The input is a cudaMalloc of exactly
// the bytes up to the end of its last row, so that compute-sanitizer memcheck sees any read past
// the block.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "tessera/kernels/cuda/device_transpose.cuh"
#include "tessera/kernels/transpose.hpp"

namespace tessera::gpu_test {
namespace {

namespace detail = kernels::cuda::detail;

enum class Path { scalar, skewed, skewed_narrow, skewed_other_feed, skewed_async };

template <int Bytes, Path P>
struct ForcedTuning : detail::TransposeTuning<Bytes> {
  static constexpr bool kSkewedTiles = P != Path::scalar;
  // The word tiles' other way in: cp.async for bytes, registers for halves.
  static constexpr bool kSkewedWordsStaged =
      P == Path::skewed_other_feed ? !detail::TransposeTuning<Bytes>::kSkewedWordsStaged : detail::TransposeTuning<Bytes>::kSkewedWordsStaged;
  // The skewed tiles of 4- and 8-byte elements loaded by cp.async (or by registers, where that is the tuning's).
  static constexpr bool kSkewedAsync = (P == Path::skewed_async) != detail::TransposeTuning<Bytes>::kSkewedAsync;
};

// The skewed word tiles of 1- and 2-byte elements with one word of each input and output row a lane
// (the tuning takes two of each input row).
template <int Bytes>
struct ForcedTuning<Bytes, Path::skewed_narrow> : detail::TransposeTuning<Bytes> {
  static constexpr bool kSkewedTiles = true;
  static constexpr int kSkewedInWords = 32, kSkewedOutWords = 32;
};

const char* path_name(Path p) {
  switch (p) {
    case Path::skewed: return "skewed tiles";
    case Path::skewed_narrow: return "skewed word tiles of 32 words";
    case Path::skewed_other_feed: return "skewed word tiles fed the other way (cp.async / registers)";
    case Path::skewed_async: return "skewed tiles loaded the other way (cp.async / registers)";
    case Path::scalar: break;
  }
  return "scalar tiles";
}

struct Layout {
  index_t ld_in, ld_out;
  std::size_t in_offset, out_offset;  // bytes past an aligned address
};

std::string describe(int bytes, Path path, index_t rows, index_t cols, const Layout& l) {
  return std::to_string(bytes) + "-byte elements, " + path_name(path) + ", " + std::to_string(rows) + " x " + std::to_string(cols) + ", ld_in " + std::to_string(l.ld_in) + ", ld_out " +
         std::to_string(l.ld_out) + ", offsets " + std::to_string(l.in_offset) + "/" + std::to_string(l.out_offset) +
         ", seed " + std::to_string(test_seed());
}

// The input of exactly the bytes up to the end of its last row (past the offset).
class ExactInput {
 public:
  explicit ExactInput(std::size_t bytes) { TESSERA_CUDA_CHECK(cudaMalloc(&base_, std::max<std::size_t>(bytes, 1))); }
  ~ExactInput() { cudaFree(base_); }
  ExactInput(const ExactInput&) = delete;
  ExactInput& operator=(const ExactInput&) = delete;
  unsigned char* data() const { return static_cast<unsigned char*>(base_); }

 private:
  void* base_ = nullptr;
};

template <int Bytes, Path P>
void check_path(index_t rows, index_t cols, const Layout& l) {
  using E = detail::word_t<Bytes>;
  const std::size_t in_used = static_cast<std::size_t>((rows - 1) * l.ld_in + cols) * Bytes;
  const auto out_bytes = static_cast<index_t>(static_cast<std::size_t>(cols * l.ld_out) * Bytes);
  std::mt19937_64 gen(test_seed() + static_cast<std::uint64_t>(rows * 7919 + cols * 31 + l.ld_in * 3 + Bytes));
  std::vector<unsigned char> host(static_cast<std::size_t>(rows * l.ld_in) * Bytes);
  for (auto& b : host) b = static_cast<unsigned char>(gen());
  ExactInput in(l.in_offset + in_used);
  kernels::copy_from_host(cuda_queue(), in.data() + l.in_offset, host.data(), in_used);
  DeviceArray<unsigned char> out(out_bytes, static_cast<index_t>(l.out_offset));
  out.poison();

  // The layout takes the path under test: rows not on 16-byte boundaries (nor on 4-byte ones for
  // 1- and 2-byte elements, whose 4-byte vector tiles come first).
  const auto rows_aligned = [&](std::size_t a) {
    return l.in_offset % a == 0 && l.out_offset % a == 0 && (l.ld_in * Bytes) % static_cast<index_t>(a) == 0 &&
           (l.ld_out * Bytes) % static_cast<index_t>(a) == 0;
  };
  ASSERT_FALSE(rows_aligned(16) || (Bytes < 4 && rows_aligned(4))) << describe(Bytes, P, rows, cols, l);

  detail::device_transpose<ForcedTuning<Bytes, P>>(reinterpret_cast<const E*>(in.data() + l.in_offset), rows,
                                                         cols, l.ld_in, reinterpret_cast<E*>(out.data()), l.ld_out,
                                                         cuda_queue().stream);
  ASSERT_TRUE(out.untouched_outside(out_bytes)) << describe(Bytes, P, rows, cols, l);
  std::vector<unsigned char> want(static_cast<std::size_t>(out_bytes), DeviceArray<unsigned char>::poison_byte());
  kernels::transpose_bytes(cpu_queue(), host.data(), rows, cols, l.ld_in, want.data(), l.ld_out, Bytes);
  const std::vector<unsigned char> got = out.download();
  for (std::size_t b = 0; b < want.size(); ++b) {
    if (got[b] != want[b]) {
      const auto element = static_cast<index_t>(b / Bytes);
      FAIL() << describe(Bytes, P, rows, cols, l) << ": output row " << element / l.ld_out << ", column "
             << element % l.ld_out << ", byte " << b % Bytes << " differs";
    }
  }
}

// Sides of at least 32 (below that the skinny tiles take the block) around the tiles: skewed word
// tiles of up to 256 rows by 256 bytes (those inside the block from 512 x 528 bytes on), skewed tiles
// of 64 x 64 floats and 32 x 32 doubles, scalar tiles of up to 128 x 64. Small mode: a few, with
// whole tiles of every kind.
std::vector<std::pair<index_t, index_t>> shapes() {
  if (small_mode()) return {{33, 47}, {65, 63}, {259, 130}, {300, 520}, {600, 600}};
  return {{32, 32},   {33, 47},   {64, 64},   {65, 63},   {127, 129},  {128, 128}, {257, 129},
          {259, 130}, {300, 520}, {521, 301}, {1023, 1025}, {777, 1300}, {2049, 515}};
}

// Every layout breaks 16-byte rows (a leading dimension that is not a multiple of 16 bytes, or an
// offset); for 1- and 2-byte elements an offset of one element on one side breaks 4-byte rows too.
std::vector<Layout> layouts(int bytes, index_t rows, index_t cols, std::mt19937_64& gen) {
  const auto e = static_cast<std::size_t>(bytes);
  const bool narrow = bytes < 4;
  const index_t per16 = 16 / bytes;
  auto up = [](index_t n, index_t m) { return (n + m - 1) / m * m; };
  std::vector<Layout> l = {
      // Every row its own misalignment (as many as 16 bytes hold elements).
      {up(cols, per16) + 1, up(rows, per16) + 3, narrow ? e : 0, 0},
      // Tight, one block one element in.
      {cols, rows, e, narrow ? 0 : e},
      // Input rows on 16-byte boundaries, output rows not; and the reverse.
      {up(cols, per16), up(rows, per16) + 1, 0, narrow ? e : 0},
      {up(cols, per16) + 3, up(rows, per16) + per16, narrow ? e : 0, 0},
  };
  if (!small_mode()) {
    l.push_back({cols + 1 + static_cast<index_t>(gen() % 7), rows + 1 + static_cast<index_t>(gen() % 7),
                 (gen() % static_cast<std::uint64_t>(per16)) * e, e});
  }
  return l;
}

// Whether the path's word tiles fit a thread block's shared memory on this device: the byte tiles
// fed the other way (cp.async, 64 x 64 words) take 149 KiB, more than an sm_86 or sm_89 block may
// have. The tuning's own tiles fit every device the library builds for.
template <int Bytes, Path P>
bool word_tiles_fit() {
  if constexpr (Bytes >= 4 || P == Path::scalar) {
    return true;
  } else {
    using T = ForcedTuning<Bytes, P>;
    using E = detail::word_t<Bytes>;
    using Tile = detail::SkewedWordTileOf<E, T::kSkewedThreads, T::kSkewedInWords, T::kSkewedOutWords, T::kSkewedWordsStaged>;
    int device = 0, limit = 0;
    TESSERA_CUDA_CHECK(cudaGetDevice(&device));
    TESSERA_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (static_cast<long long>(Tile::kStorageBytes) <= limit) return true;
    std::printf("[   NOTE   ] %s, %d-byte elements: not run here (%lld bytes of shared memory a block; the device allows %d)\n",
                path_name(P), Bytes, static_cast<long long>(Tile::kStorageBytes), limit);
    return false;
  }
}

template <int Bytes, Path P>
void check_all() {
  if (!word_tiles_fit<Bytes, P>()) return;
  std::mt19937_64 gen(test_seed() + Bytes);
  for (auto [rows, cols] : shapes())
    for (const Layout& l : layouts(Bytes, rows, cols, gen)) {
      check_path<Bytes, P>(rows, cols, l);
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasFailure()) return;
    }
}

TEST(TransposeGpu, SkewedTilesOnUnalignedRowsMatchCpu) {
  check_all<1, Path::skewed>();
  if (HasFailure()) return;
  check_all<2, Path::skewed>();
  if (HasFailure()) return;
  check_all<4, Path::skewed>();
  if (HasFailure()) return;
  check_all<8, Path::skewed>();
  if (HasFailure()) return;
  check_all<1, Path::skewed_narrow>();
  if (HasFailure()) return;
  check_all<2, Path::skewed_narrow>();
  if (HasFailure()) return;
  check_all<1, Path::skewed_other_feed>();
  if (HasFailure()) return;
  check_all<2, Path::skewed_other_feed>();
  if (HasFailure()) return;
  check_all<4, Path::skewed_async>();
  if (HasFailure()) return;
  check_all<8, Path::skewed_async>();
}

TEST(TransposeGpu, ScalarTilesOnUnalignedRowsMatchCpu) {
  check_all<1, Path::scalar>();
  if (HasFailure()) return;
  check_all<2, Path::scalar>();
  if (HasFailure()) return;
  check_all<4, Path::scalar>();
  if (HasFailure()) return;
  check_all<8, Path::scalar>();
}

}  // namespace
}  // namespace tessera::gpu_test
