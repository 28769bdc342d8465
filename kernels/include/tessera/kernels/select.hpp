// Local select (stream compaction): the elements that satisfy a predicate, in input order.
#pragma once

#include "tessera/kernels/predicate.hpp"
#include "tessera/kernels/queue.hpp"

namespace tessera::kernels {

// Writes the kept elements of in[0, n) to out[0, *kept_count), in input order (stable), and their
// number to *kept_count. `in`, `out` and `kept_count` are backend memory; `out` has room for n
// elements and does not overlap `in`. Stream-ordered under cuda.
template <class T>
void select(const Queue& queue, const T* in, index_t n, Predicate<T> pred, T* out, index_t* kept_count);

// Counts the elements of in[0, n) that satisfy pred into *count (backend memory).
template <class T>
void count_if(const Queue& queue, const T* in, index_t n, Predicate<T> pred, index_t* count);

}  // namespace tessera::kernels
