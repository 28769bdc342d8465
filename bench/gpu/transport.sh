#!/usr/bin/env bash
# DeviceComm's transports on one GPU, in about three minutes: the multi-rank tests on the cuda
# backend at 1 rank (the automatic path: NCCL where the build has it; then forced through the staged
# path) and at 3 ranks sharing the GPU (staged through pooled pinned host memory), the override
# refused where it cannot be taken (NCCL with ranks sharing the GPU), and the distributed benchmarks
# whose rows move device data between 3 ranks: the transpose's all-to-all, the sort's exchange, the
# Jacobi step's halo exchange and SUMMA's panel broadcasts. Builds nothing.
#
#   bash bench/gpu/transport.sh BUILD_DIR
set -uo pipefail
BUILD="${1:?usage: bench/gpu/transport.sh BUILD_DIR}"
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
