// The distributed algorithms. Each runs in three phases, in this order (../shared/DESIGN.md):
//   local   kernels on this rank's block            -> a per-rank partial (scalar, count, panel)
//   global  MPI / NCCL collectives over the context -> the agreed value (result, offset, panel)
//   fix-up  a second local pass where one is needed -> the output block
// Every call is collective over the array's context. Results are identical on every rank where a
// scalar is returned. PhaseTimes, where given, receives this rank's seconds per phase.
#pragma once

#include <cstdint>

#include "tessera/framework/dist_array.hpp"
#include "tessera/kernels/gemm.hpp"
#include "tessera/kernels/predicate.hpp"
#include "tessera/kernels/reduce.hpp"
#include "tessera/kernels/scan.hpp"

namespace tessera {

struct PhaseTimes {
  double local = 0;          // local kernels (device time under cuda: the phase ends with a sync)
  double communication = 0;  // collectives, device-buffer transfers included
  double fixup = 0;          // the second local pass (scan carry-in pass, filter scatter, ...)
  double host = 0;           // host-side serial work (set-up, bookkeeping, allocation)
  double total() const { return local + communication + fixup + host; }
  PhaseTimes& operator+=(const PhaseTimes& o) {
    local += o.local;
    communication += o.communication;
    fixup += o.fixup;
    host += o.host;
    return *this;
  }
};

// reduce: local reduce, then MPI_Allreduce of one value. Every rank gets the result.
template <class T>
T reduce(const DistArray<T>& array, ReduceOp op, PhaseTimes* times = nullptr);

// The correctly rounded sum (round to nearest, ties to even, of the exact sum of all elements), so
// bitwise identical for any number of ranks, backend and run. IEEE special values: any NaN -> NaN;
// +inf and -inf together -> NaN; otherwise an infinity wins; an exact sum beyond the largest finite
// value rounds to the infinity of its sign. The sum of no elements, and of zeros only, is +0 (-0 only
// when every element is -0, as in IEEE addition). T is float or double.
template <class T>
T reproducible_sum(const DistArray<T>& array, PhaseTimes* times = nullptr);

// Scans with the same partition as the input: local reduce, exclusive scan of the block totals
// across ranks (the carry-in), one local scan pass seeded with the carry-in.
template <class T>
DistArray<T> scan(const DistArray<T>& array, ScanKind kind, PhaseTimes* times = nullptr);
// The same into `out`, an array with the input's partition on the same context (no allocation:
// for repeated scans, and benchmarks that time the scan rather than the allocator). in-place allowed.
template <class T>
void scan(const DistArray<T>& array, DistArray<T>& out, ScanKind kind, PhaseTimes* times = nullptr);
template <class T>
DistArray<T> inclusive_scan(const DistArray<T>& array, PhaseTimes* times = nullptr) {
  return scan(array, ScanKind::inclusive, times);
}
template <class T>
DistArray<T> exclusive_scan(const DistArray<T>& array, PhaseTimes* times = nullptr) {
  return scan(array, ScanKind::exclusive, times);
}

// The elements that satisfy pred, in global order, as a ragged array: each rank keeps its own kept
// elements; the partition (known on every rank) says where each rank's piece sits globally. The
// result keeps the storage it was selected into (the input block's size) unless less than a third
// of it is used: local_capacity() may exceed local_size(); shrink_to_fit() releases the rest.
template <class T>
DistArray<T> filter(const DistArray<T>& array, Predicate<T> pred, PhaseTimes* times = nullptr);

// How many elements satisfy pred, on every rank.
template <class T>
index_t count_if(const DistArray<T>& array, Predicate<T> pred, PhaseTimes* times = nullptr);

// The same global sequence in the balanced block partition, moved with one all-to-all exchange.
// Correct when a rank sends or receives more than 2^31 bytes.
template <class T>
DistArray<T> rebalance(const DistArray<T>& array, PhaseTimes* times = nullptr);

}  // namespace tessera
