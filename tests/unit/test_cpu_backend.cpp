// The CPU backend of the local operations against plain serial references (int64 or long double
// accumulation), typed over the four element types, on odd sizes and with 1 to 4 OpenMP threads so
// that the chunking of every operation is exercised.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "support/test_support.hpp"
#include "tessera/kernels/kernels.hpp"

namespace tessera {
namespace {

using test::random_vector;
using test::where;

const kernels::Queue kCpu{};

template <class T>
class CpuBackend : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(CpuBackend, ElementTypes);

// Sizes that cross the serial cutoff of the backend, so that the threaded paths run.
std::vector<index_t> sizes() {
  std::vector<index_t> s = test::odd_sizes(1 << 17);
  s.push_back((1 << 17) + 3);
  s.push_back(262147);  // prime, above 2^18
  return s;
}

template <class T>
void expect_close(long double reference, T got, index_t n, const std::string& context) {
  if constexpr (std::is_integral_v<T>) {
    EXPECT_EQ(static_cast<T>(static_cast<std::int64_t>(reference)), got) << context;
  } else {
    // Inputs lie in [-1, 1): the rounding error of any summation order is below n * eps * max|x|.
    const long double tolerance = static_cast<long double>(n + 1) * std::numeric_limits<T>::epsilon();
    EXPECT_NEAR(static_cast<double>(reference), static_cast<double>(got), static_cast<double>(tolerance)) << context;
  }
}

TYPED_TEST(CpuBackend, ReduceMatchesSerialReference) {
  using T = TypeParam;
  for (int threads : {1, 2, 3, 4}) {
    omp_set_num_threads(threads);
    for (index_t n : sizes()) {
      const auto in = random_vector<T>(n, test::seed() + static_cast<std::uint64_t>(n));
      long double sum = 0;
      T lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
      for (T x : in) {
        sum += x;
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
      }
      T got{};
      kernels::reduce(kCpu, in.data(), n, ReduceOp::sum, &got);
      expect_close(sum, got, n, where(n) + " threads=" + std::to_string(threads));
      kernels::reduce(kCpu, in.data(), n, ReduceOp::min, &got);
      EXPECT_EQ(got, n == 0 ? reduce_identity<T>(ReduceOp::min) : lo) << where(n);
      kernels::reduce(kCpu, in.data(), n, ReduceOp::max, &got);
      EXPECT_EQ(got, n == 0 ? reduce_identity<T>(ReduceOp::max) : hi) << where(n);
    }
  }
}

TYPED_TEST(CpuBackend, MinMaxPropagateNaN) {
  using T = TypeParam;
  if constexpr (std::is_floating_point_v<T>) {
    for (index_t n : {index_t(1), index_t(1000), index_t(100003)}) {
      auto in = random_vector<T>(n, test::seed());
      in[static_cast<std::size_t>(n / 2)] = std::numeric_limits<T>::quiet_NaN();
      T got{};
      kernels::reduce(kCpu, in.data(), n, ReduceOp::min, &got);
      EXPECT_TRUE(std::isnan(got)) << where(n);
      kernels::reduce(kCpu, in.data(), n, ReduceOp::max, &got);
      EXPECT_TRUE(std::isnan(got)) << where(n);
    }
  }
}

TYPED_TEST(CpuBackend, IntegerSumWrapsLikeUnsigned) {
  using T = TypeParam;
  if constexpr (std::is_integral_v<T>) {
    const index_t n = 100003;
    std::vector<T> in(static_cast<std::size_t>(n), std::numeric_limits<T>::max() / 7);
    using U = std::make_unsigned_t<T>;
    U expected = 0;
    for (T x : in) expected = static_cast<U>(expected + static_cast<U>(x));
    T got{};
    kernels::reduce(kCpu, in.data(), n, ReduceOp::sum, &got);
    EXPECT_EQ(static_cast<U>(got), expected);
  }
}

// Checks one scan implementation, called as scan(in, out, n, kind, carry), against the serial
// reference, with 1 to 4 threads, in place and not.
template <class T, class ScanFn>
void check_scan_against_serial_reference(ScanFn scan_fn) {
  for (int threads : {1, 2, 3, 4}) {
    omp_set_num_threads(threads);
    for (index_t n : sizes()) {
      const auto in = random_vector<T>(n, test::seed() + 17 + static_cast<std::uint64_t>(n));
      const T carry = static_cast<T>(5);
      for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
        for (bool in_place : {false, true}) {
          std::vector<T> out(static_cast<std::size_t>(n), static_cast<T>(-77));  // poisoned
          if (in_place) out = in;
          scan_fn(in_place ? out.data() : in.data(), out.data(), n, kind, carry);
          // Recursive summation errs by at most eps * sum_k |s_k| over the partial sums s_k it
          // forms (Higham, ch. 4); the chunked scan forms different partial sums of the same size.
          long double running = carry, partial_magnitude = std::fabs(static_cast<long double>(carry));
          for (index_t i = 0; i < n; ++i) {
            if (kind == ScanKind::inclusive) running += in[static_cast<std::size_t>(i)];
            partial_magnitude += std::fabs(running) + std::fabs(static_cast<long double>(carry));
            const T got = out[static_cast<std::size_t>(i)];
            auto context = [&] {
              return where(n) + " i=" + std::to_string(i) + " " + to_string(kind) + (in_place ? " in place" : "") +
                     " threads=" + std::to_string(threads);
            };
            if constexpr (std::is_integral_v<T>) {
              ASSERT_EQ(static_cast<T>(static_cast<std::int64_t>(running)), got) << context();
            } else {
              const long double tolerance = 4 * std::numeric_limits<T>::epsilon() * partial_magnitude;
              ASSERT_LE(std::fabs(static_cast<long double>(got) - running), tolerance) << context();
            }
            if (kind == ScanKind::exclusive) running += in[static_cast<std::size_t>(i)];
          }
        }
      }
    }
  }
}

TYPED_TEST(CpuBackend, ScanWithCarryInMatchesSerialReference) {
  using T = TypeParam;
  check_scan_against_serial_reference<T>(
      [](const T* in, T* out, index_t n, ScanKind kind, T carry) { kernels::scan(kCpu, in, out, n, kind, carry); });
}

TYPED_TEST(CpuBackend, TwoPassScanMatchesSerialReferenceAndTotals) {
  using T = TypeParam;
  check_scan_against_serial_reference<T>([](const T* in, T* out, index_t n, ScanKind kind, T carry) {
    const index_t segments = kernels::scan_segment_count<T>(kCpu, n);
    std::vector<T> prefix(static_cast<std::size_t>(segments) + 1, static_cast<T>(-99));  // poisoned
    T total = static_cast<T>(-99);
    kernels::scan_totals(kCpu, in, n, prefix.data(), &total);
    EXPECT_EQ(prefix.back(), static_cast<T>(-99)) << "scan_totals wrote past its segment count";
    long double reference_total = 0;
    for (index_t i = 0; i < n; ++i) reference_total += in[static_cast<std::size_t>(i)];
    expect_close(reference_total, total, n, where(n) + " total");
    kernels::scan_from_totals(kCpu, in, out, n, kind, carry, prefix.data());
  });
}

TYPED_TEST(CpuBackend, SelectIsStableAndCounts) {
  using T = TypeParam;
  const std::vector<Predicate<T>> predicates = {
      {PredicateKind::gt, T(0), T(0)},       {PredicateKind::le, static_cast<T>(-0.5), T(0)},
      {PredicateKind::between, static_cast<T>(-0.25), static_cast<T>(0.75)}, {PredicateKind::nonzero, T(0), T(0)},
      {PredicateKind::eq, T(3), T(0)},       {PredicateKind::ne, T(3), T(0)}};
  for (int threads : {1, 3, 4}) {
    omp_set_num_threads(threads);
    for (index_t n : sizes()) {
      const auto in = random_vector<T>(n, test::seed() + 29 + static_cast<std::uint64_t>(n));
      for (const auto& pred : predicates) {
        std::vector<T> expected;
        for (T x : in)
          if (pred(x)) expected.push_back(x);
        std::vector<T> out(static_cast<std::size_t>(n) + 1, static_cast<T>(-99));
        index_t kept = -1, counted = -1;
        kernels::select(kCpu, in.data(), n, pred, out.data(), &kept);
        kernels::count_if(kCpu, in.data(), n, pred, &counted);
        ASSERT_EQ(kept, static_cast<index_t>(expected.size())) << where(n);
        ASSERT_EQ(counted, kept) << where(n);
        for (std::size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(out[i], expected[i]) << where(n) << " i=" << i;
        EXPECT_EQ(out[static_cast<std::size_t>(n)], static_cast<T>(-99)) << "wrote past the end, " << where(n);
      }
    }
  }
}

TYPED_TEST(CpuBackend, GenerateDependsOnlyOnSeedAndIndex) {
  using T = TypeParam;
  const index_t n = 100003;
  std::vector<T> whole(static_cast<std::size_t>(n));
  kernels::generate(kCpu, whole.data(), n, 42, 0);
  // Any cut of the index range reproduces the same values.
  for (index_t cut : {index_t(1), index_t(31), index_t(50000), n - 1}) {
    std::vector<T> tail(static_cast<std::size_t>(n - cut));
    kernels::generate(kCpu, tail.data(), n - cut, 42, cut);
    for (index_t i = cut; i < n; ++i) ASSERT_EQ(tail[static_cast<std::size_t>(i - cut)], whole[static_cast<std::size_t>(i)]);
  }
  // In range, and not constant.
  T lo = whole[0], hi = whole[0];
  for (T x : whole) {
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  if constexpr (std::is_integral_v<T>) {
    EXPECT_GE(lo, T(-1000));
    EXPECT_LE(hi, T(1000));
  } else {
    EXPECT_GE(lo, T(-1));
    EXPECT_LT(hi, T(1));
  }
  EXPECT_LT(lo, hi);
  // A different seed gives a different sequence.
  std::vector<T> other(static_cast<std::size_t>(n));
  kernels::generate(kCpu, other.data(), n, 43, 0);
  EXPECT_NE(other, whole);
}

TYPED_TEST(CpuBackend, FillAndIota) {
  using T = TypeParam;
  for (index_t n : sizes()) {
    std::vector<T> v(static_cast<std::size_t>(n) + 1, T(9));
    kernels::iota(kCpu, v.data(), n, T(3));
    for (index_t i = 0; i < n; ++i) ASSERT_EQ(v[static_cast<std::size_t>(i)], static_cast<T>(3 + i)) << where(n);
    kernels::fill(kCpu, v.data(), n, T(-2));
    for (index_t i = 0; i < n; ++i) ASSERT_EQ(v[static_cast<std::size_t>(i)], T(-2));
    EXPECT_EQ(v[static_cast<std::size_t>(n)], T(9));
  }
}

template <class T>
class CpuGemm : public ::testing::Test {};
using GemmTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CpuGemm, GemmTypes);

TYPED_TEST(CpuGemm, MatchesTripleLoopReference) {
  using T = TypeParam;
  struct Shape {
    index_t m, n, k, extra_ld;
  };
  const std::vector<Shape> shapes = {{1, 1, 1, 0},    {0, 5, 3, 0},     {5, 0, 3, 0},     {4, 5, 0, 0},
                                     {17, 33, 65, 3}, {31, 1, 257, 0},  {1, 513, 7, 1},   {127, 129, 255, 0},
                                     {64, 600, 300, 5}, {301, 257, 513, 0}};
  for (const Shape& s : shapes) {
    const index_t lda = s.k + s.extra_ld, ldb = s.n + s.extra_ld, ldc = s.n + s.extra_ld;
    const auto a = random_vector<T>(s.m * lda, test::seed() + 1);
    const auto b = random_vector<T>(s.k * ldb, test::seed() + 2);
    const auto c0 = random_vector<T>(s.m * ldc, test::seed() + 3);
    // The serial triple loop once per shape (in long double); every engine, thread count and beta
    // below is checked against it.
    std::vector<long double> ab(static_cast<std::size_t>(s.m * s.n), 0.0L);
    for (index_t i = 0; i < s.m; ++i)
      for (index_t j = 0; j < s.n; ++j) {
        long double sum = 0;
        for (index_t p = 0; p < s.k; ++p)
          sum += static_cast<long double>(a[static_cast<std::size_t>(i * lda + p)]) * b[static_cast<std::size_t>(p * ldb + j)];
        ab[static_cast<std::size_t>(i * s.n + j)] = sum;
      }
    // Both engines: vendor is OpenBLAS for float and double where the build found it.
    for (GemmEngine engine : {GemmEngine::tiled, GemmEngine::vendor})
    for (int threads : {1, 4}) {
      omp_set_num_threads(threads);
      for (T beta : {T(0), T(1), T(-0.5)}) {
        const T alpha = T(1.5);
        auto c = c0;
        if (beta == T(0))  // beta == 0 must not read C: NaN in C must vanish
          for (auto& x : c) x = std::numeric_limits<T>::quiet_NaN();
        kernels::gemm(kCpu, engine, s.m, s.n, s.k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
        for (index_t i = 0; i < s.m; ++i) {
          for (index_t j = 0; j < s.n; ++j) {
            const long double ref = alpha * ab[static_cast<std::size_t>(i * s.n + j)] +
                (beta == T(0) ? 0.0L : beta * static_cast<long double>(c0[static_cast<std::size_t>(i * ldc + j)]));
            const double tol = 4.0 * (s.k + 2) * std::numeric_limits<T>::epsilon();
            ASSERT_NEAR(static_cast<double>(ref), static_cast<double>(c[static_cast<std::size_t>(i * ldc + j)]), tol)
                << to_string(engine) << " threads=" << threads << " m=" << s.m << " n=" << s.n << " k=" << s.k
                << " beta=" << beta << " at (" << i << "," << j << ")";
          }
          // Padding columns of C (beyond n) are untouched.
          for (index_t j = s.n; j < ldc; ++j) {
            if (beta != T(0)) {
              ASSERT_EQ(c[static_cast<std::size_t>(i * ldc + j)], c0[static_cast<std::size_t>(i * ldc + j)]);
            }
          }
        }
      }
    }
  }
}

// Stacks of planes (boxes of a 3-D array with ghost layers): packed plane after plane, row after
// row, and unpacked back into their places only, against loops over the box.
TEST(PackRectangles, StacksOfPlanesInRowMajorOrder) {
  const index_t n0 = 7, n1 = 9, n2 = 11, stride1 = n2 + 4, stride0 = (n1 + 2) * stride1;  // ghosts around
  std::vector<std::int32_t> array(static_cast<std::size_t>((n0 + 2) * stride0));
  for (std::size_t i = 0; i < array.size(); ++i) array[i] = static_cast<std::int32_t>(i * 7 + 3);
  const index_t origin = stride0 + stride1 + 2;  // cell (0, 0, 0)
  struct Box { index_t b0, b1, b2, c0, c1, c2; };
  const std::vector<Box> boxes = {{0, 0, 0, n0, n1, n2}, {-1, 0, 0, 1, n1, n2}, {0, -1, 0, n0, 1, n2},
                                  {0, 0, -2, n0, n1, 2}, {2, 3, 4, 3, 1, 5}, {0, 0, 0, 0, 5, 5}, {-1, -1, -2, n0 + 2, n1 + 2, n2 + 4}};
  std::vector<kernels::Rectangle> rectangles;
  std::vector<std::int32_t> want;
  for (const Box& b : boxes) {
    rectangles.push_back({b.b0 * stride0 + b.b1 * stride1 + b.b2, stride1, b.c1, b.c2, b.c0, stride0});
    for (index_t i0 = 0; i0 < b.c0; ++i0)
      for (index_t i1 = 0; i1 < b.c1; ++i1)
        for (index_t i2 = 0; i2 < b.c2; ++i2)
          want.push_back(array[static_cast<std::size_t>(origin + (b.b0 + i0) * stride0 + (b.b1 + i1) * stride1 + b.b2 + i2)]);
  }
  std::vector<std::int32_t> packed(want.size() + 1, -1);
  kernels::pack_rectangles(kCpu, array.data() + origin, rectangles, packed.data(), sizeof(std::int32_t));
  EXPECT_EQ(packed.back(), -1) << "pack wrote past the packed data";
  packed.pop_back();
  EXPECT_EQ(packed, want);
  // Unpack the fourth box (a face two cells deep) into a cleared array: only its cells are written.
  std::vector<std::int32_t> cleared(array.size(), 0);
  index_t skip = 0;
  for (std::size_t k = 0; k < 3; ++k) skip += rectangles[k].size();
  kernels::unpack_rectangles(kCpu, packed.data() + skip, std::span(&rectangles[3], 1), cleared.data() + origin,
                             sizeof(std::int32_t));
  for (index_t i = 0; i < static_cast<index_t>(cleared.size()); ++i) {
    const index_t l = i - origin + stride0 + stride1 + 2, i0 = l / stride0 - 1, i1 = l % stride0 / stride1 - 1,
                  i2 = l % stride1 - 2;
    const bool inside = i0 >= 0 && i0 < n0 && i1 >= 0 && i1 < n1 && i2 >= -2 && i2 < 0;
    ASSERT_EQ(cleared[static_cast<std::size_t>(i)], inside ? array[static_cast<std::size_t>(i)] : 0) << "element " << i;
  }
}

// Each rectangle to a place of its own (the halo's pack straight into its receivers' buffers):
// places in reverse order with a gap of one cell between them; each holds its box's cells as the
// loops over the box give them, and the gaps are untouched.
TEST(PackRectangles, EachToAPlaceOfItsOwn) {
  const index_t n0 = 5, n1 = 6, n2 = 9, stride1 = n2 + 2, stride0 = (n1 + 2) * stride1;
  std::vector<std::int32_t> array(static_cast<std::size_t>((n0 + 2) * stride0));
  for (std::size_t i = 0; i < array.size(); ++i) array[i] = static_cast<std::int32_t>(i * 5 + 1);
  const index_t origin = stride0 + stride1 + 1;
  struct Box { index_t b0, b1, b2, c0, c1, c2; };
  const std::vector<Box> boxes = {{0, 0, 0, n0, n1, 1}, {-1, 2, 3, 1, 3, 4}, {0, 0, 0, 0, 2, 2}, {1, -1, -1, 3, n1 + 2, n2 + 2}};
  std::vector<kernels::Rectangle> rectangles;
  std::vector<std::vector<std::int32_t>> want;
  for (const Box& b : boxes) {
    rectangles.push_back({b.b0 * stride0 + b.b1 * stride1 + b.b2, stride1, b.c1, b.c2, b.c0, stride0});
    want.emplace_back();
    for (index_t i0 = 0; i0 < b.c0; ++i0)
      for (index_t i1 = 0; i1 < b.c1; ++i1)
        for (index_t i2 = 0; i2 < b.c2; ++i2)
          want.back().push_back(array[static_cast<std::size_t>(origin + (b.b0 + i0) * stride0 + (b.b1 + i1) * stride1 + b.b2 + i2)]);
  }
  std::size_t total = 0;
  for (const auto& w : want) total += w.size() + 1;
  std::vector<std::int32_t> out(total + 1, -1);
  std::vector<void*> places(boxes.size());
  std::size_t at = 1;  // the gap before the last box's place
  for (std::size_t k = boxes.size(); k-- > 0;) {
    places[k] = out.data() + at;
    at += want[k].size() + 1;
  }
  kernels::pack_rectangles_to(kCpu, array.data() + origin, rectangles, places, sizeof(std::int32_t));
  std::vector<std::int32_t> expect(total + 1, -1);
  at = 1;
  for (std::size_t k = boxes.size(); k-- > 0;) {
    std::copy(want[k].begin(), want[k].end(), expect.begin() + static_cast<std::ptrdiff_t>(at));
    at += want[k].size() + 1;
  }
  EXPECT_EQ(out, expect);
}

// Each rectangle from a place of its own (a halo's messages unpacked where they arrived): places in
// reverse order with a gap between them, into an array of -1; the boxes' cells take the places'
// values in the loops' order, every other cell stays -1.
TEST(PackRectangles, EachFromAPlaceOfItsOwn) {
  const index_t n0 = 4, n1 = 5, n2 = 7, stride1 = n2 + 2, stride0 = (n1 + 2) * stride1;
  const index_t origin = stride0 + stride1 + 1;
  struct Box { index_t b0, b1, b2, c0, c1, c2; };
  // Disjoint boxes: a face, a ghost corner column, an empty one, a stack of rows in the ghosts.
  const std::vector<Box> boxes = {{0, 0, 0, n0, n1, 1}, {-1, -1, -1, n0 + 2, 1, 1}, {0, 0, 0, 0, 2, 2}, {1, 2, n2, 2, 3, 1}};
  std::vector<kernels::Rectangle> rectangles;
  for (const Box& b : boxes) rectangles.push_back({b.b0 * stride0 + b.b1 * stride1 + b.b2, stride1, b.c1, b.c2, b.c0, stride0});
  std::vector<std::int32_t> source;
  std::vector<void*> places(boxes.size());
  std::vector<std::size_t> at(boxes.size());
  std::size_t next = 1;
  for (std::size_t k = boxes.size(); k-- > 0;) {
    at[k] = next;
    next += static_cast<std::size_t>(rectangles[k].size()) + 1;
  }
  source.assign(next, -7);
  for (std::size_t k = 0; k < boxes.size(); ++k)
    for (index_t i = 0; i < rectangles[k].size(); ++i)
      source[at[k] + static_cast<std::size_t>(i)] = static_cast<std::int32_t>(1000 * k + static_cast<std::size_t>(i));
  for (std::size_t k = 0; k < boxes.size(); ++k) places[k] = source.data() + at[k];
  std::vector<std::int32_t> array(static_cast<std::size_t>((n0 + 2) * stride0), -1);
  kernels::unpack_rectangles_from(kCpu, places, rectangles, array.data() + origin, sizeof(std::int32_t));
  std::vector<std::int32_t> expect(array.size(), -1);
  for (std::size_t k = 0; k < boxes.size(); ++k) {
    const Box& b = boxes[k];
    std::int32_t value = static_cast<std::int32_t>(1000 * k);
    for (index_t i0 = 0; i0 < b.c0; ++i0)
      for (index_t i1 = 0; i1 < b.c1; ++i1)
        for (index_t i2 = 0; i2 < b.c2; ++i2)
          expect[static_cast<std::size_t>(origin + (b.b0 + i0) * stride0 + (b.b1 + i1) * stride1 + b.b2 + i2)] = value++;
  }
  EXPECT_EQ(array, expect);
}

// A frame as wide as its region (a block thinner than the frame the halo needs): every cell is the
// frame's, swept as stencil_2d sweeps the region, and rectangles anywhere in the region are the
// frame's to pack (none of them meets an inside, as there is none).
TEST(Stencil2dFrame, AFrameWiderThanItsRegionSweepsAndPacksEveryCell) {
  const index_t rows = 3, cols = 6, ld = cols + 2;
  std::vector<double> in(static_cast<std::size_t>((rows + 2) * ld));
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<double>((i * 37) % 11) - 4.5;
  const index_t origin = ld + 1;
  const StencilWeights<double> w = StencilWeights<double>::jacobi9();
  std::vector<double> want(in.size(), -1.0), got(in.size(), -1.0);
  kernels::stencil_2d(kCpu, in.data() + origin, ld, want.data() + origin, ld, rows, cols, w);
  // Rows 0-2 of columns 3-5, and row 1 whole: across the lines of the frame {2, 1, 4, 3}, which
  // leave no inside.
  const std::vector<kernels::Rectangle> pack_to = {{3, ld, rows, 3}, {ld, ld, 1, cols}};
  std::vector<double> packed(static_cast<std::size_t>(rows * 3 + cols), -1.0);
  kernels::stencil_2d_frame(kCpu, in.data() + origin, ld, got.data() + origin, ld, rows, cols, {2, 1, 4, 3}, w, nullptr,
                            pack_to, packed.data());
  EXPECT_EQ(got, want);
  std::vector<double> want_packed(packed.size());
  kernels::pack_rectangles(kCpu, want.data() + origin, pack_to, want_packed.data(), sizeof(double));
  EXPECT_EQ(packed, want_packed);
}

TEST(Predicates, FollowIeeeForNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE((Predicate<float>{PredicateKind::gt, 0.f, 0.f}(nan)));
  EXPECT_FALSE((Predicate<float>{PredicateKind::le, 0.f, 0.f}(nan)));
  EXPECT_FALSE((Predicate<float>{PredicateKind::between, -1.f, 1.f}(nan)));
  EXPECT_TRUE((Predicate<float>{PredicateKind::ne, 0.f, 0.f}(nan)));
  EXPECT_TRUE((Predicate<float>{PredicateKind::nonzero, 0.f, 0.f}(nan)));
  EXPECT_TRUE((Predicate<int>{PredicateKind::between, 2, 2}(2)));
}

// Host blocks of 4 MiB and more: freed ones are cached and handed out again for a request of about
// their size, hold what is written to them, and release_cached_memory() empties the cache; smaller
// blocks are never cached.
TEST(CpuMemory, LargeBlocksAreCachedReusedAndReleased) {
  kernels::release_cached_memory();
  ASSERT_EQ(kernels::cached_memory_bytes(), 0u);
  const std::size_t big = (std::size_t(8) << 20) + 12345;
  void* p = kernels::allocate(kCpu, big);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
  std::memset(p, 0x5a, big);  // every byte of the request is usable
  kernels::deallocate(kCpu, p);
  EXPECT_GE(kernels::cached_memory_bytes(), big);
  void* q = kernels::allocate(kCpu, big - 4096);  // about the same size: the cached block
  EXPECT_EQ(q, p);
  EXPECT_EQ(kernels::cached_memory_bytes(), 0u);
  void* r = kernels::allocate(kCpu, big);  // none cached now: a new block
  EXPECT_NE(r, q);
  kernels::deallocate(kCpu, q);
  kernels::deallocate(kCpu, r);
  void* tiny = kernels::allocate(kCpu, 1000);
  const std::size_t cached = kernels::cached_memory_bytes();
  kernels::deallocate(kCpu, tiny);
  EXPECT_EQ(kernels::cached_memory_bytes(), cached);  // small blocks go straight back
  void* small = kernels::allocate(kCpu, std::size_t(1) << 20);  // far smaller: not a cached 8 MiB block
  EXPECT_NE(small, q);
  EXPECT_NE(small, r);
  kernels::deallocate(kCpu, small);
  kernels::release_cached_memory();
  EXPECT_EQ(kernels::cached_memory_bytes(), 0u);
}

}  // namespace
}  // namespace tessera
