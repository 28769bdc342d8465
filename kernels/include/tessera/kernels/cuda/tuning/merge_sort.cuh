// Tuning of the comparator sort (device_merge_sort.cuh), the one place it lives. A tile is what one
// thread block sorts in shared memory and what each merge pass's thread block writes: 256 threads
// (128 for elements above 96 bytes) of kItemsPerThread consecutive elements, about 64 bytes of keys
// and values per thread (3 to 15 elements), so that a tile stays near 16 KiB of shared memory. Not
// tuned by measurement yet.
#pragma once

#include <cstddef>

namespace tessera::kernels::cuda::detail {

template <std::size_t ElementBytes>
struct MergeSortTuning {
  static constexpr int kBlockThreads = ElementBytes > 96 ? 128 : 256;
  static constexpr int kItemsPerThread =
      64 / static_cast<int>(ElementBytes) < 3 ? (ElementBytes > 96 ? 1 : 3)
                                              : (64 / static_cast<int>(ElementBytes) > 15 ? 15 : 64 / static_cast<int>(ElementBytes));
  static constexpr int kTileItems = kBlockThreads * kItemsPerThread;
  static_assert(static_cast<std::size_t>(kTileItems) * ElementBytes <= 48 * 1024,
                "sort with a comparator: elements (key and value together) of at most 384 bytes");
};

}  // namespace tessera::kernels::cuda::detail
