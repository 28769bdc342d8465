// The CPU backend of the generic local operations: header templates, instantiated with the caller's
// functors by any C++20 compiler. Host memory; synchronous. The contracts are those of the public
// headers (reduce.hpp, scan.hpp, select.hpp, transform.hpp); the notes here say how.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/parallel.hpp"
#include "tessera/kernels/functional.hpp"

namespace tessera::kernels::cpu {

// ---- reductions --------------------------------------------------------------------------------------

// A commutative operation folds each chunk in blocks of kFoldBlock elements: within a block, element i
// goes to lane i % kFoldLanes of kFoldLanes independent accumulators (so the compiler can vectorise
// and the operations do not wait on each other), and the lanes meet as a binary tree; the block
// results meet pairwise (a binary counter of partial results, as in pairwise summation). No element
// passes through more than fold_depth(n) operations, which bounds the rounding error of a
// floating-point sum by gamma_depth * sum|x| (gamma_d = d u / (1 - d u); Higham, "Accuracy and
// Stability of Numerical Algorithms", 2nd ed., section 4.2). With one accumulator per lane over the
// whole chunk, the depth was n / 8 and same-sign sums drifted linearly in n (10^4 x 0.1f came out
// 0.03% off). Any other operation folds each chunk from left to right. Chunk results combine in
// chunk order.
inline constexpr int kFoldLanes = 8;
inline constexpr index_t kFoldBlock = 256;  // 32 elements per lane

// The fold of one block [first, last), at most kFoldBlock elements.
template <class Value, class Op, class Acc>
Acc fold_block(index_t first, index_t last, Value& value, Op& op, const Acc& identity) {
  Acc acc[kFoldLanes];
  for (auto& a : acc) a = identity;
  index_t i = first;
  for (; i + kFoldLanes <= last; i += kFoldLanes)
    for (int l = 0; l < kFoldLanes; ++l) acc[l] = op(acc[l], value(i + l));
  for (int l = 0; i < last; ++i, ++l) acc[l] = op(acc[l], value(i));
  for (int width = kFoldLanes / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l) acc[l] = op(acc[l], acc[l + width]);
  return acc[0];
}

template <class Value, class Op, class Acc>
Acc fold_range(index_t begin, index_t end, Value&& value, Op& op, const Acc& identity) {
  if constexpr (is_commutative_v<Op>) {
    // level[l] holds the fold of 2^l consecutive blocks while bit l of `blocks` is set.
    Acc level[64];
    std::uint64_t blocks = 0;
    for (index_t first = begin; first < end; first += kFoldBlock) {
      Acc carry = fold_block(first, std::min(end, first + kFoldBlock), value, op, identity);
      int l = 0;
      for (; (blocks >> l) & 1u; ++l) carry = op(level[l], carry);
      level[l] = carry;
      ++blocks;
    }
    Acc result = identity;
    for (int l = 63; l >= 0; --l)
      if ((blocks >> l) & 1u) result = op(result, level[l]);
    return result;
  } else {
    Acc acc = identity;
    for (index_t i = begin; i < end; ++i) acc = op(acc, value(i));
    return acc;
  }
}

// The most operations an element passes through in fold_range of n elements with a commutative
// operation: kFoldBlock / kFoldLanes in its lane (the identity's first one included), log2 kFoldLanes
// in the block's lane tree, at most floor(log2 B) merges of B blocks in the counter and
// floor(log2 B) + 1 in the final fold of the counter's levels.
constexpr index_t fold_depth(index_t n) {
  if (n <= 0) return 0;
  const index_t blocks = (n + kFoldBlock - 1) / kFoldBlock;
  index_t log2_blocks = 0;
  while ((index_t(2) << log2_blocks) <= blocks) ++log2_blocks;
  index_t lane_tree = 0;
  while ((1 << lane_tree) < kFoldLanes) ++lane_tree;
  return kFoldBlock / kFoldLanes + lane_tree + 2 * log2_blocks + 1;
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

// The most operations an element passes through in fold_parallel (a commutative operation): its
// chunk's fold, then one per chunk in the fold of the chunk results (the identity's included).
inline index_t fold_parallel_depth(index_t n) {
  return n <= 0 ? 0 : fold_depth(n) + threads_for(n);
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
