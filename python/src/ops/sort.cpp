// numpy's order of floats for sort and argsort (compiled by nvcc where the build has CUDA: the key
// functor runs in the device kernels). Tessera's sorts order floats in IEEE total order, where a
// NaN with the sign bit set comes first (x86 makes such NaNs: inf - inf, 0 * inf) and -0 precedes
// +0. numpy puts every NaN last and holds -0 equal to +0 (a stable sort keeps their order). Where an
// array has neither kind of element the sorts run as they are; otherwise they sort by keys in which
// every NaN is one positive NaN and -0 is +0, carrying the elements (sort) or their global
// indices (argsort) with them: numpy's stable order, and its bits.
#include <limits>
#include <type_traits>
#include <utility>

#include "../ops.hpp"
#include "tessera/framework/algorithms.hpp"

namespace tessera::python::ops {
namespace {

template <class T>
struct NumpyOrderKey {
  TESSERA_HOST_DEVICE T operator()(T x) const {
    if (x != x) return std::numeric_limits<T>::quiet_NaN();  // one positive NaN: after +inf, all equal
    return x == T(0) ? T(0) : x;
  }
};

// The elements whose place in numpy's order differs from IEEE total order's: NaN, and -0.
template <class T>
struct OutOfTotalOrder {
  TESSERA_HOST_DEVICE bool operator()(T x) const { return x != x || (x == T(0) && T(1) / x < T(0)); }
};

template <class T>
bool needs_numpy_keys(const DistArray<T>& a) {
  if constexpr (std::is_floating_point_v<T>) return count_if(a, OutOfTotalOrder<T>{}) > 0;
  else return false;
}

template <class T>
DistArray<T> numpy_keys(const DistArray<T>& a) {
  DistArray<T> keys(a.context(), a.partition());
  transform(a, keys, NumpyOrderKey<T>{});
  return keys;
}

}  // namespace

template <class T>
DistArray<T> numpy_sort(const DistArray<T>& a) {
  if (!needs_numpy_keys(a)) return sort(a);
  if constexpr (std::is_floating_point_v<T>) return std::move(sort_by_key(numpy_keys(a), a).values);
  else return sort(a);
}

template <class T>
DistArray<std::int64_t> numpy_argsort(const DistArray<T>& a) {
  if (!needs_numpy_keys(a)) return argsort(a);
  if constexpr (std::is_floating_point_v<T>) return argsort(numpy_keys(a));
  else return argsort(a);
}

#define TESSERA_PYTHON_SORT(T)                                       \
  template DistArray<T> numpy_sort<T>(const DistArray<T>&);         \
  template DistArray<std::int64_t> numpy_argsort<T>(const DistArray<T>&);
TESSERA_PYTHON_FOR_EACH_ORDERED_DTYPE(TESSERA_PYTHON_SORT)

}  // namespace tessera::python::ops
