// The generic device passes (kernels/cuda/*.cuh through the public templates) against the CPU
// backend, for user functors and element types: non-commutative operations over 8-, 12- and
// 16-byte structs, 1- and 2-byte integers, arrays that do not start on a 16-byte boundary, in-place
// scans, and element-wise passes between element types of different sizes. Every output buffer is
// poisoned first and its guard zones checked afterwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "generic/generic_test_types.hpp"
#include "gpu_test_support.hpp"
#include "tessera/kernels/kernels.hpp"

namespace tessera::gpu_test {
namespace {

using test::Affine;
using test::ComposeAffine;
using test::ComposeTagged;
using test::Mat2;
using test::MatMul;
using test::Tagged;

// Element offsets of the input within its allocation: 0 (16-byte aligned) and two that are not.
constexpr index_t kOffsets[] = {0, 1, 3};

// n values in [-1, 1) from std::mt19937_64 (independent of the code under test).
template <class T>
std::vector<T> uniform(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(dist(gen));
  return v;
}

template <class T, class Op>
void check_reduce_and_scan(const std::vector<T>& host, Op op, T identity, T init, const char* what) {
  const auto n = static_cast<index_t>(host.size());
  const T want = kernels::reduce(cpu_queue(), host.data(), n, op, identity);
  for (index_t offset : kOffsets) {
    DeviceArray<T> in(n, offset);
    in.poison();
    in.upload(host);
    const T got = kernels::reduce(cuda_queue(), in.data(), n, op, identity);
    ASSERT_TRUE(got == want) << where(n, what) << " offset=" << offset << " (reduce)";

    for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
      std::vector<T> want_scan(host.size());
      kernels::scan(cpu_queue(), host.data(), want_scan.data(), n, kind, op, init);
      DeviceArray<T> out(n, offset);
      out.poison();
      kernels::scan(cuda_queue(), in.data(), out.data(), n, kind, op, init);
      const std::vector<T> got_scan = out.download();
      for (index_t i = 0; i < n; ++i)
        ASSERT_TRUE(got_scan[static_cast<std::size_t>(i)] == want_scan[static_cast<std::size_t>(i)])
            << where(n, what) << " offset=" << offset << " i=" << i << " " << to_string(kind);
      ASSERT_TRUE(out.untouched_outside(n)) << where(n, what);
    }
    // In place.
    kernels::scan(cuda_queue(), in.data(), in.data(), n, ScanKind::inclusive, op, init);
    std::vector<T> want_in_place(host.size());
    kernels::scan(cpu_queue(), host.data(), want_in_place.data(), n, ScanKind::inclusive, op, init);
    const std::vector<T> got_in_place = in.download();
    for (index_t i = 0; i < n; ++i)
      ASSERT_TRUE(got_in_place[static_cast<std::size_t>(i)] == want_in_place[static_cast<std::size_t>(i)])
          << where(n, what) << " in place, i=" << i;
  }
}

TEST(GenericGpu, NonCommutativeReduceAndScanOfStructs) {
  for (index_t n : odd_sizes()) {
    const std::uint64_t s = test_seed() + static_cast<std::uint64_t>(n);
    check_reduce_and_scan(test::random_affines(n, s), ComposeAffine{}, Affine{}, Affine{3, 5}, "affine (8 bytes)");
    check_reduce_and_scan(test::random_matrices(n, s), MatMul{}, Mat2{}, Mat2{1, 2, 3, 4}, "mat2 (16 bytes)");
    check_reduce_and_scan(test::random_tagged(n, s), ComposeTagged{}, Tagged{}, Tagged{5, 1, 2}, "tagged (12 bytes)");
  }
}

template <class T>
std::vector<T> full_range(index_t n, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(gen());
  return v;
}

TEST(GenericGpu, NarrowIntegersAndRunningMaxima) {
  for (index_t n : odd_sizes()) {
    const std::uint64_t s = test_seed() * 3 + static_cast<std::uint64_t>(n);
    check_reduce_and_scan(full_range<std::int8_t>(n, s), plus{}, std::int8_t(0), std::int8_t(-7), "int8 sum");
    check_reduce_and_scan(full_range<std::uint16_t>(n, s), maximum{}, std::uint16_t(0), std::uint16_t(3), "uint16 max");
    auto floats = uniform<float>(n, s);
    check_reduce_and_scan(floats, maximum{}, -std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), "float max");
  }
}

struct Widen {
  TESSERA_HOST_DEVICE std::int64_t operator()(std::int8_t x) const { return x; }
};
struct MomentsOf {
  TESSERA_HOST_DEVICE test::Moments operator()(float x) const { return test::Moments{1.0, double(x), 0.0}; }
};

TEST(GenericGpu, CommutativeTransformReduceWithWideningAndStructAccumulators) {
  for (index_t n : odd_sizes()) {
    const std::uint64_t s = test_seed() * 5 + static_cast<std::uint64_t>(n);
    const auto bytes = full_range<std::int8_t>(n, s);
    std::int64_t want = 0;
    for (auto b : bytes) want += b;
    const auto floats = uniform<float>(n, s);
    for (index_t offset : kOffsets) {
      DeviceArray<std::int8_t> in(n, offset);
      in.upload(bytes);
      EXPECT_EQ(kernels::transform_reduce(cuda_queue(), in.data(), n, Widen{}, plus{}, std::int64_t(0)), want)
          << where(n) << " offset=" << offset;
      DeviceArray<float> f(n, offset);
      f.upload(floats);
      const test::Moments got =
          kernels::transform_reduce(cuda_queue(), f.data(), n, MomentsOf{}, test::CombineMoments{}, test::Moments{});
      const test::Moments ref =
          kernels::transform_reduce(cpu_queue(), floats.data(), n, MomentsOf{}, test::CombineMoments{}, test::Moments{});
      EXPECT_EQ(got.count, static_cast<double>(n));
      EXPECT_NEAR(got.mean, ref.mean, 1e-12 * (1 + std::fabs(ref.mean))) << where(n);
      EXPECT_NEAR(got.m2, ref.m2, 1e-9 * (1 + ref.m2)) << where(n);
    }
  }
}

struct Mat2Odd {
  TESSERA_HOST_DEVICE bool operator()(const Mat2& m) const { return (m.m01 & 1u) != 0; }
};
struct TaggedSmall {
  TESSERA_HOST_DEVICE bool operator()(const Tagged& t) const { return t.b < 0x40000000u; }
};
struct Int8Positive {
  TESSERA_HOST_DEVICE bool operator()(std::int8_t x) const { return x > 0; }
};

template <class T, class Pred>
void check_select(const std::vector<T>& host, Pred pred, const char* what) {
  const auto n = static_cast<index_t>(host.size());
  std::vector<T> want(host.size());
  index_t want_kept = 0;
  kernels::select(cpu_queue(), host.data(), n, pred, want.data(), &want_kept);
  for (index_t offset : kOffsets) {
    DeviceArray<T> in(n, offset);
    in.upload(host);
    DeviceArray<T> out(n, offset);
    out.poison();
    DeviceArray<index_t> kept(1);
    DeviceArray<index_t> counted(1);
    kernels::select(cuda_queue(), in.data(), n, pred, out.data(), kept.data());
    kernels::count_if(cuda_queue(), in.data(), n, pred, counted.data());
    const index_t got_kept = kept.download()[0];
    ASSERT_EQ(got_kept, want_kept) << where(n, what) << " offset=" << offset;
    ASSERT_EQ(counted.download()[0], want_kept) << where(n, what) << " offset=" << offset;
    const auto got = out.download(got_kept);
    for (index_t i = 0; i < got_kept; ++i)
      ASSERT_TRUE(got[static_cast<std::size_t>(i)] == want[static_cast<std::size_t>(i)]) << where(n, what) << " i=" << i;
    ASSERT_TRUE(out.untouched_outside(got_kept)) << where(n, what);
  }
}

TEST(GenericGpu, SelectAndCountOfStructsAndBytes) {
  for (index_t n : odd_sizes()) {
    const std::uint64_t s = test_seed() * 7 + static_cast<std::uint64_t>(n);
    check_select(test::random_matrices(n, s), Mat2Odd{}, "mat2");
    check_select(test::random_tagged(n, s), TaggedSmall{}, "tagged");
    check_select(full_range<std::int8_t>(n, s), Int8Positive{}, "int8");
  }
}

struct ToFloat {
  TESSERA_HOST_DEVICE float operator()(double x) const { return static_cast<float>(x * 3.0); }
};
struct ToDouble {
  TESSERA_HOST_DEVICE double operator()(float x) const { return double(x) * 0.5; }
};
struct Mix {
  TESSERA_HOST_DEVICE std::int16_t operator()(std::int8_t a, float b) const {
    return static_cast<std::int16_t>(a + (b > 0 ? 1 : -1));
  }
};
struct IndexToTagged {
  TESSERA_HOST_DEVICE Tagged operator()(index_t i) const {
    return Tagged{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i >> 32), 1u};
  }
};

TEST(GenericGpu, ElementWisePassesBetweenTypesAndAlignments) {
  for (index_t n : odd_sizes()) {
    const std::uint64_t s = test_seed() * 11 + static_cast<std::uint64_t>(n);
    const auto doubles = uniform<double>(n, s);
    const auto floats = uniform<float>(n, s + 1);
    const auto bytes = full_range<std::int8_t>(n, s + 2);
    for (index_t in_offset : kOffsets) {
      for (index_t out_offset : kOffsets) {
        DeviceArray<double> d(n, in_offset);
        d.upload(doubles);
        DeviceArray<float> f(n, out_offset);
        f.poison();
        kernels::transform(cuda_queue(), d.data(), n, f.data(), ToFloat{});
        const auto got_f = f.download();
        for (index_t i = 0; i < n; ++i)
          ASSERT_EQ(got_f[static_cast<std::size_t>(i)], ToFloat{}(doubles[static_cast<std::size_t>(i)]))
              << where(n) << " offsets " << in_offset << "/" << out_offset << " i=" << i;
        ASSERT_TRUE(f.untouched_outside(n));

        DeviceArray<float> f_in(n, in_offset);
        f_in.upload(floats);
        DeviceArray<double> d_out(n, out_offset);
        d_out.poison();
        kernels::transform(cuda_queue(), f_in.data(), n, d_out.data(), ToDouble{});
        const auto got_d = d_out.download();
        for (index_t i = 0; i < n; ++i)
          ASSERT_EQ(got_d[static_cast<std::size_t>(i)], ToDouble{}(floats[static_cast<std::size_t>(i)])) << where(n);

        DeviceArray<std::int8_t> b(n, in_offset);
        b.upload(bytes);
        DeviceArray<std::int16_t> mixed(n, out_offset);
        mixed.poison();
        kernels::transform(cuda_queue(), b.data(), f_in.data(), n, mixed.data(), Mix{});
        const auto got_m = mixed.download();
        for (index_t i = 0; i < n; ++i)
          ASSERT_EQ(got_m[static_cast<std::size_t>(i)],
                    Mix{}(bytes[static_cast<std::size_t>(i)], floats[static_cast<std::size_t>(i)]))
              << where(n) << " i=" << i;
        ASSERT_TRUE(mixed.untouched_outside(n));
      }
    }
    DeviceArray<Tagged> tagged(n, 1);
    tagged.poison();
    const index_t first = (index_t(1) << 33) + 5;
    kernels::transform_index(cuda_queue(), first, n, tagged.data(), IndexToTagged{});
    const auto got_t = tagged.download();
    for (index_t i = 0; i < n; ++i) ASSERT_TRUE(got_t[static_cast<std::size_t>(i)] == IndexToTagged{}(first + i));
    ASSERT_TRUE(tagged.untouched_outside(n));
    DeviceArray<Mat2> filled(n, 3);
    filled.poison();
    kernels::fill_any(cuda_queue(), filled.data(), n, Mat2{9, 8, 7, 6});
    for (const Mat2& m : filled.download()) ASSERT_TRUE((m == Mat2{9, 8, 7, 6})) << where(n);
    ASSERT_TRUE(filled.untouched_outside(n));
  }
}

// The first index in [first, first + n) whose value is the largest under mixing; ties: lowest index.
struct IndexValue {
  TESSERA_HOST_DEVICE ValueIndex<std::uint32_t> operator()(index_t i) const {
    const auto v = static_cast<std::uint32_t>((static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull) >> 40) & 0xFFu;
    return ValueIndex<std::uint32_t>{v, i};
  }
};
struct FirstLargest {
  TESSERA_HOST_DEVICE ValueIndex<std::uint32_t> operator()(const ValueIndex<std::uint32_t>& a,
                                                           const ValueIndex<std::uint32_t>& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (a.value != b.value) return a.value > b.value ? a : b;
    return a.index < b.index ? a : b;
  }
};

TEST(GenericGpu, IndexRangeReductionsMatchTheCpu) {
  for (index_t n : odd_sizes()) {
    const index_t first = (index_t(1) << 31) - 17;  // indices past 2^31
    const auto want = kernels::transform_reduce_index(cpu_queue(), first, n, IndexValue{}, FirstLargest{},
                                                      ValueIndex<std::uint32_t>{});
    const auto got = kernels::transform_reduce_index(cuda_queue(), first, n, IndexValue{}, FirstLargest{},
                                                     ValueIndex<std::uint32_t>{});
    ASSERT_EQ(got.index, want.index) << where(n);
    ASSERT_EQ(got.value, want.value) << where(n);
  }
}

}  // namespace
}  // namespace tessera::gpu_test
