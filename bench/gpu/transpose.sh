#!/usr/bin/env bash
# The transpose on one GPU: its GPU tests, compute-sanitizer memcheck and racecheck at small sizes,
# the kernel benchmark against cuBLAS geam and the copy rate, and (where built) the multi-rank tests
# of the distributed transpose on the cuda backend (the ranks share the GPU) and its benchmark.
#
#   bash bench/gpu/transpose.sh BUILD_DIR
set -uo pipefail
BUILD="${1:?usage: bench/gpu/transpose.sh BUILD_DIR}"
export PATH="${PATH}:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
status=0
step() { echo; echo "== $* ($(date +%H:%M:%S))"; }

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader || true

step "GPU tests of the transpose"
timeout 45 "${BUILD}/tests/gpu/tessera_gpu_tests" --gtest_filter='Transpose*' >/tmp/transpose_gpu_tests.log 2>&1 || status=1
grep -E "^\[  (PASSED|FAILED) |^\[       OK |^\[  FAILED  \]|tests ran" /tmp/transpose_gpu_tests.log | head -20
grep -A4 "Failure" /tmp/transpose_gpu_tests.log | head -40

if command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    filter='TransposeGpu.*'
    [[ "${tool}" == racecheck ]] && filter='TransposeGpu.PowerOfTwoElementsMatchCpu'
    step "compute-sanitizer --tool ${tool} (small sizes, ${filter})"
    TESSERA_GPU_TEST_SMALL=1 timeout 50 compute-sanitizer --tool "${tool}" --error-exitcode 9 \
      "${BUILD}/tests/gpu/tessera_gpu_tests" --gtest_filter="${filter}" >/tmp/transpose_${tool}.log 2>&1 || status=1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" /tmp/transpose_${tool}.log | head -8
  done
else
  echo "compute-sanitizer not found"
fi

step "kernel benchmark against cuBLAS geam (--variants)"
timeout 90 "${BUILD}/bench/kernels/tessera_bench_transpose" --variants --reps 15 || status=1

if [[ -x "${BUILD}/tests/mpi/tessera_mpi_tests" ]]; then
  for np in 1 3; do
    step "multi-rank tests on the cuda backend, ${np} rank(s) sharing the GPU"
    TESSERA_TEST_BACKEND=cuda timeout 200 mpirun -n "${np}" "${BUILD}/tests/mpi/tessera_mpi_tests" \
      --gtest_filter='*Redistribute*' >/tmp/transpose_mpi_${np}.log 2>&1 || status=1
    grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests ran|Failure" /tmp/transpose_mpi_${np}.log | sort | uniq | head -20
  done
fi

step "done, status ${status}"
exit "${status}"
