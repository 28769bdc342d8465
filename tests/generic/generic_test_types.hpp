// Element types and functors of the tests of the open algorithms: user structs of several sizes
// (8, 12, 16 and 24 bytes: the 16-byte vector path, the element-by-element path), associative
// operations that do not commute (a wrong order across ranks, blocks, warps or lanes changes the
// result), and serial references written independently of the library.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "tessera/kernels/config.hpp"

namespace tessera::test {

// x -> a x + b over the integers mod 2^32. compose(f, g) applies f first: x -> g.a (f.a x + f.b) + g.b.
struct Affine {
  std::uint32_t a = 1;
  std::uint32_t b = 0;
  friend bool operator==(const Affine&, const Affine&) = default;
};
struct ComposeAffine {
  TESSERA_HOST_DEVICE Affine operator()(const Affine& f, const Affine& g) const {
    return Affine{g.a * f.a, g.a * f.b + g.b};
  }
};

// 2x2 matrices over the integers mod 2^32, multiplied left to right.
struct Mat2 {
  std::uint32_t m00 = 1, m01 = 0, m10 = 0, m11 = 1;
  friend bool operator==(const Mat2&, const Mat2&) = default;
};
struct MatMul {
  TESSERA_HOST_DEVICE Mat2 operator()(const Mat2& x, const Mat2& y) const {
    return Mat2{x.m00 * y.m00 + x.m01 * y.m10, x.m00 * y.m01 + x.m01 * y.m11, x.m10 * y.m00 + x.m11 * y.m10,
                x.m10 * y.m01 + x.m11 * y.m11};
  }
};

// 12 bytes (no 16-byte vectors): an affine map plus a count, composed like Affine.
struct Tagged {
  std::uint32_t a = 1;
  std::uint32_t b = 0;
  std::uint32_t count = 0;
  friend bool operator==(const Tagged&, const Tagged&) = default;
};
struct ComposeTagged {
  TESSERA_HOST_DEVICE Tagged operator()(const Tagged& f, const Tagged& g) const {
    return Tagged{g.a * f.a, g.a * f.b + g.b, f.count + g.count};
  }
};

// Count, mean and sum of squared deviations (24 bytes), combined by Chan, Golub and LeVeque's
// parallel formula.
struct Moments {
  double count = 0;
  double mean = 0;
  double m2 = 0;
};
struct ToMoments {
  TESSERA_HOST_DEVICE Moments operator()(float x) const { return Moments{1.0, static_cast<double>(x), 0.0}; }
};
struct CombineMoments {
  static constexpr bool commutative = true;
  TESSERA_HOST_DEVICE Moments operator()(const Moments& a, const Moments& b) const {
    if (a.count == 0) return b;
    if (b.count == 0) return a;
    const double count = a.count + b.count;
    const double delta = b.mean - a.mean;
    return Moments{count, a.mean + delta * (b.count / count), a.m2 + b.m2 + delta * delta * (a.count * b.count / count)};
  }
};

// Random affine maps and matrices (odd multipliers keep products from collapsing to 0).
inline std::vector<Affine> random_affines(index_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<Affine> v(static_cast<std::size_t>(n));
  for (auto& f : v) f = Affine{static_cast<std::uint32_t>(gen()) | 1u, static_cast<std::uint32_t>(gen())};
  return v;
}

inline std::vector<Mat2> random_matrices(index_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<Mat2> v(static_cast<std::size_t>(n));
  for (auto& m : v)
    m = Mat2{static_cast<std::uint32_t>(gen()) | 1u, static_cast<std::uint32_t>(gen()), static_cast<std::uint32_t>(gen()),
             static_cast<std::uint32_t>(gen()) | 1u};
  return v;
}

inline std::vector<Tagged> random_tagged(index_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<Tagged> v(static_cast<std::size_t>(n));
  for (auto& t : v) t = Tagged{static_cast<std::uint32_t>(gen()) | 1u, static_cast<std::uint32_t>(gen()), 1u};
  return v;
}

}  // namespace tessera::test
