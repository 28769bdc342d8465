#!/usr/bin/env bash
# The histograms on one GPU, in one call from the tree's root: bash bench/gpu/histogram.sh BUILD_DIR
# (a Release build with CUDA of the targets in histogram.targets). Runs, in this order:
#   1. the GPU tests of the histograms (against the CPU backend), full sizes;
#   2. compute-sanitizer memcheck (all of them) and racecheck (float, even bins and edges) at small sizes;
#   3. tessera_bench_histogram against CUB (even bins, given edges, and the tunings compared);
#   4. the multi-rank tests of the distributed histogram on the cuda backend, 1 and 3 ranks.
# Prints a summary of each step; full logs go to ${OUT:-out}/histogram_*.log.
set -uo pipefail

BUILD="${1:?usage: bash bench/gpu/histogram.sh BUILD_DIR}"
OUT_DIR="${OUT:-out}"
mkdir -p "${OUT_DIR}"
export PATH="${PATH}:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
status=0
log() { echo "[histogram.sh $(date +%H:%M:%S)] $*"; }

GPU_TESTS="${BUILD}/tests/gpu/tessera_gpu_tests"
FILTER='HistogramGpu*'

log "1. GPU tests (${FILTER}), full sizes"
rc=0
OMP_NUM_THREADS=16 timeout 60 "${GPU_TESTS}" --gtest_filter="${FILTER}" >"${OUT_DIR}/histogram_gpu_tests.log" 2>&1 || rc=$?
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests ran|Failure|error" "${OUT_DIR}/histogram_gpu_tests.log" | head -40
grep -E "^\[       OK " "${OUT_DIR}/histogram_gpu_tests.log" | sed 's/^/  /' | head -20
log "GPU tests exit status ${rc}"
[[ ${rc} -eq 0 ]] || status=1

if command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    filter="${FILTER}"
    [[ ${tool} == racecheck ]] && filter='HistogramGpu/2.EvenBinsMatch*:HistogramGpu/2.GivenEdges*'
    log "2. compute-sanitizer --tool ${tool} (TESSERA_GPU_TEST_SMALL=1, ${filter})"
    rc=0
    TESSERA_GPU_TEST_SMALL=1 timeout 35 compute-sanitizer --tool "${tool}" --error-exitcode 9 \
      "${GPU_TESTS}" --gtest_filter="${filter}" >"${OUT_DIR}/histogram_sanitize_${tool}.log" 2>&1 || rc=$?
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Hazard|Invalid|^\[  (PASSED|FAILED) " "${OUT_DIR}/histogram_sanitize_${tool}.log" | sort | uniq -c | head -12
    log "${tool} exit status ${rc}"
    [[ ${rc} -eq 0 ]] || status=1
  done
else
  log "2. compute-sanitizer not found"
  status=1
fi

log "3. benchmark against CUB"
rc=0
timeout 90 "${BUILD}/bench/kernels/tessera_bench_histogram" --ranged --variants --reps 10 --warmup 2 --json "${OUT_DIR}/histogram_bench.json" \
  >"${OUT_DIR}/histogram_bench.log" 2>&1 || rc=$?
cat "${OUT_DIR}/histogram_bench.log"
log "benchmark exit status ${rc}"
[[ ${rc} -eq 0 ]] || status=1

MPI_TESTS="${BUILD}/tests/mpi/tessera_mpi_tests"
if [[ -x "${MPI_TESTS}" ]] && "${MPI_TESTS}" --gtest_list_tests 2>/dev/null | grep -q Histogram; then
  for np in 1 3; do
    log "4. TESSERA_TEST_BACKEND=cuda mpirun -n ${np} tessera_mpi_tests --gtest_filter='*Histogram*'"
    rc=0
    TESSERA_TEST_BACKEND=cuda timeout 15 mpirun -n "${np}" --oversubscribe "${MPI_TESTS}" --gtest_filter='*Histogram*' \
      >"${OUT_DIR}/histogram_mpi_np${np}.log" 2>&1 || rc=$?
    grep -E "^\[  (PASSED|FAILED) |Failure|tessera tests:" "${OUT_DIR}/histogram_mpi_np${np}.log" | head -20
    log "mpi np${np} exit status ${rc}"
    [[ ${rc} -eq 0 ]] || status=1
  done
else
  log "4. no multi-rank histogram tests in this build"
fi

log "done, status ${status}"
exit "${status}"
