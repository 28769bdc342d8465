// Local prefix scans of one rank's block, seeded with a carry-in: everything before this block, which
// the distributed scan obtains from the other ranks.
//
//   scan(queue, in, out, n, kind, carry_in)            the prefix sum (precompiled, and a two-pass
//                                                      form for callers that need the total first)
//   scan(queue, in, out, n, kind, op, init)            any associative op, seeded with init
#pragma once

#include <type_traits>

#include "tessera/build_config.hpp"
#include "tessera/kernels/config.hpp"
#include "tessera/kernels/cpu/algorithms.hpp"
#include "tessera/kernels/detail/dispatch.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/queue.hpp"
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
#include "tessera/kernels/cuda/algorithms.cuh"
#endif

namespace tessera {

namespace kernels {

// inclusive: out[i] = carry_in + in[0] + ... + in[i]
// exclusive: out[i] = carry_in + in[0] + ... + in[i-1]   (out[0] = carry_in)
// `in` and `out` are backend memory of n elements each and may be the same buffer (in place).
// Integer sums wrap modulo 2^bits like reduce. One pass: each input read once, each output
// written once.
template <class T>
void scan(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, T carry_in);

// The same scan in two passes, for a caller that needs the total of `in` before the scan: the
// distributed scan sends its block total to the other ranks in between. Traffic 3N (as reduce +
// scan), but the scan pass needs no coordination between thread blocks, which on a GPU makes it
// faster than the single-pass scan (docs/KERNELS.md). Usage:
//   index_t segments = scan_segment_count<T>(queue, n);   // scratch of that many T, backend memory
//   scan_totals(queue, in, n, segment_prefix, total);     // *total (backend memory) = sum of in
//   scan_from_totals(queue, in, out, n, kind, carry_in, segment_prefix);  // `in` unchanged between
// `out` may be `in` (in place), as for scan(). Same results as scan() for integers; floating-point
// sums may round differently (another order).
template <class T>
index_t scan_segment_count(const Queue& queue, index_t n);
template <class T>
void scan_totals(const Queue& queue, const T* in, index_t n, T* segment_prefix, T* total);
template <class T>
void scan_from_totals(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, T carry_in,
                      const T* segment_prefix);

// How the two-pass prefix sum of float and double rounds (scan_totals + scan_from_totals, the path of
// the distributed scan), for code that checks its output against a proven bound (the apps'
// --verify: apps/common/verify.hpp derives its tolerance from these numbers). In a block, with y_j the
// element added at local position j (in[j] inclusive, in[j-1] exclusive):
//   - where j % run != 0, out[j] = out[j-1] + y_j, rounded once;
//   - the other positions are seeds: the scan restarts there from a prefix s_j obtained another way
//     (from tile, segment and block totals), rounded, and (inclusive) adds in[j] with one rounding.
//     A block's first element is a seed too, from the carry-in: a running sum, in rank order, of
//     the block totals (the totals come out of the same prefix computation as the segment prefixes).
// For consecutive seeds a < j (across a block border: a is the previous non-empty block's last
// seed), the difference between (s_j - exact prefix before j) and (s_a - exact prefix before a) is a
// sum of rounding errors of, by the level of j (segment: j % segment == 0 or a block's first
// element; tile: j % tile == 0; run: otherwise):
//   - summation trees over the elements from the start of a's tile (of a's segment at segment level)
//     up to j: of depth tile_depth inside a tile, plus one of depth segment_depth (a segment's
//     total) at segment level;
//   - run_roundings, tile_roundings or segment_roundings operations whose results are at most as
//     large as s_a, s_j, out[a], out[j] and running sums of that window (the seeds, the roundings
//     of out[a] and out[j] included);
//   - at segment level, prefix_roundings operations on segment prefixes: values within twice the
//     largest exact prefix of the block (up to j) plus their own error, that of summation trees of
//     depth segment_depth + prefix_depth + ceil(segments / prefix_chunk).
struct ScanRounding {
  index_t run = 1;
  index_t tile = 1;
  index_t segment = 1;
  int tile_depth = 0;
  int segment_depth = 0;
  int run_roundings = 0;
  int tile_roundings = 0;
  int segment_roundings = 0;
  int prefix_roundings = 0;
  int prefix_depth = 0;
  index_t prefix_chunk = 1;
};

// The rounding structure above for the backend and device of `queue` (float and double).
template <class T>
ScanRounding scan_rounding(const Queue& queue);

// inclusive: out[i] = init op in[0] op ... op in[i]
// exclusive: out[i] = init op in[0] op ... op in[i-1]   (out[0] = init)
// op: any associative operation (need not commute, needs no identity), applied with lower indices on
// the left. T trivially copyable and default constructible. `in` and `out` are backend memory of n
// elements and may be the same buffer. Stream-ordered under cuda. On the cuda backend one pass
// (decoupled look-back): each input read once, each output written once. The prefix sum of the
// precompiled element types takes the precompiled path from any translation unit.
template <class T, class Op>
void scan(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, Op op, T init) {
  static_assert(std::is_trivially_copyable_v<T>, "scan: the element type must be trivially copyable");
  detail::check_count(n, "scan");
  if constexpr (std::is_same_v<Op, plus> && (std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t> ||
                                             std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    scan(queue, in, out, n, kind, init);
  } else if (queue.backend == Backend::cpu) {
    if constexpr (detail::host_callable<Op>) {
      cpu::scan(in, out, n, kind, op, init);
    } else {
      detail::throw_device_only_functor_on_cpu("scan");
    }
  } else {
#if defined(__CUDACC__) && TESSERA_HAVE_CUDA
    if constexpr (detail::require_device_callable<Op>()) {
      cuda::scan(queue, in, out, n, kind, op, init);
    }
#else
    detail::throw_needs_cuda_compiler("scan");
#endif
  }
}

}  // namespace kernels
}  // namespace tessera
