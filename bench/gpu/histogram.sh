#!/usr/bin/env bash
# The histograms on one GPU, in one call from the tree's root: bash bench/gpu/histogram.sh BUILD_DIR
# (a Release build with CUDA of the targets in histogram.targets). Runs, in this order:
#   0. the registers of the float equal-bins kernels (cuobjdump -res-usage);
#   1. the GPU tests of the histograms (against the CPU backend), full sizes;
#   2. compute-sanitizer memcheck (all of them) and racecheck (float, even bins and edges) at small sizes;
#   3. tessera_bench_histogram against CUB (even bins and given edges, 2^28 samples): the numbers of
#      docs/PERFORMANCE.md;
#   4. the multi-rank tests of the distributed histogram on the cuda backend, 1 and 3 ranks;
#   5. the app against numpy.histogram on the cuda backend, 1 rank (tests/apps/test_histogram.py).
# Prints a summary of each step (full logs in a temporary directory). About a minute on an H100.
set -uo pipefail

BUILD="${1:?usage: bash bench/gpu/histogram.sh BUILD_DIR}"
LOGS="$(mktemp -d)"
export PATH="${PATH}:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
status=0
log() { echo "[histogram.sh $(date +%H:%M:%S)] $*"; }

LIB="$(find "${BUILD}" -name 'libtessera_kernels.so*' -type f | head -1)"
if command -v cuobjdump >/dev/null 2>&1 && [[ -n "${LIB}" ]]; then
  log "0. registers of histogram_kernel<CounterBits, MultiPass, float, even bins>"
  cuobjdump -res-usage "${LIB}" 2>/dev/null | grep -A1 'histogram_kernel.*DeviceEvenBinningIf' |
    grep -oE 'Li(32|16|0)ELb[01]|REG:[0-9]+|STACK:[0-9]+' | paste - - - | sed 's/^/  /'
fi

GPU_TESTS="${BUILD}/tests/gpu/tessera_gpu_tests"
FILTER='HistogramGpu*'
log "1. GPU tests (${FILTER}), full sizes"
rc=0
OMP_NUM_THREADS=16 timeout 60 "${GPU_TESTS}" --gtest_filter="${FILTER}" >"${LOGS}/gpu_tests.log" 2>&1 || rc=$?
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|tests ran|Failure|error" "${LOGS}/gpu_tests.log" | head -40
log "GPU tests exit status ${rc}"
[[ ${rc} -eq 0 ]] || status=1

if command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    filter="${FILTER}"
    [[ ${tool} == racecheck ]] && filter='HistogramGpu/2.EvenBinsMatch*:HistogramGpu/2.GivenEdges*'
    log "2. compute-sanitizer --tool ${tool} (TESSERA_GPU_TEST_SMALL=1, ${filter})"
    rc=0
    TESSERA_GPU_TEST_SMALL=1 timeout 40 compute-sanitizer --tool "${tool}" --error-exitcode 9 \
      "${GPU_TESTS}" --gtest_filter="${filter}" >"${LOGS}/sanitize_${tool}.log" 2>&1 || rc=$?
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Hazard|Invalid|^\[  (PASSED|FAILED) " "${LOGS}/sanitize_${tool}.log" | sort | uniq -c | head -12
    log "${tool} exit status ${rc}"
    [[ ${rc} -eq 0 ]] || status=1
  done
else
  log "2. compute-sanitizer not found"
  status=1
fi

log "3. tessera_bench_histogram --ranged (against CUB DeviceHistogram)"
rc=0
timeout 60 "${BUILD}/bench/kernels/tessera_bench_histogram" --ranged >"${LOGS}/bench.log" 2>&1 || rc=$?
cat "${LOGS}/bench.log"
log "benchmark exit status ${rc}"
[[ ${rc} -eq 0 ]] || status=1

MPI_TESTS="${BUILD}/tests/mpi/tessera_mpi_tests"
for np in 1 3; do
  log "4. TESSERA_TEST_BACKEND=cuda mpirun -n ${np} tessera_mpi_tests --gtest_filter='*Histogram*:*Bincount*'"
  rc=0
  TESSERA_TEST_BACKEND=cuda timeout 20 mpirun -n "${np}" --oversubscribe "${MPI_TESTS}" --gtest_filter='*Histogram*:*Bincount*' \
    >"${LOGS}/mpi_np${np}.log" 2>&1 || rc=$?
  grep -E "^\[  (PASSED|FAILED) |Failure|tessera tests:" "${LOGS}/mpi_np${np}.log" | head -20
  log "mpi np${np} exit status ${rc}"
  [[ ${rc} -eq 0 ]] || status=1
done

APP_DIR="$(dirname "$(find "${BUILD}" -name tessera-histogram -type f | head -1)")"
if [[ -x "${APP_DIR}/tessera-histogram" ]] && command -v python3 >/dev/null 2>&1; then
  log "5. TESSERA_TEST_BACKEND=cuda tests/apps/test_histogram.py, 1 rank"
  rc=0
  TESSERA_TEST_BACKEND=cuda timeout 60 python3 tests/apps/test_histogram.py --bin "${APP_DIR}" --ranks 1 \
    --mpiexec "$(command -v mpirun)" --np-flag=-n "--mpiexec-flags=--oversubscribe" --workdir "${LOGS}/app" \
    >"${LOGS}/app.log" 2>&1 || rc=$?
  grep -E "^FAIL|checks|SKIP" "${LOGS}/app.log" | head -20
  log "app test exit status ${rc}"
  [[ ${rc} -eq 0 || ${rc} -eq 77 ]] || status=1
else
  log "5. no tessera-histogram in this build"
fi

log "done, status ${status}"
exit "${status}"
