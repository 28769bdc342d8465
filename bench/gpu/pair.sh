#!/usr/bin/env bash
# The distributed sort and the Jacobi step on two GPUs of one host, one rank per GPU (device path
# NCCL): the multi-rank sort and stencil tests on the cuda backend (the stencils also with the halo's
# device-comm and peer-copy paths); one Jacobi iteration in its parts (sweep, split sweep, exchange,
# back to back, overlapped; 2x1 and 1x2 grids, 5- and 9-point; the overlapped step on its peer-store
# path, then on the halo's paths, NCCL and peer-copy); and the
# distributed sort per step, its exchange against the same all-to-all alone. On one GPU the two ranks
# share it (the sort's exchange staged, the halo peer-copy) and the numbers measure the path, not
# the overlap.
#
#   bash bench/gpu/pair.sh BUILD_DIR        (from the source tree's root; BUILD_DIR has the targets
#                                            of bench/gpu/pair.targets built)
# A summary goes to stdout; logs and JSON to ${OUT:-out}/pair/.
set -uo pipefail

BUILD="$(cd "${1:?usage: bash bench/gpu/pair.sh BUILD_DIR}" && pwd)"
DEFAULT_STEPS="tests step peer sort"
# shellcheck source=bench/gpu/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
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
  # The same step with the frame's cells moved by the halo's paths: NCCL (TESSERA_HALO=device-comm)
  # and CUDA IPC with the copy engines (peer-copy).
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
