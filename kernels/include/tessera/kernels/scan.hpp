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
    cuda::scan(queue, in, out, n, kind, op, init);
#else
    detail::throw_needs_cuda_compiler("scan");
#endif
  }
}

}  // namespace kernels
}  // namespace tessera
