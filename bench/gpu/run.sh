#!/usr/bin/env bash
# The runs on the GPU machine, one per subject, from the source tree's root:
#
#   bash bench/gpu/run.sh NAME BUILD_DIR [ARGS...]   run NAME against a Release build with CUDA
#   bash bench/gpu/run.sh build NAME BUILD_DIR       configure BUILD_DIR (Release, sm_90 unless
#                                                    CUDA_ARCH says otherwise) and build only NAME's
#                                                    targets, -j$(nproc)
#   bash bench/gpu/run.sh targets NAME               print NAME's build targets
#   bash bench/gpu/run.sh list                       the runs, their limits and targets
#
# NAME is a line of bench/gpu/targets.txt (the run's time limit in seconds and its build targets).
# Each run prints a summary; its logs and JSON go to ${OUT:-out}/NAME/ or a temporary directory, as
# its description says. NAME_STEPS (ALGORITHMS_STEPS=bench, ...) picks steps where a run has them.
set -uo pipefail

GPU_TARGETS_FILE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/targets.txt"

# gpu_targets_line NAME: NAME's line of targets.txt (fails when there is none).
gpu_targets_line() { awk -v n="$1" '$1 == n { print; found = 1 } END { exit !found }' "${GPU_TARGETS_FILE}"; }
gpu_limit() { gpu_targets_line "$1" | awk '{ print $2 }'; }
gpu_targets() { gpu_targets_line "$1" | cut -d' ' -f3- | xargs; }

# ---- What the runs share; a run that uses it calls gpu_run_init first:
#
#   gpu_run_init NAME         # NAME's time limit (targets.txt) for the whole run; NAME_STEPS
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
  DEADLINE=$(( START + $(gpu_limit "${GPU_RUN_NAME}") - 8 ))
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
    grep -E "Failure|FAILED|rror|differs|expected|Which is|Value of|^INVALID:" "${OUT_DIR}/${name}.log" | head -30
    tail -5 "${OUT_DIR}/${name}.log"
  else
    log "${name}: ok in $(( $(date +%s) - t0 ))s; $(grep -E '^\[  PASSED  \]|^\[  SKIPPED \]|ERROR SUMMARY|RACECHECK SUMMARY|^# summary: [0-9]+ rows' "${OUT_DIR}/${name}.log" | tr '\n' ' ')"
  fi
  return 0
}

# ==== algorithms
# The newer algorithms on one GPU: the GPU tests of their device passes (by-key runs, merge sort)
# against the CPU backend, compute-sanitizer (memcheck, racecheck) at small sizes, their multi-rank
# tests on the cuda backend (1 rank, then 3 sharing the GPU), the compile-fail test of a host lambda
# under nvcc, and tessera_bench_algorithms against Thrust and CUB. A summary goes to stdout; full
# logs to ${OUT:-out}/algorithms/.
#
#   bash bench/gpu/run.sh algorithms <build-dir>
#   ALGORITHMS_STEPS="tests bench" bash bench/gpu/run.sh algorithms <build-dir>     (a subset, in this order)
run_algorithms() {
  set -uo pipefail

  BUILD_DIR="$(cd "${1:?usage: bash bench/gpu/run.sh algorithms <build-dir>}" && pwd)"
  DEFAULT_STEPS="tests sanitize mpi compile bench"
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
}

# ==== histogram
# The histograms on one GPU, in one call from the tree's root: bash bench/gpu/run.sh histogram BUILD_DIR
# (a Release build with CUDA of the targets in the histogram line of targets.txt). Runs, in this order:
#   0. the registers of the float equal-bins kernels (cuobjdump -res-usage);
#   1. the GPU tests of the histograms (against the CPU backend), full sizes;
#   2. compute-sanitizer memcheck (all of them) and racecheck (float, even bins and edges) at small sizes;
#   3. tessera_bench_histogram against CUB (even bins and given edges, 2^28 samples): the numbers of
#      docs/PERFORMANCE.md;
#   4. the multi-rank tests of the distributed histogram on the cuda backend, 1 and 3 ranks;
#   5. the app against numpy.histogram on the cuda backend, 1 rank (tests/apps/test_histogram.py).
# Prints a summary of each step (full logs in a temporary directory). About a minute on an H100.
run_histogram() {
  set -uo pipefail

  BUILD="${1:?usage: bash bench/gpu/run.sh histogram BUILD_DIR}"
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
}

# ==== pair
# The distributed sort and the Jacobi step on two GPUs of one host, one rank per GPU (device path
# NCCL): the multi-rank sort and stencil tests on the cuda backend (the stencils also with the halo's
# device-comm and peer-copy paths); one Jacobi iteration in its parts (sweep, split sweep, exchange,
# back to back, overlapped; 2x1 and 1x2 grids, 5- and 9-point; the overlapped step on its peer-store
# path, then on the halo's paths, NCCL and peer-copy); and the
# distributed sort per step, its exchange against the same all-to-all alone. On one GPU the two ranks
# share it (the sort's exchange staged, the halo peer-copy) and the numbers measure the path, not
# the overlap.
#
#   bash bench/gpu/run.sh pair BUILD_DIR        (from the source tree's root; BUILD_DIR has the targets
#                                            of the pair line of bench/gpu/targets.txt built)
# A summary goes to stdout; logs and JSON to ${OUT:-out}/pair/.
run_pair() {
  set -uo pipefail

  BUILD="$(cd "${1:?usage: bash bench/gpu/run.sh pair BUILD_DIR}" && pwd)"
  DEFAULT_STEPS="tests step peer sort"
  gpu_run_init pair

  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'
  nvidia-smi topo -m 2>/dev/null | head -4
  GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
  log "${GPUS} GPU(s) for 2 ranks"

  if wants tests; then
    FILTER='Field2D.*:JacobiTest*:Jacobi.*:ConvolveTest*:Convolve.*:*Sort*:*Argsort*'
    TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=4 step mpi_cuda_np2 90 \
      mpirun -n 2 "${BUILD}/tests/mpi/tessera_mpi_tests" --gtest_filter="${FILTER}"
    grep -E "tessera tests:|PASSED|FAILED|Failure|differs" "${OUT_DIR}/mpi_cuda_np2.log" | head -12
    for path in device-comm peer-copy; do
      TESSERA_HALO=${path} TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=4 step "mpi_cuda_np2_${path}" 60 \
        mpirun -n 2 "${BUILD}/tests/mpi/tessera_mpi_tests" --gtest_filter='Field2D.*:JacobiTest*:Jacobi.*:ConvolveTest*:Convolve.*'
      grep -E "PASSED|FAILED|Failure|differs" "${OUT_DIR}/mpi_cuda_np2_${path}.log" | head -12
    done
  fi

  if wants step; then
    STEP="${BUILD}/bench/distributed/tessera_bench_stencil_step"
    for grid in 2x1 1x2; do
      step "step_${grid}" 90 mpirun -n 2 "${STEP}" --backend cuda --grid "${grid}" --sizes 2048,4096,8192,16384 \
        --iters 50 --run 100 --json "${OUT_DIR}/step_${grid}.json"
      cat "${OUT_DIR}/step_${grid}.log"
    done
    step step_2x1_9pt 60 mpirun -n 2 "${STEP}" --backend cuda --grid 2x1 --stencil 9 --sizes 4096,16384 --iters 50 \
      --run 100 --json "${OUT_DIR}/step_2x1_9pt.json"
    cat "${OUT_DIR}/step_2x1_9pt.log"
  fi

  if wants peer; then
    # The same step with the frame's cells moved by the halo's other paths: NCCL
    # (TESSERA_HALO=device-comm) and CUDA IPC into the neighbours' receive slots (peer-copy).
    for path in device-comm peer-copy; do
      for grid in 2x1 1x2; do
        TESSERA_HALO=${path} step "${path}_${grid}" 90 mpirun -n 2 "${BUILD}/bench/distributed/tessera_bench_stencil_step" \
          --backend cuda --grid "${grid}" --sizes 4096,8192,16384 --iters 50 --run 100 --json "${OUT_DIR}/${path}_${grid}.json"
        cat "${OUT_DIR}/${path}_${grid}.log"
      done
    done
  fi

  if wants sort; then
    step sort_np2 60 mpirun -n 2 "${BUILD}/bench/distributed/tessera_bench_sort_distributed" --backend cuda \
      --types int32,float,int64 --min 64M --max 256M -f 4 -n 5 -w 2 --json "${OUT_DIR}/sort_np2.json"
    cat "${OUT_DIR}/sort_np2.log"
  fi

  log "done, status ${STATUS}"
  exit "${STATUS}"
}

# ==== phases
# Stream-ordered distributed calls on one GPU: the multi-rank tests on the cuda backend (1 rank, and
# 3 ranks sharing the GPU: device path staged), among them the chains of calls queued back to back
# with no host synchronisation between them (StreamOrder.*) and PhaseClock's bookkeeping;
# compute-sanitizer memcheck on those chains at 1 and 3 ranks; then the distributed benchmarks
# with their phase times (scan, filter, reduce and SUMMA from tessera_bench_distributed, the sort
# from tessera_bench_sort_distributed) at 1 and 3 ranks. A summary goes to stdout; full logs and
# JSON to ${OUT:-out}/phases/.
#
#   bash bench/gpu/run.sh phases <build-dir> [<baseline-build-dir>]
#
# With a baseline build (another commit's tessera_bench_distributed and
# tessera_bench_sort_distributed), each benchmark runs from both builds, interleaved (new, old,
# new, old), so that the two are compared in one run on one machine. tessera_bench_distributed's
# time is that of calls asking for no phase times in this tree; a baseline from before that measured
# calls asking for them, which then synchronised at every phase boundary whether timed or not.
#   PHASES_STEPS="chains bench" bash bench/gpu/run.sh phases <build-dir>    (a subset of: chains tests bench
#                                                                        sort sanitize generic)
run_phases() {
  set -uo pipefail

  BUILD_DIR="$(cd "${1:?usage: bash bench/gpu/run.sh phases <build-dir> [<baseline-build-dir>]}" && pwd)"
  BASELINE_DIR=""
  [[ -n "${2:-}" ]] && BASELINE_DIR="$(cd "$2" && pwd)"
  DEFAULT_STEPS="chains tests bench sort sanitize generic"
  gpu_run_init phases
  export OMP_NUM_THREADS=4

  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
  MPI_TESTS="${BUILD_DIR}/tests/mpi/tessera_mpi_tests"
  CHAINS='StreamOrder.*:PhaseClock.*:CommunicatorNode.*'

  # bench NAME LIMIT RANKS BINARY ARGS...: from this build, and (interleaved) from the baseline's.
  bench() {
    local name="$1" limit="$2" np="$3" binary="$4"
    shift 4
    local builds=("new:${BUILD_DIR}")
    [[ -n "${BASELINE_DIR}" ]] && builds=("new:${BUILD_DIR}" "old:${BASELINE_DIR}" "new:${BUILD_DIR}" "old:${BASELINE_DIR}")
    local i=0
    for entry in "${builds[@]}"; do
      local tag="${entry%%:*}" dir="${entry#*:}"
      i=$((i + 1))
      step "${name}_${tag}${i}" "${limit}" mpirun -n "${np}" "${dir}/bench/distributed/${binary}" "$@" \
        --json "${OUT_DIR}/${name}_${tag}${i}.json"
      echo "== ${name} (${tag}: ${dir})"
      grep -vE "^\s*$" "${OUT_DIR}/${name}_${tag}${i}.log" | head -40
    done
  }

  # mpi_tests NAME LIMIT RANKS FILTER: the multi-rank tests on the cuda backend.
  mpi_tests() {
    step "$1" "$2" env TESSERA_TEST_BACKEND=cuda mpirun -n "$3" "${MPI_TESTS}" --gtest_filter="$4"
    grep -E "^.{0,12}\[ +(OK|FAILED) +\] StreamOrder|PhaseClock|CommunicatorNode|PASSED|FAILED|tests ran" "${OUT_DIR}/$1.log" \
      | grep -vE "^.{0,12}\[ +OK +\] (PhaseClock|CommunicatorNode)" | head -12
  }

  # memcheck RANKS: compute-sanitizer on every rank, on the chains and the matmul. CUDA API errors
  # are not reported: NCCL's communicator set-up probes kernels with cudaFuncGetAttributes and
  # handles the cudaErrorNoKernelImageForDevice it gets (84 of them at one rank); memory errors are.
  memcheck() {
    step "memcheck_np$1" 40 env TESSERA_TEST_BACKEND=cuda mpirun -n "$1" compute-sanitizer --tool memcheck \
      --report-api-errors no --error-exitcode 9 "${MPI_TESTS}" --gtest_filter='StreamOrder.*:PhaseClock.*:Matmul/1.*'
    grep -E "ERROR SUMMARY|PASSED|FAILED" "${OUT_DIR}/memcheck_np$1.log" | sort | uniq -c | head -6
  }

  # In order of what a short run must still answer: the chains at 1 and 3 ranks, every test at 1
  # rank, the benchmarks, memcheck, every test at 3 ranks, the user-functor tests.
  wants chains && mpi_tests chains_np1 40 1 "${CHAINS}"
  wants chains && mpi_tests chains_np3 40 3 "${CHAINS}"
  wants tests && mpi_tests mpi_tests_np1 60 1 "-${CHAINS}"

  if wants bench; then
    # Per size: time min/avg/max over ranks, then each phase's time (local, communication, fix-up, host).
    bench dist_np1 40 1 tessera_bench_distributed --backend cuda --algo reduce,scan,filter,matmul --min 64K --max 64M \
      -f 32 --matmul-min 1024 --matmul-max 8192 -n 20 -w 3
    bench dist_np3 40 3 tessera_bench_distributed --backend cuda --algo reduce,scan,filter,matmul --min 64K --max 16M \
      -f 16 --matmul-min 1024 --matmul-max 4096 -n 10 -w 2
  fi

  if wants sort; then
    # The commands of docs/PERFORMANCE.md's H100 sort rows (int64 left out at 1 rank, for time).
    bench sort_np1 45 1 tessera_bench_sort_distributed --backend cuda --types int32,float --min 64M --max 256M -f 4 -n 5 -w 2
    bench sort_np3 40 3 tessera_bench_sort_distributed --backend cuda --types int32,double --min 16M --max 16M -n 3 -w 1
  fi

  wants sanitize && memcheck 1
  wants tests && mpi_tests mpi_tests_np3 75 3 "-${CHAINS}"
  wants sanitize && memcheck 3

  if wants generic; then
    # User functors compiled by nvcc (transform, scan and filter with user ops, ...) at 3 ranks.
    step generic_np3 40 env TESSERA_TEST_BACKEND=cuda mpirun -n 3 "${BUILD_DIR}/tests/generic/tessera_generic_tests"
    grep -E "PASSED|FAILED|tests ran" "${OUT_DIR}/generic_np3.log" | head -5
  fi

  log "done, status ${STATUS}"
  exit "${STATUS}"
}

# ==== queue
# The runtime's GPU run (queues, memory, copies, scratch and the backend dispatch): the kernels' GPU
# tests against the CPU backend (without the 2^31-element cases, and the 2^28 one for float only),
# compute-sanitizer memcheck at small sizes, the multi-rank tests on the cuda backend (1 and 3 ranks
# sharing the GPU), and the reduce, scan and exact-sum benchmark against CUB in the same run (at
# 2^20 elements, where the host's work per call shows, and at 2^28). A summary goes to stdout; full
# logs to ${OUT:-out}/queue/.
#
#   bash bench/gpu/run.sh queue <build-dir>
#   QUEUE_STEPS="tests bench" bash bench/gpu/run.sh queue <build-dir>     (a subset, in this order)
run_queue() {
  set -uo pipefail

  BUILD_DIR="$(cd "${1:?usage: bash bench/gpu/run.sh queue <build-dir>}" && pwd)"
  DEFAULT_STEPS="tests sanitize mpi bench"
  gpu_run_init queue

  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
  GPU_TESTS="${BUILD_DIR}/tests/gpu/tessera_gpu_tests"

  if wants tests; then
    # The 2^28-element case for float only (about 13 s of the 58 s the four types take on an H100).
    step gpu_tests 120 env OMP_NUM_THREADS=16 "${GPU_TESTS}" \
      --gtest_filter='-*Huge*:KernelsGpuLarge/0.*:KernelsGpuLarge/1.*:KernelsGpuLarge/3.*'
    step gpu_stencil_tests 25 env OMP_NUM_THREADS=16 "${BUILD_DIR}/tests/gpu/tessera_gpu_stencil_tests"
  fi

  if wants sanitize; then
    step memcheck 40 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool memcheck \
      --error-exitcode 9 "${GPU_TESTS}" --gtest_filter='MemoryGpu.*:StreamWorkspaceGpu.*:ExactSumGpu/*:KernelsGpu/*'
  fi

  if wants mpi; then
    for np in 1 3; do
      step "mpi_tests_cuda_np${np}" 45 env TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=1 \
        mpirun -n "${np}" --bind-to none "${BUILD_DIR}/tests/mpi/tessera_mpi_tests" --gtest_color=no
    done
  fi

  if wants bench; then
    step bench_kernels 40 "${BUILD_DIR}/bench/kernels/tessera_bench_kernels" --ops reduce,scan,exact \
      --sizes 1048576,268435456 --reps 20 --warmup 3 --json "${OUT_DIR}/bench_kernels.json"
    grep -vE '^\s*$' "${OUT_DIR}/bench_kernels.log" | head -80
  fi

  log "done: $([[ ${STATUS} -eq 0 ]] && echo 'all steps ok' || echo 'some step FAILED or was skipped')"
  exit ${STATUS}
}

# ==== sort
# The sort's GPU run: the radix sort's GPU tests against the CPU backend, compute-sanitizer
# (memcheck, racecheck) at small sizes, the benchmark against cub::DeviceRadixSort with a profile
# of both sorts' kernels (ncu), the distributed sort's tests on the cuda backend (1 and 3 ranks
# sharing the GPU), the sort app, and the distributed sort's benchmark per step. A summary goes to
# stdout; full logs to ${OUT:-out}/sort/.
#
#   bash bench/gpu/run.sh sort <build-dir>
#   SORT_STEPS="tests bench" bash bench/gpu/run.sh sort <build-dir>     (a subset, in this order)
run_sort() {
  set -uo pipefail

  BUILD_DIR="$(cd "${1:?usage: bash bench/gpu/run.sh sort <build-dir>}" && pwd)"
  DEFAULT_STEPS="tests sanitize bench study profile mpi distributed"
  gpu_run_init sort

  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
  TESTS="${BUILD_DIR}/tests/gpu/tessera_gpu_sort_tests"
  BENCH="${BUILD_DIR}/bench/kernels/tessera_bench_sort"

  if wants tests; then
    step gpu_sort_tests 200 env OMP_NUM_THREADS=16 "${TESTS}" --gtest_filter="${SORT_TEST_FILTER:--*Huge*}"
    grep -E "PASSED|FAILED|SKIPPED|OK .*(Large|Huge)|tests ran" "${OUT_DIR}/gpu_sort_tests.log" || true
  fi

  if wants sanitize; then
    step memcheck 40 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool memcheck --error-exitcode 9 \
      "${TESTS}" --gtest_filter='-*Large*:*Huge*'
    tail -2 "${OUT_DIR}/memcheck.log"
    step racecheck 120 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool racecheck --error-exitcode 9 \
      "${TESTS}" --gtest_filter='SortGpu/4.Keys*:SortGpuValues.*'
    tail -2 "${OUT_DIR}/racecheck.log"
  fi

  if wants bench; then
    step bench_sort 60 "${BENCH}" --sizes 67108864,268435456 --json "${OUT_DIR}/bench_sort.json"
    cat "${OUT_DIR}/bench_sort.log"
  fi

  if wants study; then
    step bench_sort_study 45 "${BENCH}" --study --sizes 268435456 --reps 10 --warmup 2
    grep -E "^study" "${OUT_DIR}/bench_sort_study.log"
  fi

  if wants profile; then
    # Our kernels and CUB's for one sort of 2^26 uint32 keys and of 2^26 (uint32, uint32) pairs: the
    # first five matching launches of each sort are ours (histogram, 4 places), the next five CUB's.
    metrics=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active
    metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__occupancy_limit_registers
    metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__cycles_active.avg
    for stall in barrier long_scoreboard short_scoreboard mio_throttle lg_throttle membar wait math_pipe_throttle no_instruction; do
      metrics+=,smsp__average_warps_issue_stalled_${stall}_per_issue_active.ratio
    done
    for row in keys-uint32 keys-int32; do
      step "ncu_${row}" 60 ncu --csv --kernel-name regex:'onesweep|Onesweep|radix_histogram|HistogramKernel' --launch-count 10 \
        --metrics "${metrics}" "${BENCH}" --only "${row}" --sizes 67108864 --reps 1 --warmup 0
      python3 - "${OUT_DIR}/ncu_${row}.log" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1], errors="replace")) if len(r) > 10]
if not rows:
    print("no ncu rows"); sys.exit()
head = rows[0]
k_id, k_name, k_metric, k_value = head.index("ID"), head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
table = {}
for r in rows[1:]:
    name = r[k_name]
    short = ("cub " if "cub" in name.lower() else "ours ") + ("onesweep" if "nesweep" in name else "histogram")
    table.setdefault((int(r[k_id]), short), {})[r[k_metric].replace("smsp__average_warps_issue_stalled_", "stall_").replace("_per_issue_active.ratio", "")] = r[k_value]
metrics = sorted({m for v in table.values() for m in v})
print("id kernel " + " ".join(metrics))
for (i, short), v in sorted(table.items()):
    print(f"{i} {short.replace(' ', '_')} " + " ".join(v.get(m, "-").replace(",", "") for m in metrics))
PY
    done
  fi

  if wants mpi; then
    for np in 1 3; do
      step "mpi_sort_np${np}" 60 env TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=4 mpirun -n "${np}" \
        "${BUILD_DIR}/tests/mpi/tessera_mpi_tests" --gtest_filter='DistSort*'
      grep -E "PASSED|FAILED|tests ran|tessera tests" "${OUT_DIR}/mpi_sort_np${np}.log" | head -5
    done
  fi

  if wants app; then
    APP="${BUILD_DIR}/bin/tessera-sort"
    for np in 1 3; do
      for dist in uniform all-equal; do
        step "app_np${np}_${dist}" 60 mpirun -n "${np}" "${APP}" --backend cuda --n 50000017 --dtype float32 \
          --distribution "${dist}" --values --verify --repeat 3 --warmup 1
        grep -E "ran on|sort steps|result|verified|time  " "${OUT_DIR}/app_np${np}_${dist}.log"
      done
    done
  fi

  if wants distributed; then
    DIST="${BUILD_DIR}/bench/distributed/tessera_bench_sort_distributed"
    step dist_np1 60 mpirun -n 1 "${DIST}" --backend cuda --types int32,float,int64 --min 64M --max 256M -f 4 -n 5 -w 2 \
      --json "${OUT_DIR}/dist_np1.json"
    cat "${OUT_DIR}/dist_np1.log"
    step dist_np3 60 mpirun -n 3 "${DIST}" --backend cuda --types int32,double --min 16M --max 16M -n 3 -w 1 \
      --json "${OUT_DIR}/dist_np3.json"
    cat "${OUT_DIR}/dist_np3.log"
  fi

  log "done, status ${STATUS}"
  exit "${STATUS}"
}

# ==== stencil
# The stencils on one GPU: the GPU tests against the CPU backend (full sizes, then compute-sanitizer
# memcheck and racecheck at small sizes), the local kernels against the copy rate and plain kernels,
# the multi-rank stencil tests on the cuda backend (1 and 3 ranks sharing the GPU), and one Jacobi
# iteration in its parts (sweep, exchange, back to back, overlapped) at 1 and 2 ranks, and the
# overlapped step's device timeline on one GPU.
#
#   bash bench/gpu/run.sh stencil BUILD_DIR        (from the source tree's root; BUILD_DIR has the
#                                               targets of the stencil line of bench/gpu/targets.txt built)
# A summary goes to stdout; logs go to ${OUT:-out}/stencil/.
run_stencil() {
  set -uo pipefail

  BUILD="${1:?usage: bash bench/gpu/run.sh stencil BUILD_DIR}"
  BUILD="$(cd "${BUILD}" && pwd)"
  gpu_run_init stencil

  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

  TESTS="${BUILD}/tests/gpu/tessera_gpu_stencil_tests"
  step gpu_tests 60 "${TESTS}"
  grep -E "^\[  (PASSED|FAILED) |Failure|tests ran" -A3 "${OUT_DIR}/gpu_tests.log" | head -30

  SAN="$(command -v compute-sanitizer || true)"
  if [[ -n "${SAN}" ]]; then
    for tool in memcheck racecheck; do
      TESSERA_GPU_TEST_SMALL=1 step "sanitize_${tool}" 60 "${SAN}" --tool "${tool}" --error-exitcode 9 "${TESTS}"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Hazard|Invalid" "${OUT_DIR}/sanitize_${tool}.log" | head -8
    done
  else
    log "compute-sanitizer not found"
  fi

  step bench_stencil 70 "${BUILD}/bench/kernels/tessera_bench_stencil" --reps 10 --json "${OUT_DIR}/bench_stencil.json"
  cat "${OUT_DIR}/bench_stencil.log"

  # What limits the kernels: Nsight Compute on one launch each of the library's 5-point sweep (the ring
  # of rows on sm_90), the plain 5-point sweep and the radius-8 convolution (8192^2 cells; the full
  # reports land in OUT).
  NCU="$(command -v ncu || true)"
  if [[ -n "${NCU}" ]]; then
    for spec in "stencil_2d_bulk_kernel:0:sweep5" "plain_sweep_kernel:0:sweep5" "convolve_1d_lanes_kernel:6:convolve"; do
      IFS=: read -r kernel skip cases <<<"${spec}"
      step "ncu_${kernel}" 40 "${NCU}" -k "regex:${kernel}" --launch-skip "${skip}" --launch-count 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
        --section LaunchStats --section SchedulerStats \
        "${BUILD}/bench/kernels/tessera_bench_stencil" --n 8192 --reps 1 --warmup 0 --only "${cases}"
      echo "-- ncu ${kernel}"
      grep -iE "DRAM Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Registers Per|Duration|Warp Cycles Per Issued|stall|Mem Busy|Max Bandwidth|Theoretical Occupancy|Issued Warp|No Eligible" \
        "${OUT_DIR}/ncu_${kernel}.log" | cut -c1-220 | head -30
    done
  fi

  FILTER='Field2D.*:JacobiTest*:Jacobi.*:ConvolveTest*:Convolve.*'
  for np in 1 3; do
    TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=2 step "mpi_cuda_np${np}" 60 \
      mpirun -n "${np}" "${BUILD}/tests/mpi/tessera_mpi_tests" --gtest_filter="${FILTER}"
    grep -E "tessera tests:|PASSED|FAILED|Failure|differs|rank [0-9]" "${OUT_DIR}/mpi_cuda_np${np}.log" | head -12
  done

  # The app end to end on the cuda backend (1 rank: numpy comparisons, kill and restart).
  TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=2 step app_cuda_np1 90 python3 tests/apps/test_stencil.py \
    --bin "${BUILD}/bin" --ranks 1 --mpiexec mpirun --mpiexec-flags=--oversubscribe --workdir "${OUT_DIR}/app_np1"
  grep -E "checks|FAIL" "${OUT_DIR}/app_cuda_np1.log" | head -12

  # One Jacobi iteration in its parts. With one GPU the 2 ranks share it (time-sliced contexts, the
  # staged path): that measures the path, not the overlap; with 2 GPUs each rank has its own.
  GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
  STEP="${BUILD}/bench/distributed/tessera_bench_stencil_step"
  step step_np1 40 mpirun -n 1 "${STEP}" --backend cuda --sizes 1024,4096,8192,16384 --json "${OUT_DIR}/step_np1.json"
  cat "${OUT_DIR}/step_np1.log"
  step step_np1_9pt 40 mpirun -n 1 "${STEP}" --backend cuda --stencil 9 --sizes 4096,16384 --json "${OUT_DIR}/step_np1_9pt.json"
  cat "${OUT_DIR}/step_np1_9pt.log"
  for grid in 2x1 1x2; do
    step "step_np2_${grid}" 40 mpirun -n 2 "${STEP}" --backend cuda --grid "${grid}" --sizes 1024,8192 --iters 10 \
      --json "${OUT_DIR}/step_np2_${grid}.json"
    echo "(${GPUS} GPU(s) for 2 ranks)"
    cat "${OUT_DIR}/step_np2_${grid}.log"
  done

  # Where an overlapped step's time goes on one GPU: events on the parts (interior; frame, pack, NCCL
  # to the same rank, unpack) for each order of queuing them, next to the whole sweep alone.
  OVERLAP="${BUILD}/bench/kernels/tessera_bench_stencil_overlap"
  if [[ -x "${OVERLAP}" ]]; then
    step overlap 40 "${OVERLAP}"
    cat "${OUT_DIR}/overlap.log"
  fi

  log "done, status ${STATUS}"
  exit ${STATUS}
}

# ==== sweep
# The 5- and 9-point sweeps on one GPU: the GPU stencil tests against the CPU backend, and
# compute-sanitizer memcheck and racecheck of them and of the library's sweeps in the benchmark at
# small sizes (the hazard lines printed); the library's sweeps against the plain kernel and the copy
# rate (tessera_bench_stencil, 16384^2 floats, 16384 x 8192 doubles, every result compared bit for
# bit with the plain kernel's; `--only variants` adds the column march and the bulk ring's other
# tunings); the multi-rank Jacobi tests on the cuda backend (1 and 3 ranks sharing the GPU).
#
#   bash bench/gpu/run.sh sweep BUILD_DIR      (from the source tree's root; the targets of
#                                           the sweep line of bench/gpu/targets.txt built in BUILD_DIR)
# A summary goes to stdout; logs and the benchmark's JSON to ${OUT:-out}/sweep/.
run_sweep() {
  set -uo pipefail

  BUILD="$(cd "${1:?usage: bash bench/gpu/run.sh sweep BUILD_DIR}" && pwd)"
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
}

# ==== transport
# DeviceComm's transports on one GPU, in about three minutes: the multi-rank tests on the cuda
# backend at 1 rank (the automatic path: NCCL where the build has it; then forced through the staged
# path) and at 3 ranks sharing the GPU (staged through pooled pinned host memory), the override
# refused where it cannot be taken (NCCL with ranks sharing the GPU), and the distributed benchmarks
# whose rows move device data between 3 ranks: the transpose's all-to-all, the sort's exchange, the
# Jacobi step's halo exchange and SUMMA's panel broadcasts. Builds nothing.
#
#   bash bench/gpu/run.sh transport BUILD_DIR
run_transport() {
  set -uo pipefail
  BUILD="${1:?usage: bash bench/gpu/run.sh transport BUILD_DIR}"
  export PATH="${PATH}:/usr/local/cuda/bin"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
  export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
  LOGS="${OUT:-/tmp}/transport_logs"
  mkdir -p "${LOGS}"
  MPI_TESTS="${BUILD}/tests/mpi/tessera_mpi_tests"
  DIST="${BUILD}/bench/distributed"
  status=0
  summary=()
  step() { echo; echo "== $* ($(date +%H:%M:%S))"; }
  # run NAME SECONDS COMMAND...: the command's output to LOGS/NAME.log; one summary line.
  run() {
    local name="$1" seconds="$2"
    shift 2
    local start=${SECONDS}
    timeout "${seconds}" "$@" >"${LOGS}/${name}.log" 2>&1
    local rc=$?
    [[ ${rc} -ne 0 ]] && status=1
    summary+=("$(printf '%-34s rc %3d  %4d s' "${name}" "${rc}" $((SECONDS - start)))")
    return ${rc}
  }
  tests_summary() {  # the suite's counts and any failure, from a test log
    grep -E "^tessera tests|^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \]|Failure|failed on" "$1" | sort | uniq | head -20
  }

  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true

  step "multi-rank tests, cuda backend, 1 rank, automatic path"
  run mpi_np1_auto 75 env TESSERA_TEST_BACKEND=cuda mpirun -n 1 "${MPI_TESTS}" --gtest_color=no
  tests_summary "${LOGS}/mpi_np1_auto.log"

  step "multi-rank tests, cuda backend, 1 rank, TESSERA_DEVICE_COMM=staged (the DeviceComm-using suites)"
  run mpi_np1_staged 45 env TESSERA_TEST_BACKEND=cuda TESSERA_DEVICE_COMM=staged mpirun -n 1 "${MPI_TESTS}" --gtest_color=no \
    --gtest_filter='DeviceComm*:Rebalance*:*Redistribute*:*Transpose*:*Sort*:*Histogram*:*Bincount*:Matmul*:Field2D*:Jacobi*'
  tests_summary "${LOGS}/mpi_np1_staged.log"

  step "multi-rank tests, cuda backend, 3 ranks sharing the GPU (staged)"
  run mpi_np3_auto 120 env TESSERA_TEST_BACKEND=cuda mpirun -n 3 "${MPI_TESTS}" --gtest_color=no
  tests_summary "${LOGS}/mpi_np3_auto.log"

  step "TESSERA_DEVICE_COMM=nccl with 3 ranks sharing the GPU: refused in one line, non-zero exit (2) expected"
  TESSERA_DEVICE_COMM=nccl timeout 20 mpirun -n 3 "${DIST}/tessera_bench_transpose_distributed" --backend cuda --m 64 --n 64 \
    -n 1 -w 0 >"${LOGS}/nccl_refused_np3.log" 2>&1
  rc=$?
  echo "exit ${rc}"
  grep -m3 "TESSERA_DEVICE_COMM" "${LOGS}/nccl_refused_np3.log" || status=1
  [[ ${rc} -ne 0 && ${rc} -ne 124 ]] || status=1
  summary+=("$(printf '%-34s rc %3d  (2 expected)' nccl_refused_np3 "${rc}")")

  step "distributed transpose, 3 ranks sharing the GPU, 8192 x 8192 float (staged all-to-all)"
  run transpose_np3 40 mpirun -n 3 "${DIST}/tessera_bench_transpose_distributed" --backend cuda --m 8192 --n 8192 -n 3 -w 1
  cat "${LOGS}/transpose_np3.log" | head -30

  step "distributed sort, 3 ranks sharing the GPU, 2^24 keys per rank (staged exchange)"
  run sort_np3 60 mpirun -n 3 "${DIST}/tessera_bench_sort_distributed" --backend cuda --types int32,double --min 16M --max 16M -n 3 -w 1
  cat "${LOGS}/sort_np3.log" | head -30

  step "Jacobi step, 3 ranks sharing the GPU (staged halo exchange)"
  run stencil_step_np3 40 mpirun -n 3 "${DIST}/tessera_bench_stencil_step" --backend cuda --sizes 1024,8192 --iters 10
  cat "${LOGS}/stencil_step_np3.log" | head -30

  step "SUMMA matmul, 3 ranks sharing the GPU (staged panel broadcasts)"
  run matmul_np3 40 mpirun -n 3 "${DIST}/tessera_bench_distributed" --backend cuda --algo matmul --matmul-min 2048 \
    --matmul-max 8192 -f 2 -n 5 -w 1
  cat "${LOGS}/matmul_np3.log" | head -30

  step "summary"
  printf '%s\n' "${summary[@]}"
  echo "status ${status}"
  exit "${status}"
}

# ==== transpose
# The transpose on one GPU, in about 110 s: its GPU tests (with the paths of rows off 16-byte
# boundaries, skewed tiles and scalar tiles, each forced through the tuning), the kernel
# benchmark against cuBLAS geam and the copy rate (--variants: the tuning's alternatives side by
# side), the multi-rank tests of the distributed transpose on the cuda backend
# (three ranks sharing the GPU), the distributed benchmark per phase (one rank, three ranks), and
# compute-sanitizer memcheck and racecheck at small sizes.
#
#   bash bench/gpu/run.sh transpose BUILD_DIR
run_transpose() {
  set -uo pipefail
  BUILD="${1:?usage: bash bench/gpu/run.sh transpose BUILD_DIR}"
  export PATH="${PATH}:/usr/local/cuda/bin"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
  export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_btl_vader_single_copy_mechanism=none NCCL_NVLS_ENABLE=0
  status=0
  step() { echo; echo "== $* ($(date +%H:%M:%S))"; }
  LOGS="${OUT:-/tmp}/transpose_logs"
  mkdir -p "${LOGS}"
  GPU_TESTS="${BUILD}/tests/gpu/tessera_gpu_tests"
  DIST="${BUILD}/bench/distributed/tessera_bench_transpose_distributed"

  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader || true

  step "GPU tests of the transpose (element sizes 1, 2, 4, 8, 16 and both unaligned-row paths at full sizes; 3, 12, 24 at small sizes)"
  { timeout 60 "${GPU_TESTS}" --gtest_color=no \
      --gtest_filter='TransposeGpu.PowerOfTwo*:TransposeGpu.SubBlock*:TransposeGpu.*UnalignedRows*' &&
    TESSERA_GPU_TEST_SMALL=1 timeout 20 "${GPU_TESTS}" --gtest_color=no --gtest_filter='TransposeGpu.OtherElementSizes*'; } \
    >"${LOGS}/gpu_tests.log" 2>&1 || status=1
  grep -E "^\[       OK |^\[  FAILED  \]|^\[  PASSED  \]" "${LOGS}/gpu_tests.log" | head -20
  grep -A4 "Failure" "${LOGS}/gpu_tests.log" | head -30

  step "kernel benchmark against cuBLAS geam (--variants: the tuning's alternatives)"
  timeout 90 "${BUILD}/bench/kernels/tessera_bench_transpose" --reps 10 --variants || status=1

  step "multi-rank tests of transpose / redistribute on the cuda backend, 3 ranks sharing the GPU"
  TESSERA_TEST_BACKEND=cuda timeout 30 mpirun -n 3 "${BUILD}/tests/mpi/tessera_mpi_tests" --gtest_color=no \
    --gtest_filter='*Redistribute*' >"${LOGS}/mpi_3.log" 2>&1 || status=1
  grep -E "^tessera tests|^\[  PASSED  \]|^\[  FAILED  \]|Failure" "${LOGS}/mpi_3.log" | sort | uniq | head -20

  step "distributed transpose per phase: 1 rank, 16384 x 16384 float; 3 ranks sharing the GPU, 8192 x 8192 float"
  timeout 20 mpirun -n 1 "${DIST}" --backend cuda --m 16384 --n 16384 --pairs rows:rows -n 5 -w 1 || status=1
  timeout 30 mpirun -n 3 "${DIST}" --backend cuda --m 8192 --n 8192 -n 3 -w 1 || status=1

  for tool in memcheck racecheck; do
    filter='TransposeGpu.*'
    [[ "${tool}" == racecheck ]] && filter='TransposeGpu.PowerOfTwoElementsMatchCpu:TransposeGpu.SkewedTiles*'
    step "compute-sanitizer --tool ${tool} (small sizes, ${filter})"
    TESSERA_GPU_TEST_SMALL=1 timeout 50 compute-sanitizer --tool "${tool}" --error-exitcode 9 \
      "${GPU_TESTS}" --gtest_color=no --gtest_filter="${filter}" >"${LOGS}/${tool}.log" 2>&1 || status=1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  PASSED  \]|^\[  FAILED  \]" "${LOGS}/${tool}.log" | head -6
  done

  step "done, status ${status}"
  exit "${status}"
}

# ==== tuning
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
#   bash bench/gpu/run.sh tuning <build-dir>
#   TUNING_STEPS="bench" bash bench/gpu/run.sh tuning <build-dir>      (a subset, in this order)
run_tuning() {
  set -uo pipefail

  BUILD_DIR="$(cd "${1:?usage: bash bench/gpu/run.sh tuning <build-dir>}" && pwd)"
  DEFAULT_STEPS="bench tests sanitize mpi"
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
}

# ==== verify
# --verify of the apps on the cuda backend at 1e8 to 2^28 elements, on one GPU, in about a minute:
#   - results made slightly wrong by TESSERA_TEST_PERTURB (test-only) must fail (exit 1): a sum 3
#     ulps off (--reproducible), 0 and -sum for a plain sum at 1e8, one scan element off by a
#     relative 1e-6, one filter element dropped, one element of C off by 1% (2048^2) or 1e-4 (64^2);
#   - correct results must pass (exit 0): global_sum and prefix_sum on random data (the generator),
#     constant 0.1 and same-sign data (HDF5 files that numpy writes here, where numpy and h5py
#     import), float32 and float64; filter; matmul per element (tiled and cuBLAS) and by Freivalds;
#     at 3 ranks sharing the GPU, and at 1;
#   - the C++ --verify tests on the cuda backend at 3 ranks.
# One line per case: ok/FAIL, the case, exit status (wanted), seconds, the verdict (with its worst
# ratio to the bound, or the depth and bound of a sum). Usage, from the tree's root:
#   bash bench/gpu/run.sh verify BUILD_DIR
run_verify() {
  set -uo pipefail

  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  BUILD="$(cd "${1:?usage: bash bench/gpu/run.sh verify BUILD_DIR}" && pwd)"
  LIMIT="$(gpu_limit verify)"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export PATH="${PATH}:/usr/local/cuda/bin"
  unset OMP_NUM_THREADS TESSERA_TEST_PERTURB
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera-verify-XXXXXX")"
  trap 'rm -rf "${WORK}"' EXIT
  START=${SECONDS}
  ok=0
  failed=0
  skipped=0

  # run_case LABEL WANT RANKS APP [ARGS...]; TESSERA_TEST_PERTURB from the caller's environment.
  run_case() {
    local label=$1 want=$2 ranks=$3 app=$4
    shift 4
    if ((SECONDS - START > LIMIT - 12)); then
      printf 'SKIP %-56s (time)\n' "${label}"
      skipped=$((skipped + 1))
      return
    fi
    local t0=${SECONDS} rc
    timeout 60 mpirun -n "${ranks}" --bind-to none "${BUILD}/bin/tessera-${app}" --backend cuda --repeat 1 --warmup 0 \
      --verify "$@" >"${WORK}/out" 2>"${WORK}/err"
    rc=$?
    local verdict
    verdict="$(grep -m1 '^  verified' "${WORK}/out" | sed 's/^  verified *//' | cut -c1-250)"
    [[ -n "${verdict}" ]] || verdict="$(grep -v -e '^-' -e 'TESSERA_TEST_PERTURB' "${WORK}/err" | head -3 | tr '\n' ' ' | cut -c1-250)"
    local status=ok
    if [[ "${rc}" == "${want}" ]]; then ok=$((ok + 1)); else status=FAIL; failed=$((failed + 1)); fi
    printf '%-4s %-56s rc %s (want %s) %2ss  %s\n' "${status}" "${label}" "${rc}" "${want}" "$((SECONDS - t0))" "${verdict}"
  }

  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1
  PYTHON=""
  for candidate in python3 /usr/bin/python3 /usr/local/bin/python3; do
    if command -v "${candidate}" >/dev/null 2>&1 && "${candidate}" -c "import numpy, h5py" 2>/dev/null; then
      PYTHON="${candidate}"
      break
    fi
  done
  D="${WORK}/data.h5"
  if [[ -n "${PYTHON}" ]]; then
    "${PYTHON}" - "${D}" <<'EOF'
import sys, numpy as np, h5py
rng = np.random.default_rng(20261124)
with h5py.File(sys.argv[1], "w") as f:
    f["c32"] = np.full(10**8, 0.1, np.float32)
    f["p32"] = rng.random(10**8, dtype=np.float32)
    f["p64"] = rng.random(10**8)
EOF
    echo "== data: constant 0.1 float32, same-sign uniform [0, 1) float32 and float64, 1e8 each ($((SECONDS - START)) s)"
  else
    D=""
    echo "== no Python with numpy and h5py: the constant and same-sign cases are skipped"
  fi
  file_case() {  # run_case for an input file: skipped without one
    if [[ -z "${D}" ]]; then printf 'SKIP %-56s (no data file)\n' "$1"; skipped=$((skipped + 1)); return; fi
    run_case "$@"
  }

  echo "== wrong results (want 1)"
  TESSERA_TEST_PERTURB=ulps:3 run_case "global_sum f32 1e8 --reproducible, 3 ulps off np3" 1 3 global-sum --n 1e8 --reproducible
  TESSERA_TEST_PERTURB=value:0 run_case "global_sum f32 1e8, the sum replaced by 0 np3" 1 3 global-sum --n 1e8
  TESSERA_TEST_PERTURB=negate run_case "global_sum f32 1e8, -sum np3" 1 3 global-sum --n 1e8
  TESSERA_TEST_PERTURB=relative:1e-6 run_case "prefix_sum f32 1e8, one element x(1+1e-6) np3" 1 3 prefix-sum --n 1e8
  TESSERA_TEST_PERTURB=drop run_case "filter f32 1e8, one kept element dropped np3" 1 3 filter --n 1e8 --predicate gt:0.5 --rebalance
  TESSERA_TEST_PERTURB=relative:1e-2 run_case "matmul f32 2048^2, one element x1.01 np3" 1 3 matmul --size 2048
  TESSERA_TEST_PERTURB=relative:1e-4 run_case "matmul f32 64^2, one element x(1+1e-4) np3" 1 3 matmul --size 64

  echo "== correct results (want 0)"
  run_case "global_sum f32 2^28 random np3" 0 3 global-sum --n 2^28
  file_case "global_sum f32 1e8 constant 0.1 np3" 0 3 global-sum --input "${D}:/c32"
  file_case "global_sum f32 1e8 same-sign np1" 0 1 global-sum --input "${D}:/p32"
  file_case "global_sum f64 1e8 same-sign np3" 0 3 global-sum --input "${D}:/p64"
  file_case "global_sum f64 1e8 same-sign --reproducible np3" 0 3 global-sum --input "${D}:/p64" --reproducible
  run_case "prefix_sum f32 2^28 random np3" 0 3 prefix-sum --n 2^28
  file_case "prefix_sum f32 1e8 constant 0.1 np3" 0 3 prefix-sum --input "${D}:/c32"
  file_case "prefix_sum f32 1e8 constant 0.1 --exclusive np3" 0 3 prefix-sum --input "${D}:/c32" --exclusive
  file_case "prefix_sum f32 1e8 same-sign np3" 0 3 prefix-sum --input "${D}:/p32"
  file_case "prefix_sum f64 1e8 same-sign np3" 0 3 prefix-sum --input "${D}:/p64"
  run_case "matmul f32 2048^2 np1" 0 1 matmul --size 2048
  run_case "matmul f32 2048^2 --local cublas np3" 0 3 matmul --size 2048 --local cublas
  run_case "matmul f32 4096^2 (Freivalds) np3" 0 3 matmul --size 4096

  echo "== C++ --verify tests on the cuda backend"
  if ((SECONDS - START > LIMIT - 15)); then
    echo "SKIP app_verify np3 (time)"
    skipped=$((skipped + 1))
  else
    TESSERA_TEST_BACKEND=cuda timeout 60 mpirun -n 3 --bind-to none "${BUILD}/tests/apps/tessera_app_verify_tests" --gtest_color=no \
      >"${WORK}/gtest" 2>&1
    rc=$?
    echo "app_verify np3: rc ${rc}; $(grep -E '^\[  (PASSED|FAILED) ' "${WORK}/gtest" | head -3 | tr '\n' ' ')"
    grep -E 'Failure|FAILED  \]' "${WORK}/gtest" | head -10
    if [[ ${rc} == 0 ]]; then ok=$((ok + 1)); else failed=$((failed + 1)); fi
  fi

  echo "== verify.sh: ${ok} ok, ${failed} FAILED, ${skipped} skipped, $((SECONDS - START)) s"
  [[ ${failed} == 0 ]]
}

# ==== the driver
gpu_main() {
  local command="${1:-}"
  case "${command}" in
    list)
      grep -v '^#' "${GPU_TARGETS_FILE}"
      ;;
    targets)
      gpu_targets_line "${2:?usage: bash bench/gpu/run.sh targets NAME}" >/dev/null || { echo "run.sh: no run '${2}' in targets.txt" >&2; exit 2; }
      gpu_targets "$2"
      ;;
    build)
      local name="${2:?usage: bash bench/gpu/run.sh build NAME BUILD_DIR}" build="${3:?usage: bash bench/gpu/run.sh build NAME BUILD_DIR}"
      gpu_targets_line "${name}" >/dev/null || { echo "run.sh: no run '${name}' in targets.txt" >&2; exit 2; }
      local root generator=()
      root="$(cd "$(dirname "${GPU_TARGETS_FILE}")/../.." && pwd)"
      command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
      # shellcheck disable=SC2046
      cmake -S "${root}" -B "${build}" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" ${CMAKE_ARGS:-} &&
        cmake --build "${build}" -j "${JOBS:-$(nproc)}" --target $(gpu_targets "${name}")
      ;;
    "" | -h | --help)
      sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      [[ -n "${command}" ]] || exit 2
      ;;
    *)
      gpu_targets_line "${command}" >/dev/null || { echo "run.sh: no run '${command}' (bash bench/gpu/run.sh list)" >&2; exit 2; }
      shift
      ( "run_${command}" "$@" )
      ;;
  esac
}

gpu_main "$@"
