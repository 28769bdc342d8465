// All local operations of the kernels layer (cuda_check.hpp, which needs the CUDA headers, apart).
#pragma once

#include "tessera/kernels/config.hpp"
#include "tessera/kernels/copy_2d.hpp"
#include "tessera/kernels/counter_rng.hpp"
#include "tessera/kernels/error.hpp"
#include "tessera/kernels/exact_sum.hpp"
#include "tessera/kernels/functional.hpp"
#include "tessera/kernels/gemm.hpp"
#include "tessera/kernels/generate.hpp"
#include "tessera/kernels/memory.hpp"
#include "tessera/kernels/predicate.hpp"
#include "tessera/kernels/queue.hpp"
#include "tessera/kernels/reduce.hpp"
#include "tessera/kernels/reduce_op.hpp"
#include "tessera/kernels/scan.hpp"
#include "tessera/kernels/select.hpp"
#include "tessera/kernels/transform.hpp"
