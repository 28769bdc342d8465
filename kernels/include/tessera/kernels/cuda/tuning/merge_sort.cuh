// Tuning of the comparator sort (device_merge_sort.cuh), the one place it lives. A tile is what one
// thread block sorts in shared memory and what each merge pass's thread block writes: 256 threads
// (128 for elements above 96 bytes) of kItemsPerThread consecutive elements.
//
// Items per thread are odd: a thread's elements lie kItemsPerThread elements after the previous
// lane's in shared memory, and with an even count of 8-byte elements the lanes of a warp meet in a
// few banks (8 items: lanes 64 bytes apart, 16 to a bank). About 136 bytes of keys and values per
// thread, at most 17 elements and at most 48 KiB of shared memory per tile; at least 3 where they
// fit. On an H200 (2^26 8-byte records, a comparator no radix sort takes; thrust::sort 8.1-8.6 ms)
// 5, 7, 8, 9, 11, 13, 15 and 17 items took 8.26, 8.53, 11.9, 7.48, 7.66, 7.27, 7.79 and 7.12 ms:
// odd counts, and fewer merge passes (17 items: tiles of 4352, 14 passes; 15: 3840, 15 passes).
// Other element sizes follow the same rule, not measured on their own. Items > 0 sets the items per
// thread instead (for measuring).
#pragma once

#include <cstddef>

namespace tessera::kernels::cuda::detail {

// The largest odd number at most x (1 at least).
constexpr int odd_at_most(int x) { return x < 1 ? 1 : (x % 2 == 1 ? x : x - 1); }

template <std::size_t ElementBytes, int Items = 0>
struct MergeSortTuning {
  static constexpr int kBlockThreads = ElementBytes > 96 ? 128 : 256;
  static constexpr int kBudgetItems = static_cast<int>(136 / ElementBytes);
  static constexpr int kFitItems = static_cast<int>(48 * 1024 / (kBlockThreads * ElementBytes));
  static constexpr int kWantItems = kBudgetItems < 3 ? 3 : (kBudgetItems > 17 ? 17 : kBudgetItems);
  static constexpr int kItemsPerThread = Items > 0 ? Items : odd_at_most(kWantItems < kFitItems ? kWantItems : kFitItems);
  static constexpr int kTileItems = kBlockThreads * kItemsPerThread;
  static_assert(static_cast<std::size_t>(kTileItems) * ElementBytes <= 48 * 1024,
                "sort with a comparator: elements (key and value together) of at most 384 bytes");
};

}  // namespace tessera::kernels::cuda::detail
