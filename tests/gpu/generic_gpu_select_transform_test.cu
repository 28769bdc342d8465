// The generic device select, count and element-wise passes (kernels/cuda/*.cuh through the public
// templates) against the CPU backend, for user functors and element types: structs of 12 and 16
// bytes, bytes, arrays that do not start on a 16-byte boundary, element-wise passes between element
// types of different sizes, index ranges past 2^31. Every output buffer is poisoned first and its
// guard zones checked afterwards.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "generic/generic_test_types.hpp"
#include "generic_gpu_inputs.hpp"
#include "gpu_test_support.hpp"
#include "tessera/kernels/kernels.hpp"

namespace tessera::gpu_test {
namespace {

using test::Mat2;
using test::Tagged;

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
