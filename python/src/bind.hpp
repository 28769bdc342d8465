// What the binding's translation units share: the module's parts, and conversions between the
// package's types and Python's.
#pragma once

#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "array.hpp"
#include "dtypes.hpp"
#include "session.hpp"

namespace tessera::python {

using SessionPtr = std::shared_ptr<Session>;

// A process grid shape as Python gives it: (0, 0) for MPI_Dims_create's.
struct Layout {
  int rows = 0;
  int cols = 0;
};

// TypeError for a name that is not one of dtypes.hpp's.
Dtype parse_dtype(const std::string& name);
py::dtype numpy_dtype(Dtype dtype);

// A NumPy scalar of T's type (numpy.float32(x), numpy.int64(x), ...), as numpy's reductions return.
template <class T>
py::object numpy_scalar(T value) {
  static PyObject* type = [] {
    return py::object(py::module_::import("numpy").attr(DtypeInfo<T>::name)).release().ptr();  // kept for good
  }();
  return py::reinterpret_borrow<py::object>(type)(value);
}

void bind_errors(py::module_& m);
void bind_array(py::module_& m);
void bind_algorithms(py::module_& m);
void bind_fft(py::module_& m);

}  // namespace tessera::python
