// The sort app's --verify check (verify_sort.hpp): it accepts the sorted keys (and argsort) of a
// serial std::stable_sort of replicated data, and rejects a result with two keys swapped, a key
// changed, two equal keys' indices swapped (not stable) or an index changed, on any one rank, at 1
// and 3 ranks and with more ranks than elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <compare>
#include <numeric>
#include <vector>

#include "support/test_support.hpp"
#include "verify_sort.hpp"

namespace tessera::apps {
namespace {

using test::world;

template <class T>
class SortVerify : public ::testing::Test {};
using ElementTypes = ::testing::Types<std::int32_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(SortVerify, ElementTypes);

template <class T>
struct Reference {
  std::vector<T> keys;
  std::vector<index_t> indices;
};

template <class T>
Reference<T> stable_sorted(const std::vector<T>& input) {
  Reference<T> r;
  r.indices.resize(input.size());
  std::iota(r.indices.begin(), r.indices.end(), index_t(0));
  std::stable_sort(r.indices.begin(), r.indices.end(), [&](index_t a, index_t b) {
    const T x = input[static_cast<std::size_t>(a)], y = input[static_cast<std::size_t>(b)];
    if constexpr (std::is_floating_point_v<T>) {
      return std::strong_order(x, y) < 0;
    } else {
      return x < y;
    }
  });
  for (const index_t i : r.indices) r.keys.push_back(input[static_cast<std::size_t>(i)]);
  return r;
}

TYPED_TEST(SortVerify, AcceptsTheSortAndRejectsAnyChange) {
  using T = TypeParam;
  for (const index_t n : {index_t(0), index_t(1), index_t(2), index_t(33), index_t(1025)}) {
    auto input = test::random_vector<T>(n, test::seed() + static_cast<std::uint64_t>(n));
    for (std::size_t i = 0; i < input.size(); i += 3) input[i] = T(1);  // equal keys, for stability
    const Reference<T> ref = stable_sorted(input);
    const auto in = DistArray<T>::from_replicated(world(), input);
    const auto keys = DistArray<T>::from_replicated(world(), ref.keys);
    const auto indices = DistArray<index_t>::from_replicated(world(), ref.indices);
    EXPECT_TRUE(verify::check_sort(in, keys, nullptr).ok) << test::where(n);
    EXPECT_TRUE(verify::check_sort(in, keys, &indices).ok) << test::where(n);
    if (n < 2) continue;
    // Two neighbouring distinct keys swapped: the same multiset, out of order.
    std::size_t j = 0;
    while (j + 1 < ref.keys.size() && !(ref.keys[j] < ref.keys[j + 1])) ++j;
    if (j + 1 < ref.keys.size()) {
      auto swapped = ref.keys;
      std::swap(swapped[j], swapped[j + 1]);
      auto swapped_indices = ref.indices;
      std::swap(swapped_indices[j], swapped_indices[j + 1]);
      EXPECT_FALSE(verify::check_sort(in, DistArray<T>::from_replicated(world(), swapped), nullptr).ok) << test::where(n);
      const auto si = DistArray<index_t>::from_replicated(world(), swapped_indices);
      EXPECT_FALSE(verify::check_sort(in, DistArray<T>::from_replicated(world(), swapped), &si).ok) << test::where(n);
    }
    // One key changed to a value that keeps the order (the last key raised): the multiset differs.
    auto changed = ref.keys;
    changed.back() = std::numeric_limits<T>::max();
    if (changed.back() != ref.keys.back()) {
      EXPECT_FALSE(verify::check_sort(in, DistArray<T>::from_replicated(world(), changed), nullptr).ok) << test::where(n);
    }
    // Two equal keys' indices swapped: sorted keys, but not stable.
    for (std::size_t k = 0; k + 1 < ref.keys.size(); ++k)
      if (ref.keys[k] == ref.keys[k + 1]) {
        auto unstable = ref.indices;
        std::swap(unstable[k], unstable[k + 1]);
        const auto ui = DistArray<index_t>::from_replicated(world(), unstable);
        EXPECT_FALSE(verify::check_sort(in, keys, &ui).ok) << test::where(n) << " k=" << k;
        break;
      }
    // An index changed: the (key, index) multiset differs.
    auto wrong = ref.indices;
    wrong.back() = wrong.back() == 0 ? 1 : 0;
    const auto wi = DistArray<index_t>::from_replicated(world(), wrong);
    EXPECT_FALSE(verify::check_sort(in, keys, &wi).ok) << test::where(n);
  }
}

}  // namespace
}  // namespace tessera::apps
