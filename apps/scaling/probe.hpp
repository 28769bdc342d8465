// tessera-scaling --probe-gpus: where each rank of the launch would run, printed before anything is
// measured, to check a job script's binding of ranks to GPUs and cores.
#pragma once

#include "tessera/framework/runtime.hpp"

namespace tessera::apps::scaling_study {

// The GPU each rank would drive: local_rank % visible devices, where the visible count is what
// CUDA reports or, on a machine without GPUs (Slurm's fake gres in tests), the length of
// CUDA_VISIBLE_DEVICES; and the CPUs and OpenMP threads it has. Printed in rank order by rank 0.
// Collective over the world (the runtime need not be started). Returns the exit status (0).
int probe_gpus(const Runtime& runtime, int threads_requested);

}  // namespace tessera::apps::scaling_study
