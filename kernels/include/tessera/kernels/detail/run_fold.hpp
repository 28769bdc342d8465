// The item of the segmented scans under the by-key operations (by_key.hpp): a number of runs and
// the fold of the values of the last one, and how two of them combine.
#pragma once

#include "tessera/kernels/config.hpp"

namespace tessera {

// A number of runs and the fold of the values of the last one: what a block tells the other ranks
// about its runs, and the item of the segmented scans.
template <class V, class Count = index_t>
struct RunFold {
  Count runs = 0;
  V value{};
};

namespace kernels::detail {

// (runs, fold) pairs combine as segments: the right one restarts the fold where it holds a run's
// start. Associative whenever op is.
template <class V, class Op, class Count = index_t>
struct CombineRuns {
  using wrapped_functor = Op;
  Op op;
  TESSERA_HOST_DEVICE RunFold<V, Count> operator()(const RunFold<V, Count>& a, const RunFold<V, Count>& b) const {
    return RunFold<V, Count>{static_cast<Count>(a.runs + b.runs), b.runs > 0 ? b.value : op(a.value, b.value)};
  }
};

}  // namespace kernels::detail
}  // namespace tessera
