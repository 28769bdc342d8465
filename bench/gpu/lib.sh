# What the GPU run scripts under bench/gpu/ share; each sources it and calls gpu_run_init first:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   gpu_run_init NAME         # NAME.sh, NAME.limit (the whole run's seconds), NAME_STEPS
#
# gpu_run_init sets ROOT (the source tree), OUT_DIR (${OUT:-out}/NAME, absolute), STEPS (from
# ${NAME_STEPS}, else the script's DEFAULT_STEPS), START, DEADLINE and STATUS (0; 1 once a step
# fails or is skipped), and the environment of the runs (CUDA tools on PATH, Open MPI as root and
# oversubscribed, no NVLink multicast). Then:
#   log MESSAGE               one line, with the seconds since the start
#   wants STEP                whether STEP is among STEPS
#   step NAME LIMIT CMD...    runs CMD with at most LIMIT seconds (fewer where the run's time is
#                             nearly up; skipped when it is up), output in OUT_DIR/NAME.log; one
#                             line on how it went, and the failure lines of the log when it failed

gpu_run_init() {
  GPU_RUN_NAME="$1"
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  OUT_DIR="${OUT:-out}/${GPU_RUN_NAME}"
  mkdir -p "${OUT_DIR}"
  OUT_DIR="$(cd "${OUT_DIR}" && pwd)"
  local steps_var="${GPU_RUN_NAME^^}_STEPS"
  STEPS="${!steps_var:-${DEFAULT_STEPS:-}}"
  export PATH="${PATH}:/usr/local/cuda/bin"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
  START=$(date +%s)
  DEADLINE=$(( START + $(cat "${ROOT}/bench/gpu/${GPU_RUN_NAME}.limit") - 8 ))
  STATUS=0
}

log() { echo "[${GPU_RUN_NAME}.sh +$(( $(date +%s) - START ))s] $*"; }

wants() { [[ " ${STEPS} " == *" $1 "* ]]; }

step() {
  local name="$1" limit="$2"
  shift 2
  local left=$(( DEADLINE - $(date +%s) ))
  if [[ ${left} -lt 10 ]]; then
    log "${name}: skipped (the run's time is up)"
    STATUS=1
    return 0
  fi
  [[ ${limit} -gt ${left} ]] && limit=${left}
  local t0 rc=0
  t0=$(date +%s)
  timeout "${limit}" "$@" >"${OUT_DIR}/${name}.log" 2>&1 || rc=$?
  if [[ ${rc} -ne 0 ]]; then
    STATUS=1
    log "${name}: FAILED, exit status ${rc} after $(( $(date +%s) - t0 ))s"
    grep -E "Failure|FAILED|rror|differs|expected|Which is|Value of" "${OUT_DIR}/${name}.log" | head -30
    tail -5 "${OUT_DIR}/${name}.log"
  else
    log "${name}: ok in $(( $(date +%s) - t0 ))s; $(grep -E '^\[  PASSED  \]|^\[  SKIPPED \]|ERROR SUMMARY|RACECHECK SUMMARY' "${OUT_DIR}/${name}.log" | tr '\n' ' ')"
  fi
  return 0
}
