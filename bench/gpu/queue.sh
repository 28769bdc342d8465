#!/usr/bin/env bash
# The runtime's GPU run (queues, memory, copies, scratch and the backend dispatch): the kernels' GPU
# tests against the CPU backend (without the 2^31-element cases, and the 2^28 one for float only),
# compute-sanitizer memcheck at small sizes, the multi-rank tests on the cuda backend (1 and 3 ranks
# sharing the GPU), and the reduce, scan and exact-sum benchmark against CUB in the same run (at
# 2^20 elements, where the host's work per call shows, and at 2^28). A summary goes to stdout; full
# logs to ${OUT:-out}/queue/.
#
#   bash bench/gpu/queue.sh <build-dir>
#   QUEUE_STEPS="tests bench" bash bench/gpu/queue.sh <build-dir>     (a subset, in this order)
set -uo pipefail

BUILD_DIR="$(cd "${1:?usage: bench/gpu/queue.sh <build-dir>}" && pwd)"
DEFAULT_STEPS="tests sanitize mpi bench"
# shellcheck source=bench/gpu/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_run_init queue

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
GPU_TESTS="${BUILD_DIR}/tests/gpu/tessera_gpu_tests"

if wants tests; then
  # The 2^28-element case for float only (about 13 s of the 58 s the four types take on an H100).
  step gpu_tests 120 env OMP_NUM_THREADS=16 "${GPU_TESTS}" \
    --gtest_filter='-*Huge*:KernelsGpuLarge/0.*:KernelsGpuLarge/1.*:KernelsGpuLarge/3.*'
  step gpu_stencil_tests 25 env OMP_NUM_THREADS=16 "${BUILD_DIR}/tests/gpu/tessera_gpu_stencil_tests"
fi

if wants sanitize; then
  step memcheck 40 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool memcheck \
    --error-exitcode 9 "${GPU_TESTS}" --gtest_filter='MemoryGpu.*:StreamWorkspaceGpu.*:ExactSumGpu/*:KernelsGpu/*'
fi

if wants mpi; then
  for np in 1 3; do
    step "mpi_tests_cuda_np${np}" 45 env TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=1 \
      mpirun -n "${np}" --bind-to none "${BUILD_DIR}/tests/mpi/tessera_mpi_tests" --gtest_color=no
  done
fi

if wants bench; then
  step bench_kernels 40 "${BUILD_DIR}/bench/kernels/tessera_bench_kernels" --ops reduce,scan,exact \
    --sizes 1048576,268435456 --reps 20 --warmup 3 --json "${OUT_DIR}/bench_kernels.json"
  grep -vE '^\s*$' "${OUT_DIR}/bench_kernels.log" | head -80
fi

log "done: $([[ ${STATUS} -eq 0 ]] && echo 'all steps ok' || echo 'some step FAILED or was skipped')"
exit ${STATUS}
