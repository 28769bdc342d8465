#!/usr/bin/env bash
# The sort's GPU run: the radix sort's GPU tests against the CPU backend, compute-sanitizer
# (memcheck, racecheck) at small sizes, the benchmark against cub::DeviceRadixSort, and the
# distributed sort's tests on the cuda backend (1 and 3 ranks sharing the GPU). A summary goes to
# stdout; full logs to ${OUT:-out}/sort/.
#
#   bash bench/gpu/sort.sh <build-dir>
set -uo pipefail

BUILD_DIR="$(cd "${1:?usage: bench/gpu/sort.sh <build-dir>}" && pwd)"
OUT_DIR="${OUT:-out}/sort"
mkdir -p "${OUT_DIR}"
OUT_DIR="$(cd "${OUT_DIR}" && pwd)"
export PATH="${PATH}:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
START=$(date +%s)
STATUS=0

log() { echo "[sort.sh +$(( $(date +%s) - START ))s] $*"; }

# Runs "$@" with a time limit; the last lines of its log on failure.
step() {
  local name="$1" limit="$2"
  shift 2
  log "${name}"
  local rc=0
  timeout "${limit}" "$@" >"${OUT_DIR}/${name}.log" 2>&1 || rc=$?
  if [[ ${rc} -ne 0 ]]; then
    STATUS=1
    log "${name}: exit status ${rc}"
    grep -E "Failure|FAILED|error|Error|ERROR|differs|expected|Which is|Value of" "${OUT_DIR}/${name}.log" | head -40
    tail -5 "${OUT_DIR}/${name}.log"
  fi
  return 0
}

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true

TESTS="${BUILD_DIR}/tests/gpu/tessera_gpu_sort_tests"
step gpu_sort_tests 110 env OMP_NUM_THREADS=16 "${TESTS}"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK .*(Large|Huge)|tests ran" "${OUT_DIR}/gpu_sort_tests.log" || true

SMALL_FILTER='-*Large*:*Huge*'
step memcheck 60 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "${TESTS}" --gtest_filter="${SMALL_FILTER}"
tail -2 "${OUT_DIR}/memcheck.log"
step racecheck 60 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool racecheck --error-exitcode 9 \
  "${TESTS}" --gtest_filter='SortGpu/0.KeysMatch*:SortGpu/5.PairsAre*:SortGpuValues.*'
tail -2 "${OUT_DIR}/racecheck.log"

step bench_sort 90 "${BUILD_DIR}/bench/kernels/tessera_bench_sort" --sizes 67108864,268435456 --json "${OUT_DIR}/bench_sort.json"
cat "${OUT_DIR}/bench_sort.log"

log "done, status ${STATUS}"
exit "${STATUS}"
