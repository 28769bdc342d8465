// Running sums and products with numpy's accumulators (compiled by nvcc where the build has CUDA).
#include <type_traits>

#include "../ops.hpp"
#include "functors.hpp"
#include "tessera/framework/algorithms.hpp"

namespace tessera::python::ops {

namespace {
ScanKind kind_of(bool exclusive) { return exclusive ? ScanKind::exclusive : ScanKind::inclusive; }
}  // namespace

template <class T>
DistArray<Accumulator<T>> cumsum(const DistArray<T>& a, bool exclusive) {
  if constexpr (is_complex_v<T>) {
    DistArray<T> out(a.context(), a.partition());
    auto view = device_view(out);
    scan(device_view(a), view, kind_of(exclusive), plus{}, device_t<T>(0));
    return out;
  } else if constexpr (std::is_same_v<Accumulator<T>, T>) {
    return scan(a, kind_of(exclusive));  // the precompiled prefix sum
  } else {
    DistArray<Accumulator<T>> wide(a.context(), a.partition());
    astype(a, wide);
    scan(wide, wide, kind_of(exclusive));
    return wide;
  }
}

template <class T>
DistArray<Accumulator<T>> cumprod(const DistArray<T>& a, bool exclusive) {
  using Acc = Accumulator<T>;
  if constexpr (is_complex_v<T>) {
    DistArray<T> out(a.context(), a.partition());
    auto view = device_view(out);
    scan(device_view(a), view, kind_of(exclusive), multiplies{}, device_t<T>(1));
    return out;
  } else if constexpr (std::is_same_v<Acc, T>) {
    return scan(a, kind_of(exclusive), multiplies{}, T(1));
  } else {
    DistArray<Acc> wide(a.context(), a.partition());
    astype(a, wide);
    scan(wide, wide, kind_of(exclusive), multiplies{}, Acc(1));
    return wide;
  }
}

#define TESSERA_PYTHON_SCAN(T)                                                        \
  template DistArray<Accumulator<T>> cumsum<T>(const DistArray<T>&, bool);           \
  template DistArray<Accumulator<T>> cumprod<T>(const DistArray<T>&, bool);
TESSERA_PYTHON_FOR_EACH_DTYPE(TESSERA_PYTHON_SCAN)

}  // namespace tessera::python::ops
