// Partition arithmetic against a reference built element by element.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "tessera/framework/partition.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera {
namespace {

// The owner of every element, computed by dealing out elements one block at a time.
std::vector<int> reference_owners(index_t n, int parts) {
  std::vector<int> owner;
  for (int p = 0; p < parts; ++p) {
    const index_t size = n / parts + (p < n % parts ? 1 : 0);
    owner.insert(owner.end(), static_cast<std::size_t>(size), p);
  }
  return owner;
}

TEST(Partition, BlockMatchesElementwiseReference) {
  for (index_t n : {0, 1, 2, 3, 5, 7, 31, 32, 33, 100, 127, 1000, 1021, 1025}) {
    for (int parts : {1, 2, 3, 4, 5, 7, 8, 16, 33, 64}) {
      const Partition p = Partition::block(n, parts);
      const std::vector<int> owner = reference_owners(n, parts);
      ASSERT_EQ(static_cast<index_t>(owner.size()), n);
      index_t covered = 0;
      for (int r = 0; r < parts; ++r) {
        EXPECT_EQ(p.offset(r), covered) << "n=" << n << " parts=" << parts << " r=" << r;
        covered += p.local_size(r);
        EXPECT_LE(p.local_size(r), (n + parts - 1) / parts);
        EXPECT_GE(p.local_size(r), n / parts);
      }
      EXPECT_EQ(covered, n);
      EXPECT_EQ(p.offset(parts), n);
      for (index_t i = 0; i < n; ++i) ASSERT_EQ(p.owner(i), owner[static_cast<std::size_t>(i)]) << "i=" << i;
    }
  }
}

TEST(Partition, BlockIs64Bit) {
  const index_t n = (index_t(1) << 40) + 7;  // far beyond 32-bit offsets
  const int parts = 3;
  const Partition p = Partition::block(n, parts);
  EXPECT_EQ(p.local_size(0) + p.local_size(1) + p.local_size(2), n);
  EXPECT_EQ(p.offset(1), (n / 3) + 1);
  EXPECT_EQ(p.owner(n - 1), 2);
  EXPECT_EQ(p.owner(p.offset(1)), 1);
  EXPECT_EQ(p.owner(p.offset(1) - 1), 0);
}

TEST(Partition, MoreRanksThanElements) {
  const Partition p = Partition::block(3, 8);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(p.local_size(r), r < 3 ? 1 : 0);
  EXPECT_EQ(p.offset(7), 3);
  EXPECT_EQ(p.owner(2), 2);
}

TEST(Partition, RaggedFromCountsIsExclusiveScan) {
  std::mt19937_64 gen(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int parts = 1 + static_cast<int>(gen() % 9);
    std::vector<index_t> counts(static_cast<std::size_t>(parts));
    for (auto& c : counts) c = (gen() % 3 == 0) ? 0 : static_cast<index_t>(gen() % 50);
    const Partition p = Partition::from_counts(counts);
    index_t running = 0;
    std::vector<int> owner;
    for (int r = 0; r < parts; ++r) {
      EXPECT_EQ(p.offset(r), running);
      EXPECT_EQ(p.local_size(r), counts[static_cast<std::size_t>(r)]);
      running += counts[static_cast<std::size_t>(r)];
      owner.insert(owner.end(), static_cast<std::size_t>(counts[static_cast<std::size_t>(r)]), r);
    }
    EXPECT_EQ(p.global_size(), running);
    for (index_t i = 0; i < running; ++i) ASSERT_EQ(p.owner(i), owner[static_cast<std::size_t>(i)]);
    EXPECT_EQ(p.counts(), counts);
  }
}

TEST(Partition, EqualityComparesLayoutNotKind) {
  const Partition block = Partition::block(10, 3);
  const std::vector<index_t> same = {4, 3, 3};
  const std::vector<index_t> other = {3, 4, 3};
  EXPECT_TRUE(block == Partition::from_counts(same));
  EXPECT_FALSE(block == Partition::from_counts(other));
}

TEST(Partition, RejectsBadInput) {
  EXPECT_THROW(Partition::block(-1, 2), UsageError);
  EXPECT_THROW(Partition::block(10, 0), UsageError);
  const std::vector<index_t> negative = {3, -1};
  EXPECT_THROW(Partition::from_counts(negative), UsageError);
}

}  // namespace
}  // namespace tessera
