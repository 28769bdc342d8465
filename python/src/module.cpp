// The extension module tessera._tessera; the package tessera (python/tessera/__init__.py) builds the
// public API on it.
#include <pybind11/pybind11.h>

#include <new>

#include "bind.hpp"
#include "tessera/build_config.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/mpi_watchdog.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::python {

namespace {
PyObject* g_communication_error = nullptr;  // the type, kept for the life of the process
}  // namespace

// C++ errors become Python's: user errors ValueError (the framework's UsageError), files and
// datasets OSError (io::IoError; values a type cannot hold ValueError), element types TypeError,
// memory MemoryError, a failed communication tessera.CommunicationError.
void bind_errors(py::module_& m) {
  g_communication_error = PyErr_NewExceptionWithDoc(
      "tessera.CommunicationError",
      "An MPI or NCCL call failed on this rank (a peer lost, a fault injected with TESSERA_INJECT_FAULT). "
      "The communicators can no longer be trusted: every later call raises it again.",
      PyExc_RuntimeError, nullptr);
  if (!g_communication_error) throw py::error_already_set();
  Py_INCREF(g_communication_error);
  m.add_object("CommunicationError", py::handle(g_communication_error));

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const CommunicationError& e) {
      PyErr_SetString(g_communication_error, e.what());
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const MemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const io::IoError& e) {
      PyErr_SetString(e.kind() == io::IoError::Kind::unrepresentable_values ? PyExc_ValueError : PyExc_OSError,
                      e.what());
    } catch (const UsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    }
  });
}

}  // namespace tessera::python

PYBIND11_MODULE(_tessera, m) {
  namespace tp = tessera::python;
  m.doc() = "Tessera's distributed arrays (the compiled part of the package tessera)";
  tp::bind_errors(m);
  tp::bind_array(m);
  tp::bind_algorithms(m);
  tp::bind_fft(m);
  m.attr("version") = TESSERA_VERSION_STRING;
  m.attr("built_with_cuda") = tessera::built_with_cuda();
  m.attr("built_with_nccl") = tessera::built_with_nccl();
  m.attr("hdf5_parallel") = bool(TESSERA_HDF5_PARALLEL);
  // Stops the MPI watchdog (TESSERA_MPI_TIMEOUT) before mpi4py finalises MPI: registered by the
  // package with atexit after mpi4py's own handler, so that it runs first.
  m.def("_shutdown", [] { tessera::detail::stop_mpi_watchdog(); });
}
