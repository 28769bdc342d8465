// The open algorithms with user functors and user element types, across ranks, against serial
// references computed on the host in index order: scans and filters. Compiled by nvcc where the build has
// CUDA, so that TESSERA_TEST_BACKEND=cuda runs the same tests on the device backend.
#include "generic_test_util.hpp"

namespace tessera {
namespace {

using test::Affine;
using test::ComposeAffine;
using test::Mat2;
using test::MatMul;
using test::Tagged;
using test::ComposeTagged;
using test::layouts;
using test::random_values_for_io;
using test::sizes;

// ---- scans ----------------------------------------------------------------------------------------

template <class T, class Op>
void expect_scan(const DistArray<T>& array, const std::vector<T>& global, Op op, T init, const std::string& where) {
  for (ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
    const DistArray<T> out = scan(array, kind, op, init);
    EXPECT_TRUE(out.partition() == array.partition()) << where;
    const std::vector<T> got = out.gather(0);
    if (test::world().rank() != 0) continue;
    ASSERT_EQ(got.size(), global.size()) << where;
    T running = init;
    for (std::size_t i = 0; i < global.size(); ++i) {
      if (kind == ScanKind::inclusive) running = op(running, global[i]);
      ASSERT_TRUE(got[i] == running) << where << " i=" << i << " " << to_string(kind);
      if (kind == ScanKind::exclusive) running = op(running, global[i]);
    }
  }
}

TEST(GenericScan, AffineCompositionWithInit) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 13 + static_cast<std::uint64_t>(n);
    const auto global = test::random_affines(n, s);
    const Affine init{3, 5};
    for (const auto& array : layouts(global, s)) expect_scan(array, global, ComposeAffine{}, init, test::where(n, s));
  }
}

TEST(GenericScan, MatrixProductsAndTwelveByteStructs) {
  for (index_t n : {index_t(0), index_t(1), index_t(31), index_t(33), index_t(4097), index_t(65537)}) {
    const std::uint64_t s = test::seed() * 17 + static_cast<std::uint64_t>(n);
    const auto matrices = test::random_matrices(n, s);
    for (const auto& array : layouts(matrices, s)) expect_scan(array, matrices, MatMul{}, Mat2{}, test::where(n, s));
    const auto tagged = test::random_tagged(n, s);
    for (const auto& array : layouts(tagged, s))
      expect_scan(array, tagged, ComposeTagged{}, Tagged{7, 1, 0}, test::where(n, s) + " tagged");
  }
}

TEST(GenericScan, RunningMaximum) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 19 + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<float>(n, s);
    const float init = -std::numeric_limits<float>::infinity();
    for (const auto& array : layouts(global, s)) expect_scan(array, global, maximum{}, init, test::where(n, s));
  }
}

// Extended lambdas may not live in a private member function, which a TEST body is (nvcc's rule):
// the cases that use lambdas are free functions the tests call.
void in_place_scan_with_a_lambda() {
  const Context& world = test::world();
  const index_t n = 10007;
  const auto global = test::random_vector<std::int32_t>(n, test::seed() + 23);
  DistArray<std::int32_t> array = DistArray<std::int32_t>::from_replicated(world, global);
  // the running maximum of absolute values, as a lambda
  auto op = [] TESSERA_HOST_DEVICE(std::int32_t a, std::int32_t b) {
    const std::int32_t ab = b < 0 ? -b : b;
    return a > ab ? a : ab;
  };
  scan(array, array, ScanKind::inclusive, op, std::int32_t(0));
  const auto got = array.gather(0);
  if (world.rank() != 0) return;
  std::int32_t running = 0;
  for (index_t i = 0; i < n; ++i) {
    running = std::max(running, std::abs(global[static_cast<std::size_t>(i)]));
    ASSERT_EQ(got[static_cast<std::size_t>(i)], running) << "i=" << i;
  }
}

TEST(GenericScan, InPlaceWithALambda) { in_place_scan_with_a_lambda(); }

// ---- filters and counts ---------------------------------------------------------------------------

struct SquareAbove {
  float threshold;
  TESSERA_HOST_DEVICE bool operator()(float x) const { return x * x > threshold; }
};

TEST(GenericFilter, PredicateFunctorAndLambdaAgainstSerialSelection) {
  for (index_t n : sizes(test::world().size())) {
    const std::uint64_t s = test::seed() * 29 + static_cast<std::uint64_t>(n);
    const auto global = test::random_vector<float>(n, s);
    std::vector<float> kept, removed;
    for (float x : global) (x * x > 0.25f ? kept : removed).push_back(x);
    for (const auto& array : layouts(global, s)) {
      const auto filtered = filter(array, SquareAbove{0.25f});
      const auto rest = remove_if(array, SquareAbove{0.25f});
      EXPECT_EQ(filtered.global_size(), static_cast<index_t>(kept.size())) << test::where(n, s);
      EXPECT_EQ(count_if(array, SquareAbove{0.25f}), static_cast<index_t>(kept.size())) << test::where(n, s);
      const auto got_kept = filtered.gather(0);
      const auto got_rest = rest.gather(0);
      if (test::world().rank() == 0) {
        EXPECT_EQ(got_kept, kept) << test::where(n, s);
        EXPECT_EQ(got_rest, removed) << test::where(n, s);
      }
      EXPECT_EQ(any_of(array, SquareAbove{0.25f}), !kept.empty());
      EXPECT_EQ(none_of(array, SquareAbove{0.25f}), kept.empty());
      EXPECT_EQ(all_of(array, SquareAbove{0.25f}), removed.empty());
    }
  }
}

void filter_structs_with_a_lambda() {
  for (index_t n : {index_t(0), index_t(5), index_t(4099), index_t(65537)}) {
    const std::uint64_t s = test::seed() * 31 + static_cast<std::uint64_t>(n);
    const auto global = test::random_matrices(n, s);
    auto pred = [] TESSERA_HOST_DEVICE(const Mat2& m) { return (m.m01 & 3u) == 1u; };
    std::vector<Mat2> expected;
    for (const Mat2& m : global)
      if (pred(m)) expected.push_back(m);
    for (const auto& array : layouts(global, s)) {
      const auto got = copy_if(array, pred).gather(0);
      if (test::world().rank() == 0) {
        EXPECT_EQ(got, expected) << test::where(n, s);
      }
    }
  }
}

TEST(GenericFilter, StructElementsWithALambda) { filter_structs_with_a_lambda(); }


}  // namespace
}  // namespace tessera
