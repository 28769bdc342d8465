// An exact sum of floats or doubles for tests, built differently from the code under test
// (kernels/exact_sum.hpp): the apps' independent reference (apps/common/exact_reference.hpp), which
// --verify uses as well.
#pragma once

#include <vector>

#include "../../apps/common/exact_reference.hpp"

namespace tessera::test {

template <class T>
using ExactReference = apps::ExactReference<T>;

template <class T>
T exact_sum_reference(const std::vector<T>& values) {
  ExactReference<T> r;
  for (T x : values) r.add(x);
  return r.rounded();
}

}  // namespace tessera::test
