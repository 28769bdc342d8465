// Checking MPI calls. Communicators made by Tessera return errors (MPI_ERRORS_RETURN) so that a
// failure is reported with file:line, the call and MPI's own error text, and then the whole job is
// aborted (tessera::fatal -> MPI_Abort), never left with ranks waiting on a dead one. A call that
// never returns (a peer lost) is ended by the watchdog of mpi_watchdog.hpp when
// TESSERA_MPI_TIMEOUT is set.
#pragma once

#include <mpi.h>

#include <string>

#include "tessera/framework/mpi_watchdog.hpp"
#include "tessera/kernels/error.hpp"

namespace tessera::detail {
std::string mpi_error_text(int code);
}

#define TESSERA_MPI_CHECK(call)                                                                \
  do {                                                                                         \
    int tessera_mpi_status_ = MPI_SUCCESS;                                                     \
    {                                                                                          \
      const ::tessera::detail::MpiCallWatch tessera_mpi_watch_(#call, __FILE__, __LINE__);      \
      tessera_mpi_status_ = (call);                                                            \
    }                                                                                          \
    if (tessera_mpi_status_ != MPI_SUCCESS)                                                    \
      ::tessera::fatal(__FILE__, __LINE__, #call, ::tessera::detail::mpi_error_text(tessera_mpi_status_)); \
  } while (0)
