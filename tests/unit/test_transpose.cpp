// The CPU backend's transpose against a serial loop: every element size from 1 to 17 bytes and a
// few larger ones, shapes around its 32-element tiles and skinny ones, tight and padded leading
// dimensions; the padding of the output rows must keep what it held.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/kernels/transpose.hpp"

namespace tessera {
namespace {

TEST(TransposeCpu, MatchesSerialLoopForAnyElementSize) {
  const kernels::Queue cpu{};
  const std::vector<std::pair<index_t, index_t>> shapes = {{0, 0},  {0, 3},  {3, 0},   {1, 1},   {1, 37}, {37, 1},
                                                           {31, 33}, {32, 32}, {33, 31}, {65, 97}, {7, 1000}, {1000, 7},
                                                           {257, 129}};
  std::vector<std::size_t> sizes;
  for (std::size_t s = 1; s <= 17; ++s) sizes.push_back(s);
  sizes.push_back(24);
  sizes.push_back(40);
  for (std::size_t bytes : sizes)
    for (auto [rows, cols] : shapes)
      for (index_t pad : {index_t(0), index_t(3)}) {
        const index_t ld_in = cols + pad, ld_out = rows + 2 * pad;
        std::mt19937_64 gen(test::seed() + bytes * 131 + static_cast<std::uint64_t>(rows * 17 + cols));
        std::vector<unsigned char> in(static_cast<std::size_t>(rows * ld_in) * bytes);
        for (auto& b : in) b = static_cast<unsigned char>(gen());
        std::vector<unsigned char> out(static_cast<std::size_t>(cols * ld_out) * bytes, 0x5A);
        std::vector<unsigned char> want = out;
        for (index_t i = 0; i < rows; ++i)
          for (index_t j = 0; j < cols; ++j)
            for (std::size_t b = 0; b < bytes; ++b)
              want[static_cast<std::size_t>(j * ld_out + i) * bytes + b] = in[static_cast<std::size_t>(i * ld_in + j) * bytes + b];
        kernels::transpose_bytes(cpu, in.data(), rows, cols, ld_in, out.data(), ld_out, bytes);
        ASSERT_EQ(out, want) << bytes << "-byte elements, " << rows << " x " << cols << ", pad " << pad << ", "
                             << test::where(rows * cols);
      }
}

// Typed calls reach the same code: a contiguous double block and back.
TEST(TransposeCpu, TypedTransposeTwiceIsIdentity) {
  const kernels::Queue cpu{};
  const index_t rows = 123, cols = 45;
  const auto a = test::random_vector<double>(rows * cols, test::seed());
  std::vector<double> t(a.size()), back(a.size());
  kernels::transpose(cpu, a.data(), rows, cols, t.data());
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) ASSERT_EQ(t[static_cast<std::size_t>(j * rows + i)], a[static_cast<std::size_t>(i * cols + j)]);
  kernels::transpose(cpu, t.data(), cols, rows, back.data());
  EXPECT_EQ(back, a);
}

}  // namespace
}  // namespace tessera
