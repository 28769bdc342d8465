// The CUDA backend: the same contract as the public headers, on device memory, ordered on the
// queue's stream with no device-wide synchronisation. Temporary storage comes from the stream-ordered
// pool (cudaMallocAsync). Called through kernels/src/dispatch.cpp; not a public header.
#pragma once

#include <cstdint>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/gemm.hpp"
#include "tessera/kernels/predicate.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/kernels/reduce_op.hpp"
#include "tessera/kernels/scan.hpp"

namespace tessera::kernels::cuda {

// The precompiled sum / min / max: Op is plus, minimum or maximum.
template <class T, class Op>
void reduce(const Queue& queue, const T* in, index_t n, Op op, T* out);

// On the current device.
template <class T>
index_t reduce_sum_depth(index_t n);

template <class T>
void scan(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, T carry_in);

// The two-pass scan (see the public scan.hpp).
template <class T>
index_t scan_segment_count(index_t n);
template <class T>
void scan_totals(const Queue& queue, const T* in, index_t n, T* segment_prefix, T* total);
template <class T>
void scan_from_totals(const Queue& queue, const T* in, T* out, index_t n, ScanKind kind, T carry_in,
                      const T* segment_prefix);
template <class T>
ScanRounding scan_rounding();

// The precompiled select and count_if: Pred is one of the comparison function objects of
// predicate.hpp.
template <class T, class Pred>
void select(const Queue& queue, const T* in, index_t n, Pred pred, T* out, index_t* kept_count);

template <class T, class Pred>
void count_if(const Queue& queue, const T* in, index_t n, Pred pred, index_t* count);

// engine == tiled: our kernel; engine == vendor: cuBLAS (default math mode, no TF32).
template <class T>
void gemm(const Queue& queue, GemmEngine engine, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda,
          const T* b, index_t ldb, T beta, T* c, index_t ldc);

template <class T>
void fill(const Queue& queue, T* out, index_t n, T value);

template <class T>
void iota(const Queue& queue, T* out, index_t n, T start);

template <class T>
void generate(const Queue& queue, T* out, index_t n, std::uint64_t seed, index_t global_offset);

}  // namespace tessera::kernels::cuda
