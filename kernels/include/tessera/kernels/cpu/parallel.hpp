// How the CPU backend splits one block among threads: contiguous chunks, one per thread, so that each
// thread streams through its own part of memory and chunk results combine in order. OpenMP where the
// translation unit is compiled with it (the installed targets ask for it), one thread otherwise.
//
// An exception thrown by a user's functor inside a parallel region must not escape it (that ends the
// process): parallel_chunks catches it in the thread, and rethrows the first one after the region.
#pragma once

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <exception>
#include <mutex>

#include "tessera/kernels/config.hpp"

namespace tessera::kernels::cpu {

// Below this many elements a single thread is faster than waking a team.
inline constexpr index_t kSerialCutoff = 1 << 15;

inline int max_threads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

inline int threads_for(index_t n) {
  if (n < kSerialCutoff) return 1;
  return static_cast<int>(std::max<index_t>(1, std::min<index_t>(max_threads(), n / (kSerialCutoff / 4))));
}

struct Chunk {
  index_t begin;
  index_t end;
  index_t size() const { return end - begin; }
};

// The part of [0, n) that thread t of `threads` owns; sizes differ by at most one.
inline Chunk chunk_of(index_t n, int t, int threads) {
  const index_t base = n / threads, extra = n % threads;
  const index_t begin = t * base + std::min<index_t>(t, extra);
  return {begin, begin + base + (t < extra ? 1 : 0)};
}

// Collects the first exception of a parallel region, to rethrow once the region is over.
class FirstException {
 public:
  void capture() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!first_) first_ = std::current_exception();
  }
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
};

// Runs body(c, chunk) for each chunk c of `chunks` equal chunks of [0, n), on up to `chunks`
// threads. The chunks do not depend on how many threads OpenMP gives, so two calls with the same
// n and chunks see the same chunks (a two-pass algorithm relies on that). Exceptions: see above.
template <class Body>
void parallel_for_chunks(index_t n, int chunks, Body&& body) {
  if (chunks <= 1) {
    body(0, Chunk{0, n});
    return;
  }
  FirstException error;
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(chunks)
#endif
  for (int c = 0; c < chunks; ++c) {
    try {
      body(c, chunk_of(n, c, chunks));
    } catch (...) {
      error.capture();
    }
  }
  error.rethrow();
}

// Runs body(i) for every i in [0, n), split into contiguous chunks over threads_for(n) threads.
template <class Body>
void parallel_for(index_t n, Body&& body) {
  parallel_for_chunks(n, threads_for(n), [&](int, Chunk c) {
    for (index_t i = c.begin; i < c.end; ++i) body(i);
  });
}

}  // namespace tessera::kernels::cpu
