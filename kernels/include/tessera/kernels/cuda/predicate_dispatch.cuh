// Turns the run-time Predicate<T> into a compile-time one, so that the inner loops of select and
// count_if compare with one instruction instead of a switch per element.
#pragma once

#include "tessera/kernels/predicate.hpp"

namespace tessera::kernels::cuda::detail {

template <class T, PredicateKind Kind>
struct FixedPredicate {
  T a;
  T b;
  __device__ __forceinline__ bool operator()(T x) const {
    if constexpr (Kind == PredicateKind::gt) return x > a;
    if constexpr (Kind == PredicateKind::ge) return x >= a;
    if constexpr (Kind == PredicateKind::lt) return x < a;
    if constexpr (Kind == PredicateKind::le) return x <= a;
    if constexpr (Kind == PredicateKind::eq) return x == a;
    if constexpr (Kind == PredicateKind::ne) return x != a;
    if constexpr (Kind == PredicateKind::between) return a <= x && x <= b;
    if constexpr (Kind == PredicateKind::nonzero) return x != T(0);
    return false;
  }
};

// Calls f(FixedPredicate<T, kind>{a, b}) for the predicate's kind.
template <class T, class F>
void with_fixed_predicate(const Predicate<T>& p, F&& f) {
  switch (p.kind) {
    case PredicateKind::gt: return f(FixedPredicate<T, PredicateKind::gt>{p.a, p.b});
    case PredicateKind::ge: return f(FixedPredicate<T, PredicateKind::ge>{p.a, p.b});
    case PredicateKind::lt: return f(FixedPredicate<T, PredicateKind::lt>{p.a, p.b});
    case PredicateKind::le: return f(FixedPredicate<T, PredicateKind::le>{p.a, p.b});
    case PredicateKind::eq: return f(FixedPredicate<T, PredicateKind::eq>{p.a, p.b});
    case PredicateKind::ne: return f(FixedPredicate<T, PredicateKind::ne>{p.a, p.b});
    case PredicateKind::between: return f(FixedPredicate<T, PredicateKind::between>{p.a, p.b});
    case PredicateKind::nonzero: return f(FixedPredicate<T, PredicateKind::nonzero>{p.a, p.b});
  }
}

}  // namespace tessera::kernels::cuda::detail
