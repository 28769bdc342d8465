// Sorting user structs by a comparator and by a key projection (the radix path and the merge path),
// sort_by_key with keys and values of any type, against std::stable_sort on the host: the same
// sequence, in the block partition, equal keys in their global input order. Every rank count, input
// in the block partition and in ragged ones (empty ranks), many ties, all keys equal. Compiled by
// nvcc where the build has CUDA (TESSERA_TEST_BACKEND=cuda runs them on the device backend).
#include "generic_test_util.hpp"

namespace tessera {
namespace {

using test::expect_gathered;
using test::small_sizes;

// 12 bytes: a score with few distinct values (many ties) and the element's input position, which
// tells whether a sort kept equal scores in input order.
struct Record {
  float score = 0;
  std::int32_t bucket = 0;
  std::int32_t position = 0;
  friend bool operator==(const Record&, const Record&) = default;
};
struct HigherScore {  // descending, a comparator no radix sort takes
  TESSERA_HOST_DEVICE bool operator()(const Record& a, const Record& b) const { return a.score > b.score; }
};
struct BucketOf {  // a projection onto a radix key
  TESSERA_HOST_DEVICE std::int32_t operator()(const Record& r) const { return r.bucket; }
};
struct ScoreOf {
  TESSERA_HOST_DEVICE float operator()(const Record& r) const { return r.score; }
};
struct Greater {
  template <class T>
  TESSERA_HOST_DEVICE bool operator()(const T& a, const T& b) const {
    return b < a;
  }
};

// 24 bytes: values above the 16 bytes a radix sort moves with its keys.
struct Payload {
  std::int64_t a = 0;
  std::int64_t b = 0;
  std::int64_t c = 0;
  friend bool operator==(const Payload&, const Payload&) = default;
};

std::vector<Record> random_records(index_t n, std::uint64_t s, int distinct) {
  std::mt19937_64 gen(s);
  std::vector<Record> v(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    const auto bucket = static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(distinct)) - distinct / 2;
    v[static_cast<std::size_t>(i)] = Record{static_cast<float>(bucket) * 0.25f + 0.125f, bucket, static_cast<std::int32_t>(i)};
  }
  return v;
}

template <class T, class Less>
std::vector<T> stable_sorted(std::vector<T> v, Less less) {
  std::stable_sort(v.begin(), v.end(), less);
  return v;
}

void records_by_comparator_and_projection() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size()))
    for (int distinct : {1, 7, 1000}) {
      if (n > 5000 && distinct != 7) continue;  // the large size once: the run time is shared
      const std::uint64_t s = test::seed() * 83 + static_cast<std::uint64_t>(n) * 3 + static_cast<std::uint64_t>(distinct);
      const auto records = random_records(n, s, distinct);
      const auto by_score_desc =
          stable_sorted(records, [](const Record& a, const Record& b) { return a.score > b.score; });
      const auto by_bucket = stable_sorted(records, [](const Record& a, const Record& b) { return a.bucket < b.bucket; });
      const auto by_bucket_desc =
          stable_sorted(records, [](const Record& a, const Record& b) { return a.bucket > b.bucket; });
      for (const auto& a : test::layouts(records, s)) {
        const std::string at = test::where(n, s) + " distinct " + std::to_string(distinct) +
                               (a.partition().is_block() ? " block" : " ragged");
        const DistArray<Record> merged = sort(a, HigherScore{});
        EXPECT_TRUE(merged.partition() == Partition::block(n, world.size())) << at;
        expect_gathered(merged, by_score_desc, "sort(a, comp) " + at);
        expect_gathered(sort(a, less{}, BucketOf{}), by_bucket, "sort(a, less, proj) (radix) " + at);
        expect_gathered(sort(a, less{}, ScoreOf{}), by_bucket, "sort(a, less, float proj) (radix) " + at);
        expect_gathered(sort(a, Greater{}, BucketOf{}), by_bucket_desc, "sort(a, greater, proj) (merge) " + at);
      }
    }
}

TEST(GenericSortBy, RecordsByComparatorAndByProjectionStably) { records_by_comparator_and_projection(); }

void keys_and_values() {
  const Context& world = test::world();
  for (index_t n : small_sizes(world.size())) {
    const std::uint64_t s = test::seed() * 89 + static_cast<std::uint64_t>(n);
    const auto keys = random_records(n, s, 9);
    std::vector<Payload> payloads(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
      payloads[i] = Payload{static_cast<std::int64_t>(i), static_cast<std::int64_t>(i) * 7, -static_cast<std::int64_t>(i)};
    std::vector<std::int32_t> ints(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) ints[i] = keys[i].bucket;
    // The reference: the (key, value) pairs sorted stably by each order.
    std::vector<std::size_t> order(keys.size());
    std::iota(order.begin(), order.end(), std::size_t(0));
    auto arranged = [&](auto less) {
      std::vector<std::size_t> o = order;
      std::stable_sort(o.begin(), o.end(), less);
      std::vector<Record> k;
      std::vector<Payload> v;
      std::vector<std::int32_t> i32;
      for (std::size_t j : o) {
        k.push_back(keys[j]);
        v.push_back(payloads[j]);
        i32.push_back(ints[j]);
      }
      return std::tuple{k, v, i32};
    };
    const auto [desc_keys, desc_values, unused_desc] =
        arranged([&](std::size_t x, std::size_t y) { return keys[x].score > keys[y].score; });
    const auto [asc_keys, asc_values, asc_ints] =
        arranged([&](std::size_t x, std::size_t y) { return keys[x].bucket < keys[y].bucket; });
    for (const auto& k : test::layouts(keys, s)) {
      const std::string at = test::where(n, s) + (k.partition().is_block() ? " block" : " ragged");
      const auto v = DistArray<Payload>::from_replicated(world, payloads, k.partition());
      const auto i = DistArray<std::int32_t>::from_replicated(world, ints, k.partition());
      const SortedPairs<Record, Payload> merged = sort_by_key(k, v, HigherScore{});
      expect_gathered(merged.keys, desc_keys, "sort_by_key(comp) keys " + at);
      expect_gathered(merged.values, desc_values, "sort_by_key(comp) values " + at);
      const SortedPairs<Record, Payload> projected = sort_by_key(k, v, less{}, BucketOf{});
      expect_gathered(projected.keys, asc_keys, "sort_by_key(less, proj) keys " + at);
      expect_gathered(projected.values, asc_values, "sort_by_key(less, proj) values " + at);
      // Radix keys with values above 16 bytes.
      const SortedPairs<std::int32_t, Payload> radix = sort_by_key(i, v, less{});
      expect_gathered(radix.keys, asc_ints, "sort_by_key(int32, payload) keys " + at);
      expect_gathered(radix.values, asc_values, "sort_by_key(int32, payload) values " + at);
    }
  }
}

TEST(GenericSortBy, SortByKeyWithAnyKeysAndValues) { keys_and_values(); }

}  // namespace
}  // namespace tessera
