// The --verify checks of the apps: they accept correct results (the library's own, whose
// correctness the algorithm tests prove against independent references, and results computed here
// by serial host loops) and reject results with one element slightly wrong, on any one rank, at 1
// and 3 ranks and with more ranks than elements.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "support/exact_reference.hpp"
#include "support/test_support.hpp"
#include "verify.hpp"

namespace tessera::apps {
namespace {

using test::world;

template <class T>
class VerifyTest : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(VerifyTest, ElementTypes);

template <class T>
class VerifyFloatTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(VerifyFloatTest, FloatTypes);

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

// The library's sum passes; 0 and -sum fail where the bound is below |sum|; the reproducible sum
// must be the correctly rounded one, to the bit.
TYPED_TEST(VerifyFloatTest, ReduceHoldsTheSumToItsSummationBound) {
  using T = TypeParam;
  const index_t n = (index_t(1) << 20) + 3;
  const auto host = test::random_vector<T>(n, test::seed() + 7);
  const auto array = DistArray<T>::from_replicated(world(), host);
  const T sum = reduce(array, ReduceOp::sum);
  const Verdict good = verify::check_reduce(array, ReduceOp::sum, sum, false);
  EXPECT_TRUE(good.ok && good.checked) << good.detail;
  EXPECT_FALSE(verify::check_reduce(array, ReduceOp::sum, T(0), false).ok) << "0 accepted as the sum " << sum;
  EXPECT_FALSE(verify::check_reduce(array, ReduceOp::sum, -sum, false).ok) << "-sum accepted as the sum " << sum;

  const T exact = test::exact_sum_reference(host);
  EXPECT_TRUE(verify::check_reduce(array, ReduceOp::sum, exact, true).ok);
  T off = exact;
  for (int i = 0; i < 3; ++i) off = std::nextafter(off, std::numeric_limits<T>::infinity());
  const Verdict three_ulps = verify::check_reduce(array, ReduceOp::sum, off, true);
  EXPECT_FALSE(three_ulps.ok) << three_ulps.detail;
  EXPECT_NE(three_ulps.detail.find("3 ulps"), std::string::npos) << three_ulps.detail;
}

// Same-sign data where one accumulator per lane drifted linearly in n (10^4 x 0.1 on one rank).
TYPED_TEST(VerifyFloatTest, ReduceHasNoFalseAlarmOnSameSignData) {
  using T = TypeParam;
  for (const index_t n : {index_t(10000), (index_t(1) << 18) + 1}) {
    const std::vector<T> tenths(static_cast<std::size_t>(n), T(0.1));
    const auto array = DistArray<T>::from_replicated(world(), tenths);
    const Verdict v = verify::check_reduce(array, ReduceOp::sum, reduce(array, ReduceOp::sum), false);
    EXPECT_TRUE(v.ok) << test::where(n) << ": " << v.detail;
    auto positive = test::random_vector<T>(n, test::seed() + 3);
    for (T& x : positive) x = std::fabs(x) + T(1);
    const auto array2 = DistArray<T>::from_replicated(world(), positive);
    const Verdict v2 = verify::check_reduce(array2, ReduceOp::sum, reduce(array2, ReduceOp::sum), false);
    EXPECT_TRUE(v2.ok) << test::where(n) << ": " << v2.detail;
  }
}

// IEEE's rules: a NaN makes the sum NaN; an exact sum beyond the range rounds to infinity.
TYPED_TEST(VerifyFloatTest, ReduceSpecialValues) {
  using T = TypeParam;
  const T big = std::numeric_limits<T>::max();
  const std::vector<T> overflow = {big, big / 2, T(1)};
  const auto a = DistArray<T>::from_replicated(world(), overflow);
  EXPECT_TRUE(verify::check_reduce(a, ReduceOp::sum, std::numeric_limits<T>::infinity(), true).ok);
  EXPECT_FALSE(verify::check_reduce(a, ReduceOp::sum, big, true).ok);
  EXPECT_TRUE(verify::check_reduce(a, ReduceOp::sum, std::numeric_limits<T>::infinity(), false).ok);
  const std::vector<T> with_nan = {T(1), std::numeric_limits<T>::quiet_NaN(), T(2)};
  const auto b = DistArray<T>::from_replicated(world(), with_nan);
  EXPECT_TRUE(verify::check_reduce(b, ReduceOp::sum, std::numeric_limits<T>::quiet_NaN(), false).ok);
  EXPECT_FALSE(verify::check_reduce(b, ReduceOp::sum, T(3), false).ok);
  const std::vector<T> finite = {T(1), T(2)};
  const auto c = DistArray<T>::from_replicated(world(), finite);
  EXPECT_FALSE(verify::check_reduce(c, ReduceOp::sum, std::numeric_limits<T>::infinity(), false).ok);
}

TYPED_TEST(VerifyTest, IntegerScanMatchesExactlyAndRejectsOneWrongElementAnywhere) {
  using T = TypeParam;
  if constexpr (std::is_integral_v<T>) {
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
        EXPECT_TRUE(verify::check_scan(in, DistArray<T>::from_replicated(world(), scanned), kind).ok) << test::where(n);
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
}

// Inputs that a scan's check must not mistake for errors: random, constant, same-sign, mixed
// magnitudes with cancellation; more elements than one CPU segment (restarts inside a block).
template <class T>
std::vector<std::vector<T>> scan_inputs(index_t n) {
  std::vector<std::vector<T>> inputs;
  inputs.push_back(test::random_vector<T>(n, test::seed() + n));
  inputs.emplace_back(static_cast<std::size_t>(n), T(0.1));
  auto positive = test::random_vector<T>(n, test::seed() + n + 1);
  for (T& x : positive) x = std::fabs(x);
  inputs.push_back(positive);
  auto mixed = test::random_vector<T>(n, test::seed() + n + 2);
  for (std::size_t i = 0; i < mixed.size(); ++i) mixed[i] *= (i % 7 == 0) ? T(1e6) : (i % 3 == 0 ? T(1e-5) : T(1));
  inputs.push_back(mixed);
  return inputs;
}

TYPED_TEST(VerifyFloatTest, ScanAcceptsTheLibrarysScan) {
  using T = TypeParam;
  for (const index_t n : {index_t(0), index_t(1), index_t(2), index_t(33), index_t(1025), (index_t(1) << 17) + 3}) {
    for (const auto& host : scan_inputs<T>(n)) {
      const auto in = DistArray<T>::from_replicated(world(), host);
      for (const ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
        const Verdict v = verify::check_scan(in, scan(in, kind), kind);
        EXPECT_TRUE(v.ok && v.checked) << test::where(n) << " " << to_string(kind) << ": " << v.detail;
      }
    }
  }
}

// An output whose every element is the correctly rounded exact prefix (more accurate than ours).
TYPED_TEST(VerifyFloatTest, ScanAcceptsCorrectlyRoundedPrefixes) {
  using T = TypeParam;
  for (const index_t n : {index_t(1), index_t(31), index_t(1025)}) {
    const auto host = test::random_vector<T>(n, test::seed() + n);
    std::vector<T> inclusive(host.size()), exclusive(host.size());
    test::ExactReference<T> running;
    for (std::size_t i = 0; i < host.size(); ++i) {
      exclusive[i] = i ? running.rounded() : T(0);
      running.add(host[i]);
      inclusive[i] = running.rounded();
    }
    const auto in = DistArray<T>::from_replicated(world(), host);
    EXPECT_TRUE(verify::check_scan(in, DistArray<T>::from_replicated(world(), inclusive), ScanKind::inclusive).ok);
    EXPECT_TRUE(verify::check_scan(in, DistArray<T>::from_replicated(world(), exclusive), ScanKind::exclusive).ok);
  }
}

// One output element off by a relative 1e-6, or one input element left out of every later prefix,
// anywhere: inside a run, at a CPU segment's restart, at rank borders, first and last.
TYPED_TEST(VerifyFloatTest, ScanRejectsOneElementOffOrLost) {
  using T = TypeParam;
  const index_t n = (index_t(1) << 17) + 3;
  auto host = test::random_vector<T>(n, test::seed() + 11);
  const auto in0 = DistArray<T>::from_replicated(world(), host);
  std::vector<index_t> places = {0, 1, 2, 4, 1000, 65535, 65536, 65537, 131072, n - 1};
  for (int r = 1; r < world().size(); ++r) places.push_back(in0.partition().offset(r));
  for (const index_t p : places) host[static_cast<std::size_t>(p)] = T(0.75);  // an element of typical size
  const auto in = DistArray<T>::from_replicated(world(), host);
  for (const ScanKind kind : {ScanKind::inclusive, ScanKind::exclusive}) {
    std::vector<T> replicated = scan(in, kind).gather();
    replicated.resize(static_cast<std::size_t>(n));
    world().comm().bcast(replicated.data(), n, 0);
    const index_t run = kernels::scan_rounding<T>(world().queue()).run;
    for (const index_t p : places) {
      // The last element at a restart has no step after it: there a float's 1e-6 is within the
      // restart's bound (the segment total's rounding), which the arithmetic does not allow to tighten.
      const bool lone_restart = p == n - 1 && (p - in.partition().offset(in.partition().owner(p))) % run == 0;
      auto off = replicated;
      T& e = off[static_cast<std::size_t>(p)];
      e = e == T(0) ? T(1e-3) : e * (1 + T(1e-6));
      const Verdict v = verify::check_scan(in, DistArray<T>::from_replicated(world(), off), kind);
      if (!(lone_restart && std::is_same_v<T, float>)) {
        EXPECT_FALSE(v.ok) << "relative 1e-6 at " << p << " " << to_string(kind) << ": " << v.detail;
      }
      auto lost = replicated;
      const index_t from = kind == ScanKind::inclusive ? p : p + 1;
      for (index_t i = from; i < n; ++i) lost[static_cast<std::size_t>(i)] -= host[static_cast<std::size_t>(p)];
      if (from < n) {
        const Verdict w = verify::check_scan(in, DistArray<T>::from_replicated(world(), lost), kind);
        EXPECT_FALSE(w.ok) << "element " << p << " lost, " << to_string(kind) << ": " << w.detail;
      }
    }
  }
}

TYPED_TEST(VerifyFloatTest, ScanWithNonFiniteInput) {
  using T = TypeParam;
  auto host = test::random_vector<T>(100, test::seed());
  host[40] = std::numeric_limits<T>::quiet_NaN();
  const auto in = DistArray<T>::from_replicated(world(), host);
  auto out = scan(in, ScanKind::inclusive);
  const Verdict v = verify::check_scan(in, out, ScanKind::inclusive);
  EXPECT_TRUE(v.ok) << v.detail;
  auto finite_after = out.gather();
  finite_after.resize(100);
  world().comm().bcast(finite_after.data(), 100, 0);
  finite_after[70] = T(1);
  EXPECT_FALSE(verify::check_scan(in, DistArray<T>::from_replicated(world(), finite_after), ScanKind::inclusive).ok);
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
std::vector<T> reference_product(const std::vector<T>& a, const std::vector<T>& b, index_t m, index_t k, index_t n) {
  std::vector<T> c(static_cast<std::size_t>(m * n));
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      long double acc = 0;
      for (index_t p = 0; p < k; ++p) acc += static_cast<long double>(a[i * k + p]) * b[p * n + j];
      c[static_cast<std::size_t>(i * n + j)] = static_cast<T>(acc);
    }
  return c;
}

// Per element and, with no budget for that, by Freivalds: the product passes, one entry off fails.
TYPED_TEST(VerifyFloatTest, MatmulAcceptsTheProductAndRejectsOneWrongEntry) {
  using T = TypeParam;
  const ProcessGrid grid = ProcessGrid::create(world());
  const index_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 2, 31}, {2, 40, 3}, {33, 64, 17}};
  for (const auto& s : shapes) {
    const index_t m = s[0], k = s[1], n = s[2];
    const auto a = test::random_vector<T>(m * k, test::seed() + 1);
    const auto b = test::random_vector<T>(k * n, test::seed() + 2);
    const std::vector<T> c = reference_product(a, b, m, k, n);
    const auto da = DistMatrix<T>::from_replicated(grid, m, k, a);
    const auto db = DistMatrix<T>::from_replicated(grid, k, n, b);
    const std::string shape = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    for (const long double budget : {verify::kElementCheckBudget, 0.0L}) {
      const Verdict good = verify::check_matmul(da, db, DistMatrix<T>::from_replicated(grid, m, n, c), 99, budget);
      EXPECT_TRUE(good.ok && good.checked) << shape << ": " << good.detail;
      auto wrong = c;
      wrong[wrong.size() / 2] += T(0.25);
      EXPECT_FALSE(verify::check_matmul(da, db, DistMatrix<T>::from_replicated(grid, m, n, wrong), 99, budget).ok) << shape;
    }
    // The largest element off by a relative 1e-4: per element, that is far beyond gamma_{K+2}.
    auto largest = c;
    auto it = std::max_element(largest.begin(), largest.end(), [](T x, T y) { return std::fabs(x) < std::fabs(y); });
    *it *= 1 + T(1e-4);
    EXPECT_FALSE(verify::check_matmul(da, db, DistMatrix<T>::from_replicated(grid, m, n, largest), 99).ok) << shape;
  }
}

// NaN in the inputs: the elements that depend on it cannot be compared; when all do, nothing is
// said to match.
TYPED_TEST(VerifyFloatTest, MatmulWithNaNInputsIsNotChecked) {
  using T = TypeParam;
  const ProcessGrid grid = ProcessGrid::create(world());
  const index_t m = 9, k = 4, n = 7;
  auto a = test::random_vector<T>(m * k, test::seed() + 1);
  auto b = test::random_vector<T>(k * n, test::seed() + 2);
  for (index_t i = 0; i < m; ++i) a[static_cast<std::size_t>(i * k)] = std::numeric_limits<T>::quiet_NaN();
  std::vector<T> c = reference_product(a, b, m, k, n);
  const auto da = DistMatrix<T>::from_replicated(grid, m, k, a);
  const auto db = DistMatrix<T>::from_replicated(grid, k, n, b);
  for (const long double budget : {verify::kElementCheckBudget, 0.0L}) {
    const Verdict v = verify::check_matmul(da, db, DistMatrix<T>::from_replicated(grid, m, n, c), 5, budget);
    EXPECT_TRUE(v.ok && !v.checked) << v.detail;
  }
  a[0] = T(1);  // row 0 of A finite again: its row of C is compared
  c = reference_product(a, b, m, k, n);
  const auto da2 = DistMatrix<T>::from_replicated(grid, m, k, a);
  const Verdict v = verify::check_matmul(da2, db, DistMatrix<T>::from_replicated(grid, m, n, c), 5);
  EXPECT_TRUE(v.ok && v.checked) << v.detail;
  c[1] += T(1);
  EXPECT_FALSE(verify::check_matmul(da2, db, DistMatrix<T>::from_replicated(grid, m, n, c), 5).ok);
}

}  // namespace
}  // namespace tessera::apps
