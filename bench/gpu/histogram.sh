#!/usr/bin/env bash
# The histograms on one GPU, in one call from the tree's root: bash bench/gpu/histogram.sh BUILD_DIR
# (a Release build with CUDA of the targets in histogram.targets). Runs, in this order:
#   1. the GPU tests of the histograms (against the CPU backend), full sizes;
#   2. compute-sanitizer memcheck (all of them) and racecheck (float, even bins and edges) at small sizes;
#   3. tessera_bench_histogram against CUB (even bins, given edges, and the tunings compared);
#   4. the multi-rank tests of the distributed histogram on the cuda backend, 1 and 3 ranks.
# Prints a summary of each step (the full logs go to a temporary directory).
set -uo pipefail

BUILD="${1:?usage: bash bench/gpu/histogram.sh BUILD_DIR}"
OUT_DIR="$(mktemp -d)"  # logs stay here: stdout carries the summary

export PATH="${PATH}:/usr/local/cuda/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
status=0
log() { echo "[histogram.sh $(date +%H:%M:%S)] $*"; }

# 0. The machine code of the float equal-bins kernels: registers, and instructions by opcode (the
# sample loop is unrolled 16 times), and the code around the first shared-memory atomic.
LIB="$(find "${BUILD}" -name 'libtessera_kernels.so*' -type f | head -1)"
if command -v cuobjdump >/dev/null 2>&1 && [[ -n "${LIB}" ]]; then
  SASS="$(mktemp)"
  cuobjdump -sass "${LIB}" >"${SASS}" 2>/dev/null
  cuobjdump -res-usage "${LIB}" 2>/dev/null | grep -A1 'histogram_kernel.*DeviceEvenBinningIf' | grep -oE 'Li(32|16|0)ELb[01]|REG:[0-9]+|SHARED:[0-9]+|STACK:[0-9]+' | paste - - - - | sed 's/^/  resources /'
  for fn in 'Li32ELb0EfNS2_17DeviceEvenBinningIfE' 'Li16ELb0EfNS2_17DeviceEvenBinningIfE'; do
    awk -v pat="${fn}" '/Function :/ {on = index($0, pat) > 0} on' "${SASS}" >"${SASS}.fn"
    log "0. SASS of histogram_kernel<${fn}>: $(grep -cE '^ +/\*[0-9a-f]{4}\*/' "${SASS}.fn") instructions"
    grep -oE '^ +/\*[0-9a-f]{4}\*/ +(@!?U?P[0-9T] +)?[A-Z][A-Z0-9_.]*' "${SASS}.fn" | awk '{print $NF}' | sort | uniq -c | sort -rn | head -30 | paste - - - | sed 's/^/  /'
    line="$(grep -nE 'ATOMS|ATOM\.' "${SASS}.fn" | head -1 | cut -d: -f1)"
    [[ -n "${line}" ]] && sed -n "$((line > 70 ? line - 70 : 1)),$((line + 6))p" "${SASS}.fn" | grep -oE '/\*[0-9a-f]{4}\*/ +[^;]*;' | sed 's/^/    /'
  done
  rm -f "${SASS}" "${SASS}.fn"
fi

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
timeout 90 "${BUILD}/bench/kernels/tessera_bench_histogram" --ranged --variants --reps 10 --warmup 2 \
  >"${OUT_DIR}/histogram_bench.log" 2>&1 || rc=$?
cat "${OUT_DIR}/histogram_bench.log"
log "benchmark exit status ${rc}"
[[ ${rc} -eq 0 ]] || status=1

MPI_TESTS="${BUILD}/tests/mpi/tessera_mpi_tests"
if [[ -x "${MPI_TESTS}" ]] && "${MPI_TESTS}" --gtest_list_tests 2>/dev/null | grep -q Histogram; then
  for np in 1 3; do
    log "4. TESSERA_TEST_BACKEND=cuda mpirun -n ${np} tessera_mpi_tests --gtest_filter='*Histogram*:*Bincount*'"
    rc=0
    TESSERA_TEST_BACKEND=cuda timeout 15 mpirun -n "${np}" --oversubscribe "${MPI_TESTS}" --gtest_filter='*Histogram*:*Bincount*' \
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
