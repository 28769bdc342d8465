// The CUDA transpose against the CPU backend on the same random bytes: elements of 1, 2, 4, 8 and 16
// bytes (the typed passes), of 3, 12 and 24 bytes (runs of words) and of 256 to 4096 bytes (a warp
// per element), shapes around every tile edge (32-element scalar tiles, vector tiles of up to
// 256 x 128 bytes, skinny blocks with a side under 32), tight and padded leading dimensions, rows
// that start on 16-byte boundaries, on 4-byte ones only, and on none, and elements off their size's
// alignment. The whole output block is poisoned first: what the transpose does not own (the padding
// past each output row, the guard zones) must still hold the poison afterwards.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_support.hpp"
#include "tessera/kernels/transpose.hpp"

namespace tessera::gpu_test {
namespace {

struct Layout {
  index_t ld_in, ld_out;
  std::size_t in_offset, out_offset;  // bytes past an aligned address
  const char* name;
};

std::string describe(std::size_t bytes, index_t rows, index_t cols, const Layout& l) {
  return std::to_string(bytes) + "-byte elements, " + std::to_string(rows) + " x " + std::to_string(cols) + ", " +
         l.name + " (ld_in " + std::to_string(l.ld_in) + ", ld_out " + std::to_string(l.ld_out) + ", offsets " +
         std::to_string(l.in_offset) + "/" + std::to_string(l.out_offset) + "), seed " + std::to_string(test_seed());
}

void check_transpose(std::size_t bytes, index_t rows, index_t cols, const Layout& l) {
  const auto in_bytes = static_cast<index_t>(static_cast<std::size_t>(rows * l.ld_in) * bytes);
  const auto out_bytes = static_cast<index_t>(static_cast<std::size_t>(cols * l.ld_out) * bytes);
  std::mt19937_64 gen(test_seed() + static_cast<std::uint64_t>(rows * 7919 + cols * 31 + static_cast<index_t>(bytes)));
  std::vector<unsigned char> host(static_cast<std::size_t>(in_bytes));
  for (std::size_t b = 0; b < host.size(); b += 8) {
    const std::uint64_t word = gen();
    std::memcpy(host.data() + b, &word, std::min<std::size_t>(8, host.size() - b));
  }
  DeviceArray<unsigned char> in(in_bytes, static_cast<index_t>(l.in_offset));
  in.upload(host);
  DeviceArray<unsigned char> out(out_bytes, static_cast<index_t>(l.out_offset));
  out.poison();
  kernels::transpose_bytes(cuda_queue(), in.data(), rows, cols, l.ld_in, out.data(), l.ld_out, bytes);
  ASSERT_TRUE(out.untouched_outside(out_bytes)) << describe(bytes, rows, cols, l);

  std::vector<unsigned char> want(static_cast<std::size_t>(out_bytes), DeviceArray<unsigned char>::poison_byte());
  kernels::transpose_bytes(cpu_queue(), host.data(), rows, cols, l.ld_in, want.data(), l.ld_out, bytes);
  const std::vector<unsigned char> got = out.download();
  for (std::size_t b = 0; b < want.size(); ++b) {
    if (got[b] != want[b]) {
      const auto element = static_cast<index_t>(b / bytes);
      FAIL() << describe(bytes, rows, cols, l) << ": output row " << element / l.ld_out << ", column "
             << element % l.ld_out << ", byte " << b % bytes << " differs";
    }
  }
}

// The leading dimensions and offsets each shape is tried with.
std::vector<Layout> layouts(std::size_t bytes, index_t rows, index_t cols) {
  // Elements per 16 bytes where whole elements fill 16 bytes, else 1.
  const index_t per16 = 16 % bytes == 0 ? static_cast<index_t>(16 / bytes) : 1;
  const index_t per4 = 4 % bytes == 0 ? static_cast<index_t>(4 / bytes) : 1;
  auto up = [](index_t n, index_t m) { return (n + m - 1) / m * m; };
  std::vector<Layout> l;
  l.push_back({cols, rows, 0, 0, "tight"});
  l.push_back({up(cols, per16) + per16, up(rows, per16) + per16, 0, 0, "rows on 16-byte boundaries, padded"});
  l.push_back({cols + 3, rows + 1, bytes, 0, "odd leading dimensions, input one element in"});
  // Rows on 4-byte boundaries but not 16 (1- and 2-byte elements), or elements off their alignment.
  l.push_back({up(cols, per4) + per4, up(rows, per4) + per4, 4, bytes >= 8 ? std::size_t(8) : std::size_t(4), "4-byte boundaries"});
  return l;
}

std::vector<std::pair<index_t, index_t>> shapes() {
  std::vector<std::pair<index_t, index_t>> s = {
      {0, 0},     {0, 5},     {5, 0},     {1, 1},     {1, 2},     {2, 1},     {3, 5},     {31, 31},
      {31, 32},   {32, 31},   {32, 32},   {33, 33},   {1, 100},   {100, 1},   {31, 1000}, {1000, 31},
      {7, 4099},  {4099, 7},  {63, 65},   {64, 64},   {65, 63},   {127, 129}, {128, 128}, {129, 127},
      {256, 128}, {255, 129}, {257, 257}, {300, 520}, {521, 301}};
  if (!small_mode()) {
    for (auto shape : {std::pair<index_t, index_t>{1024, 1024}, {1023, 1025}, {2049, 4097}, {100003, 5},
                       {5, 100003}, {40009, 33}, {33, 40009}})
      s.push_back(shape);
  }
  return s;
}

TEST(TransposeGpu, PowerOfTwoElementsMatchCpu) {
  for (std::size_t bytes : {1, 2, 4, 8, 16})
    for (auto [rows, cols] : shapes())
      for (const Layout& l : layouts(bytes, rows, cols)) {
        check_transpose(bytes, rows, cols, l);
        if (HasFatalFailure() || HasFailure()) return;
      }
}

TEST(TransposeGpu, OtherElementSizesMatchCpu) {
  for (std::size_t bytes : {3, 12, 24})
    for (auto [rows, cols] : shapes())
      for (const Layout& l : layouts(bytes, rows, cols)) {
        check_transpose(bytes, rows, cols, l);
        if (HasFatalFailure() || HasFailure()) return;
      }
}

// Elements of 256 bytes and more (a warp each), aligned to 16, 8 and 1 bytes (the tight layout of
// an odd size), on the shapes small enough for them.
TEST(TransposeGpu, LargeElementsMatchCpu) {
  for (std::size_t bytes : {256, 264, 1001, 4096})
    for (auto [rows, cols] : shapes()) {
      if (rows * cols > 40000) continue;
      for (const Layout& l : layouts(bytes, rows, cols)) {
        check_transpose(bytes, rows, cols, l);
        if (HasFatalFailure() || HasFailure()) return;
      }
    }
}

// A sub-block in the middle of a larger matrix, into a sub-block of another: what is around both
// stays as it was (the packing of a distributed transpose relies on it).
TEST(TransposeGpu, SubBlockWithLeadingDimensions) {
  const index_t big_rows = 700, big_cols = 900;
  for (std::size_t bytes : {1, 4, 8}) {
    const index_t r0 = 37, c0 = 64, rows = 513, cols = 301;
    std::vector<unsigned char> host(static_cast<std::size_t>(big_rows * big_cols) * bytes);
    std::mt19937_64 gen(test_seed());
    for (auto& b : host) b = static_cast<unsigned char>(gen());
    DeviceArray<unsigned char> in(static_cast<index_t>(host.size()));
    in.upload(host);
    DeviceArray<unsigned char> out(static_cast<index_t>(host.size()));
    out.poison();
    const std::size_t in_at = static_cast<std::size_t>(r0 * big_cols + c0) * bytes;
    const std::size_t out_at = static_cast<std::size_t>(c0 * big_rows + r0) * bytes;
    kernels::transpose_bytes(cuda_queue(), in.data() + in_at, rows, cols, big_cols, out.data() + out_at, big_rows, bytes);
    const std::vector<unsigned char> got = out.download();
    for (index_t j = 0; j < big_cols; ++j)
      for (index_t i = 0; i < big_rows; ++i) {
        const bool inside = i >= r0 && i < r0 + rows && j >= c0 && j < c0 + cols;
        for (std::size_t b = 0; b < bytes; ++b) {
          const unsigned char g = got[static_cast<std::size_t>(j * big_rows + i) * bytes + b];
          const unsigned char w = inside ? host[static_cast<std::size_t>(i * big_cols + j) * bytes + b]
                                         : DeviceArray<unsigned char>::poison_byte();
          ASSERT_EQ(g, w) << bytes << "-byte elements: output (" << j << ", " << i << ") byte " << b
                          << (inside ? " inside" : " outside") << " the sub-block";
        }
      }
  }
}

}  // namespace
}  // namespace tessera::gpu_test
