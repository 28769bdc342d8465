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
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT_DIR="${OUT:-out}/queue"
mkdir -p "${OUT_DIR}"
OUT_DIR="$(cd "${OUT_DIR}" && pwd)"
STEPS="${QUEUE_STEPS:-tests sanitize mpi bench}"
export PATH="${PATH}:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
START=$(date +%s)
DEADLINE=$(( START + $(cat "${ROOT}/bench/gpu/queue.limit") - 8 ))
STATUS=0

log() { echo "[queue.sh +$(( $(date +%s) - START ))s] $*"; }
wants() { [[ " ${STEPS} " == *" $1 "* ]]; }

# step NAME LIMIT COMMAND...: runs the command with a time limit (at most the run's time left),
# its log in ${OUT_DIR}/NAME.log; on failure, the failure lines and the log's end.
step() {
  local name="$1" limit="$2"
  shift 2
  local left=$(( DEADLINE - $(date +%s) ))
  if [[ ${left} -lt 10 ]]; then
    log "${name}: SKIPPED (the run's time is up)"
    STATUS=1
    return 0
  fi
  [[ ${limit} -gt ${left} ]] && limit=${left}
  local t0 rc=0
  t0=$(date +%s)
  timeout "${limit}" "$@" >"${OUT_DIR}/${name}.log" 2>&1 || rc=$?
  if [[ ${rc} -ne 0 ]]; then
    STATUS=1
    log "${name}: FAILED, exit status ${rc} after $(( $(date +%s) - t0 ))s"
    grep -E "Failure|FAILED|rror|differs|expected|Which is|Value of" "${OUT_DIR}/${name}.log" | head -30
    tail -5 "${OUT_DIR}/${name}.log"
  else
    local summary
    summary="$(grep -E '^\[  PASSED  \]|^\[  SKIPPED \]|ERROR SUMMARY' "${OUT_DIR}/${name}.log" | tr '\n' ' ')"
    log "${name}: ok in $(( $(date +%s) - t0 ))s; ${summary}"
  fi
  return 0
}

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
