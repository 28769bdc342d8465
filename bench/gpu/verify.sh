#!/usr/bin/env bash
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
#   bash bench/gpu/verify.sh BUILD_DIR
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
