// The --verify checks of the apps: they accept correct results (computed here by serial host loops
// on replicated data, independently of the framework's algorithms) and reject results with one
// element wrong, on any one rank, at 1 and 3 ranks and with more ranks than elements.
#include <gtest/gtest.h>

#include <numeric>

#include "support/test_support.hpp"
#include "verify.hpp"

namespace tessera::apps {
namespace {

using test::world;

template <class T>
class VerifyTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(VerifyTest, ElementTypes);

const index_t kSizes[] = {0, 1, 2, 31, 33, 1025};

TYPED_TEST(VerifyTest, ReduceAcceptsTheSumAndRejectsAnother) {
  using T = TypeParam;
  for (const index_t n : kSizes) {
    const auto host = test::random_vector<T>(n, test::seed() + n);
    const auto array = DistArray<T>::from_replicated(world(), host);
    long double exact = 0;
    for (const T x : host) exact += x;
    const T sum = static_cast<T>(exact);
    EXPECT_TRUE(verify::check_reduce(array, ReduceOp::sum, sum, false).ok) << test::where(n);
    const T off = std::is_integral_v<T> ? sum + 1 : sum + T(0.5);
    EXPECT_FALSE(verify::check_reduce(array, ReduceOp::sum, off, false).ok) << test::where(n);
    if (n > 0) {
      const T mn = *std::min_element(host.begin(), host.end());
      EXPECT_TRUE(verify::check_reduce(array, ReduceOp::min, mn, false).ok) << test::where(n);
      EXPECT_FALSE(verify::check_reduce(array, ReduceOp::max, mn - T(1), false).ok) << test::where(n);
    }
  }
}

TYPED_TEST(VerifyTest, ScanAcceptsTheScanAndRejectsOneWrongElementAnywhere) {
  using T = TypeParam;
  for (const index_t n : kSizes) {
    for (const ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
      const auto host = test::random_vector<T>(n, test::seed() + n);
      std::vector<T> scanned(host.size());
      long double running = 0;
      for (std::size_t i = 0; i < host.size(); ++i) {
        if (kind == ScanKind::exclusive) scanned[i] = static_cast<T>(running);
        running += host[i];
        if (kind == ScanKind::inclusive) scanned[i] = static_cast<T>(running);
      }
      const auto in = DistArray<T>::from_replicated(world(), host);
      const auto out = DistArray<T>::from_replicated(world(), scanned);
      EXPECT_TRUE(verify::check_scan(in, out, kind).ok) << test::where(n);
      // One element off by an element's typical size, at the start, middle and end (rank borders).
      for (const index_t where : {index_t(0), n / 2, n - 1}) {
        if (n == 0) break;
        auto wrong = scanned;
        wrong[static_cast<std::size_t>(where)] += T(1);
        const auto bad = DistArray<T>::from_replicated(world(), wrong);
        EXPECT_FALSE(verify::check_scan(in, bad, kind).ok) << test::where(n) << " wrong at " << where;
      }
    }
  }
}

TYPED_TEST(VerifyTest, FilterAcceptsTheKeptSequenceAndRejectsReorderOrLoss) {
  using T = TypeParam;
  const Predicate<T> pred{PredicateKind::gt, T(0), T(0)};
  for (const index_t n : kSizes) {
    const auto host = test::random_vector<T>(n, test::seed() + n);
    std::vector<T> kept;
    for (const T x : host)
      if (pred(x)) kept.push_back(x);
    const auto in = DistArray<T>::from_replicated(world(), host);
    const auto good = DistArray<T>::from_replicated(world(), kept);  // block partition: as if rebalanced
    EXPECT_TRUE(verify::check_filter(in, good, pred).ok) << test::where(n);
    if (kept.size() >= 2) {
      auto swapped = kept;
      std::swap(swapped.front(), swapped.back());
      if (swapped != kept) {
        EXPECT_FALSE(verify::check_filter(in, DistArray<T>::from_replicated(world(), swapped), pred).ok) << test::where(n);
      }
      auto lost = kept;
      lost.pop_back();
      EXPECT_FALSE(verify::check_filter(in, DistArray<T>::from_replicated(world(), lost), pred).ok) << test::where(n);
      auto changed = kept;
      changed[kept.size() / 2] = changed[kept.size() / 2] + T(1);
      EXPECT_FALSE(verify::check_filter(in, DistArray<T>::from_replicated(world(), changed), pred).ok) << test::where(n);
    }
  }
}

template <class T>
class VerifyMatmulTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(VerifyMatmulTest, FloatTypes);

TYPED_TEST(VerifyMatmulTest, FreivaldsAcceptsTheProductAndRejectsOneWrongEntry) {
  using T = TypeParam;
  const ProcessGrid grid = ProcessGrid::create(world());
  const index_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 2, 31}, {2, 40, 3}};
  for (const auto& s : shapes) {
    const index_t m = s[0], k = s[1], n = s[2];
    const auto a = test::random_vector<T>(m * k, test::seed() + 1);
    const auto b = test::random_vector<T>(k * n, test::seed() + 2);
    std::vector<T> c(static_cast<std::size_t>(m * n));
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        long double acc = 0;
        for (index_t p = 0; p < k; ++p) acc += static_cast<long double>(a[i * k + p]) * b[p * n + j];
        c[static_cast<std::size_t>(i * n + j)] = static_cast<T>(acc);
      }
    const auto da = DistMatrix<T>::from_replicated(grid, m, k, a);
    const auto db = DistMatrix<T>::from_replicated(grid, k, n, b);
    EXPECT_TRUE(verify::check_matmul(da, db, DistMatrix<T>::from_replicated(grid, m, n, c), 99).ok) << m << k << n;
    auto wrong = c;
    wrong[wrong.size() / 2] += T(0.25);
    EXPECT_FALSE(verify::check_matmul(da, db, DistMatrix<T>::from_replicated(grid, m, n, wrong), 99).ok) << m << k << n;
  }
}

}  // namespace
}  // namespace tessera::apps
