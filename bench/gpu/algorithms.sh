#!/usr/bin/env bash
# The newer algorithms on one GPU: the GPU tests of their device passes (by-key runs, merge sort)
# against the CPU backend, compute-sanitizer (memcheck, racecheck) at small sizes, their multi-rank
# tests on the cuda backend (1 rank, then 3 sharing the GPU), the compile-fail test of a host lambda
# under nvcc, and tessera_bench_algorithms against Thrust and CUB. A summary goes to stdout; full
# logs to ${OUT:-out}/algorithms/.
#
#   bash bench/gpu/algorithms.sh <build-dir>
#   ALGORITHMS_STEPS="tests bench" bash bench/gpu/algorithms.sh <build-dir>     (a subset, in this order)
set -uo pipefail

BUILD_DIR="$(cd "${1:?usage: bench/gpu/algorithms.sh <build-dir>}" && pwd)"
DEFAULT_STEPS="tests sanitize mpi compile bench"
# shellcheck source=bench/gpu/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_run_init algorithms

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
TESTS="${BUILD_DIR}/tests/gpu/tessera_gpu_tests"
GENERIC="${BUILD_DIR}/tests/generic/tessera_generic_tests"
BENCH="${BUILD_DIR}/bench/kernels/tessera_bench_algorithms"
FILTER='RunsGpu.*:MergeSortGpu.*'
SUITES='GenericZip*:GenericIndex*:GenericFind*:GenericScan.Inclusive*:GenericArray.CopyViewAndAt:GenericByKey*:GenericSortBy*:GenericGather*:CollectivePlans.TheNewer*'

if wants tests; then
  step gpu_tests 150 env OMP_NUM_THREADS=16 "${TESTS}" --gtest_filter="${FILTER}"
fi

if wants sanitize; then
  step memcheck 90 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "${TESTS}" --gtest_filter="${FILTER}"
  step racecheck 120 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "${TESTS}" --gtest_filter="${FILTER}"
fi

if wants mpi; then
  for np in 1 3; do
    step "generic_np${np}" 120 env TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=4 mpirun -n "${np}" "${GENERIC}" \
      --gtest_filter="${SUITES}"
  done
fi

if wants compile; then
  step compile_fail 120 ctest --test-dir "${BUILD_DIR}" -R compile_fail --output-on-failure
fi

if wants bench; then
  step bench_algorithms 120 "${BENCH}" --sizes 16777216,67108864
  cat "${OUT_DIR}/bench_algorithms.log"
fi

log "done, status ${STATUS}"
exit "${STATUS}"
