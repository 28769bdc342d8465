// The whole public surface of Tessera in one include: the runtime, contexts and communicators,
// distributed arrays, matrices and 2-D fields, every algorithm (reductions, scans, filters, sorts,
// histograms, stencils, transpose and redistribution, SUMMA), HDF5 I/O, timing, the collective
// plans and the scaling model, and the kernels layer's local operations.
// Not included: the backends' own headers (tessera/kernels/cuda/, tessera/kernels/cpu/), which the
// library's translation units use; tessera/kernels/cuda_check.hpp, which needs the CUDA headers; and
// the detail/ headers and mpi_watchdog.hpp, which the library uses internally.
#pragma once

#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/algorithms/apply_stencil.hpp"
#include "tessera/framework/algorithms/stencil.hpp"
#include "tessera/framework/collective_plan.hpp"
#include "tessera/framework/comm.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/fault.hpp"
#include "tessera/framework/field.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/mpi_type.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/framework/redistribute.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/framework/utf8.hpp"
#include "tessera/kernels/kernels.hpp"
