#!/usr/bin/env bash
# Stream-ordered distributed calls on one GPU: the multi-rank tests on the cuda backend (1 rank, and
# 3 ranks sharing the GPU: device path staged), among them the chains of calls queued back to back
# with no host synchronisation between them (StreamOrder.*) and PhaseClock's bookkeeping;
# compute-sanitizer memcheck on those chains at 1 and 3 ranks; then the distributed benchmarks
# with their phase times (scan, filter, reduce and SUMMA from tessera_bench_distributed, the sort
# from tessera_bench_sort_distributed) at 1 and 3 ranks. A summary goes to stdout; full logs and
# JSON to ${OUT:-out}/phases/.
#
#   bash bench/gpu/phases.sh <build-dir> [<baseline-build-dir>]
#
# With a baseline build (another commit's tessera_bench_distributed and
# tessera_bench_sort_distributed), each benchmark runs from both builds, interleaved (new, old,
# new, old), so that the two are compared in one run on one machine. tessera_bench_distributed's
# time is that of calls asking for no phase times in this tree; a baseline from before that measured
# calls asking for them, which then synchronised at every phase boundary whether timed or not.
#   PHASES_STEPS="chains bench" bash bench/gpu/phases.sh <build-dir>    (a subset of: chains tests bench
#                                                                        sort sanitize generic)
set -uo pipefail

BUILD_DIR="$(cd "${1:?usage: bench/gpu/phases.sh <build-dir> [<baseline-build-dir>]}" && pwd)"
BASELINE_DIR=""
[[ -n "${2:-}" ]] && BASELINE_DIR="$(cd "$2" && pwd)"
DEFAULT_STEPS="chains tests bench sort sanitize generic"
# shellcheck source=bench/gpu/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
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
