#!/usr/bin/env bash
# The GPU run of the kernels' tunings (kernels/include/tessera/kernels/cuda/tuning/), in this order:
#   1. the kernel benchmarks against the vendor in the same process: reduce, scan, select (and the
#      exact sum) against CUB at 2^28 and 2^30 elements, gemm against cuBLAS, the radix sort against
#      cub::DeviceRadixSort at 2^26 keys; speedup = vendor time / our time (above 1: we are faster);
#   2. the GPU kernel tests against the CPU backend (tessera_gpu_tests without the cases above 2^31
#      elements, tessera_gpu_sort_tests without those above 2^29 keys, tessera_gpu_stencil_tests);
#   3. compute-sanitizer memcheck of the reduce, scan, select and gemm tests at small sizes;
#   4. the multi-rank tests on the cuda backend, 1 and 3 ranks sharing the GPU (scan, filter, matmul,
#      sum, sort).
# A summary goes to stdout: the tests' verdicts and the benchmarks' tables; full logs and the
# benchmarks' JSON to ${OUT:-out}/tuning/.
#
#   bash bench/gpu/tuning.sh <build-dir>
#   TUNING_STEPS="bench" bash bench/gpu/tuning.sh <build-dir>      (a subset, in this order)
set -uo pipefail

BUILD_DIR="$(cd "${1:?usage: bench/gpu/tuning.sh <build-dir>}" && pwd)"
DEFAULT_STEPS="bench tests sanitize mpi"
# shellcheck source=bench/gpu/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_run_init tuning

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
TESTS="${BUILD_DIR}/tests/gpu"

if wants bench; then
  step bench_kernels 70 "${BUILD_DIR}/bench/kernels/tessera_bench_kernels" --json "${OUT_DIR}/bench_kernels.json"
  cat "${OUT_DIR}/bench_kernels.log"
  step bench_sort 25 "${BUILD_DIR}/bench/kernels/tessera_bench_sort" --sizes 67108864 --json "${OUT_DIR}/bench_sort.json"
  cat "${OUT_DIR}/bench_sort.log"
fi

if wants tests; then
  step gpu_tests 130 env OMP_NUM_THREADS=16 "${TESTS}/tessera_gpu_tests" --gtest_color=no --gtest_filter='-*Huge*'
  grep -E "PASSED|FAILED|SKIPPED|tests ran" "${OUT_DIR}/gpu_tests.log" || true
  step gpu_sort_tests 25 env OMP_NUM_THREADS=16 "${TESTS}/tessera_gpu_sort_tests" --gtest_color=no --gtest_filter='-*Large*:*Huge*'
  grep -E "PASSED|FAILED|SKIPPED|tests ran" "${OUT_DIR}/gpu_sort_tests.log" || true
  step gpu_stencil_tests 20 env OMP_NUM_THREADS=16 "${TESTS}/tessera_gpu_stencil_tests" --gtest_color=no
  grep -E "PASSED|FAILED|SKIPPED|tests ran" "${OUT_DIR}/gpu_stencil_tests.log" || true
fi

if wants sanitize; then
  step memcheck 20 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "${TESTS}/tessera_gpu_tests" --gtest_color=no --gtest_filter='KernelsGpu/*:GenericGpu*:GemmGpu*:TwoPassScanGpu*:-*Large*:*Huge*'
  tail -2 "${OUT_DIR}/memcheck.log"
fi

if wants mpi; then
  for np in 1 3; do
    step "mpi_cuda_np${np}" 15 env TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=4 mpirun -n "${np}" \
      "${BUILD_DIR}/tests/mpi/tessera_mpi_tests" --gtest_color=no \
      --gtest_filter='Scan*:Filter*:Reduce*:ReproducibleSum*:Matmul*:DistSort*:GenericFromCxx*'
    grep -E "PASSED|FAILED|tests ran|tessera tests" "${OUT_DIR}/mpi_cuda_np${np}.log" | head -5
  done
fi

log "done, status ${STATUS}"
exit "${STATUS}"
