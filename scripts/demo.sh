#!/usr/bin/env bash
# The eight apps, each verified and printing its table, at sizes chosen for this machine: one MPI
# rank per GPU where nvidia-smi lists GPUs, with sizes that show the GPUs' rate (a quarter of the
# smallest GPU's memory for the 1-D arrays, up to 2^28 elements per GPU); else 4 ranks on the CPU
# with sizes that take a few seconds (from the memory the machine has free, up to 2^24 elements).
# Usage: scripts/demo.sh [BUILD_DIR]   (default: build)
# Environment: DEMO_SCALE=small runs every app at small sizes (a quick check of the build);
#   MPIEXEC (default mpiexec).
set -euo pipefail

build=${1:-build}
bin=$build/bin
apps=(tessera-global-sum tessera-prefix-sum tessera-filter tessera-matmul tessera-histogram tessera-transpose
      tessera-sort tessera-stencil)
for app in "${apps[@]}"; do
  if [[ ! -x $bin/$app ]]; then
    echo "demo.sh: $bin/$app not found; build first (cmake --build $build)" >&2
    exit 2
  fi
done

ranks=4
backend=cpu
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [[ ${gpus:-0} -gt 0 ]]; then
    ranks=$gpus
    backend=cuda
  fi
fi

# log2 of the elements per rank of the 1-D arrays (4-byte elements), from the memory each rank has:
# a quarter of the smallest GPU's, or of the host memory free now shared by the ranks; capped so
# that a run takes seconds, not minutes.
log2_of() { local v=$1 l=0; while ((v > 1)); do v=$((v / 2)); l=$((l + 1)); done; echo "$l"; }
if [[ $backend == cuda ]]; then
  mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | sort -n | head -n1)
  per_rank_bytes=$(( ${mib:-8192} * 1024 * 1024 / 4 ))
  cap=28
else
  kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || echo 4194304)
  per_rank_bytes=$(( ${kib:-4194304} * 1024 / 4 / ranks ))
  cap=$(( 20 + $(log2_of "$(nproc)") ))  # 2^21 per rank on 2 cores, 2^24 on 16
  ((cap > 24)) && cap=24
fi
e=$(( $(log2_of "$per_rank_bytes") - 2 ))  # elements of 4 bytes
((e > cap)) && e=$cap
if [[ ${DEMO_SCALE:-} == small ]]; then e=14; fi
n=$(( (1 << e) * ranks ))                   # 1-D arrays: 2^e per rank
side=$(( 1 << ((e + 2) / 2) ))              # matrices and fields: about 4 x 2^e cells in all
((side > 16384)) && side=16384
if [[ $backend == cuda ]]; then
  matmul=8192
  iters=500
else
  matmul=$(( e >= 21 ? 1024 : 512 ))       # GEMM: a second or so on the CPU
  iters=200
fi
if [[ ${DEMO_SCALE:-} == small ]]; then matmul=128; iters=50; fi

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

echo "== Tessera demo: $ranks ranks, backend $backend; 1-D arrays of 2^$e elements per rank, matrices of"
echo "   $side x $side, GEMM of order $matmul, a $side x $side field for $iters Jacobi iterations"
run() {
  echo
  echo "\$ ${launch[*]} $*"
  "${launch[@]}" "$@"
}
b=(--backend "$backend" --verify)
run "$bin/tessera-global-sum" "${b[@]}" --n "$n"
run "$bin/tessera-global-sum" "${b[@]}" --n "$n" --reproducible --dtype float64
run "$bin/tessera-prefix-sum" "${b[@]}" --n "$n" --dtype int64
run "$bin/tessera-filter" "${b[@]}" --n "$n" --predicate between:-0.25:0.25 --rebalance
run "$bin/tessera-matmul" "${b[@]}" --size "$matmul"
run "$bin/tessera-histogram" "${b[@]}" --n "$n" --bins 4096 --range -1:1
run "$bin/tessera-transpose" "${b[@]}" --m "$side" --n "$side" --from rows --to cols
run "$bin/tessera-sort" "${b[@]}" --n "$n" --values
run "$bin/tessera-stencil" "${b[@]}" --nx "$side" --ny "$side" --iters "$iters" --check-every 50 --repeat 1 --warmup 0
