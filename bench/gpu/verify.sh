#!/usr/bin/env bash
# --verify of the apps on the cuda backend at large sizes, on one GPU:
#   - correct results must pass (exit 0): global_sum, prefix_sum, filter, matmul on random data
#     (the generator), constant 0.1 and same-sign data (HDF5 files numpy writes here), float32 at
#     2^28 and float64 at 1e8 elements, at 1 and 3 ranks sharing the GPU;
#   - results made slightly wrong by TESSERA_TEST_PERTURB (test-only) must fail (exit 1): a sum 3
#     ulps off (--reproducible), 0 and -sum for a plain sum at 1e8, one scan element off by a
#     relative 1e-6, one input element left out of the scan, one filter element dropped, one
#     element of C off by 1% (512^2, 2048^2) or 1e-4 (64^2);
#   - the C++ --verify tests on the cuda backend (1 and 3 ranks), and the two-pass scan's GPU tests
#     with compute-sanitizer memcheck at small sizes (its partial-segment path changed).
# One line per case: ok/FAIL, the case, exit status (wanted), seconds, the verdict (its worst ratio
# to the bound). Usage, from the tree's root: bash bench/gpu/verify.sh BUILD_DIR
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${1:?usage: bash bench/gpu/verify.sh BUILD_DIR}" && pwd)"
LIMIT="$(cat "${ROOT}/bench/gpu/verify.limit")"
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
  if ((SECONDS - START > LIMIT - 30)); then
    printf 'SKIP %-62s (time)\n' "${label}"
    skipped=$((skipped + 1))
    return
  fi
  local t0=${SECONDS} rc
  timeout 100 mpirun -n "${ranks}" --bind-to none "${BUILD}/bin/tessera-${app}" --backend cuda --repeat 1 --warmup 0 \
    --verify "$@" >"${WORK}/out" 2>"${WORK}/err"
  rc=$?
  local verdict
  verdict="$(grep -m1 '^  verified' "${WORK}/out" | sed 's/^  verified *//' | cut -c1-260)"
  [[ -n "${verdict}" ]] || verdict="$(grep -v -e '^-' -e 'TESSERA_TEST_PERTURB' "${WORK}/err" | head -3 | tr '\n' ' ' | cut -c1-260)"
  local status=ok
  if [[ "${rc}" == "${want}" ]]; then ok=$((ok + 1)); else status=FAIL; failed=$((failed + 1)); fi
  printf '%-4s %-62s rc %s (want %s) %3ss  %s\n' "${status}" "${label}" "${rc}" "${want}" "$((SECONDS - t0))" "${verdict}"
}

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1
echo "== data: constant 0.1 and same-sign uniform [0, 1), float32 2^28 and float64 1e8 (numpy, h5py)"
PYTHON=python3
[[ -x /usr/bin/python3 ]] && PYTHON=/usr/bin/python3
"${PYTHON}" - "${WORK}/data.h5" <<'EOF'
import sys, numpy as np, h5py
n32, n64 = 2**28, 10**8
rng = np.random.default_rng(20241124)
with h5py.File(sys.argv[1], "w") as f:
    f["c32"] = np.full(n32, 0.1, np.float32)
    f["p32"] = rng.random(n32, dtype=np.float32)
    f["c64"] = np.full(n64, 0.1)
    f["p64"] = rng.random(n64)
EOF
D="${WORK}/data.h5"
echo "   written in $((SECONDS - START)) s"

echo "== wrong results (want 1)"
TESSERA_TEST_PERTURB=ulps:3 run_case "global_sum f32 2^28 --reproducible, 3 ulps off np3" 1 3 global-sum --n 2^28 --reproducible
TESSERA_TEST_PERTURB=ulps:-3 run_case "global_sum f64 1e8 --reproducible, 3 ulps off np1" 1 1 global-sum --n 1e8 --dtype float64 --reproducible
TESSERA_TEST_PERTURB=value:0 run_case "global_sum f32 1e8, sum replaced by 0 np3" 1 3 global-sum --n 1e8
TESSERA_TEST_PERTURB=negate run_case "global_sum f32 1e8, -sum np1" 1 1 global-sum --n 1e8
TESSERA_TEST_PERTURB=relative:1e-6 run_case "prefix_sum f32 1e8, one element x(1+1e-6) np1" 1 1 prefix-sum --n 1e8
TESSERA_TEST_PERTURB=relative:1e-6 run_case "prefix_sum f32 2^28, one element x(1+1e-6) np3" 1 3 prefix-sum --n 2^28
TESSERA_TEST_PERTURB=relative:1e-6@123456789 run_case "prefix_sum f32 2^28 same-sign, element 123456789 x(1+1e-6) np3" 1 3 prefix-sum --input "${D}:/p32"
TESSERA_TEST_PERTURB=drop@81920 run_case "prefix_sum f32 1e8, input 81920 left out np1" 1 1 prefix-sum --n 1e8
TESSERA_TEST_PERTURB=drop run_case "filter f32 2^28, one kept element dropped np3" 1 3 filter --n 2^28 --predicate gt:0.5 --rebalance
TESSERA_TEST_PERTURB=relative:1e-2 run_case "matmul f32 512^2, one element x1.01 np1" 1 1 matmul --size 512
TESSERA_TEST_PERTURB=relative:1e-2 run_case "matmul f32 2048^2, one element x1.01 np3" 1 3 matmul --size 2048
TESSERA_TEST_PERTURB=relative:1e-4 run_case "matmul f32 64^2, one element x(1+1e-4) np3" 1 3 matmul --size 64

echo "== correct results (want 0)"
for np in 3 1; do
  run_case "global_sum f32 2^28 random np${np}" 0 ${np} global-sum --n 2^28
  run_case "global_sum f32 2^28 constant 0.1 np${np}" 0 ${np} global-sum --input "${D}:/c32"
  run_case "global_sum f32 2^28 same-sign np${np}" 0 ${np} global-sum --input "${D}:/p32"
  run_case "global_sum f64 1e8 random np${np}" 0 ${np} global-sum --n 1e8 --dtype float64
  run_case "global_sum f64 1e8 constant 0.1 np${np}" 0 ${np} global-sum --input "${D}:/c64"
  run_case "global_sum f64 1e8 same-sign np${np}" 0 ${np} global-sum --input "${D}:/p64"
  run_case "prefix_sum f32 2^28 random np${np}" 0 ${np} prefix-sum --n 2^28
  run_case "prefix_sum f32 2^28 constant 0.1 np${np}" 0 ${np} prefix-sum --input "${D}:/c32"
  run_case "prefix_sum f32 2^28 same-sign np${np}" 0 ${np} prefix-sum --input "${D}:/p32"
  run_case "prefix_sum f64 1e8 random np${np}" 0 ${np} prefix-sum --n 1e8 --dtype float64
  run_case "prefix_sum f64 1e8 same-sign np${np}" 0 ${np} prefix-sum --input "${D}:/p64"
done
run_case "global_sum f32 2^28 random --reproducible np3" 0 3 global-sum --n 2^28 --reproducible
run_case "global_sum f64 1e8 same-sign --reproducible np3" 0 3 global-sum --input "${D}:/p64" --reproducible
run_case "prefix_sum f32 2^28 random --exclusive np3" 0 3 prefix-sum --n 2^28 --exclusive
run_case "prefix_sum f64 1e8 constant 0.1 --exclusive np1" 0 1 prefix-sum --input "${D}:/c64" --exclusive
run_case "filter f32 2^28 random gt:0.5 np3" 0 3 filter --n 2^28 --predicate gt:0.5 --rebalance
for np in 1 3; do
  run_case "matmul f32 512^2 np${np}" 0 ${np} matmul --size 512
  run_case "matmul f32 2048^2 np${np}" 0 ${np} matmul --size 2048
done
run_case "matmul f32 2048^2 --local cublas np1" 0 1 matmul --size 2048 --local cublas
run_case "matmul f64 1000x3000x700 np3" 0 3 matmul --m 1000 --k 3000 --n 700 --dtype float64
run_case "matmul f32 8192^2 (Freivalds) np3" 0 3 matmul --size 8192

echo "== C++ --verify tests on the cuda backend"
for np in 1 3; do
  if ((SECONDS - START > LIMIT - 30)); then echo "SKIP app_verify np${np} (time)"; continue; fi
  TESSERA_TEST_BACKEND=cuda timeout 120 mpirun -n ${np} --bind-to none "${BUILD}/tests/apps/tessera_app_verify_tests" \
    >"${WORK}/gtest" 2>&1
  rc=$?
  echo "app_verify np${np}: rc ${rc}; $(grep -E '^\[  (PASSED|FAILED) ' "${WORK}/gtest" | head -3 | tr '\n' ' ')"
  grep -E 'Failure|FAILED  \]' "${WORK}/gtest" | head -10
  if [[ ${rc} == 0 ]]; then ok=$((ok + 1)); else failed=$((failed + 1)); fi
done

echo "== two-pass scan GPU tests; memcheck at small sizes"
if ((SECONDS - START < LIMIT - 40)); then
  timeout 120 "${BUILD}/tests/gpu/tessera_gpu_tests" --gtest_filter='TwoPassScanGpu.*:KernelsGpu/*.Reduce*' \
    >"${WORK}/gpu" 2>&1
  rc=$?
  echo "gpu tests: rc ${rc}; $(grep -E '^\[  (PASSED|FAILED) ' "${WORK}/gpu" | tr '\n' ' ')"
  grep -E 'Failure' -A3 "${WORK}/gpu" | head -10
  if [[ ${rc} == 0 ]]; then ok=$((ok + 1)); else failed=$((failed + 1)); fi
fi
if ((SECONDS - START < LIMIT - 20)); then
  TESSERA_GPU_TEST_SMALL=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "${BUILD}/tests/gpu/tessera_gpu_tests" --gtest_filter='TwoPassScanGpu.*' >"${WORK}/memcheck" 2>&1
  rc=$?
  echo "memcheck: rc ${rc}; $(grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) ' "${WORK}/memcheck" | tr '\n' ' ')"
  if [[ ${rc} == 0 ]]; then ok=$((ok + 1)); else failed=$((failed + 1)); fi
fi

echo "== verify.sh: ${ok} ok, ${failed} FAILED, ${skipped} skipped, $((SECONDS - START)) s"
[[ ${failed} == 0 ]]
