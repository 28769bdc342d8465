#!/usr/bin/env bash
# The stencils on one GPU: the GPU tests against the CPU backend (full sizes, then compute-sanitizer
# memcheck and racecheck at small sizes), the local kernels against the copy rate and plain kernels,
# the multi-rank stencil tests on the cuda backend (1 and 3 ranks sharing the GPU), and one Jacobi
# iteration in its parts (sweep, exchange, back to back, overlapped) at 1 and 2 ranks, and the
# overlapped step's device timeline on one GPU.
#
#   bash bench/gpu/stencil.sh BUILD_DIR        (from the source tree's root; BUILD_DIR has the
#                                               targets of bench/gpu/stencil.targets built)
# A summary goes to stdout; logs go to ${OUT:-out}/stencil/.
set -uo pipefail

BUILD="${1:?usage: bash bench/gpu/stencil.sh BUILD_DIR}"
BUILD="$(cd "${BUILD}" && pwd)"
# shellcheck source=bench/gpu/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
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
