// The whole public surface of Tessera in one include: the runtime, contexts and communicators,
// distributed arrays and matrices, every algorithm, HDF5 I/O, timing and the scaling model, and the
// kernels layer's local operations.
#pragma once

#include "tessera/framework/algorithms.hpp"
#include "tessera/framework/algorithms/stencil.hpp"
#include "tessera/framework/comm.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/device_comm.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/dist_matrix.hpp"
#include "tessera/framework/fault.hpp"
#include "tessera/framework/field_2d.hpp"
#include "tessera/framework/io.hpp"
#include "tessera/framework/mpi_check.hpp"
#include "tessera/framework/mpi_type.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/framework/redistribute.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/framework/scaling.hpp"
#include "tessera/framework/timer.hpp"
#include "tessera/kernels/kernels.hpp"
