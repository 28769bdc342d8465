#!/usr/bin/env bash
# Runs the Parallel Research Kernels' MPI1 Transpose, Stencil and DGEMM beside Tessera's apps on the
# same ranks and sizes, and prints both rates, in one run.
#   bench/prk/side_by_side.sh PRK_DIR [options]
# PRK_DIR: a checkout of github.com/ParRes/Kernels (its MPI1/, common/ and include/ are copied into a
# temporary directory and built there with mpicc and PRK's own GCC flags, -O3 -mtune=native
# -ffast-math; the checkout is left alone).
# Options (defaults in brackets):
#   --bin DIR          Tessera's apps (tessera-transpose, tessera-stencil, tessera-matmul) [build-cpu/bin]
#   --ranks P          MPI ranks for both codes [2]
#   --threads T        OpenMP threads per rank (OMP_NUM_THREADS) for both [1]
#   --iters I          PRK iterations per run, Tessera timed repeats per run (their median) [10]
#   --transpose N      order of the transpose, doubles [4000]
#   --stencil N        side of the stencil's grid, doubles; PRK's star of radius 1 (5 points) beside
#                      tessera-stencil --op jacobi5 [4000]
#   --dgemm N          order of the DGEMM, doubles [1000]
#   --dgemm-block B    PRK's outer block size [64]
#   --local ENGINE     tessera-matmul's local product: vendor (OpenBLAS where built) or tiled [vendor]
#   --runs K           run each pair K times, alternating PRK and Tessera [1]
#   --only LIST        comma-separated subset of transpose,stencil,dgemm [all three]
#   --json FILE        write every run's numbers as JSON
#   --mpiexec-flags F  extra flags for mpiexec (e.g. --oversubscribe)
# Rates: the transpose in ms per transpose (PRK: its average time per iteration, which also adds
# A^T into B and increments A; Tessera: the median over --iters repeats of the slowest rank); the
# stencil in ms per iteration (Tessera: the run's median time over --iters iterations, residual
# checked once); DGEMM in GFLOP/s (PRK: 2 N^3 over its average time per iteration).
set -euo pipefail
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 1 ] || { usage >&2; exit 2; }
case "$1" in -h|--help) usage; exit 0 ;; esac
prk=$1; shift
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=$here/build-cpu/bin; ranks=2; threads=1; iters=10; nt=4000; ns=4000; nd=1000; block=64; local_engine=vendor
runs=1; only=transpose,stencil,dgemm; json=""; mpiflags=""
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { echo "side_by_side.sh: $1 needs a value" >&2; exit 2; }
  case "$1" in
    --bin) bin=$2 ;; --ranks) ranks=$2 ;; --threads) threads=$2 ;; --iters) iters=$2 ;;
    --transpose) nt=$2 ;; --stencil) ns=$2 ;; --dgemm) nd=$2 ;; --dgemm-block) block=$2 ;;
    --local) local_engine=$2 ;; --runs) runs=$2 ;; --only) only=$2 ;; --json) json=$2 ;;
    --mpiexec-flags) mpiflags=$2 ;;
    *) echo "side_by_side.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
for pair in ranks:ranks threads:threads iters:iters transpose:nt stencil:ns dgemm:nd dgemm-block:block runs:runs; do
  v=${pair#*:}
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "side_by_side.sh: --${pair%%:*} must be a positive integer, not '${!v}'" >&2; exit 2; }
done
[ -d "$prk/MPI1/Transpose" ] && [ -d "$prk/common" ] && [ -d "$prk/include" ] \
  || { echo "side_by_side.sh: $prk is not a PRK checkout (no MPI1/Transpose, common/ or include/)" >&2; exit 2; }
for app in tessera-transpose tessera-stencil tessera-matmul; do
  [ -x "$bin/$app" ] || { echo "side_by_side.sh: $bin/$app not found (build it, or give --bin)" >&2; exit 2; }
done
(( nt % ranks == 0 )) || { echo "side_by_side.sh: PRK's transpose needs --transpose ($nt) divisible by --ranks ($ranks)" >&2; exit 2; }
py=/usr/bin/python3; [ -x $py ] || py=python3

work=$(mktemp -d "${TMPDIR:-/tmp}/prk_side_by_side.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$prk/MPI1" "$prk/common" "$prk/include" "$work/"
cat > "$work/common/make.defs" <<DEFS
CC=mpicc -std=c11 -pthread
DEFAULT_OPT_FLAGS=-O3 -mtune=native -ffast-math
OPENMPFLAG=-fopenmp
MPICC=mpicc
MPIDIR=
MPIINCLUDE=
MPILIB=
DEFS
echo "building PRK's MPI1 kernels in $work (log: make.log)"
(cd "$work/MPI1/Transpose" && make transpose) >"$work/make.log" 2>&1 &&
  (cd "$work/MPI1/Stencil" && make stencil RADIUS=1 STAR=1 DOUBLE=1) >>"$work/make.log" 2>&1 &&
  (cd "$work/MPI1/DGEMM" && make dgemm) >>"$work/make.log" 2>&1 \
  || { tail -20 "$work/make.log" >&2; echo "side_by_side.sh: PRK did not build" >&2; exit 1; }

export OMP_NUM_THREADS=$threads
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun() { mpiexec $mpiflags -n "$ranks" "$@"; }
prk_time() { awk '/Avg time \(s\)/ { for (i = 1; i <= NF; ++i) if ($i == "(s):") print $(i + 1) }'; }
json_total() { $py -c 'import json,sys; print(json.load(open(sys.argv[1]))["timing"]["total"])' "$1"; }
records="$work/records.txt"; : > "$records"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $ranks ranks, $threads thread(s) each, $iters iterations"
for ((run = 1; run <= runs; ++run)); do
  if [[ ,$only, == *,transpose,* ]]; then
    p=$(mpirun "$work/MPI1/Transpose/transpose" "$iters" "$nt" | prk_time)
    mpirun "$bin/tessera-transpose" --backend cpu --m "$nt" --n "$nt" --dtype float64 --repeat "$iters" --quiet \
      --json "$work/t.json" >/dev/null
    t=$(json_total "$work/t.json")
    echo "transpose $nt run $run: PRK $($py -c "print(f'{$p*1e3:.1f}')") ms, Tessera $($py -c "print(f'{$t*1e3:.1f}')") ms per transpose (PRK/Tessera $($py -c "print(f'{$p/$t:.2f}')")x)"
    echo "transpose $nt $run $p $t" >> "$records"
  fi
  if [[ ,$only, == *,stencil,* ]]; then
    p=$(mpirun "$work/MPI1/Stencil/stencil" "$iters" "$ns" | prk_time)
    mpirun "$bin/tessera-stencil" --backend cpu --op jacobi5 --nx "$ns" --ny "$ns" --dtype float64 --iters "$iters" \
      --check-every "$iters" --repeat 3 --quiet --json "$work/s.json" >/dev/null
    t=$($py -c "print($(json_total "$work/s.json") / $iters)")
    echo "stencil $ns run $run: PRK $($py -c "print(f'{$p*1e3:.2f}')") ms, Tessera $($py -c "print(f'{$t*1e3:.2f}')") ms per iteration (PRK/Tessera $($py -c "print(f'{$p/$t:.2f}')")x)"
    echo "stencil $ns $run $p $t" >> "$records"
  fi
  if [[ ,$only, == *,dgemm,* ]]; then
    p=$(mpirun "$work/MPI1/DGEMM/dgemm" "$iters" "$nd" "$block" 1 | prk_time)
    mpirun "$bin/tessera-matmul" --backend cpu --size "$nd" --dtype float64 --local "$local_engine" \
      --repeat "$iters" --quiet --json "$work/d.json" >/dev/null
    t=$(json_total "$work/d.json")
    echo "dgemm $nd run $run: PRK $($py -c "print(f'{2*$nd**3/$p/1e9:.2f}')") GFLOP/s, Tessera ($local_engine) $($py -c "print(f'{2*$nd**3/$t/1e9:.2f}')") GFLOP/s (Tessera/PRK $($py -c "print(f'{$p/$t:.2f}')")x)"
    echo "dgemm $nd $run $p $t" >> "$records"
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$json" ]; then
  $py - "$records" "$json" "$ranks" "$threads" "$iters" "$local_engine" <<'PY'
import json, sys, datetime, platform
records, out, ranks, threads, iters, engine = sys.argv[1:]
rows = []
for line in open(records):
    kernel, size, run, prk, tessera = line.split()
    rows.append({"kernel": kernel, "size": int(size), "run": int(run), "prk_s": float(prk), "tessera_s": float(tessera)})
doc = {"benchmark": "bench/prk/side_by_side.sh", "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
       "host": platform.node(), "ranks": int(ranks), "threads_per_rank": int(threads), "iterations": int(iters),
       "tessera_matmul_local": engine,
       "units": "seconds per transpose / per stencil iteration / per DGEMM (PRK: average per iteration; "
                "Tessera: median of the repeats)", "rows": rows}
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
PY
  echo "wrote $json"
fi
