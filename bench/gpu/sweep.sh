#!/usr/bin/env bash
# The 5- and 9-point sweeps on one GPU: the GPU stencil tests against the CPU backend, and
# compute-sanitizer memcheck and racecheck of them and of the library's sweeps in the benchmark at
# small sizes (the hazard lines printed); the library's sweeps against the plain kernel and the copy
# rate (tessera_bench_stencil, 16384^2 floats, 16384 x 8192 doubles, every result compared bit for
# bit with the plain kernel's; `--only variants` adds the column march and the bulk ring's other
# tunings); the multi-rank Jacobi tests on the cuda backend (1 and 3 ranks sharing the GPU).
#
#   bash bench/gpu/sweep.sh BUILD_DIR      (from the source tree's root; the targets of
#                                           bench/gpu/sweep.targets built in BUILD_DIR)
# A summary goes to stdout; logs and the benchmark's JSON to ${OUT:-out}/sweep/.
set -uo pipefail

BUILD="$(cd "${1:?usage: bash bench/gpu/sweep.sh BUILD_DIR}" && pwd)"
# shellcheck source=bench/gpu/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_run_init sweep

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
BENCH="${BUILD}/bench/kernels/tessera_bench_stencil"
TESTS="${BUILD}/tests/gpu/tessera_gpu_stencil_tests"

step gpu_tests 20 "${TESTS}"
grep -E "^\[  (PASSED|FAILED) |Failure|region " "${OUT_DIR}/gpu_tests.log" | head -16

SAN="$(command -v compute-sanitizer || true)"
if [[ -n "${SAN}" ]]; then
  for tool in memcheck racecheck; do
    TESSERA_GPU_TEST_SMALL=1 step "sanitize_tests_${tool}" 20 "${SAN}" --tool "${tool}" --error-exitcode 9 "${TESTS}" \
      --gtest_filter='*Sweep*:*Residual*'
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Race reported|Invalid|PASSED|FAILED" "${OUT_DIR}/sanitize_tests_${tool}.log" | head -8
    # The library's sweeps (5-point, 9-point, double) on a 1030 x 1030 region (515 columns of doubles).
    step "sanitize_bench_${tool}" 20 "${SAN}" --tool "${tool}" --error-exitcode 9 "${BENCH}" --n 1030 --only sweep5,sweep9,double \
      --reps 1 --warmup 0
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Race reported|Invalid| NO" -A3 "${OUT_DIR}/sanitize_bench_${tool}.log" | head -20
  done
else
  log "compute-sanitizer not found"
fi

step bench 30 "${BENCH}" --only sweep5,sweep9,double --reps 10 --json "${OUT_DIR}/bench_stencil.json"
cat "${OUT_DIR}/bench.log"

FILTER='Field2D.*:JacobiTest*:Jacobi.*:ConvolveTest*:Convolve.*'
for np in 1 3; do
  TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=2 step "mpi_cuda_np${np}" 15 \
    mpirun -n "${np}" "${BUILD}/tests/mpi/tessera_mpi_tests" --gtest_filter="${FILTER}"
  grep -E "tessera tests:|PASSED|FAILED|Failure|differs" "${OUT_DIR}/mpi_cuda_np${np}.log" | head -8
done

log "done, status ${STATUS}"
exit ${STATUS}
