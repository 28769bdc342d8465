// The CPU backend: the same contract as the public headers, on host memory, multi-threaded with
// OpenMP. Called through the dispatch in kernels/src/dispatch.cpp; not a public header.
#pragma once

#include <cstdint>

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/gemm.hpp"
#include "tessera/kernels/predicate.hpp"
#include "tessera/kernels/reduce_op.hpp"
#include "tessera/kernels/scan.hpp"

namespace tessera::kernels::cpu {

// The precompiled sum / min / max: Op is plus, minimum or maximum.
template <class T, class Op>
void reduce(const T* in, index_t n, Op op, T* out);

template <class T>
index_t reduce_sum_depth(index_t n);

template <class T>
void scan(const T* in, T* out, index_t n, ScanKind kind, T carry_in);

// The two-pass scan (see the public scan.hpp).
template <class T>
index_t scan_segment_count(index_t n);
template <class T>
void scan_totals(const T* in, index_t n, T* segment_prefix, T* total);
template <class T>
void scan_from_totals(const T* in, T* out, index_t n, ScanKind kind, T carry_in, const T* segment_prefix);
template <class T>
ScanRounding scan_rounding();

// The precompiled select and count_if: Pred is one of the comparison function objects of
// predicate.hpp.
template <class T, class Pred>
void select(const T* in, index_t n, Pred pred, T* out, index_t* kept_count);

template <class T, class Pred>
void count_if(const T* in, index_t n, Pred pred, index_t* count);

// engine vendor: OpenBLAS for float, double and the complex types where the build found it
// (gemm.cpp); the blocked kernel otherwise.
template <class T>
void gemm(GemmEngine engine, index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b,
          index_t ldb, T beta, T* c, index_t ldc);

template <class T>
void fill(T* out, index_t n, T value);

template <class T>
void iota(T* out, index_t n, T start);

template <class T>
void generate(T* out, index_t n, std::uint64_t seed, index_t global_offset);

}  // namespace tessera::kernels::cpu
