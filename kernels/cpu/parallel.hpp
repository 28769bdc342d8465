// How the CPU backend splits one block among OpenMP threads: contiguous chunks, one per thread, so
// that each thread streams through its own part of memory and chunk results combine in order.
#pragma once

#include <omp.h>

#include <algorithm>

#include "tessera/kernels/config.hpp"

namespace tessera::kernels::cpu {

// Below this many elements a single thread is faster than waking a team.
inline constexpr index_t kSerialCutoff = 1 << 15;

inline int threads_for(index_t n) {
  if (n < kSerialCutoff) return 1;
  return static_cast<int>(std::min<index_t>(omp_get_max_threads(), n / (kSerialCutoff / 4)));
}

struct Chunk {
  index_t begin;
  index_t end;
};

// The part of [0, n) that thread t of `threads` owns; sizes differ by at most one.
inline Chunk chunk_of(index_t n, int t, int threads) {
  const index_t base = n / threads, extra = n % threads;
  const index_t begin = t * base + std::min<index_t>(t, extra);
  return {begin, begin + base + (t < extra ? 1 : 0)};
}

}  // namespace tessera::kernels::cpu
