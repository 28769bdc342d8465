// Local prefix scan (sum) of one rank's block, seeded with a carry-in: the sum of everything before
// this block, which the distributed scan obtains from the other ranks.
#pragma once

#include "tessera/kernels/queue.hpp"

namespace tessera {

enum class ScanKind { inclusive, exclusive };

inline const char* to_string(ScanKind k) { return k == ScanKind::inclusive ? "inclusive" : "exclusive"; }

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

}  // namespace kernels
}  // namespace tessera
