// What a tessera.DistArray holds: a 1-D DistArray<T> or a 2-D DistMatrix<T> of one of the package's
// element types (dtypes.hpp), the session it lives in, and, for an array made without a copy from
// another library's block (from_local), what keeps that block's memory alive.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <utility>
#include <variant>

#include "dtypes.hpp"
#include "session.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/dist_matrix.hpp"

namespace tessera::python {

namespace py = pybind11;

namespace detail {
template <template <class> class Wrap, class List>
struct VariantOf;
template <template <class> class Wrap, class... Ts>
struct VariantOf<Wrap, TypeList<Ts...>> {
  using type = std::variant<std::monostate, Wrap<Ts>...>;
};
}  // namespace detail

using AnyVector = typename detail::VariantOf<DistArray, Dtypes>::type;
using AnyMatrix = typename detail::VariantOf<DistMatrix, Dtypes>::type;

class Array {
 public:
  template <class T>
  Array(std::shared_ptr<Session> session, DistArray<T>&& a)
      : session_(std::move(session)), dtype_(dtype_of<T>()), ndim_(1), vector_(std::move(a)) {}
  template <class T>
  Array(std::shared_ptr<Session> session, DistMatrix<T>&& m)
      : session_(std::move(session)), dtype_(dtype_of<T>()), ndim_(2), matrix_(std::move(m)) {}
  // Frees the block under the package's lock (the framework's allocator is shared by all threads),
  // then lets go of what kept a borrowed block alive.
  ~Array();
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  const std::shared_ptr<Session>& session() const { return session_; }
  const Context& context() const { return session_->context(); }
  Dtype dtype() const { return dtype_; }
  int ndim() const { return ndim_; }

  template <class T>
  DistArray<T>& vector() { return std::get<DistArray<T>>(vector_); }
  template <class T>
  DistMatrix<T>& matrix() { return std::get<DistMatrix<T>>(matrix_); }

  // Calls f(DistArray<T>&) or f(DistMatrix<T>&) with the array's own type; returns what f returns.
  template <class F>
  decltype(auto) visit_vector(F&& f) {
    return dispatch(dtype_, [&]<class T>() { return f(vector<T>()); });
  }
  template <class F>
  decltype(auto) visit_matrix(F&& f) {
    return dispatch(dtype_, [&]<class T>() { return f(matrix<T>()); });
  }

  // This rank's block: backend memory, its shape (rows x cols, or n x 1 for a vector) and its
  // global offset (row, column).
  void* local_data();
  index_t local_rows();
  index_t local_cols();

  // Keeps `owner` (a Python object, or a DLPack tensor's deleter) alive while the array lives: the
  // memory a zero-copy view borrows.
  void keep_alive(py::object owner) { python_owner_ = std::move(owner); }
  void keep_alive(std::shared_ptr<void> owner) { native_owner_ = std::move(owner); }

 private:
  std::shared_ptr<Session> session_;
  Dtype dtype_;
  int ndim_;
  AnyVector vector_;
  AnyMatrix matrix_;
  py::object python_owner_;
  std::shared_ptr<void> native_owner_;
};

using ArrayPtr = std::shared_ptr<Array>;

template <class T>
ArrayPtr make_array(const std::shared_ptr<Session>& session, DistArray<T>&& a) {
  return std::make_shared<Array>(session, std::move(a));
}
template <class T>
ArrayPtr make_array(const std::shared_ptr<Session>& session, DistMatrix<T>&& m) {
  return std::make_shared<Array>(session, std::move(m));
}

}  // namespace tessera::python
