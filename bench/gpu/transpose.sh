#!/usr/bin/env bash
# The transpose on one GPU, in about 110 s: its GPU tests (with both paths of rows off 16-byte
# boundaries, shifted vector tiles and scalar tiles, each forced through the tuning), the kernel
# benchmark against cuBLAS geam and the copy rate (--variants: both of those paths side by side on
# the unaligned shapes), the multi-rank tests of the distributed transpose on the cuda backend
# (three ranks sharing the GPU), the distributed benchmark per phase (one rank, three ranks), and
# compute-sanitizer memcheck and racecheck at small sizes.
#
#   bash bench/gpu/transpose.sh BUILD_DIR
set -uo pipefail
BUILD="${1:?usage: bench/gpu/transpose.sh BUILD_DIR}"
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

step "kernel benchmark against cuBLAS geam (--variants: scalar and shifted tiles on the unaligned shapes)"
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
  [[ "${tool}" == racecheck ]] && filter='TransposeGpu.PowerOfTwoElementsMatchCpu:TransposeGpu.ShiftedTiles*'
  step "compute-sanitizer --tool ${tool} (small sizes, ${filter})"
  TESSERA_GPU_TEST_SMALL=1 timeout 50 compute-sanitizer --tool "${tool}" --error-exitcode 9 \
    "${GPU_TESTS}" --gtest_color=no --gtest_filter="${filter}" >"${LOGS}/${tool}.log" 2>&1 || status=1
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  PASSED  \]|^\[  FAILED  \]" "${LOGS}/${tool}.log" | head -6
done

step "done, status ${status}"
exit "${status}"
