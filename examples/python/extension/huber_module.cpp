// The Python module `huber`: huber.huber_sum(block, comm, delta) with each rank's float64 block (a
// NumPy array, or on the cuda backend a GPU array with __cuda_array_interface__) and an mpi4py
// communicator. The blocks are wrapped without a copy (DistArray::view_local) on a context of this
// module's own: a tessera::Runtime joined to a duplicate of the communicator, made once per
// communicator.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <vector>

#include <mpi4py/mpi4py.h>

#include "huber.hpp"
#include "tessera/framework/runtime.hpp"

namespace py = pybind11;

namespace {

struct Joined {
  MPI_Comm duplicate = MPI_COMM_NULL;
  std::unique_ptr<tessera::Runtime> runtime;
  tessera::Context context;
};

// Kept for the life of the process: MPI (mpi4py's) outlives the module's work.
const tessera::Context& context_for(MPI_Comm comm) {
  static auto* joined = new std::map<MPI_Comm, Joined>;
  auto it = joined->find(comm);
  if (it == joined->end()) {
    Joined j;
    MPI_Comm_dup(comm, &j.duplicate);
    j.runtime = std::make_unique<tessera::Runtime>(j.duplicate);
    j.context = j.runtime->start(tessera::BackendChoice::automatic);
    it = joined->emplace(comm, std::move(j)).first;
  }
  return it->second.context;
}

double huber_sum_of_blocks(const py::object& block, const py::object& comm, double delta) {
  if (import_mpi4py() < 0) throw py::error_already_set();
  MPI_Comm* handle = PyMPIComm_Get(comm.ptr());
  if (!handle) throw py::error_already_set();
  const tessera::Context& ctx = context_for(*handle);
  double* data = nullptr;
  tessera::index_t n = 0;
  py::object keep = block;
  if (ctx.backend() == tessera::Backend::cuda) {
    const py::dict cai = block.attr("__cuda_array_interface__");
    if (py::str(cai["typestr"]).cast<std::string>() != "<f8" || !cai["strides"].is_none())
      throw py::type_error("huber_sum: a C-contiguous float64 GPU block is needed");
    data = reinterpret_cast<double*>(cai["data"].cast<py::tuple>()[0].cast<std::uintptr_t>());
    n = cai["shape"].cast<py::tuple>()[0].cast<tessera::index_t>();
  } else {
    auto host = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(block);
    if (!host || host.ndim() != 1) throw py::type_error("huber_sum: a 1-D float64 block is needed");
    data = host.mutable_data();
    n = host.size();
    keep = host;
  }
  py::gil_scoped_release release;  // the collectives and kernels run without the GIL
  const std::vector<tessera::index_t> counts = ctx.comm().allgather(n);
  const auto residuals =
      tessera::DistArray<double>::view_local(ctx, tessera::Partition::from_counts(counts), data);
  return huber_sum(residuals, delta);
}

}  // namespace

PYBIND11_MODULE(huber, m) {
  m.doc() = "A C++ functor on Tessera's ranks, from Python";
  m.def("huber_sum", &huber_sum_of_blocks, py::arg("block"), py::arg("comm"), py::arg("delta") = 1.0);
}
