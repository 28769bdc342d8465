// The framework's public surface in one include.
#pragma once

#include "tessera/framework/comm.hpp"
#include "tessera/framework/context.hpp"
#include "tessera/framework/dist_array.hpp"
#include "tessera/framework/partition.hpp"
#include "tessera/framework/runtime.hpp"
#include "tessera/kernels/kernels.hpp"
