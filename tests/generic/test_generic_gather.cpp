// gather and scatter with distributed indices: permutations whose indices point to every rank,
// indices with repeats, int32 and int64 indices, user structs, values, indices and outputs in
// different partitions (empty ranks), indices outside the array refused on every rank; against
// serial references on the host at every rank count. Compiled by nvcc where the build has CUDA
// (TESSERA_TEST_BACKEND=cuda runs them on the device backend).
#include "generic_test_util.hpp"

namespace tessera {
namespace {

using test::expect_gathered;
using test::small_sizes;
using test::Tagged;

std::vector<index_t> permutation(index_t n, std::uint64_t s) {
  std::vector<index_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), index_t(0));
  std::shuffle(p.begin(), p.end(), std::mt19937_64(s));
  return p;
}

void gather_by_index() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 97 + static_cast<std::uint64_t>(n);
    const auto values = test::random_tagged(n, s);
    const auto perm = permutation(n, s + 1);
    // Indices into the values with repeats, more of them than values (and none where n == 0).
    std::vector<std::int32_t> repeats(static_cast<std::size_t>(n > 0 ? 2 * n + 1 : 0));
    std::mt19937_64 gen(s + 2);
    for (auto& i : repeats) i = static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(n));
    std::vector<Tagged> want_perm, want_repeats;
    for (index_t i : perm) want_perm.push_back(values[static_cast<std::size_t>(i)]);
    for (std::int32_t i : repeats) want_repeats.push_back(values[static_cast<std::size_t>(i)]);
    for (const auto& v : test::layouts(values, s)) {
      const std::string at = test::where(n, s) + (v.partition().is_block() ? " block values" : " ragged values");
      for (const auto& idx : test::layouts(perm, s + 3)) {
        const DistArray<Tagged> out = gather(v, idx);
        EXPECT_TRUE(out.partition() == idx.partition()) << at;
        expect_gathered(out, want_perm, "gather by a permutation " + at);
      }
      for (const auto& idx : test::layouts(repeats, s + 4)) expect_gathered(gather(v, idx), want_repeats, "gather with repeats " + at);
    }
  }
}

TEST(GenericGather, GatherByDistributedIndices) { gather_by_index(); }

void argsort_then_gather() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 101 + static_cast<std::uint64_t>(n);
    const auto keys = test::random_vector<std::int64_t>(n, s);
    const auto payload = test::random_tagged(n, s + 1);
    const auto k = DistArray<std::int64_t>::from_replicated(world, keys);
    const auto p = DistArray<Tagged>::from_replicated(world, payload);
    // Applying argsort's indices to another array orders it by the keys (as sort_by_key does).
    const DistArray<Tagged> ordered = gather(p, argsort(k));
    std::vector<std::size_t> order(keys.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
    std::vector<Tagged> want;
    for (std::size_t j : order) want.push_back(payload[j]);
    expect_gathered(ordered, want, "gather(values, argsort(keys)) " + test::where(n, s));
  }
}

TEST(GenericGather, ArgsortThenGatherOrdersAnotherArray) { argsort_then_gather(); }

void scatter_by_index() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 103 + static_cast<std::uint64_t>(n);
    const auto values = test::random_tagged(n, s);
    // Into an array three times as long: every third slot (shuffled) receives a value, the others
    // keep what they held.
    const index_t m = 3 * n + 2;
    auto slots = permutation(m, s + 1);
    slots.resize(static_cast<std::size_t>(n));
    std::vector<Tagged> background(static_cast<std::size_t>(m), Tagged{7, 7, 7});
    std::vector<Tagged> want = background;
    for (index_t j = 0; j < n; ++j) want[static_cast<std::size_t>(slots[static_cast<std::size_t>(j)])] = values[static_cast<std::size_t>(j)];
    for (const auto& v : test::layouts(values, s)) {
      const std::string at = test::where(n, s) + (v.partition().is_block() ? " block" : " ragged");
      const auto idx = DistArray<index_t>::from_replicated(world, slots, v.partition());
      for (const Partition& to : {Partition::block(m, world.size()), test::random_partition(m, world.size(), s + 2)}) {
        DistArray<Tagged> out = DistArray<Tagged>::from_replicated(world, background, to);
        scatter(v, idx, out);
        expect_gathered(out, want, "scatter " + at);
      }
      // int32 indices.
      std::vector<std::int32_t> narrow(slots.begin(), slots.end());
      const auto idx32 = DistArray<std::int32_t>::from_replicated(world, narrow, v.partition());
      DistArray<Tagged> out = DistArray<Tagged>::from_replicated(world, background);
      scatter(v, idx32, out);
      expect_gathered(out, want, "scatter with int32 indices " + at);
    }
    // Two values for one slot: one of them lands.
    if (n >= 2) {
      std::vector<index_t> twice(static_cast<std::size_t>(n), 0);
      for (index_t j = 0; j < n; ++j) twice[static_cast<std::size_t>(j)] = j / 2;
      const auto v = DistArray<Tagged>::from_replicated(world, values);
      const auto idx = DistArray<index_t>::from_replicated(world, twice);
      DistArray<Tagged> out = DistArray<Tagged>::from_replicated(world, background);
      scatter(v, idx, out);
      const std::vector<Tagged> got = out.gather(0);
      if (world.rank() == 0)
        for (index_t slot = 0; slot < (n + 1) / 2; ++slot) {
          const Tagged& g = got[static_cast<std::size_t>(slot)];
          const bool one_of = g == values[static_cast<std::size_t>(2 * slot)] ||
                              (2 * slot + 1 < n && g == values[static_cast<std::size_t>(2 * slot + 1)]);
          EXPECT_TRUE(one_of) << test::where(n, s) << " slot " << slot;
        }
    }
  }
}

TEST(GenericGather, ScatterIntoAnyPartitionKeepsTheRest) { scatter_by_index(); }

void out_of_range() {
  const Context& world = test::world();
  const index_t n = 37;
  const auto values = DistArray<Tagged>::from_replicated(world, test::random_tagged(n, test::seed()));
  for (index_t bad : {index_t(-1), n}) {
    std::vector<index_t> idx(static_cast<std::size_t>(n));
    std::iota(idx.begin(), idx.end(), index_t(0));
    idx.back() = bad;  // on the last rank only
    const auto indices = DistArray<index_t>::from_replicated(world, idx);
    EXPECT_THROW((void)gather(values, indices), UsageError) << "index " << bad;
    DistArray<Tagged> out(world, n);
    EXPECT_THROW(scatter(values, indices, out), UsageError) << "index " << bad;
  }
  // Still in step: a collective afterwards completes on every rank.
  EXPECT_EQ(values.at(n - 1), test::random_tagged(n, test::seed()).back());
}

TEST(GenericGather, AnIndexOutsideTheArrayIsRefusedOnEveryRank) { out_of_range(); }

}  // namespace
}  // namespace tessera
