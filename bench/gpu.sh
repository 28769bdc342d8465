#!/usr/bin/env bash
# Builds the CUDA kernels, runs their GPU tests, compute-sanitizer (memcheck, racecheck) at small
# sizes and the kernel benchmark against CUB / cuBLAS, on the GPU machine, in one call:
#
#   bench/gpu.sh [all | build | sass | test | sanitize | bench | peerloss] ...    (default: all)
#
# peerloss (not in all: it needs Open MPI's mpiexec and builds tessera-stencil): two ranks on one
# GPU lose one mid-step on the peer-copy and peer-store halo paths; the other must exit within
# TESSERA_MPI_TIMEOUT + 5 s (tests/gpu/peer_loss_gpu.sh).
#
# Steps may be combined (`bench/gpu.sh build test`). Logs and JSON go to ${OUT:-out}/.
# Environment: BUILD_DIR (default build-gpu), CUDA_ARCH (default 90), JOBS (default 16),
# TESSERA_GPU_CMAKE_ARGS (extra configure arguments), BENCH_ARGS (extra benchmark flags).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${OUT:-out}"
BUILD_DIR="${BUILD_DIR:-${ROOT}/build-gpu}"
CUDA_ARCH="${CUDA_ARCH:-90}"
JOBS="${JOBS:-16}"
mkdir -p "${OUT_DIR}"
OUT_DIR="$(cd "${OUT_DIR}" && pwd)"
export PATH="${PATH}:/usr/local/cuda/bin"

log() { echo "[gpu.sh $(date +%H:%M:%S)] $*"; }

step_build() {
  local generator=()
  if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
  log "configure ${BUILD_DIR} (Release, CUDA arch ${CUDA_ARCH})"
  # shellcheck disable=SC2086
  cmake -S "${ROOT}" -B "${BUILD_DIR}" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH}" -DTESSERA_PTXAS_VERBOSE=ON ${TESSERA_GPU_CMAKE_ARGS:-} \
    >"${OUT_DIR}/gpu_configure.log" 2>&1 || { tail -40 "${OUT_DIR}/gpu_configure.log"; return 1; }
  log "build tessera_gpu_tests tessera_bench_kernels (-j${JOBS})"
  cmake --build "${BUILD_DIR}" --target tessera_gpu_tests tessera_bench_kernels -j "${JOBS}" \
    >"${OUT_DIR}/gpu_build.log" 2>&1 || { grep -E "error|FAILED" "${OUT_DIR}/gpu_build.log" | head -40; return 1; }
  # Register use and spills of every kernel (ptxas -v), for the record.
  grep -E "Compiling entry|spill|Used [0-9]+ registers" "${OUT_DIR}/gpu_build.log" >"${OUT_DIR}/gpu_ptxas.txt" || true
  log "build done; spilling kernels: $(grep -c '[1-9][0-9]* bytes spill stores' "${OUT_DIR}/gpu_ptxas.txt" || true)"
}

# The machine code says whether loads are 16 bytes wide and the FP64 tensor cores are used.
step_sass() {
  local lib
  lib="$(find "${BUILD_DIR}" -name 'libtessera_kernels.so*' -type f | head -1)"
  [[ -n "${lib}" ]] || { log "no libtessera_kernels.so in ${BUILD_DIR}"; return 1; }
  command -v cuobjdump >/dev/null 2>&1 || { log "cuobjdump not found; skipping the SASS summary"; return 0; }
  cuobjdump -sass "${lib}" >"${OUT_DIR}/gpu_sass.txt" 2>&1 || true
  {
    echo "instruction counts in ${lib} (all kernels):"
    for ins in LDG.E.128 LDG.E.64 STG.E.128 LDGSTS DMMA FFMA LDS.128 STL LDL; do
      printf '  %-10s %s\n' "${ins}" "$(grep -c "${ins}" "${OUT_DIR}/gpu_sass.txt" || true)"
    done
  } | tee "${OUT_DIR}/gpu_sass_summary.txt"
  rm -f "${OUT_DIR}/gpu_sass.txt"
}

step_test() {
  log "GPU tests (full sizes)"
  local rc=0
  "${BUILD_DIR}/tests/gpu/tessera_gpu_tests" --gtest_output="json:${OUT_DIR}/gpu_tests.json" \
    >"${OUT_DIR}/gpu_tests.log" 2>&1 || rc=$?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[       OK |tests ran|Failure" "${OUT_DIR}/gpu_tests.log" || true
  log "GPU tests exit status ${rc}"
  return "${rc}"
}

step_sanitize() {
  local sanitizer
  sanitizer="$(command -v compute-sanitizer || true)"
  [[ -n "${sanitizer}" ]] || { log "compute-sanitizer not found"; return 1; }
  local filter='-*Large*:*Huge*'
  local status=0
  for tool in memcheck racecheck; do
    log "compute-sanitizer --tool ${tool} (TESSERA_GPU_TEST_SMALL=1)"
    TESSERA_GPU_TEST_SMALL=1 "${sanitizer}" --tool "${tool}" --error-exitcode 9 \
      "${BUILD_DIR}/tests/gpu/tessera_gpu_tests" --gtest_filter="${filter}" \
      >"${OUT_DIR}/gpu_sanitize_${tool}.log" 2>&1 || status=1
    tail -3 "${OUT_DIR}/gpu_sanitize_${tool}.log"
  done
  return "${status}"
}

step_peerloss() {
  log "build tessera-stencil; peer loss on the peer-copy and peer-store paths"
  cmake --build "${BUILD_DIR}" --target tessera-stencil -j "${JOBS}" >"${OUT_DIR}/gpu_peerloss_build.log" 2>&1 ||
    { grep -E "error|FAILED" "${OUT_DIR}/gpu_peerloss_build.log" | head -20; return 1; }
  "${ROOT}/tests/gpu/peer_loss_gpu.sh" "${BUILD_DIR}/bin" "${OUT_DIR}/peer_loss" 2>&1 | tee "${OUT_DIR}/gpu_peerloss.log"
  return "${PIPESTATUS[0]}"
}

step_bench() {
  log "kernel benchmark"
  local rc=0
  # shellcheck disable=SC2086
  "${BUILD_DIR}/bench/kernels/tessera_bench_kernels" --json "${OUT_DIR}/bench_kernels.json" ${BENCH_ARGS:-} \
    >"${OUT_DIR}/bench_kernels.log" 2>&1 || rc=$?
  cat "${OUT_DIR}/bench_kernels.log"
  log "benchmark exit status ${rc}"
  return "${rc}"
}

main() {
  local steps=("$@")
  [[ ${#steps[@]} -gt 0 ]] || steps=(all)
  local status=0
  for s in "${steps[@]}"; do
    case "${s}" in
      all)
        step_build
        step_sass || true
        step_test || status=1
        step_sanitize || status=1
        step_bench || status=1
        ;;
      build) step_build ;;
      sass) step_sass ;;
      test) step_test || status=1 ;;
      sanitize) step_sanitize || status=1 ;;
      bench) step_bench || status=1 ;;
      peerloss) step_peerloss || status=1 ;;
      *) echo "gpu.sh: unknown step '${s}' (all, build, sass, test, sanitize, bench, peerloss)" >&2; exit 2 ;;
    esac
  done
  log "done (status ${status}); logs in ${OUT_DIR}"
  return "${status}"
}

main "$@"
