// The algorithms on tessera.DistArray: reductions, scans, conversions and arithmetic, masks,
// sorting, histograms, matrices (transpose, redistribution, matmul) and stencils (one step, the
// Jacobi solve). Every call releases the GIL while it works (Call); the collective ones are
// collective over the array's ranks.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <type_traits>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "bind.hpp"
#include "ops.hpp"
#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/algorithms/stencil.hpp"
#include "tessera/framework/redistribute.hpp"
#include "tessera/kernels/copy_2d.hpp"

namespace tessera::python {
namespace {

// Raised as KeyboardInterrupt.
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Views and layouts

// The array's elements as one 1-D DistArray viewing its blocks, in rank order (a matrix's blocks one
// after the other: its row-major order where the grid has one column). For the order-free
// operations (sums, extremes, counts, histograms, element-wise arithmetic).
template <class T>
DistArray<T> flat(Array& a) {
  if (a.ndim() == 1) {
    DistArray<T>& v = a.vector<T>();
    return DistArray<T>::view_local(v.context(), v.partition(), v.local_data());
  }
  DistMatrix<T>& m = a.matrix<T>();
  const ProcessGrid& grid = m.grid();
  std::vector<index_t> counts;
  for (int r = 0; r < grid.rows() * grid.cols(); ++r)
    counts.push_back(m.row_partition().local_size(r / grid.cols()) * m.col_partition().local_size(r % grid.cols()));
  return DistArray<T>::view_local(grid.context(), Partition::from_counts(counts), m.local_data());
}

// The array in global (row-major) order as a 1-D view: a matrix goes to row blocks first (one
// all-to-all) unless its grid has one column already; `keep` holds the redistributed copy.
template <class T>
DistArray<T> row_major(Array& a, std::optional<DistMatrix<T>>& keep, const SessionPtr& session) {
  if (a.ndim() == 1 || a.matrix<T>().grid().cols() == 1) return flat<T>(a);
  const DistMatrix<T>& m = a.matrix<T>();
  keep.emplace(redistribute(m, session->grid(m.grid().rows() * m.grid().cols(), 1)));
  const ProcessGrid& grid = keep->grid();
  std::vector<index_t> counts;
  for (int r = 0; r < grid.rows(); ++r) counts.push_back(keep->row_partition().local_size(r) * keep->cols());
  return DistArray<T>::view_local(grid.context(), Partition::from_counts(counts), keep->local_data());
}

// A new array of element type U with a's layout (a 1-D array's partition, a matrix's grid and
// shape); MemoryError on every rank where some rank has not the memory.
template <class U, class T>
ArrayPtr like(Array& a, const SessionPtr& session) {
  std::string error;
  ArrayPtr out;
  try {
    if (a.ndim() == 1) {
      const DistArray<T>& v = a.vector<T>();
      out = make_array(session, DistArray<U>(v.context(), v.partition()));
    } else {
      const DistMatrix<T>& m = a.matrix<T>();
      out = make_array(session, DistMatrix<U>(m.grid(), m.rows(), m.cols()));
    }
  } catch (const std::bad_alloc& e) {
    error = e.what();
  }
  agree(a.context(), error.empty() ? ErrorKind::none : ErrorKind::memory, error);
  return out;
}

index_t global_size(Array& a) {
  if (a.ndim() == 1) return a.visit_vector([](auto& v) { return v.global_size(); });
  return a.visit_matrix([](auto& m) { return m.rows() * m.cols(); });
}

void require_vector(const Array& a, const char* what) {
  if (a.ndim() != 1) throw UsageError(std::string(what) + ": a 1-D array is needed (this one is 2-D)");
}

void require_matrix(const Array& a, const char* what) {
  if (a.ndim() != 2) throw UsageError(std::string(what) + ": a 2-D array is needed (this one is 1-D)");
}

// TypeError for an operation that needs an order of the elements, on an array of complex numbers.
[[noreturn]] void no_order(const std::string& what, Dtype dtype) {
  throw TypeError(what + ": " + dtype_name(dtype) +
                  " arrays are not supported (complex numbers have no order; tessera does not sort them "
                  "lexicographically as numpy does)");
}

// ---------------------------------------------------------------------------------------------
// Reductions

enum class Reduction { sum, prod, min, max, exact_sum, float64_sum };

py::object reduce(const ArrayPtr& a, Reduction what) {
  const char* name = what == Reduction::min ? "minimum" : "maximum";
  return dispatch(a->dtype(), [&]<class T>() -> py::object {
    const SessionPtr& session = a->session();
    if (what == Reduction::min || what == Reduction::max) {
      if constexpr (!is_ordered_v<T>) {
        no_order(what == Reduction::min ? "min" : "max", a->dtype());
      } else {
      T value{};
      {
        const Call call(*session);
        if (global_size(*a) == 0)
          throw UsageError(std::string("zero-size array to reduction operation ") + name + " which has no identity");
        value = what == Reduction::min ? ops::min(flat<T>(*a)) : ops::max(flat<T>(*a));
      }
      return numpy_scalar(value);
      }
    }
    if (what == Reduction::float64_sum) {
      if constexpr (std::is_integral_v<T>) {
        double total = 0;
        {
          const Call call(*session);
          total = ops::float64_sum(flat<T>(*a));
        }
        return numpy_scalar(total);
      } else {
        throw UsageError("float64_sum: integer arrays only");
      }
    }
    Accumulator<T> value{};
    {
      const Call call(*session);
      const DistArray<T> view = flat<T>(*a);
      value = what == Reduction::sum ? ops::sum(view) : what == Reduction::prod ? ops::prod(view) : ops::exact_sum(view);
    }
    return numpy_scalar(value);
  });
}

// ---------------------------------------------------------------------------------------------
// Scans, conversions and arithmetic

ArrayPtr scan(const ArrayPtr& a, bool product, bool exclusive) {
  return dispatch(a->dtype(), [&]<class T>() {
    const Call call(*a->session());
    std::optional<DistMatrix<T>> keep;
    const DistArray<T> in = row_major<T>(*a, keep, a->session());
    return make_array(a->session(), product ? ops::cumprod(in, exclusive) : ops::cumsum(in, exclusive));
  });
}

ArrayPtr astype(const ArrayPtr& a, const std::string& name) {
  const Dtype to = parse_dtype(name);
  const bool from_complex = dispatch(a->dtype(), []<class T>() { return is_complex_v<T>; });
  const bool to_complex = dispatch(to, []<class T>() { return is_complex_v<T>; });
  if (from_complex && !to_complex)
    throw TypeError(std::string("astype: a ") + dtype_name(a->dtype()) + " array is not converted to " + name +
                    " (numpy would drop the imaginary part; take it apart explicitly)");
  return dispatch(a->dtype(), [&]<class T>() {
    return dispatch(to, [&]<class U>() {
      const Call call(*a->session());
      ArrayPtr out = like<U, T>(*a, a->session());
      DistArray<U> view = flat<U>(*out);
      ops::astype(flat<T>(*a), view);
      return out;
    });
  });
}

// b in a's layout: the same array where it has it, else a copy moved there (a 1-D array to the
// block partition, both of them; a matrix to a's grid). Both arrays have one shape and dtype.
template <class T>
ArrayPtr aligned(const ArrayPtr& a, const ArrayPtr& b, ArrayPtr& a_out) {
  a_out = a;
  if (a->ndim() != b->ndim()) throw UsageError("operands of different dimensions (1-D and 2-D)");
  if (a->ndim() == 1) {
    DistArray<T>& u = a->vector<T>();
    DistArray<T>& v = b->vector<T>();
    if (u.global_size() != v.global_size())
      throw UsageError("operands could not be broadcast together with shapes (" + std::to_string(u.global_size()) +
                       ",) (" + std::to_string(v.global_size()) + ",)");
    if (u.partition() == v.partition()) return b;
    if (!u.partition().is_block()) a_out = make_array(a->session(), rebalance(u));
    return v.partition().is_block() ? b : make_array(b->session(), rebalance(v));
  }
  DistMatrix<T>& u = a->matrix<T>();
  DistMatrix<T>& v = b->matrix<T>();
  if (u.rows() != v.rows() || u.cols() != v.cols())
    throw UsageError("operands could not be broadcast together with shapes (" + std::to_string(u.rows()) + ", " +
                     std::to_string(u.cols()) + ") (" + std::to_string(v.rows()) + ", " + std::to_string(v.cols()) + ")");
  if (u.grid().rows() == v.grid().rows() && u.grid().cols() == v.grid().cols()) return b;
  return make_array(b->session(), redistribute(v, u.grid()));
}

ArrayPtr binary(const ArrayPtr& a, const ArrayPtr& b, ops::Binary op) {
  if (!(a->dtype() == b->dtype())) throw TypeError("binary operation of two dtypes: convert one first");
  if (a->session() != b->session()) throw UsageError("the arrays live on different contexts");
  return dispatch(a->dtype(), [&]<class T>() {
    const Call call(*a->session());
    ArrayPtr left;
    const ArrayPtr right = aligned<T>(a, b, left);
    ArrayPtr out = like<T, T>(*left, a->session());
    DistArray<T> view = flat<T>(*out);
    ops::binary(flat<T>(*left), flat<T>(*right), view, op);
    return out;
  });
}

ArrayPtr binary_scalar(const ArrayPtr& a, const py::object& scalar, ops::Binary op, bool scalar_first) {
  return dispatch(a->dtype(), [&]<class T>() {
    const T s = scalar.cast<T>();
    const Call call(*a->session());
    ArrayPtr out = like<T, T>(*a, a->session());
    DistArray<T> view = flat<T>(*out);
    ops::binary_scalar(flat<T>(*a), s, view, op, scalar_first);
    return out;
  });
}

ArrayPtr unary(const ArrayPtr& a, ops::Unary op) {
  return dispatch(a->dtype(), [&]<class T>() {
    const Call call(*a->session());
    ArrayPtr out = like<T, T>(*a, a->session());
    DistArray<T> view = flat<T>(*out);
    ops::unary(flat<T>(*a), view, op);
    return out;
  });
}

// ---------------------------------------------------------------------------------------------
// Masks

std::vector<MaskStep> mask_steps(const py::list& steps) {
  std::vector<MaskStep> out;
  for (auto item : steps) {
    const auto t = item.cast<py::tuple>();
    MaskStep s;
    s.op = static_cast<MaskOp>(t[0].cast<int>());
    s.kind = static_cast<PredicateKind>(t[1].cast<int>());
    s.value = t[2].cast<bool>();
    s.real = t[3].cast<double>();
    s.integer = t[4].cast<std::int64_t>();
    out.push_back(s);
  }
  return out;
}

ArrayPtr compress(const ArrayPtr& a, const py::list& steps) {
  const std::vector<MaskStep> program = mask_steps(steps);
  return dispatch(a->dtype(), [&]<class T>() -> ArrayPtr {
    if constexpr (!is_ordered_v<T>) {
      no_order("a mask (comparison)", a->dtype());
    } else {
      const Call call(*a->session());
      std::optional<DistMatrix<T>> keep;
      return make_array(a->session(), ops::compress(row_major<T>(*a, keep, a->session()), program));
    }
  });
}

index_t count(const ArrayPtr& a, const py::list& steps) {
  const std::vector<MaskStep> program = mask_steps(steps);
  return dispatch(a->dtype(), [&]<class T>() -> index_t {
    if constexpr (!is_ordered_v<T>) {
      no_order("a mask (comparison)", a->dtype());
    } else {
      const Call call(*a->session());
      return ops::count(flat<T>(*a), program);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Sorting

ArrayPtr sort(const ArrayPtr& a, bool indices) {
  require_vector(*a, indices ? "argsort" : "sort");
  return dispatch(a->dtype(), [&]<class T>() -> ArrayPtr {
    if constexpr (!is_ordered_v<T>) {
      no_order(indices ? "argsort" : "sort", a->dtype());
    } else {
      const Call call(*a->session());
      const DistArray<T>& v = a->vector<T>();
      if (indices) return make_array(a->session(), ops::numpy_argsort(v));
      return make_array(a->session(), ops::numpy_sort(v));
    }
  });
}

ArrayPtr balance(const ArrayPtr& a) {
  require_vector(*a, "balance");
  return dispatch(a->dtype(), [&]<class T>() {
    const Call call(*a->session());
    return make_array(a->session(), rebalance(a->vector<T>()));
  });
}

// ---------------------------------------------------------------------------------------------
// Histograms

py::tuple histogram_result(const Histogram& h) {
  py::array_t<std::int64_t> counts(static_cast<py::ssize_t>(h.counts.size()));
  if (!h.counts.empty()) std::memcpy(counts.mutable_data(), h.counts.data(), h.counts.size() * sizeof(index_t));
  return py::make_tuple(counts, h.below, h.above, h.nan);
}

// histogram(a, binner) of an ordered element type, as numpy.histogram's (counts, below, above, nan).
template <class Binner>
py::tuple histogram_of(const ArrayPtr& a, const Binner& binner) {
  return dispatch(a->dtype(), [&]<class T>() -> py::tuple {
    if constexpr (!is_ordered_v<T>) {
      no_order("histogram", a->dtype());
    } else {
      Histogram h;
      {
        const Call call(*a->session());
        h = histogram(flat<T>(*a), binner);
      }
      return histogram_result(h);
    }
  });
}

// width: the denominator of numpy's norm (EvenBins::width; 0: upper - lower).
py::tuple histogram_even(const ArrayPtr& a, index_t bins, double lower, double upper, double width) {
  return histogram_of(a, EvenBins{lower, upper, bins, width});
}

py::tuple histogram_edges(const ArrayPtr& a, const py::array_t<double, py::array::c_style | py::array::forcecast>& edges) {
  const std::vector<double> e(edges.data(), edges.data() + edges.size());
  return histogram_of(a, std::span<const double>(e));
}

py::tuple bincount(const ArrayPtr& a, index_t bins) {
  return dispatch(a->dtype(), [&]<class T>() {
    if constexpr (!is_integer_v<T>) {
      throw TypeError(std::string("bincount: an integer array is needed (this one is ") + DtypeInfo<T>::name + ")");
      return py::tuple();
    } else {
      Histogram h;
      {
        const Call call(*a->session());
        h = tessera::bincount(flat<T>(*a), bins);
      }
      return histogram_result(h);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Matrices

ArrayPtr transpose(const ArrayPtr& a) {
  require_matrix(*a, "transpose");
  return dispatch(a->dtype(), [&]<class T>() {
    const Call call(*a->session());
    return make_array(a->session(), tessera::transpose(a->matrix<T>()));
  });
}

ArrayPtr redistribute(const ArrayPtr& a, int rows, int cols) {
  require_matrix(*a, "redistribute");
  return dispatch(a->dtype(), [&]<class T>() {
    const Call call(*a->session());
    return make_array(a->session(), tessera::redistribute(a->matrix<T>(), a->session()->grid(rows, cols)));
  });
}

ArrayPtr matmul(const ArrayPtr& a, const ArrayPtr& b) {
  require_matrix(*a, "matmul");
  require_matrix(*b, "matmul");
  if (!(a->dtype() == b->dtype())) throw TypeError("matmul of two dtypes: convert one first");
  if (a->session() != b->session()) throw UsageError("matmul: the arrays live on different contexts");
  return dispatch(a->dtype(), [&]<class T>() -> ArrayPtr {
    if constexpr (!has_matmul_v<T>) {
      throw TypeError(std::string("matmul: no product of ") + DtypeInfo<T>::name + " arrays");
    } else {
    const Call call(*a->session());
    const DistMatrix<T>& x = a->matrix<T>();
    const DistMatrix<T>& y = b->matrix<T>();
    if (x.cols() != y.rows())
      throw UsageError("matmul: shapes (" + std::to_string(x.rows()) + ", " + std::to_string(x.cols()) + ") and (" +
                       std::to_string(y.rows()) + ", " + std::to_string(y.cols()) + ") do not align (" +
                       std::to_string(x.cols()) + " != " + std::to_string(y.rows()) + ")");
    if (x.grid().rows() == y.grid().rows() && x.grid().cols() == y.grid().cols())
      return make_array(a->session(), tessera::matmul(x, y));
    const DistMatrix<T> moved = tessera::redistribute(y, x.grid());
    return make_array(a->session(), tessera::matmul(x, moved));
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Stencils

// The Jacobi iteration of a on its own grid: a field with one ghost layer gets a's cells and the
// boundary values (a scalar, or boundary(i, j) of the outer ghost cells' global indices, called
// once with NumPy arrays of them), then `iterations` iterations (or fewer, where a check every
// check_every iterations finds the residual below tolerance). Signals are checked between runs of
// iterations, so that Ctrl-C stops a long solve.
py::tuple jacobi(const ArrayPtr& a, const std::vector<double>& weights, bool nine_point, const py::object& boundary,
                 index_t iterations, double tolerance, index_t check_every, const std::string& what) {
  require_matrix(*a, what.c_str());
  if (iterations < 0) throw UsageError(what + ": iterations must not be negative");
  if (check_every < 1) throw UsageError(what + ": check_every must be at least 1");
  if (weights.size() != 9) throw UsageError(what + ": nine weights are needed");
  return dispatch(a->dtype(), [&]<class T>() -> py::tuple {
    if constexpr (!is_floating_v<T>) {
      throw TypeError(what + ": a float32 or float64 array is needed (this one is " + DtypeInfo<T>::name + ")");
      return py::tuple();
    } else {
      StencilWeights<T> w;
      w.shape = nine_point ? StencilShape::nine_point : StencilShape::five_point;
      w.centre = T(weights[4]);
      w.north = T(weights[1]);
      w.south = T(weights[7]);
      w.west = T(weights[3]);
      w.east = T(weights[5]);
      w.north_west = T(weights[0]);
      w.north_east = T(weights[2]);
      w.south_west = T(weights[6]);
      w.south_east = T(weights[8]);
      const bool constant = !PyCallable_Check(boundary.ptr());
      const T boundary_value = constant ? boundary.cast<T>() : T(0);

      ArrayPtr out;
      index_t done = 0;
      double residual = 0;
      bool converged = false;
      {
        const Call call(*a->session());
        const DistMatrix<T>& m = a->matrix<T>();
        const ProcessGrid& grid = m.grid();
        const kernels::Queue& queue = grid.context().queue();
        Field2D<T> u(grid, m.rows(), m.cols(), 1);
        kernels::copy_2d(queue, u.origin(), u.ld(), m.local_data(), m.local_cols(), m.local_rows(), m.local_cols(),
                         sizeof(T));
        if (constant) {
          u.set_outer_ghosts([&](index_t, index_t) { return boundary_value; });
        } else {
          std::vector<index_t> is, js;
          u.set_outer_ghosts([&](index_t i, index_t j) {
            is.push_back(i);
            js.push_back(j);
            return T(0);
          });
          // The callback runs on each rank for its own cells: an exception on one rank is agreed
          // on, and raised on every rank, before any rank goes on to the iterations' collectives.
          std::map<std::pair<index_t, index_t>, T> values;
          std::string error;
          ErrorKind kind = ErrorKind::none;
          call.with_gil([&] {
            try {
              py::array_t<index_t> i_array(static_cast<py::ssize_t>(is.size()));
              py::array_t<index_t> j_array(static_cast<py::ssize_t>(js.size()));
              std::copy(is.begin(), is.end(), i_array.mutable_data());
              std::copy(js.begin(), js.end(), j_array.mutable_data());
              const py::object result = boundary(i_array, j_array);
              const auto got = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(result);
              if (!got) throw py::error_already_set();
              if (got.ndim() == 0) {
                for (std::size_t k = 0; k < is.size(); ++k) values[{is[k], js[k]}] = *got.data();
              } else if (static_cast<std::size_t>(got.size()) != is.size()) {
                kind = ErrorKind::value;
                error = what + ": boundary(i, j) returned " + std::to_string(got.size()) + " values for " +
                        std::to_string(is.size()) + " cells";
              } else {
                for (std::size_t k = 0; k < is.size(); ++k) values[{is[k], js[k]}] = got.data()[k];
              }
            } catch (py::error_already_set& e) {
              kind = e.matches(PyExc_TypeError) ? ErrorKind::type : ErrorKind::value;
              error = what + ": boundary(i, j) raised " + e.what();
            }
          });
          agree(grid.context(), kind, error);
          u.set_outer_ghosts([&](index_t i, index_t j) { return values.at({i, j}); });
        }
        JacobiOptions options;
        options.check_every = check_every;
        options.tolerance = tolerance;
        Jacobi<T> solver(u, w, options);
        // Runs of whole check intervals, the same on every rank (each run ends with a residual check,
        // an allreduce, which every rank must make alike). Between runs the ranks agree on whether a
        // signal (Ctrl-C) reached any of them: then every rank stops and raises KeyboardInterrupt,
        // together, rather than one leaving the others in the next run's collectives.
        const index_t run = ((std::max<index_t>(256, check_every) + check_every - 1) / check_every) * check_every;
        while (solver.iteration() < iterations && !solver.converged()) {
          solver.run_until(std::min(iterations, solver.iteration() + run));
          const bool interrupted = call.with_gil([] {
            if (PyErr_CheckSignals() == 0) return false;
            PyErr_Clear();
            return true;
          });
          const int first = grid.context().comm().allreduce<std::int32_t>(
              interrupted ? grid.context().rank() : grid.context().size(), ReduceOp::min);
          if (first < grid.context().size()) throw Interrupted(what + " interrupted (a signal on rank " + std::to_string(first) + ")");
        }
        done = solver.iteration();
        residual = solver.residual();
        converged = solver.converged();
        DistMatrix<T> result(grid, m.rows(), m.cols());
        kernels::copy_2d(queue, result.local_data(), result.local_cols(), u.origin(), u.ld(), u.local_rows(),
                         u.local_cols(), sizeof(T));
        out = make_array(a->session(), std::move(result));
      }
      return py::make_tuple(out, done, residual, converged);
    }
  });
}

}  // namespace

void bind_algorithms(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Interrupted& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  });
  py::enum_<Reduction>(m, "_Reduction")
      .value("sum", Reduction::sum)
      .value("prod", Reduction::prod)
      .value("min", Reduction::min)
      .value("max", Reduction::max)
      .value("exact_sum", Reduction::exact_sum)
      .value("float64_sum", Reduction::float64_sum);
  py::enum_<ops::Binary>(m, "_Binary")
      .value("add", ops::Binary::add)
      .value("subtract", ops::Binary::subtract)
      .value("multiply", ops::Binary::multiply)
      .value("divide", ops::Binary::divide)
      .value("minimum", ops::Binary::minimum)
      .value("maximum", ops::Binary::maximum);
  py::enum_<ops::Unary>(m, "_Unary").value("negative", ops::Unary::negative).value("absolute", ops::Unary::absolute);

  m.def("_reduce", &reduce);
  m.def("_scan", &scan);
  m.def("_astype", &astype);
  m.def("_binary", &binary);
  m.def("_binary_scalar", &binary_scalar);
  m.def("_unary", &unary);
  m.def("_compress", &compress);
  m.def("_count", &count);
  m.def("_sort", &sort);
  m.def("_balance", &balance);
  m.def("_histogram_even", &histogram_even);
  m.def("_histogram_edges", &histogram_edges);
  m.def("_bincount", &bincount);
  m.def("_transpose", &transpose);
  m.def("_redistribute", &redistribute);
  m.def("_matmul", &matmul);
  m.def("_jacobi", &jacobi);
}

}  // namespace tessera::python
