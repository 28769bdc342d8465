// The CPU backend of the generic local operations: header templates, instantiated with the caller's
// functors by any C++20 compiler. Host memory; synchronous. The contracts are those of the public
// headers (reduce.hpp, scan.hpp, select.hpp, transform.hpp); the notes here say how.
#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/parallel.hpp"
#include "tessera/kernels/functional.hpp"

namespace tessera::kernels::cpu {

// ---- reductions --------------------------------------------------------------------------------------

// A commutative operation folds each chunk into kLanes independent accumulators, element i into lane
// i % kLanes (so the compiler can vectorise and the operations do not wait on each other); any other
// operation folds each chunk from left to right. Chunk results combine in chunk order.
template <class Value, class Op, class Acc>
Acc fold_range(index_t begin, index_t end, Value&& value, Op& op, const Acc& identity) {
  if constexpr (is_commutative_v<Op>) {
    constexpr int kLanes = 8;
    Acc acc[kLanes];
    for (auto& a : acc) a = identity;
    index_t i = begin;
    for (; i + kLanes <= end; i += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] = op(acc[l], value(i + l));
    for (; i < end; ++i) acc[0] = op(acc[0], value(i));
    Acc result = acc[0];
    for (int l = 1; l < kLanes; ++l) result = op(result, acc[l]);
    return result;
  } else {
    Acc acc = identity;
    for (index_t i = begin; i < end; ++i) acc = op(acc, value(i));
    return acc;
  }
}

template <class Value, class Op, class Acc>
Acc fold_parallel(index_t n, Value&& value, Op op, Acc identity) {
  const int chunks = threads_for(n);
  if (chunks == 1) return fold_range(0, n, value, op, identity);
  std::vector<Acc> partial(static_cast<std::size_t>(chunks), identity);
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    partial[static_cast<std::size_t>(c)] = fold_range(chunk.begin, chunk.end, value, op, identity);
  });
  Acc result = identity;
  for (const Acc& p : partial) result = op(result, p);
  return result;
}

// identity op f(in[0]) op ... op f(in[n-1]).
template <class In, class F, class Op, class Acc>
Acc transform_reduce(const In* in, index_t n, F f, Op op, Acc identity) {
  return fold_parallel(n, [&](index_t i) -> Acc { return f(in[i]); }, op, identity);
}

// identity op f(first) op ... op f(first + n - 1).
template <class F, class Op, class Acc>
Acc transform_reduce_index(index_t first, index_t n, F f, Op op, Acc identity) {
  return fold_parallel(n, [&](index_t i) -> Acc { return f(first + i); }, op, identity);
}

// ---- scan --------------------------------------------------------------------------------------------

// The scan of one range seeded with `carry` (which comes before every element of the range).
template <class T, class Op>
void scan_range(const T* in, T* out, index_t n, ScanKind kind, Op& op, T carry) {
  if (kind == ScanKind::inclusive) {
    for (index_t i = 0; i < n; ++i) {
      carry = op(carry, in[i]);
      out[i] = carry;
    }
  } else {
    for (index_t i = 0; i < n; ++i) {
      const T x = in[i];  // read before the write: in place is safe
      out[i] = carry;
      carry = op(carry, x);
    }
  }
}

// The fold of a non-empty range without an identity: in[0] op ... op in[n-1].
template <class T, class Op>
T fold_nonempty(const T* in, index_t n, Op& op) {
  T acc = in[0];
  for (index_t i = 1; i < n; ++i) acc = op(acc, in[i]);
  return acc;
}

// Each chunk's total, then the chunk carry-ins in chunk order (seeded with init), then each chunk's
// scan from its carry-in. Reads the input twice, writes once; in place is safe. No identity needed.
template <class T, class Op>
void scan(const T* in, T* out, index_t n, ScanKind kind, Op op, T init) {
  const int chunks = threads_for(n);
  if (chunks == 1) {
    scan_range(in, out, n, kind, op, init);
    return;
  }
  std::vector<T> carry(static_cast<std::size_t>(chunks), init);
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    if (c + 1 < chunks && chunk.size() > 0) carry[static_cast<std::size_t>(c) + 1] = fold_nonempty(in + chunk.begin, chunk.size(), op);
  });
  // Chunks hold at least kSerialCutoff / 4 elements each, so none is empty here.
  for (int c = 1; c < chunks; ++c)
    carry[static_cast<std::size_t>(c)] = op(carry[static_cast<std::size_t>(c) - 1], carry[static_cast<std::size_t>(c)]);
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    scan_range(in + chunk.begin, out + chunk.begin, chunk.size(), kind, op, carry[static_cast<std::size_t>(c)]);
  });
}

// ---- select ------------------------------------------------------------------------------------------

template <class T, class Pred>
index_t count_range(const T* in, index_t begin, index_t end, Pred& pred) {
  index_t kept = 0;
  for (index_t i = begin; i < end; ++i) kept += pred(in[i]) ? 1 : 0;
  return kept;
}

template <class T, class Pred>
index_t count_if(const T* in, index_t n, Pred pred) {
  const int chunks = threads_for(n);
  if (chunks == 1) return count_range(in, 0, n, pred);
  std::vector<index_t> count(static_cast<std::size_t>(chunks), 0);
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    count[static_cast<std::size_t>(c)] = count_range(in, chunk.begin, chunk.end, pred);
  });
  index_t total = 0;
  for (index_t k : count) total += k;
  return total;
}

// Stable: each chunk counts its kept elements, the counts become write offsets in chunk order, then
// each chunk copies its kept elements from its offset. `out` has room for n elements, no overlap.
template <class T, class Pred>
index_t select(const T* in, index_t n, Pred pred, T* out) {
  const int chunks = threads_for(n);
  if (chunks == 1) {
    index_t kept = 0;
    for (index_t i = 0; i < n; ++i)
      if (pred(in[i])) out[kept++] = in[i];
    return kept;
  }
  std::vector<index_t> offset(static_cast<std::size_t>(chunks) + 1, 0);
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    offset[static_cast<std::size_t>(c) + 1] = count_range(in, chunk.begin, chunk.end, pred);
  });
  for (int c = 1; c <= chunks; ++c) offset[static_cast<std::size_t>(c)] += offset[static_cast<std::size_t>(c) - 1];
  parallel_for_chunks(n, chunks, [&](int c, Chunk chunk) {
    T* dst = out + offset[static_cast<std::size_t>(c)];
    for (index_t i = chunk.begin; i < chunk.end; ++i)
      if (pred(in[i])) *dst++ = in[i];
  });
  return offset[static_cast<std::size_t>(chunks)];
}

// ---- element-wise ------------------------------------------------------------------------------------

template <class In, class Out, class F>
void transform(const In* in, index_t n, Out* out, F f) {
  parallel_for(n, [&](index_t i) { out[i] = f(in[i]); });
}

template <class A, class B, class Out, class F>
void transform(const A* a, const B* b, index_t n, Out* out, F f) {
  parallel_for(n, [&](index_t i) { out[i] = f(a[i], b[i]); });
}

template <class Out, class F>
void transform_index(index_t first, index_t n, Out* out, F f) {
  parallel_for(n, [&](index_t i) { out[i] = f(first + i); });
}

template <class F>
void for_each_index(index_t first, index_t n, F f) {
  parallel_for(n, [&](index_t i) { f(first + i); });
}

}  // namespace tessera::kernels::cpu
