#!/usr/bin/env bash
# The scaling demo: `scaling` on 4 ranks (CPU backend), strong and weak scaling of sum, each point
# measured in 6 to 12 rounds until its 95% interval is known, its JSON report, and a plot drawn by
# jobs/gather_scaling.py (SCALING_PNG, default OUT_DIR/scaling_demo.png; docs/scaling_demo.png, which
# the README shows, was made this way). The cost model's projection is printed and drawn only where
# the model predicts the held-out 4-rank point within 25%.
#
# usage: scripts/scaling_demo.sh BUILD_DIR [OUT_DIR]
#   BUILD_DIR  a configured and built Tessera build (the app is BUILD_DIR/bin/tessera-scaling)
#   OUT_DIR    where the JSON and the console output go (default: BUILD_DIR/scaling-demo)
# Environment: MPIEXEC (default mpiexec), PYTHON (default /usr/bin/python3, which has matplotlib),
#   DEMO_N (strong size, default 2^24), DEMO_N_PER_RANK (weak, default 2^22), DEMO_RANKS (default 4).
set -euo pipefail
build=${1:?usage: scripts/scaling_demo.sh BUILD_DIR [OUT_DIR]}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${2:-$build/scaling-demo}
app=$build/bin/tessera-scaling
[[ -x $app ]] || { echo "scaling_demo: $app not found; build the target tessera_app_scaling first" >&2; exit 2; }
mkdir -p "$out"
mpiexec=${MPIEXEC:-mpiexec}
# The first Python with matplotlib (Debian keeps it under /usr/bin/python3; others put a venv first).
python=${PYTHON:-}
if [[ -z $python ]]; then
  for py in /usr/bin/python3 "$(command -v python3 || true)"; do
    if [[ -x $py ]] && "$py" -c "import matplotlib" >/dev/null 2>&1; then python=$py; break; fi
  done
fi
png=${SCALING_PNG:-$out/scaling_demo.png}
# Root, more ranks than cores, yielding ranks: harmless elsewhere, needed on small machines.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# OpenMP threads per rank: the runtime gives each rank its share of the cores (OMP_NUM_THREADS overrides).
oversubscribe=()
"$mpiexec" --version 2>/dev/null | grep -q "Open MPI" && oversubscribe=(--oversubscribe)
"$mpiexec" -n "${DEMO_RANKS:-4}" "${oversubscribe[@]}" "$app" --op sum --mode both --backend cpu \
  --n "${DEMO_N:-16777216}" --n-per-rank "${DEMO_N_PER_RANK:-4194304}" \
  --json "$out/scaling_sum.json" --csv "$out/scaling_sum.csv" | tee "$out/scaling_sum.txt"
if [[ -z $python ]]; then
  echo "scaling_demo: no Python with matplotlib; report $out/scaling_sum.json, no plot"
  exit 0
fi
"$python" "$root/jobs/gather_scaling.py" "$out/scaling_sum.json" --png "$png" --table "$out/scaling_table.md"
echo "scaling_demo: report $out/scaling_sum.json, plot $png"
