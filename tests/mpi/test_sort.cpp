// The distributed sort (sort, sort_by_key, argsort, sort_with_indices) against a serial
// std::stable_sort of the whole array (std::strong_order, IEEE total order, for floating point):
// every key type, the distributions of the sort app, NaN / infinities / signed zeros, ragged input
// partitions, everything on one rank, fewer elements than ranks, and the message chunking. The
// result must be in the block partition; stability is checked through the global input index that
// travels as the value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <compare>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "algo_test_util.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/device_comm.hpp"

namespace tessera {
namespace {

template <class Key>
bool total_less(Key a, Key b) {
  if constexpr (std::is_floating_point_v<Key>) {
    return std::strong_order(a, b) < 0;
  } else {
    return a < b;
  }
}

enum class Pattern { uniform, normal, sorted, reverse, few_unique, all_equal, zipf, specials };
const Pattern kPatterns[] = {Pattern::uniform,    Pattern::normal,    Pattern::sorted, Pattern::reverse,
                             Pattern::few_unique, Pattern::all_equal, Pattern::zipf,   Pattern::specials};

std::string name(Pattern p) {
  const char* names[] = {"uniform", "normal", "sorted", "reverse", "few-unique", "all-equal", "zipf", "specials"};
  return names[static_cast<int>(p)];
}

// The whole array, the same on every rank (std::mt19937_64, independent of the library).
template <class Key>
std::vector<Key> make_keys(index_t n, Pattern pattern, std::uint64_t s) {
  std::mt19937_64 gen(s);
  std::normal_distribution<double> normal(0.0, 1000.0);
  std::vector<Key> keys(static_cast<std::size_t>(n));
  const Key specials[] = {std::numeric_limits<Key>::has_quiet_NaN ? std::numeric_limits<Key>::quiet_NaN() : Key(7),
                          std::numeric_limits<Key>::has_quiet_NaN ? -std::numeric_limits<Key>::quiet_NaN() : Key(3),
                          std::numeric_limits<Key>::has_infinity ? std::numeric_limits<Key>::infinity() : Key(0),
                          std::numeric_limits<Key>::has_infinity ? -std::numeric_limits<Key>::infinity() : Key(1),
                          std::is_signed_v<Key> ? static_cast<Key>(-0.0) : Key(2), Key(0),
                          std::numeric_limits<Key>::max(), std::numeric_limits<Key>::lowest()};
  for (index_t i = 0; i < n; ++i) {
    const std::uint64_t r = gen();
    Key key{};
    switch (pattern) {
      case Pattern::uniform: {
        const auto bits = static_cast<std::conditional_t<sizeof(Key) == 4, std::uint32_t, std::uint64_t>>(r);
        std::memcpy(&key, &bits, sizeof key);
        if constexpr (std::is_floating_point_v<Key>) {
          if (std::isnan(key)) key = static_cast<Key>(r % 1000);
        }
        break;
      }
      case Pattern::normal: key = static_cast<Key>(std::is_signed_v<Key> ? normal(gen) : std::fabs(normal(gen))); break;
      case Pattern::sorted: key = static_cast<Key>(i / 2); break;
      case Pattern::reverse: key = static_cast<Key>((n - i) / 2); break;
      case Pattern::few_unique: key = static_cast<Key>(r % 5); break;
      case Pattern::all_equal: key = static_cast<Key>(42); break;
      case Pattern::zipf: key = static_cast<Key>(std::floor(1.0 / std::max(1e-9, static_cast<double>(r >> 11) * 0x1p-53))); break;
      case Pattern::specials: key = specials[r % 8]; break;
    }
    keys[static_cast<std::size_t>(i)] = key;
  }
  return keys;
}

// The global input index of each element of the stably sorted array.
template <class Key>
std::vector<index_t> stable_order(const std::vector<Key>& keys) {
  std::vector<index_t> order(keys.size());
  std::iota(order.begin(), order.end(), index_t(0));
  std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) {
    return total_less(keys[static_cast<std::size_t>(a)], keys[static_cast<std::size_t>(b)]);
  });
  return order;
}

// Sorts with sort_with_indices (and, where asked, sort, argsort and sort_by_key) and checks this
// rank's blocks against the reference.
template <class Key>
void check_sort(const Context& ctx, const std::vector<Key>& keys, const Partition& from, bool all_calls,
                const std::string& where) {
  const auto n = static_cast<index_t>(keys.size());
  const std::vector<index_t> order = stable_order(keys);
  const auto array = DistArray<Key>::from_replicated(ctx, keys, from);
  const Partition block = Partition::block(n, ctx.size());
  auto check_keys = [&](const DistArray<Key>& got, const char* call) {
    ASSERT_TRUE(got.partition() == block) << where << " " << call;
    const std::vector<Key> mine = got.local_to_host();
    for (index_t i = 0; i < got.local_size(); ++i) {
      const Key want = keys[static_cast<std::size_t>(order[static_cast<std::size_t>(got.global_offset() + i)])];
      ASSERT_EQ(std::memcmp(&mine[static_cast<std::size_t>(i)], &want, sizeof(Key)), 0)
          << where << " " << call << " rank " << ctx.rank() << " global " << got.global_offset() + i;
    }
  };
  auto check_indices = [&](const DistArray<index_t>& got, const char* call) {
    ASSERT_TRUE(got.partition() == block) << where << " " << call;
    const std::vector<index_t> mine = got.local_to_host();
    const std::vector<index_t> want(order.begin() + got.global_offset(), order.begin() + got.global_offset() + got.local_size());
    ASSERT_EQ(mine, want) << where << " " << call << " rank " << ctx.rank();
  };
  PhaseTimes times;
  SortPhaseTimes sort_times;
  const SortedPairs<Key, index_t> both = sort_with_indices(array, &times, &sort_times);
  check_keys(both.keys, "sort_with_indices");
  check_indices(both.values, "sort_with_indices");
  EXPECT_GE(sort_times.local_sort, 0.0);
  if (!all_calls) return;
  check_keys(sort(array), "sort");
  check_indices(argsort(array), "argsort");
  // sort_by_key with a payload of another type: the global index as double.
  std::vector<double> payload(keys.size());
  std::iota(payload.begin(), payload.end(), 0.0);
  const auto values = DistArray<double>::from_replicated(ctx, payload, from);
  const SortedPairs<Key, double> pairs = sort_by_key(array, values);
  check_keys(pairs.keys, "sort_by_key");
  const std::vector<double> mine = pairs.values.local_to_host();
  for (index_t i = 0; i < pairs.values.local_size(); ++i)
    ASSERT_EQ(mine[static_cast<std::size_t>(i)], static_cast<double>(order[static_cast<std::size_t>(pairs.values.global_offset() + i)]))
        << where << " sort_by_key rank " << ctx.rank();
}

template <class Key>
class DistSort : public ::testing::Test {};
using KeyTypes = ::testing::Types<std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, float, double>;
TYPED_TEST_SUITE(DistSort, KeyTypes);

TYPED_TEST(DistSort, EverySizeFromBlockAndRaggedPartitions) {
  using Key = TypeParam;
  const Context& world = test::world();
  for (index_t n : test::algorithm_sizes(world.size())) {
    const std::uint64_t s = test::seed() + static_cast<std::uint64_t>(n);
    const auto keys = make_keys<Key>(n, Pattern::uniform, s);
    check_sort<Key>(world, keys, Partition::block(n, world.size()), n == 4099, test::where(n, s) + " block");
    check_sort<Key>(world, keys, test::random_partition(n, world.size(), s), false, test::where(n, s) + " ragged");
  }
}

TYPED_TEST(DistSort, EveryDistribution) {
  using Key = TypeParam;
  const Context& world = test::world();
  for (Pattern pattern : kPatterns)
    for (index_t n : {index_t(33), index_t(20011)}) {
      const std::uint64_t s = test::seed() + 3 * static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(pattern);
      const auto keys = make_keys<Key>(n, pattern, s);
      check_sort<Key>(world, keys, Partition::block(n, world.size()), n == 20011, test::where(n, s) + " " + name(pattern));
    }
}

// Everything on one rank: every other rank sends nothing, and (with N < P) some receive nothing.
TEST(DistSortEdges, EverythingOnOneRankAndFewerElementsThanRanks) {
  const Context& world = test::world();
  for (index_t n : {index_t(0), index_t(1), index_t(world.size()) - 1, index_t(1237)}) {
    for (int holder = 0; holder < world.size(); ++holder) {
      std::vector<index_t> counts(static_cast<std::size_t>(world.size()), 0);
      counts[static_cast<std::size_t>(holder)] = n;
      for (Pattern pattern : {Pattern::few_unique, Pattern::specials}) {
        const auto keys = make_keys<float>(n, pattern, test::seed() + 5);
        check_sort<float>(world, keys, Partition::from_counts(counts), true,
                          test::where(n) + " holder " + std::to_string(holder) + " " + name(pattern));
      }
    }
  }
}

// All keys equal and many more than the samples can tell apart: the global position splits them,
// and each rank gets exactly its share (check_sort asserts the block partition and the order).
TEST(DistSortEdges, AllEqualKeysStayBalancedAndStable) {
  const Context& world = test::world();
  const index_t n = 250007;
  const std::vector<std::int64_t> keys(static_cast<std::size_t>(n), -5);
  check_sort<std::int64_t>(world, keys, test::random_partition(n, world.size(), test::seed() + 1), true, test::where(n));
}

// With messages cut at 64 bytes, every transfer of the exchange goes in many chunks, as transfers
// above 2^31 bytes do.
TEST(DistSortEdges, ChunkedMessages) {
  struct MessageLimit {
    std::size_t saved = detail::mpi_message_limit();
    MessageLimit() { detail::set_mpi_message_limit(64); }
    ~MessageLimit() { detail::set_mpi_message_limit(saved); }
  } limit;
  const Context& world = test::world();
  const index_t n = 5003;
  const auto keys = make_keys<double>(n, Pattern::normal, test::seed() + 2);
  check_sort<double>(world, keys, test::random_partition(n, world.size(), test::seed() + 2), true, test::where(n));
}

}  // namespace
}  // namespace tessera
