// tessera.fft's compiled part: a distributed FFT plan (tessera::fft::Plan, fft.hpp) over 2-D
// tessera.DistArrays. The plan's input and output layouts are block layouts of a process grid (a
// slab decomposition cuts axis 0 over P x 1, its forward output axis 1 over 1 x P), so each is a
// DistMatrix on that grid and the plan reads and writes the arrays' blocks in place. An array on
// another grid is redistributed to the plan's layout first (one all-to-all).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <complex>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "bind.hpp"
#include "tessera/framework/fft.hpp"
#include "tessera/framework/redistribute.hpp"

namespace tessera::python {
namespace {

struct GridShape {
  int rows = 1, cols = 1;
};

class FftPlan {
 public:
  // Calls f(fft::Plan<float>&) or f(fft::Plan<double>&); returns what f returns.
  template <class F>
  decltype(auto) visit(F&& f) {
    if (single_) return f(std::get<fft::Plan<float>>(plan_));
    return f(std::get<fft::Plan<double>>(plan_));
  }

  FftPlan(const SessionPtr& session, const std::vector<index_t>& shape, bool r2c, bool single, int axis,
          const std::string& norm, const std::string& decomposition, int grid_rows, int grid_cols,
          bool return_to_input_layout, bool measure, int exchange_chunks)
      : session_(session), r2c_(r2c), single_(single) {
    if (shape.size() != 2)
      throw UsageError("fft.Plan: the shape of a 2-D array is needed (tessera's arrays are 1-D or 2-D; got " +
                       std::to_string(shape.size()) + " lengths)");
    fft::Options options;
    if (decomposition == "slab") {
      options.decomposition = fft::Decomposition::slab;
    } else if (decomposition == "pencil") {
      options.decomposition = fft::Decomposition::pencil;
    } else {
      throw UsageError("fft.Plan: decomposition must be 'slab' or 'pencil', not '" + decomposition + "'");
    }
    options.grid_rows = grid_rows;
    options.grid_cols = grid_cols;
    options.axis = axis;
    options.norm = fft::parse_norm(norm);
    options.return_to_input_layout = return_to_input_layout;
    options.effort = measure ? fft::Effort::measure : fft::Effort::estimate;
    options.exchange_chunks = exchange_chunks;
    const Call call(*session_);
    const fft::Kind kind = r2c ? fft::Kind::r2c : fft::Kind::c2c;
    if (single) {
      plan_.emplace<fft::Plan<float>>(session_->context(), shape, kind, options);
    } else {
      plan_.emplace<fft::Plan<double>>(session_->context(), shape, kind, options);
    }
    visit([&](auto& plan) {
      input_grid_ = grid_of(plan.input_box(), plan.shape());
      output_grid_ = grid_of(plan.output_box(), plan.output_shape());
      const bool same = is_block(input_grid_, plan.input_box(), plan.shape()) &&
                        is_block(output_grid_, plan.output_box(), plan.output_shape());
      agree(session_->context(), same ? ErrorKind::none : ErrorKind::value,
            same ? "" : "fft.Plan: the plan's block of this rank is not the block layout of a grid");
    });
  }

  ~FftPlan() {
    const Call call(*session_, /*check_failure=*/false);
    plan_ = {};
  }
  FftPlan(const FftPlan&) = delete;
  FftPlan& operator=(const FftPlan&) = delete;

  const SessionPtr& session() const { return session_; }
  bool r2c() const { return r2c_; }
  bool single() const { return single_; }
  GridShape input_grid() const { return input_grid_; }
  GridShape output_grid() const { return output_grid_; }

  // The forward transform of `a` (the plan's input shape; complex of the plan's precision for c2c,
  // real for r2c), in the plan's output layout.
  ArrayPtr forward(const ArrayPtr& a) {
    return visit([&]<class Real>(fft::Plan<Real>& plan) {
      using C = std::complex<Real>;
      const Call call(*session_);
      if (r2c_) {
        const DistMatrix<Real> in = prepared<Real>(a, plan.shape(), input_grid_, "forward");
        DistMatrix<C> out(session_->grid(output_grid_.rows, output_grid_.cols), plan.output_shape()[0],
                          plan.output_shape()[1]);
        plan.forward(in.local_data(), out.local_data());
        return make_array(session_, std::move(out));
      }
      const DistMatrix<C> in = prepared<C>(a, plan.shape(), input_grid_, "forward");
      DistMatrix<C> out(session_->grid(output_grid_.rows, output_grid_.cols), plan.output_shape()[0],
                        plan.output_shape()[1]);
      plan.forward(in.local_data(), out.local_data());
      return make_array(session_, std::move(out));
    });
  }

  // The inverse transform of `a` (the plan's output shape, complex), in the plan's input layout.
  ArrayPtr inverse(const ArrayPtr& a) {
    return visit([&]<class Real>(fft::Plan<Real>& plan) {
      using C = std::complex<Real>;
      const Call call(*session_);
      const DistMatrix<C> in = prepared<C>(a, plan.output_shape(), output_grid_, "inverse");
      if (r2c_) {
        DistMatrix<Real> out(session_->grid(input_grid_.rows, input_grid_.cols), plan.shape()[0], plan.shape()[1]);
        plan.inverse(in.local_data(), out.local_data());
        return make_array(session_, std::move(out));
      }
      DistMatrix<C> out(session_->grid(input_grid_.rows, input_grid_.cols), plan.shape()[0], plan.shape()[1]);
      plan.inverse(in.local_data(), out.local_data());
      return make_array(session_, std::move(out));
    });
  }

 private:
  // The grid whose block layout a plan's layout is: 1 x P where every rank holds whole columns
  // (axis 0 whole: the layout cuts axis 1, or nothing), P x 1 otherwise (axis 0 cut). Agreed by
  // every rank.
  GridShape grid_of(const fft::Box& box, const std::vector<index_t>& shape) const {
    const Context& ctx = session_->context();
    const int whole = ctx.comm().allreduce<std::int32_t>(box.size[0] == shape[0] ? 1 : 0, ReduceOp::min);
    return whole ? GridShape{1, ctx.size()} : GridShape{ctx.size(), 1};
  }

  // Whether this rank's box is its block in the balanced block layout of `grid` (DistMatrix's): a
  // check, once per plan, of the mapping above.
  bool is_block(GridShape grid, const fft::Box& box, const std::vector<index_t>& shape) const {
    const int rank = session_->context().rank();
    const Partition rows = Partition::block(shape[0], grid.rows), cols = Partition::block(shape[1], grid.cols);
    const int pr = rank / grid.cols, pc = rank % grid.cols;
    return rows.offset(pr) == box.lo[0] && rows.local_size(pr) == box.size[0] && cols.offset(pc) == box.lo[1] &&
           cols.local_size(pc) == box.size[1];
  }

  // `a` as a DistMatrix<T> on `grid` (a view of its blocks where it lies there, else a copy
  // redistributed there). The Python layer has converted the dtype; the shape is checked here.
  template <class T>
  DistMatrix<T> prepared(const ArrayPtr& a, const std::vector<index_t>& shape, GridShape grid, const char* what) {
    if (a->session() != session_) throw UsageError(std::string("fft.Plan.") + what + ": the array lives on another context");
    if (a->ndim() != 2) throw UsageError(std::string("fft.Plan.") + what + ": a 2-D array is needed (this one is 1-D)");
    if (!(a->dtype() == dtype_of<T>()))
      throw TypeError(std::string("fft.Plan.") + what + ": a " + DtypeInfo<T>::name + " array is needed (this one is " +
                      dtype_name(a->dtype()) + ")");
    DistMatrix<T>& m = a->matrix<T>();
    if (m.rows() != shape[0] || m.cols() != shape[1])
      throw UsageError(std::string("fft.Plan.") + what + ": the plan takes shape (" + std::to_string(shape[0]) + ", " +
                       std::to_string(shape[1]) + "), the array's is (" + std::to_string(m.rows()) + ", " +
                       std::to_string(m.cols()) + ")");
    const ProcessGrid& target = session_->grid(grid.rows, grid.cols);
    if (m.grid().rows() == grid.rows && m.grid().cols() == grid.cols)
      return DistMatrix<T>::view_local(target, m.rows(), m.cols(), m.local_data());
    return tessera::redistribute(m, target);
  }

  SessionPtr session_;
  bool r2c_;
  bool single_;
  std::variant<std::monostate, fft::Plan<float>, fft::Plan<double>> plan_;
  GridShape input_grid_, output_grid_;
};

py::tuple box_tuple(const fft::Box& box) {
  return py::make_tuple(py::make_tuple(box.lo[0], box.lo[1]), py::make_tuple(box.size[0], box.size[1]));
}

}  // namespace

void bind_fft(py::module_& m) {
  py::class_<FftPlan, std::shared_ptr<FftPlan>>(m, "_FftPlan")
      .def(py::init<const SessionPtr&, const std::vector<index_t>&, bool, bool, int, const std::string&,
                    const std::string&, int, int, bool, bool, int>())
      .def("forward", &FftPlan::forward)
      .def("inverse", &FftPlan::inverse)
      .def_property_readonly("shape", [](FftPlan& p) { return p.visit([](auto& plan) { return plan.shape(); }); })
      .def_property_readonly("output_shape",
                             [](FftPlan& p) { return p.visit([](auto& plan) { return plan.output_shape(); }); })
      .def_property_readonly("r2c", &FftPlan::r2c)
      .def_property_readonly("single", &FftPlan::single)
      .def_property_readonly("norm",
                             [](FftPlan& p) {
                               return p.visit([](auto& plan) { return std::string(fft::norm_name(plan.options().norm)); });
                             })
      .def_property_readonly("axis", [](FftPlan& p) { return p.visit([](auto& plan) { return plan.options().axis; }); })
      .def_property_readonly("decomposition",
                             [](FftPlan& p) {
                               return p.visit([](auto& plan) {
                                 return std::string(plan.options().decomposition == fft::Decomposition::slab ? "slab"
                                                                                                            : "pencil");
                               });
                             })
      .def_property_readonly("grid",
                             [](FftPlan& p) {
                               return p.visit([](auto& plan) { return py::make_tuple(plan.grid().rows(), plan.grid().cols()); });
                             })
      .def_property_readonly("input_layout",
                             [](FftPlan& p) { return py::make_tuple(p.input_grid().rows, p.input_grid().cols); })
      .def_property_readonly("output_layout",
                             [](FftPlan& p) { return py::make_tuple(p.output_grid().rows, p.output_grid().cols); })
      .def_property_readonly("input_box", [](FftPlan& p) { return p.visit([](auto& plan) { return box_tuple(plan.input_box()); }); })
      .def_property_readonly("output_box",
                             [](FftPlan& p) { return p.visit([](auto& plan) { return box_tuple(plan.output_box()); }); })
      .def_property_readonly("layout_text", [](FftPlan& p) { return p.visit([](auto& plan) { return plan.layout_text(); }); })
      .def_property_readonly("exchanges",
                             [](FftPlan& p) { return p.visit([](auto& plan) { return plan.exchanges_per_transform(); }); })
      .def_property_readonly("context", &FftPlan::session);
}

}  // namespace tessera::python
