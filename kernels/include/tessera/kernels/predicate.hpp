// Predicates for select / filter / count_if. Two forms of the same eight comparisons:
//   - function objects (IsGreater<T>{a}, IsBetween<T>{a, b}, IsNonZero<T>{}, ...): what the
//     algorithms take, like any user predicate; for int32, int64, float and double their select and
//     count_if are precompiled, so any translation unit reaches them on either backend;
//   - Predicate<T>, the comparison chosen at run time (an app's --keep gt:0.5): with_predicate
//     turns it into its function object once, at the door, and the work runs with that.
#pragma once

#include <string>
#include <type_traits>

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

// The comparisons as function objects. `IsBetween` keeps a <= x <= b.
template <class T>
struct IsGreater {
  T a{};
  TESSERA_HOST_DEVICE bool operator()(const T& x) const { return x > a; }
};
template <class T>
struct IsGreaterEqual {
  T a{};
  TESSERA_HOST_DEVICE bool operator()(const T& x) const { return x >= a; }
};
template <class T>
struct IsLess {
  T a{};
  TESSERA_HOST_DEVICE bool operator()(const T& x) const { return x < a; }
};
template <class T>
struct IsLessEqual {
  T a{};
  TESSERA_HOST_DEVICE bool operator()(const T& x) const { return x <= a; }
};
template <class T>
struct IsEqual {
  T a{};
  TESSERA_HOST_DEVICE bool operator()(const T& x) const { return x == a; }
};
template <class T>
struct IsNotEqual {
  T a{};
  TESSERA_HOST_DEVICE bool operator()(const T& x) const { return x != a; }
};
template <class T>
struct IsBetween {
  T a{};
  T b{};
  TESSERA_HOST_DEVICE bool operator()(const T& x) const { return a <= x && x <= b; }
};
template <class T>
struct IsNonZero {
  TESSERA_HOST_DEVICE bool operator()(const T& x) const { return x != T(0); }
};

// X(T, Predicate) for each of the eight, for declaring and instantiating them per element type.
#define TESSERA_FOR_EACH_PREDICATE(X, T) \
  X(T, IsGreater<T>)                     \
  X(T, IsGreaterEqual<T>)                \
  X(T, IsLess<T>)                        \
  X(T, IsLessEqual<T>)                   \
  X(T, IsEqual<T>)                       \
  X(T, IsNotEqual<T>)                    \
  X(T, IsBetween<T>)                     \
  X(T, IsNonZero<T>)

// Calls f with the function object of p's comparison; returns what f returns.
template <class T, class F>
decltype(auto) with_predicate(const Predicate<T>& p, F&& f) {
  switch (p.kind) {
    case PredicateKind::gt: return f(IsGreater<T>{p.a});
    case PredicateKind::ge: return f(IsGreaterEqual<T>{p.a});
    case PredicateKind::lt: return f(IsLess<T>{p.a});
    case PredicateKind::le: return f(IsLessEqual<T>{p.a});
    case PredicateKind::eq: return f(IsEqual<T>{p.a});
    case PredicateKind::ne: return f(IsNotEqual<T>{p.a});
    case PredicateKind::between: return f(IsBetween<T>{p.a, p.b});
    case PredicateKind::nonzero: break;
  }
  return f(IsNonZero<T>{});
}

// True for the eight function objects of T (and Predicate<T>): the predicates whose select and
// count_if are precompiled, and which cannot throw.
template <class T, class P>
inline constexpr bool is_builtin_predicate =
    std::is_same_v<P, Predicate<T>> || std::is_same_v<P, IsGreater<T>> || std::is_same_v<P, IsGreaterEqual<T>> ||
    std::is_same_v<P, IsLess<T>> || std::is_same_v<P, IsLessEqual<T>> || std::is_same_v<P, IsEqual<T>> ||
    std::is_same_v<P, IsNotEqual<T>> || std::is_same_v<P, IsBetween<T>> || std::is_same_v<P, IsNonZero<T>>;

template <class T>
Predicate<T> greater_than(T a) { return {PredicateKind::gt, a, T{}}; }
template <class T>
Predicate<T> less_than(T a) { return {PredicateKind::lt, a, T{}}; }
template <class T>
Predicate<T> in_range(T a, T b) { return {PredicateKind::between, a, b}; }

}  // namespace tessera
