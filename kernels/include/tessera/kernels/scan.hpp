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

}  // namespace kernels
}  // namespace tessera
