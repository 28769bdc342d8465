// Every open algorithm with complex<double>, a 24-byte struct and a 3-byte struct (element_types.hpp),
// across ranks, against serial references on the host; the data-moving algorithms (the exchange
// skeleton itself, rebalance, transpose and redistribute between every pair of layouts, gather and
// scatter, HDF5) with both the path's own exchanges and the remedy for unaligned runs forced on.
// Compiled by nvcc where the build has CUDA, so that TESSERA_TEST_BACKEND=cuda runs the same tests
// on the device backend.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "element_types.hpp"
#include "generic_test_util.hpp"
#include "tessera/framework/algorithms/exchange.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/redistribute.hpp"
#include "tessera/kernels/memory.hpp"

namespace tessera {
namespace {

using test::Complex;
using test::Record24;
using test::Rgb;

template <class T>
class ElementTypes : public ::testing::Test {};
using TheTypes = ::testing::Types<Complex, Record24, Rgb>;
TYPED_TEST_SUITE(ElementTypes, TheTypes);

// Sizes for the element-type tests: empty, one, fewer than the ranks, the tile edges, a prime.
std::vector<index_t> few_sizes() {
  const index_t p = test::world().size();
  return {0, 1, p - 1, p + 1, 31, 33, 257, 4099};
}

// Runs f with the exchange remedy off and forced on (restored after).
template <class F>
void with_both_exchanges(F&& f) {
  const std::optional<bool> before = detail::forced_aligned_exchange();
  for (bool aligned : {false, true}) {
    detail::force_aligned_exchange(aligned);
    f(aligned);
  }
  detail::force_aligned_exchange(before);
}

// ---- the exchange skeleton ---------------------------------------------------------------------------

// Each rank sends each rank (itself included) a run of 3-byte elements from a random offset of its
// buffer, straight or packed, and receives each peer's run at a random offset of its own (straight)
// or into a slot (packed): the bytes that arrive are the sender's, whatever the offsets.
TEST(Exchange, RunsFromAnyOffsetArriveWhole) {
  const Context& world = test::world();
  const int ranks = world.size(), me = world.rank();
  const kernels::Queue& q = world.queue();
  // The run rank `from` sends rank `to`: its length, where it starts in the sender's buffer, where it
  // lands in the receiver's, whether it travels packed, and its bytes: all from (seed, from, to).
  struct Run {
    index_t length, from_offset, to_offset;
    bool packed;
  };
  auto run_of = [&](int from, int to) {
    std::mt19937_64 gen(test::seed() * 131 + static_cast<std::uint64_t>(from * ranks + to));
    return Run{static_cast<index_t>(gen() % 70), static_cast<index_t>(gen() % 17), static_cast<index_t>(gen() % 23),
               gen() % 2 == 0};
  };
  auto byte_of = [](int from, int to, index_t i) { return static_cast<unsigned char>(from * 31 + to * 7 + i * 13); };
  constexpr std::size_t kElement = sizeof(Rgb);
  with_both_exchanges([&](bool aligned) {
    for (ExchangePattern pattern : {ExchangePattern::all_to_all, ExchangePattern::neighbours}) {
      // One buffer per peer on each side, so that the runs cannot overlap.
      std::vector<std::vector<unsigned char>> out(static_cast<std::size_t>(ranks)), in(out.size());
      std::vector<std::unique_ptr<kernels::ScratchBuffer>> send_blocks, recv_blocks;
      Exchange exchange(world, pattern);
      std::vector<std::size_t> packed_send(out.size(), SIZE_MAX), packed_recv(out.size(), SIZE_MAX);
      for (int p = 0; p < ranks; ++p) {
        const auto k = static_cast<std::size_t>(p);
        const Run s = run_of(me, p), r = run_of(p, me);
        out[k].assign(static_cast<std::size_t>(s.from_offset + s.length) * kElement, 0);
        for (index_t i = 0; i < s.length * static_cast<index_t>(kElement); ++i)
          out[k][static_cast<std::size_t>(s.from_offset) * kElement + static_cast<std::size_t>(i)] = byte_of(me, p, i);
        // The sends' buffer starts a byte past an allocation (a block viewed off a 16-byte
        // boundary): their leads are their offsets' in it, not their addresses'.
        send_blocks.push_back(std::make_unique<kernels::ScratchBuffer>(q, out[k].size() + 1));
        kernels::copy_from_host(q, send_blocks.back()->as<char>() + 1, out[k].data(), out[k].size());
        recv_blocks.push_back(
            std::make_unique<kernels::ScratchBuffer>(q, static_cast<std::size_t>(r.to_offset + r.length) * kElement + 1));
        const std::size_t sender_lead = r.packed ? 0 : lead_of(static_cast<std::size_t>(r.from_offset) * kElement);
        if (s.packed) packed_send[k] = exchange.send_packed(p, static_cast<std::size_t>(s.length) * kElement);
        else
          exchange.send(p, send_blocks.back()->as<char>() + 1 + s.from_offset * kElement,
                        static_cast<std::size_t>(s.length) * kElement,
                        lead_of(static_cast<std::size_t>(s.from_offset) * kElement));
        if (r.packed)
          packed_recv[k] = exchange.receive_packed(p, static_cast<std::size_t>(r.length) * kElement, sender_lead);
        else
          exchange.receive(p, recv_blocks.back()->as<char>() + r.to_offset * kElement,
                           static_cast<std::size_t>(r.length) * kElement, sender_lead);
      }
      exchange.prepare();
      for (int p = 0; p < ranks; ++p) {
        const auto k = static_cast<std::size_t>(p);
        const Run s = run_of(me, p);
        if (s.packed && s.length > 0)
          kernels::copy_within_async(q, exchange.send_slot(packed_send[k]), send_blocks[k]->as<char>() + 1 + s.from_offset * kElement,
                                     static_cast<std::size_t>(s.length) * kElement);
      }
      exchange.run();
      for (int p = 0; p < ranks; ++p) {
        const auto k = static_cast<std::size_t>(p);
        const Run r = run_of(p, me);
        std::vector<unsigned char> got(static_cast<std::size_t>(r.length) * kElement);
        if (!got.empty())
          kernels::copy_to_host(q, got.data(),
                                r.packed ? exchange.received_slot(packed_recv[k])
                                         : static_cast<const void*>(recv_blocks[k]->as<char>() + r.to_offset * kElement),
                                got.size());
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], byte_of(p, me, static_cast<index_t>(i)))
              << "from rank " << p << " byte " << i << (aligned ? " aligned" : "") << " seed=" << test::seed();
      }
      const double planned = exchange.plan()[0].bytes;
      EXPECT_EQ(planned, pattern == ExchangePattern::all_to_all ? exchange.bytes_to_others() + exchange.bytes_to_self()
                                                                  : exchange.bytes_to_others());
    }
  });
}

// Packed receives that name an element alignment: runs of int32 from each rank (itself included),
// sent from element offsets that are off 16-byte boundaries. Without the remedy every run follows
// the one before it end to end; with it (forced) a run from another rank lands on a 16-byte
// boundary plus its sender's lead, and one from this rank follows the run before it. Every run
// arrives whole.
TEST(Exchange, PackedReceivesOfOneTypeLandEndToEnd) {
  const Context& world = test::world();
  const int ranks = world.size(), me = world.rank();
  const kernels::Queue& q = world.queue();
  auto count_of = [&](int from, int to) { return static_cast<index_t>((from * 5 + to * 3) % 7 + 1); };
  auto start_of = [&](int from, int to) { return static_cast<index_t>((from + 2 * to) % 5); };  // elements
  auto value_of = [](int from, int to, index_t i) { return static_cast<std::int32_t>(from * 1000 + to * 100 + i); };
  with_both_exchanges([&](bool aligned) {
    Exchange exchange(world, ExchangePattern::all_to_all);
    std::vector<std::unique_ptr<kernels::ScratchBuffer>> blocks;
    std::vector<std::size_t> piece(static_cast<std::size_t>(ranks));
    for (int p = 0; p < ranks; ++p) {
      const index_t n = count_of(me, p), start = start_of(me, p);
      std::vector<std::int32_t> run(static_cast<std::size_t>(start + n));
      for (index_t i = 0; i < n; ++i) run[static_cast<std::size_t>(start + i)] = value_of(me, p, i);
      blocks.push_back(std::make_unique<kernels::ScratchBuffer>(q, run.size() * sizeof(std::int32_t)));
      kernels::copy_from_host(q, blocks.back()->as<char>(), run.data(), run.size() * sizeof(std::int32_t));
      exchange.send(p, blocks.back()->as<std::int32_t>() + start, static_cast<std::size_t>(n) * 4,
                    lead_of(static_cast<std::size_t>(start) * 4));
    }
    for (int p = 0; p < ranks; ++p)
      piece[static_cast<std::size_t>(p)] = exchange.receive_packed(
          p, static_cast<std::size_t>(count_of(p, me)) * 4, lead_of(static_cast<std::size_t>(start_of(p, me)) * 4), 4);
    exchange.prepare();
    for (int p = 0; p < ranks; ++p) {
      const auto* at = static_cast<const char*>(exchange.received_slot(piece[static_cast<std::size_t>(p)]));
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(at) % 4, 0u) << "from rank " << p;
      const bool brings_lead = aligned && p != me;
      if (brings_lead) {
        EXPECT_EQ((reinterpret_cast<std::uintptr_t>(at) - lead_of(static_cast<std::size_t>(start_of(p, me)) * 4)) % 16, 0u)
            << "from rank " << p;
      } else if (p > 0) {
        EXPECT_EQ(at, static_cast<const char*>(exchange.received_slot(piece[static_cast<std::size_t>(p - 1)])) +
                          count_of(p - 1, me) * 4)
            << "the run from rank " << p << " does not follow the one before it" << (aligned ? " (aligned)" : "");
      }
    }
    exchange.run();
    for (int p = 0; p < ranks; ++p) {
      std::vector<std::int32_t> got(static_cast<std::size_t>(count_of(p, me)));
      kernels::copy_to_host(q, got.data(), exchange.received_slot(piece[static_cast<std::size_t>(p)]), got.size() * 4);
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], value_of(p, me, static_cast<index_t>(i))) << "from rank " << p << (aligned ? " aligned" : "");
    }
  });
}

// The pipelined form: 7 steps, each a broadcast of a run of bytes from a root that moves from rank to
// rank, into one of two buffers that alternate. Every step's bytes arrive whole; step s + 1 is
// planned before step s is unpacked; each step's exchange plans one bcast of its bytes.
TEST(Exchange, PipelinedBroadcastsArriveWholeAndInOrder) {
  const Context& world = test::world();
  const int ranks = world.size(), me = world.rank();
  const kernels::Queue& q = world.queue();
  constexpr std::size_t kSteps = 7;
  auto root_of = [&](std::size_t s) { return static_cast<int>((s * 3 + 1) % static_cast<std::size_t>(ranks)); };
  auto length_of = [](std::size_t s) { return static_cast<std::size_t>((s * 37 + 5) % 61); };  // 0 at none, odd sizes
  auto byte_of = [](std::size_t s, std::size_t i) { return static_cast<unsigned char>(s * 29 + i * 11 + 3); };
  kernels::ScratchBuffer buffers(q, 2 * 64);
  std::vector<std::string> order;
  PhaseTimes times;
  pipelined_exchange_phases(
      {"pipelined broadcasts", static_cast<index_t>(kSteps)}, world, &times, kSteps,
      [&](std::size_t s) {
        order.push_back("plan " + std::to_string(s));
        std::vector<Exchange> xs;
        xs.emplace_back(world, ExchangePattern::broadcast);
        xs.back().broadcast(root_of(s), buffers.as<char>() + (s % 2) * 64, length_of(s));
        EXPECT_EQ(xs.back().plan(), (CollectivePlan{{Collective::bcast, static_cast<double>(length_of(s))}}));
        return xs;
      },
      [&](std::size_t s, std::vector<Exchange>&) {
        if (me != root_of(s) || length_of(s) == 0) return;
        std::vector<unsigned char> run(length_of(s));
        for (std::size_t i = 0; i < run.size(); ++i) run[i] = byte_of(s, i);
        kernels::copy_from_host(q, buffers.as<char>() + (s % 2) * 64, run.data(), run.size());
      },
      [&](std::size_t s, std::vector<Exchange>&) {
        order.push_back("unpack " + std::to_string(s));
        std::vector<unsigned char> got(length_of(s));
        if (!got.empty()) kernels::copy_to_host(q, got.data(), buffers.as<char>() + (s % 2) * 64, got.size());
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], byte_of(s, i)) << "step " << s << " from root " << root_of(s) << " byte " << i;
      });
  std::vector<std::string> expected{"plan 0"};
  for (std::size_t s = 0; s < kSteps; ++s) {
    if (s + 1 < kSteps) expected.push_back("plan " + std::to_string(s + 1));
    expected.push_back("unpack " + std::to_string(s));
  }
  EXPECT_EQ(order, expected);
  EXPECT_EQ(times.fixup, 0.0);
}

// ---- the algorithms on one array ---------------------------------------------------------------------

TYPED_TEST(ElementTypes, ReduceScanFilterCountTransformOrderRebalance) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t n : few_sizes()) {
    const std::uint64_t s = test::seed() * 17 + static_cast<std::uint64_t>(n);
    const std::vector<T> global = test::random_elements<T>(n, s);
    const T identity = test::identity_of<T>();
    // Serial references.
    T total = identity;
    std::vector<T> scanned, kept, twisted;
    index_t even = 0, first_unsorted = n, best = -1;
    for (index_t i = 0; i < n; ++i) {
      const T& x = global[static_cast<std::size_t>(i)];
      total = test::Combine{}(total, x);
      scanned.push_back(total);
      if (test::EvenKey{}(x)) {
        kept.push_back(x);
        ++even;
      }
      twisted.push_back(test::Twist{}(x));
      if (first_unsorted == n && i > 0 && test::ByKey{}(x, global[static_cast<std::size_t>(i - 1)])) first_unsorted = i;
      if (best < 0 || test::ByKey{}(x, global[static_cast<std::size_t>(best)])) best = i;
    }
    for (const auto& array : test::layouts(global, s)) {
      const std::string at = test::where(n, s);
      const T reduced = reduce(array, test::Combine{}, identity);
      EXPECT_TRUE(reduced == total) << at;
      EXPECT_EQ(inclusive_scan(array, test::Combine{}, identity).gather(0), world.is_root() ? scanned : std::vector<T>{}) << at;
      const DistArray<T> filtered = filter(array, test::EvenKey{});
      EXPECT_EQ(filtered.global_size(), even) << at;
      EXPECT_EQ(filtered.gather(0), world.is_root() ? kept : std::vector<T>{}) << at;
      const DistArray<T> balanced = rebalance(filtered);
      EXPECT_TRUE(balanced.partition() == Partition::block(even, world.size())) << at;
      EXPECT_EQ(balanced.gather(0), world.is_root() ? kept : std::vector<T>{}) << at;
      EXPECT_EQ(count_if(array, test::EvenKey{}), even) << at;
      EXPECT_EQ(transform(array, test::Twist{}).gather(0), world.is_root() ? twisted : std::vector<T>{}) << at;
      EXPECT_EQ(is_sorted_until(array, test::ByKey{}), first_unsorted) << at;
      const ValueIndex<T> smallest = min_element(array, test::ByKey{});
      EXPECT_EQ(smallest.index, best) << at;
      if (best >= 0) {
        EXPECT_TRUE(smallest.value == global[static_cast<std::size_t>(best)]) << at;
      }
    }
  }
}

TYPED_TEST(ElementTypes, SortByKeyMovesValuesAndRebalanceKeepsTheSequence) {
  using T = TypeParam;
  const Context& world = test::world();
  for (index_t n : few_sizes()) {
    const std::uint64_t s = test::seed() * 19 + static_cast<std::uint64_t>(n);
    const std::vector<T> global = test::random_elements<T>(n, s);
    const Partition ragged = test::random_partition(n, world.size(), s);
    with_both_exchanges([&](bool aligned) {
      const std::string at = test::where(n, s) + (aligned ? " aligned" : "");
      const auto array = DistArray<T>::from_replicated(world, global, ragged);
      EXPECT_EQ(rebalance(array).gather(0), world.is_root() ? global : std::vector<T>{}) << at;
      if constexpr (sizeof(T) <= 16) {
        // Keys: the elements' keys; values: the elements, in a stable order by key.
        std::vector<std::int32_t> keys;
        for (const T& x : global) keys.push_back(test::KeyOf{}(x));
        std::vector<std::size_t> order(global.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
        std::vector<T> want;
        for (std::size_t i : order) want.push_back(global[i]);
        const auto key_array = DistArray<std::int32_t>::from_replicated(world, keys, ragged);
        const SortedPairs<std::int32_t, T> sorted = sort_by_key(key_array, array);
        EXPECT_EQ(sorted.values.gather(0), world.is_root() ? want : std::vector<T>{}) << at;
      }
    });
  }
}

// ---- histograms with a binner of the caller's ------------------------------------------------------------

TYPED_TEST(ElementTypes, HistogramOfABinnerOnAFieldWithAndWithoutWeights) {
  using T = TypeParam;
  const Context& world = test::world();
  constexpr index_t kBins = 80;
  for (index_t n : few_sizes()) {
    const std::uint64_t s = test::seed() * 47 + static_cast<std::uint64_t>(n);
    const std::vector<T> global = test::random_elements<T>(n, s);
    std::vector<std::int32_t> weights = test::random_vector<std::int32_t>(n, s + 1);
    std::vector<double> real_weights;
    for (std::int32_t w : weights) real_weights.push_back(w * 0.25);  // exact sums in any order
    std::vector<index_t> counts(kBins, 0);
    std::vector<std::int64_t> sums(kBins, 0);
    std::vector<double> real_sums(kBins, 0);
    index_t below = 0, above = 0;
    std::int64_t weight_below = 0, weight_above = 0;
    for (std::size_t i = 0; i < global.size(); ++i) {
      const int b = test::BinByKey{}(global[i]);
      if (b == kernels::kBinBelow) {
        ++below;
        weight_below += weights[i];
      } else if (b == kernels::kBinAbove) {
        ++above;
        weight_above += weights[i];
      } else {
        ++counts[static_cast<std::size_t>(b)];
        sums[static_cast<std::size_t>(b)] += weights[i];
        real_sums[static_cast<std::size_t>(b)] += real_weights[i];
      }
    }
    const Partition ragged = test::random_partition(n, world.size(), s);
    const auto samples = DistArray<T>::from_replicated(world, global, ragged);
    const auto w = DistArray<std::int32_t>::from_replicated(world, weights, ragged);
    const auto rw = DistArray<double>::from_replicated(world, real_weights, ragged);
    const std::string at = test::where(n, s);
    const Histogram h = histogram(samples, test::BinByKey{}, kBins);
    EXPECT_EQ(h.counts, counts) << at;
    EXPECT_EQ(h.below, below) << at;
    EXPECT_EQ(h.above, above) << at;
    EXPECT_EQ(h.nan, 0) << at;
    const WeightedHistogram<std::int64_t> hw = histogram(samples, test::BinByKey{}, kBins, w);
    EXPECT_EQ(hw.sums, sums) << at;
    EXPECT_EQ(hw.below, weight_below) << at;
    EXPECT_EQ(hw.above, weight_above) << at;
    const WeightedHistogram<double> hr = histogram(samples, test::BinByKey{}, kBins, rw);
    EXPECT_EQ(hr.sums, real_sums) << at;
  }
}

// numpy's binning of equal bins, written as a binner of the caller's: the same counts as the
// precompiled path (NaN aside: a binner counts it above here).
struct NumpyEvenBinner {
  kernels::detail::EvenBinning<float> even;
  TESSERA_HOST_DEVICE int operator()(float x) const {
    const int slot = even(x);
    if (slot < even.bins) return slot;
    return slot == even.bins + kernels::detail::kSlotBelow ? kernels::kBinBelow : kernels::kBinAbove;
  }
};

struct BinnerAnsweringOutOfRange {
  TESSERA_HOST_DEVICE int operator()(float x) const { return x > 0.5f ? 7 : 0; }  // 7 bins: 7 is outside
};

TEST(HistogramBy, NumpysBinningAsAUserBinnerCountsAsThePrecompiledPathAndBadAnswersAreRefused) {
  const Context& world = test::world();
  for (index_t n : few_sizes()) {
    const std::uint64_t s = test::seed() * 53 + static_cast<std::uint64_t>(n);
    std::vector<float> global = test::random_vector<float>(n, s);
    for (std::size_t i = 0; i < global.size(); i += 7) global[i] = -global[i] * 3;  // some outside the range
    const auto a = DistArray<float>::from_replicated(world, global, test::random_partition(n, world.size(), s));
    for (index_t bins : {index_t(1), index_t(7), index_t(1000)}) {
      const EvenBins even{-0.75, 0.5, bins};
      const Histogram want = histogram(a, even);
      const Histogram got = histogram(a, NumpyEvenBinner{kernels::detail::make_even_binning<float>(even.lower, even.upper, bins)}, bins);
      EXPECT_EQ(got.counts, want.counts) << test::where(n, s) << " bins=" << bins;
      EXPECT_EQ(got.below, want.below) << test::where(n, s);
      EXPECT_EQ(got.above, want.above) << test::where(n, s);
    }
    // 7 bins, and an answer of 7 for the samples above 0.5: refused on every rank (where any exist).
    bool any_above = false;
    for (float x : global) any_above = any_above || x > 0.5f;
    if (any_above) {
      EXPECT_THROW((void)histogram(a, BinnerAnsweringOutOfRange{}, 7), UsageError) << test::where(n, s);
    } else {
      EXPECT_NO_THROW((void)histogram(a, BinnerAnsweringOutOfRange{}, 7)) << test::where(n, s);
    }
  }
  EXPECT_THROW((void)histogram(DistArray<float>(world, 10), BinnerAnsweringOutOfRange{}, 0), UsageError);
}

struct BinnerThrowingOnRank {
  int rank_to_throw;
  int my_rank;
  TESSERA_HOST_DEVICE int operator()(float x) const {
#if !defined(__CUDA_ARCH__)
    if (my_rank == rank_to_throw) throw std::runtime_error("binner failed here");
#endif
    return x > 0 ? 1 : 0;
  }
};

TEST(HistogramBy, ABinnerThatThrowsOnOneRankStopsEveryRank) {
  const Context& world = test::world();
  if (world.backend() != Backend::cpu) GTEST_SKIP() << "device code cannot throw";
  const auto x = test::random_vector<float>(1000, test::seed());
  const auto a = DistArray<float>::from_replicated(world, x);
  const int thrower = world.size() - 1;
  const BinnerThrowingOnRank binner{thrower, world.rank()};
  if (world.rank() == thrower) {
    EXPECT_THROW((void)histogram(a, binner, 2), std::runtime_error);
    EXPECT_THROW((void)histogram(a, binner, 2, a), std::runtime_error);
  } else {
    EXPECT_THROW((void)histogram(a, binner, 2), UsageError);
    EXPECT_THROW((void)histogram(a, binner, 2, a), UsageError);
  }
  // Still in step.
  EXPECT_EQ(histogram(a, BinnerThrowingOnRank{-1, world.rank()}, 2).counts[1], count_if(a, IsGreater<float>{0.0f}));
}

// ---- collectives with a user operation ----------------------------------------------------------------

// data[i] over the ranks, folded in rank order by op, on every rank; each rank's data from (seed, rank).
template <class T, class Op, class Make>
void check_allreduce(Op op, Make make, const char* what) {
  const Context& world = test::world();
  const kernels::Queue& q = world.queue();
  for (index_t n : few_sizes()) {
    const std::uint64_t s = test::seed() * 41 + static_cast<std::uint64_t>(n);
    std::vector<T> want;
    for (int r = 0; r < world.size(); ++r) {
      const std::vector<T> theirs = make(n, s + static_cast<std::uint64_t>(r) * 1000003);
      if (r == 0) want = theirs;
      else
        for (std::size_t i = 0; i < want.size(); ++i) want[i] = op(want[i], theirs[i]);
    }
    const std::vector<T> mine = make(n, s + static_cast<std::uint64_t>(world.rank()) * 1000003);
    kernels::ScratchBuffer buffer(q, static_cast<std::size_t>(n) * sizeof(T) + 1);
    if (n) kernels::copy_from_host(q, buffer.data(), mine.data(), mine.size() * sizeof(T));
    const auto before = detail::collective_calls(Collective::allreduce);
    DeviceComm(world).allreduce(buffer.as<T>(), n, op);
    EXPECT_EQ(detail::collective_calls(Collective::allreduce) - before, 1u) << what;
    std::vector<T> got(static_cast<std::size_t>(n));
    if (n) kernels::copy_to_host(q, got.data(), buffer.data(), got.size() * sizeof(T));
    EXPECT_EQ(got, want) << what << " " << test::where(n, s);
  }
}

TYPED_TEST(ElementTypes, DeviceCommAllreduceWithAUserOperation) {
  using T = TypeParam;
  check_allreduce<T>(test::Combine{}, [](index_t n, std::uint64_t s) { return test::random_elements<T>(n, s); },
                     "allreduce of the element type");
}

TEST(DeviceCommAllreduce, NonCommutativeOperationsFoldInRankOrderAndBuiltinsOfEveryType) {
  check_allreduce<test::Affine>(test::ComposeAffine{}, [](index_t n, std::uint64_t s) { return test::random_affines(n, s); },
                                "allreduce of affine maps (non-commutative)");
  check_allreduce<std::int32_t>(minimum{}, [](index_t n, std::uint64_t s) { return test::random_vector<std::int32_t>(n, s); },
                                "allreduce min of int32");
  check_allreduce<std::int64_t>(maximum{}, [](index_t n, std::uint64_t s) { return test::random_vector<std::int64_t>(n, s); },
                                "allreduce max of int64");
  check_allreduce<double>(plus{}, [](index_t n, std::uint64_t s) {
    std::vector<double> v = test::random_vector<double>(n, s);
    for (double& x : v) x = std::round(x * 1024);  // exact sums in any order
    return v;
  }, "allreduce sum of double");
  check_allreduce<float>(maximum{}, [](index_t n, std::uint64_t s) { return test::random_vector<float>(n, s); },
                         "allreduce max of float");
}

// The eight comparisons of predicate.hpp as function objects: the precompiled select and count_if.
TEST(BuiltinPredicates, EachComparisonAsAFunctionObject) {
  const Context& world = test::world();
  for (index_t n : few_sizes()) {
    const std::uint64_t s = test::seed() * 43 + static_cast<std::uint64_t>(n);
    std::vector<std::int32_t> global = test::random_vector<std::int32_t>(n, s);
    for (auto& x : global) x %= 7;
    const auto array = DistArray<std::int32_t>::from_replicated(world, global, test::random_partition(n, world.size(), s));
    auto check = [&](auto pred, const char* what) {
      std::vector<std::int32_t> want;
      for (std::int32_t x : global)
        if (pred(x)) want.push_back(x);
      EXPECT_EQ(filter(array, pred).gather(0), world.is_root() ? want : std::vector<std::int32_t>{}) << what << test::where(n, s);
      EXPECT_EQ(count_if(array, pred), static_cast<index_t>(want.size())) << what << test::where(n, s);
      const auto before = detail::collective_calls(Collective::allreduce);
      (void)count_if(array, pred);
      EXPECT_EQ(detail::collective_calls(Collective::allreduce) - before, 1u) << what << ": one allreduce";
    };
    check(IsGreater<std::int32_t>{2}, "gt");
    check(IsGreaterEqual<std::int32_t>{2}, "ge");
    check(IsLess<std::int32_t>{-1}, "lt");
    check(IsLessEqual<std::int32_t>{0}, "le");
    check(IsEqual<std::int32_t>{3}, "eq");
    check(IsNotEqual<std::int32_t>{3}, "ne");
    check(IsBetween<std::int32_t>{-2, 2}, "between");
    check(IsNonZero<std::int32_t>{}, "nonzero");
  }
}

// ---- matrices and fields -----------------------------------------------------------------------------

// The layouts of the ranks a matrix may have: row blocks, column blocks, MPI_Dims_create's 2-D grid,
// and its transpose.
std::vector<ProcessGrid> every_layout(const Context& world) {
  std::vector<ProcessGrid> grids = {row_block_grid(world), column_block_grid(world), ProcessGrid::create(world)};
  grids.push_back(ProcessGrid::create(world, grids.back().cols(), grids.back().rows()));
  return grids;
}

std::string grid_name(const ProcessGrid& g) { return std::to_string(g.rows()) + "x" + std::to_string(g.cols()); }

TYPED_TEST(ElementTypes, TransposeAndRedistributeBetweenEveryPairOfLayouts) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::vector<ProcessGrid> grids = every_layout(world);
  const index_t p = world.size();
  for (auto [rows, cols] : {std::pair<index_t, index_t>{0, 3}, {1, 1}, {p + 1, 1}, {7, 13}, {33, 31}}) {
    const std::uint64_t s = test::seed() * 23 + static_cast<std::uint64_t>(rows * 100 + cols);
    const std::vector<T> global = test::random_elements<T>(rows * cols, s);
    std::vector<T> transposed(global.size());
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j)
        transposed[static_cast<std::size_t>(j * rows + i)] = global[static_cast<std::size_t>(i * cols + j)];
    with_both_exchanges([&](bool aligned) {
      for (const ProcessGrid& from : grids) {
        const auto a = DistMatrix<T>::from_replicated(from, rows, cols, global);
        for (const ProcessGrid& to : grids) {
          const std::string at = std::to_string(rows) + "x" + std::to_string(cols) + " " + grid_name(from) + " -> " +
                                 grid_name(to) + (aligned ? " aligned" : "") + " seed=" + std::to_string(s);
          const DistMatrix<T> same = redistribute(a, to);
          EXPECT_EQ(same.grid().rows(), to.rows()) << at;
          EXPECT_EQ(same.gather(0), world.is_root() ? global : std::vector<T>{}) << at;
          const DistMatrix<T> t = transpose(a, to);
          EXPECT_EQ(t.rows(), cols) << at;
          EXPECT_EQ(t.gather(0), world.is_root() ? transposed : std::vector<T>{}) << at;
        }
      }
    });
  }
}

TYPED_TEST(ElementTypes, MatricesAndFieldsGatherAndScatter) {
  using T = TypeParam;
  const Context& world = test::world();
  for (const ProcessGrid& grid : every_layout(world)) {
    const index_t rows = grid.rows() + 6, cols = grid.cols() + 4;
    const std::uint64_t s = test::seed() * 29 + static_cast<std::uint64_t>(grid.rows());
    const std::vector<T> global = test::random_elements<T>(rows * cols, s);
    const std::vector<T> on_root = world.is_root() ? global : std::vector<T>{};
    const std::string at = grid_name(grid) + " seed=" + std::to_string(s);
    const DistMatrix<T> m = DistMatrix<T>::scatter(grid, rows, cols, on_root);
    EXPECT_EQ(m.gather(0), on_root) << at;
    // Each block is the serial matrix's.
    const std::vector<T> block = m.local_to_host();
    for (index_t i = 0; i < m.local_rows(); ++i)
      for (index_t j = 0; j < m.local_cols(); ++j)
        ASSERT_TRUE(block[static_cast<std::size_t>(i * m.local_cols() + j)] ==
                    global[static_cast<std::size_t>((m.row_offset() + i) * cols + m.col_offset() + j)])
            << at << " (" << i << ", " << j << ")";
    for (int ghosts : {0, 2}) {
      Field2D<T> f = Field2D<T>::scatter(grid, rows, cols, ghosts, std::span<const T>(on_root));
      EXPECT_EQ(f.gather(0), on_root) << at << " ghosts=" << ghosts;
      // The halo of the field moves its cells too: the ghost cells inside the domain are the
      // neighbours' (a box halo of the ghost width).
      if (ghosts > 0) {
        HaloExchange halo(f.plane_layout(), StencilForm::box, sizeof(T), f.context());
        halo.run(f.origin());
        std::vector<T> with_ghosts(static_cast<std::size_t>(f.ld() * (f.local_rows() + 2 * ghosts)));
        kernels::copy_to_host(world.queue(), with_ghosts.data(), f.origin() - ghosts * f.ld() - ghosts,
                              with_ghosts.size() * sizeof(T));
        for (index_t i = -ghosts; i < f.local_rows() + ghosts; ++i)
          for (index_t j = -ghosts; j < f.local_cols() + ghosts; ++j) {
            const index_t gi = f.row_offset() + i, gj = f.col_offset() + j;
            if (gi < 0 || gi >= rows || gj < 0 || gj >= cols) continue;
            ASSERT_TRUE(with_ghosts[static_cast<std::size_t>((i + ghosts) * f.ld() + j + ghosts)] ==
                        global[static_cast<std::size_t>(gi * cols + gj)])
                << at << " ghost cell (" << i << ", " << j << ")";
          }
      }
    }
  }
}

// A file name shared by the ranks of this run.
std::string shared_file(const char* what) {
  const Context& world = test::world();
  std::uint64_t id = world.is_root() ? static_cast<std::uint64_t>(::getpid()) : 0;
  id = world.comm().bcast_value(id, 0);
  return "/tmp/tessera_" + std::string(what) + "_" + std::to_string(id) + ".h5";
}

io::OutputAttributes attributes() {
  const Context& world = test::world();
  return io::OutputAttributes{"generic_tests", to_string(world.backend()), world.size(), {}, /*overwrite=*/true};
}

TYPED_TEST(ElementTypes, Hdf5RoundTripOfMatricesAndFields) {
  using T = TypeParam;
  const Context& world = test::world();
  const std::string file = shared_file("element_types");
  for (const ProcessGrid& grid : every_layout(world)) {
    const index_t rows = grid.rows() + 5, cols = grid.cols() + 2;
    const std::uint64_t s = test::seed() * 31 + static_cast<std::uint64_t>(grid.cols());
    const std::vector<T> global = test::random_elements<T>(rows * cols, s);
    const std::string at = grid_name(grid) + " seed=" + std::to_string(s);
    const auto m = DistMatrix<T>::from_replicated(grid, rows, cols, global);
    io::write_matrix(m, {file, "/m"}, attributes());
    // Read back on another layout.
    const DistMatrix<T> back = io::read_matrix<T>(every_layout(world)[0], {file, "/m"});
    EXPECT_EQ(back.rows(), rows) << at;
    EXPECT_EQ(back.gather(0), world.is_root() ? global : std::vector<T>{}) << at;
    const auto f = Field2D<T>::from_replicated(grid, rows, cols, 1, std::span<const T>(global));
    io::write_field(f, {file, "/group/f"}, attributes());
    Field2D<T> g(grid, rows, cols, 2);
    io::read_field(g, {file, "/group/f"});
    EXPECT_EQ(g.gather(0), world.is_root() ? global : std::vector<T>{}) << at;
  }
  world.comm().barrier();
  if (world.is_root()) std::remove(file.c_str());
}

TEST(ElementTypesHdf5, ComplexFloatReadsAsComplexDoubleAndUnnamedTypesAreRefused) {
  const Context& world = test::world();
  const std::string file = shared_file("complex");
  const ProcessGrid grid = ProcessGrid::create(world);
  const index_t rows = 5, cols = 3;
  std::vector<std::complex<float>> narrow;
  std::vector<Complex> wide;
  for (index_t i = 0; i < rows * cols; ++i) {
    narrow.emplace_back(static_cast<float>(i) * 0.5f, -static_cast<float>(i));
    wide.emplace_back(static_cast<double>(i) * 0.5, -static_cast<double>(i));
  }
  io::write_matrix(DistMatrix<std::complex<float>>::from_replicated(grid, rows, cols, narrow), {file, "/c64"}, attributes());
  EXPECT_EQ(io::read_matrix<Complex>(grid, {file, "/c64"}).gather(0), world.is_root() ? wide : std::vector<Complex>{});
  EXPECT_EQ(io::probe_numeric_or_complex(world, {file, "/c64"}).is_complex, true);
  // A matrix of numbers is not a compound, and a compound is not {x, mass, id, tag}.
  io::write_matrix(DistMatrix<double>(grid, rows, cols), {file, "/plain"}, attributes());
  EXPECT_THROW((void)io::read_matrix<Complex>(grid, {file, "/plain"}), io::IoError);
  EXPECT_THROW((void)io::read_matrix<Record24>(grid, {file, "/c64"}), io::IoError);
  // A type whose fields are not named: refused, and nothing written.
  const std::string other = shared_file("unnamed");
  const DistMatrix<test::Unnamed3> unnamed(grid, rows, cols);
  try {
    io::write_matrix(unnamed, {other, "/u"}, attributes());
    ADD_FAILURE() << "an element type with no HDF5 name was written";
  } catch (const io::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("TESSERA_HDF5_FIELDS"), std::string::npos) << e.what();
  }
  world.comm().barrier();
  EXPECT_NE(::access(other.c_str(), F_OK), 0) << other << " was created";
  if (world.is_root()) std::remove(file.c_str());
}

}  // namespace
}  // namespace tessera
