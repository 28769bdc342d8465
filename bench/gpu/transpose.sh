#!/usr/bin/env bash
# The transpose on one GPU: its GPU tests, the kernel benchmark against cuBLAS geam and the copy
# rate, the multi-rank tests of the distributed transpose on the cuda backend (the ranks share the
# GPU), the distributed benchmark per phase (one rank, three ranks, and two ranks exchanging pieces
# above 2^31 bytes), compute-sanitizer memcheck and racecheck at small sizes.
#
#   bash bench/gpu/transpose.sh BUILD_DIR
set -uo pipefail
BUILD="${1:?usage: bench/gpu/transpose.sh BUILD_DIR}"
export PATH="${PATH}:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
status=0
step() { echo; echo "== $* ($(date +%H:%M:%S))"; }
LOGS=/tmp/transpose_gpu_logs
mkdir -p "${LOGS}"

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader || true

step "GPU tests of the transpose"
timeout 40 "${BUILD}/tests/gpu/tessera_gpu_tests" --gtest_filter='Transpose*' >"${LOGS}/gpu_tests.log" 2>&1 || status=1
grep -E "^\[  (PASSED|FAILED) |^\[       OK |^\[  FAILED  \]" "${LOGS}/gpu_tests.log" | head -20
grep -A4 "Failure" "${LOGS}/gpu_tests.log" | head -40

step "kernel benchmark against cuBLAS geam (--variants)"
timeout 80 "${BUILD}/bench/kernels/tessera_bench_transpose" --variants --reps 10 || status=1

DIST="${BUILD}/bench/distributed/tessera_bench_transpose_distributed"
if [[ -x "${BUILD}/tests/mpi/tessera_mpi_tests" ]]; then
  for np in 1 3; do
    step "multi-rank tests on the cuda backend, ${np} rank(s) sharing the GPU"
    TESSERA_TEST_BACKEND=cuda timeout 40 mpirun -n "${np}" "${BUILD}/tests/mpi/tessera_mpi_tests" \
      --gtest_filter='*Redistribute*' >"${LOGS}/mpi_${np}.log" 2>&1 || status=1
    grep -E "^tessera tests|^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" "${LOGS}/mpi_${np}.log" | sort | uniq | head -20
  done
fi
if [[ -x "${DIST}" ]]; then
  for np in 1 3; do
    step "distributed transpose per phase, ${np} rank(s) on the GPU, 16384 x 16384 float"
    timeout 40 mpirun -n "${np}" "${DIST}" --backend cuda --m 16384 --n 16384 -n 3 -w 1 || status=1
  done
  step "two ranks, pieces above 2^31 bytes: 48000 x 48000 float, row blocks to row blocks"
  timeout 60 mpirun -n 2 "${DIST}" --backend cuda --m 48000 --n 48000 --pairs rows:rows -n 1 -w 0 || status=1
fi

if command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    filter='TransposeGpu.*'
    [[ "${tool}" == racecheck ]] && filter='TransposeGpu.PowerOfTwoElementsMatchCpu'
    step "compute-sanitizer --tool ${tool} (small sizes, ${filter})"
    TESSERA_GPU_TEST_SMALL=1 timeout 40 compute-sanitizer --tool "${tool}" --error-exitcode 9 \
      "${BUILD}/tests/gpu/tessera_gpu_tests" --gtest_filter="${filter}" >"${LOGS}/${tool}.log" 2>&1 || status=1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "${LOGS}/${tool}.log" | head -8
  done
fi

step "done, status ${status}"
exit "${status}"
