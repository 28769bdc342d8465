// Predicates for select / filter / count_if: a small closed set, so that the same value can be
// evaluated on the host and inside a CUDA kernel and parsed from a command line.
#pragma once

#include <string>

#include "tessera/kernels/config.hpp"

namespace tessera {

enum class PredicateKind { gt, ge, lt, le, eq, ne, between, nonzero };

// `between` keeps a <= x <= b. Comparisons follow IEEE: a NaN element satisfies only `ne` and
// `nonzero`.
template <class T>
struct Predicate {
  PredicateKind kind = PredicateKind::nonzero;
  T a{};
  T b{};

  TESSERA_HOST_DEVICE bool operator()(T x) const {
    switch (kind) {
      case PredicateKind::gt: return x > a;
      case PredicateKind::ge: return x >= a;
      case PredicateKind::lt: return x < a;
      case PredicateKind::le: return x <= a;
      case PredicateKind::eq: return x == a;
      case PredicateKind::ne: return x != a;
      case PredicateKind::between: return a <= x && x <= b;
      case PredicateKind::nonzero: return x != T(0);
    }
    return false;
  }
};

template <class T>
Predicate<T> greater_than(T a) { return {PredicateKind::gt, a, T{}}; }
template <class T>
Predicate<T> less_than(T a) { return {PredicateKind::lt, a, T{}}; }
template <class T>
Predicate<T> in_range(T a, T b) { return {PredicateKind::between, a, b}; }

}  // namespace tessera
