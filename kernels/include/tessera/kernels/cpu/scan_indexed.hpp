// The CPU backend of scan_indexed (scan_indexed.hpp): each chunk's total, the chunks' carry-ins in
// chunk order from the seed, then each chunk's scan from its carry-in with the visits. Items are
// computed twice (once per pass); no identity is needed.
#pragma once

#include <cstddef>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/parallel.hpp"

namespace tessera::kernels::cpu {

template <class T, class Item, class Op, class Visit>
void scan_indexed(index_t n, Item item, Op op, T seed, Visit visit, T* total) {
  const int chunks = threads_for(n);
  std::vector<T> carry(static_cast<std::size_t>(chunks), seed);
  if (chunks > 1) {
    // Chunks hold at least kSerialCutoff / 4 elements each here, so none is empty.
    parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
      if (c + 1 == chunks) return;
      T acc = item(chunk.begin);
      for (index_t i = chunk.begin + 1; i < chunk.end; ++i) acc = op(acc, item(i));
      carry[static_cast<std::size_t>(c) + 1] = acc;
    });
    for (int c = 1; c < chunks; ++c)
      carry[static_cast<std::size_t>(c)] = op(carry[static_cast<std::size_t>(c) - 1], carry[static_cast<std::size_t>(c)]);
  }
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    T running = carry[static_cast<std::size_t>(c)];
    for (index_t i = chunk.begin; i < chunk.end; ++i) {
      const T x = item(i);
      visit(i, running, x);
      running = op(running, x);
    }
    if (c + 1 == chunks && total) *total = running;
  });
}

}  // namespace tessera::kernels::cpu
