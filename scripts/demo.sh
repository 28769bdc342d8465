#!/usr/bin/env bash
# The four apps on 4 ranks (or one rank per GPU where nvidia-smi lists GPUs), small sizes, --verify,
# each printing its table. Usage: scripts/demo.sh [BUILD_DIR]   (default: build)
set -euo pipefail

build=${1:-build}
bin=$build/bin
for app in tessera-global-sum tessera-prefix-sum tessera-filter tessera-matmul; do
  if [[ ! -x $bin/$app ]]; then
    echo "demo.sh: $bin/$app not found; build first (cmake --build $build)" >&2
    exit 2
  fi
done

ranks=4
backend=cpu
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [[ ${gpus:-0} -gt 0 ]]; then
    ranks=$gpus
    backend=cuda
  fi
fi

mpiexec=${MPIEXEC:-mpiexec}
launch=("$mpiexec" -n "$ranks")
if "$mpiexec" --version 2>/dev/null | grep -q "Open MPI\|OpenRTE"; then
  launch+=(--oversubscribe)
  # Open MPI refuses root unless told; containers often run as root.
  if [[ $(id -u) -eq 0 ]]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # ... and containers often refuse cross-memory attach between ranks.
    export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
  fi
fi
# OpenMP threads per rank: the runtime gives each rank its share of the cores; each table says
# how many (OMP_NUM_THREADS or --threads override).

echo "== Tessera demo: $ranks ranks, backend $backend"
run() {
  echo
  echo "\$ ${launch[*]} $*"
  "${launch[@]}" "$@"
}
run "$bin/tessera-global-sum" --backend "$backend" --n 1e6 --verify
run "$bin/tessera-global-sum" --backend "$backend" --n 1e6 --reproducible --dtype float64 --verify
run "$bin/tessera-prefix-sum" --backend "$backend" --n 2^20 --dtype int64 --verify
run "$bin/tessera-filter" --backend "$backend" --n 1e6 --predicate between:-0.25:0.25 --rebalance --verify
run "$bin/tessera-matmul" --backend "$backend" --size 512 --verify
