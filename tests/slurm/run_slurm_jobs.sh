#!/usr/bin/env bash
# Submits the real job scripts of jobs/ to a private single-node Slurm (slurm_cluster.sh) with a
# small CPU-backend profile, waits for them with sbatch --wait, and checks what they left:
#   1. jobs/scaling.sbatch through srun --mpi=pmix: the JSON reports (checked against independent
#      references by tests/scaling/check_scaling_json.py), then jobs/gather_scaling.py's table and
#      PNG (a valid PNG of plausible size);
#   2. jobs/gpu_binding.sbatch with 4 tasks and 4 fake GPUs, option A (--gpus-per-task=1, srun):
#      4 distinct GPUs, one visible per rank;
#   3. the same, option B (--gpus-per-node=4 --gpu-bind=none, mpirun inside the allocation): every
#      rank sees all 4 and the runtime's local_rank % 4 still gives 4 distinct GPUs;
#   4. the same, option C (--gres=gpu:4, srun): as option B;
#   1b. the same job stopped by SIGUSR1 (as --signal=B:USR1@120 sends it): requeued, its checkpoint kept;
#   5. where the Python package is built (TESSERA_TEST_PYTHONPATH), a Python program under
#      srun --mpi=pmix on 3 tasks: tessera on COMM_WORLD, each rank its Slurm task, the global sum
#      right on every rank.
# Jobs that ask for --cpus-per-task=2 must give each task 2 CPUs (srun no longer inherits the
# job's --cpus-per-task: the step's CPUs on the node) and 2 OpenMP threads (OMP_NUM_THREADS, set
# to 1 here, as a user's login environment might), in the probe and in the scaling report.
# Exit 0: all passed; 77: Slurm cannot run here (reason printed; ctest reports SKIPPED); else failed.
#
# usage: run_slurm_jobs.sh SCALING_BINARY SOURCE_DIR PYTHON [WORK_DIR]
#   TESSERA_SLURM_KEEP=1 keeps WORK_DIR (configuration, logs, results) for a look afterwards.
set -uo pipefail

app=${1:?usage: run_slurm_jobs.sh SCALING_BINARY SOURCE_DIR PYTHON [WORK_DIR]}
src=${2:?source dir}
python=${3:?python}
work=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=slurm_cluster.sh
source "$here/slurm_cluster.sh"

[[ -x $app ]] || { echo "FAIL: $app is not an executable"; exit 1; }
app=$(realpath "$app")
src=$(realpath "$src")
if [[ -z $work ]]; then work=$(mktemp -d /tmp/tessera-slurm.XXXXXX); else rm -rf "$work"; mkdir -p "$work"; fi
failed=0

cleanup() {
  local rc=$?
  if [[ -n ${SLURM_CONF:-} ]]; then
    # Only jobs of this private cluster (SLURM_CONF points at it): nothing else is touched.
    local jobs
    jobs=$(timeout 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
    [[ -n ${jobs// /} ]] && timeout 10 scancel $jobs 2>/dev/null
  fi
  slurm_cluster_stop
  if ((rc != 0 && rc != 77)); then
    echo "---- logs (kept in $work) ----"
    tail -n 20 "$work"/log/*.log "$work"/*.out 2>/dev/null
  elif [[ -z ${TESSERA_SLURM_KEEP:-} ]]; then
    rm -rf "$work"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL: $*"
  failed=1
}

slurm_cluster_start "$work"
rc=$?
((rc == 77)) && exit 77
((rc != 0)) && { echo "FAIL: could not start Slurm"; exit 1; }
echo "slurm: $(sinfo -h -N -o '%N %T cpus=%c gres=%G') (config in $work)"

# Open MPI as root, oversubscribed, ranks that yield: the same settings as every MPI test here.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
# hwloc without I/O devices (tests/CMakeLists.txt says why).
export HWLOC_COMPONENTS=-linuxio,-pci
export TESSERA_BIN=$app TESSERA_RESULTS=$work/results

# submit NAME SBATCH-ARGS... : submits, waits for the end (150 s at most; scontrol every 0.5 s,
# where sbatch --wait polls at up to 10 s), prints the job id; status 1 unless the job COMPLETED
# with exit code 0.
submit() {
  local name=$1
  shift
  local out id state deadline=$((SECONDS + 150))
  out=$(sbatch --parsable --chdir="$work" --output="$work/$name-%j.out" "$@" 2>&1) ||
    { echo "FAIL: sbatch $name: $out" >&2; return 1; }
  id=${out%%;*}
  echo "$id"
  while :; do
    state=$(scontrol show job -o "$id" 2>/dev/null | sed -nE 's/.*JobState=([A-Z_]+).* ExitCode=([0-9]+:[0-9]+).*/\1 \2/p')
    case ${state%% *} in
      PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED | "") ;;
      *) break ;;
    esac
    if ((SECONDS >= deadline)); then
      echo "FAIL: job $name ($id) did not finish within 150 s ($state)" >&2
      scancel "$id" 2>/dev/null
      return 1
    fi
    sleep 0.5
  done
  if [[ $state != "COMPLETED 0:0" ]]; then
    echo "FAIL: job $name ($id) ended $state" >&2
    tail -n 30 "$work/$name-$id.out" >&2 2>/dev/null
    return 1
  fi
}

# ---- 1. scaling job (srun --mpi=pmix), small CPU profile ----------------------------------------
id=$(TESSERA_OPS="sum matmul" TESSERA_BACKEND=cpu TESSERA_DTYPE=float64 TESSERA_REPEAT=3 \
  TESSERA_N=100003 TESSERA_N_PER_RANK=30011 TESSERA_MATMUL_N=37 TESSERA_MATMUL_N_PER_RANK=17 \
  TESSERA_LAUNCHER=srun TESSERA_SRUN_MPI=pmix \
  submit scaling --nodes=1 --ntasks-per-node=4 --cpus-per-task=2 --gpus-per-task=1 --time=5 \
  "$src/jobs/scaling.sbatch") || fail "scaling job"
results=$work/results/scaling-$id
echo "scaling job $id: $(ls "$results" 2>/dev/null | tr '\n' ' ')"
for op in sum matmul; do
  report=$results/$op-nodes1-ranks4.json
  if [[ ! -s $report ]]; then fail "scaling job: $report missing"; continue; fi
  if [[ $op == sum ]]; then sizes=(--strong-n 100003 --weak-n-per-rank 30011); else sizes=(--strong-n 37 --weak-n-per-rank 17); fi
  "$python" "$src/tests/scaling/check_scaling_json.py" "$report" --op $op --dtype float64 --expect-ranks 1,2,4 \
    "${sizes[@]}" || fail "scaling job: $op report"
  grep -q "\"slurm_job_id\": \"$id\"" "$report" || fail "scaling job: $op report does not name job $id"
  "$python" -c 'import json, sys; t = json.load(open(sys.argv[1]))["threads"]; sys.exit(0 if t["min"] == t["max"] == 2 else f"threads {t}")' \
    "$report" || fail "scaling job: $op report: not 2 OpenMP threads per rank under --cpus-per-task=2"
  # The launch's checkpoint holds every round its report has (what a requeued job resumes from).
  "$python" -c 'import h5py, json, sys
rounds = json.load(open(sys.argv[1]))["rounds"]
with h5py.File(sys.argv[2], "r") as f:
    done = int(f["rounds_done"][0])
sys.exit(0 if done == rounds else f"checkpoint: {done} rounds, report: {rounds}")' "$report" "${report%.json}.ckpt.h5" ||
    fail "scaling job: $op checkpoint"
done

# The gather script on the job's directory: a table and one PNG per op.
if timeout 120 "$python" "$src/jobs/gather_scaling.py" "$results" --out "$work/plots" --table "$work/plots/table.md" \
    >"$work/gather.out" 2>&1; then
  for op in sum matmul; do
    rows=$(grep -c "| $id | $op | " "$work/plots/table.md")
    ((rows == 6)) || fail "gather: $rows table rows for $op, expected 6 (strong and weak at 1, 2, 4 ranks)"
  done
  "$python" - "$work/plots/scaling_sum.png" "$work/plots/scaling_matmul.png" <<'EOF' || fail "gather: PNG check"
import struct, sys, zlib
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG signature"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13, f"{path}: first chunk {kind}"
    width, height = struct.unpack(">II", data[16:24])
    assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0], f"{path}: IHDR CRC"
    assert width >= 400 and height >= 300, f"{path}: {width}x{height} is too small for the plot"
    assert len(data) > 20000, f"{path}: {len(data)} bytes, too small to hold four plotted panels"
    assert data.rstrip(b"\0")[-8:-4] == b"IEND", f"{path}: no IEND chunk (truncated)"
    print(f"png ok: {path}: {width}x{height}, {len(data)} bytes")
EOF
else
  fail "gather_scaling.py: $(tail -n 5 "$work/gather.out")"
fi

# ---- 1b. the scaling job near its time limit --------------------------------------------------------
# SIGUSR1 to the batch shell, as --signal=B:USR1@120 sends it, once the study's first checkpoint is
# written: the launch in progress ends, its checkpoint keeps the rounds it finished, and the script
# requeues the job (Restarts=1). The requeued job is cancelled here: Slurm holds a requeued job back
# about two minutes before it starts again (tests/slurm/run_multinode_jobs.sh's usr1 part shows the
# stencil job's second start).
out=$(TESSERA_OPS="sum" TESSERA_BACKEND=cpu TESSERA_DTYPE=float64 TESSERA_N=100003 TESSERA_N_PER_RANK=30011 \
  TESSERA_LAUNCHER=srun TESSERA_SRUN_MPI=pmix TESSERA_SCALING_ARGS="--rounds 5000 --max-rounds 5000 --probe-bytes 1M" \
  sbatch --parsable --chdir="$work" --output="$work/usr1-%j.out" --nodes=1 --ntasks-per-node=4 --cpus-per-task=1 \
  --time=5 "$src/jobs/scaling.sbatch" 2>&1) || fail "usr1 job: sbatch: $out"
id=${out%%;*}
ck=$work/results/scaling-$id/sum-nodes1-ranks4.ckpt.h5
for _ in $(seq 1 120); do [[ -s $ck ]] && break; sleep 0.5; done
if [[ -s $ck ]]; then
  scancel --batch --signal=USR1 "$id"
  for _ in $(seq 1 60); do grep -q "requeueing job $id" "$work/usr1-$id.out" 2>/dev/null && break; sleep 0.5; done
  grep -q "requeueing job $id" "$work/usr1-$id.out" || fail "usr1 job: no requeue after SIGUSR1: $(tail -n 5 "$work/usr1-$id.out")"
  for _ in $(seq 1 20); do
    restarts=$(scontrol show job -o "$id" 2>/dev/null | sed -nE 's/.* Restarts=([0-9]+).*/\1/p')
    [[ $restarts == 1 ]] && break
    sleep 0.5
  done
  [[ $restarts == 1 ]] || fail "usr1 job: Restarts=$restarts after SIGUSR1, expected 1"
  "$python" -c 'import h5py, sys
with h5py.File(sys.argv[1], "r") as f:
    done = int(f["rounds_done"][0])
sys.exit(0 if 1 <= done < 5000 else f"{done} rounds")' "$ck" || fail "usr1 job: the checkpoint after SIGUSR1"
  [[ ! -e $work/results/scaling-$id/sum-nodes1-ranks4.json ]] || fail "usr1 job: a report of the stopped launch"
  echo "usr1: job $id stopped by SIGUSR1, requeued (Restarts=$restarts), its checkpoint kept"
else
  fail "usr1 job: no checkpoint within 60 s ($(tail -n 5 "$work/usr1-$id.out" 2>/dev/null))"
fi
scancel "$id" 2>/dev/null

# ---- 2. to 4. GPU binding with 4 fake GPUs -------------------------------------------------------
check_probe() {  # check_probe FILE ONE_VISIBLE(yes|no) CPUS_PER_TASK
  "$python" - "$@" <<'EOF'
import re, sys
path, one_visible, cpus = sys.argv[1], sys.argv[2] == "yes", sys.argv[3]
lines = [l for l in open(path) if l.startswith("gpu-probe ")]
assert len(lines) == 4, f"{len(lines)} probe lines, expected 4"
seen = {}
for l in lines:
    f = dict(re.findall(r"(\w+)=(\S+)", l))
    cvd = f["cuda_visible_devices"].split(",")
    assert f["gpu"] != "none", l
    assert f["gpu"] in cvd, f"rank {f['rank']}: gpu {f['gpu']} not among CUDA_VISIBLE_DEVICES {cvd}"
    if one_visible:
        assert len(cvd) == 1 and f["device"] == "0", f"rank {f['rank']}: expected one visible GPU: {l}"
    else:
        assert len(cvd) == 4, f"rank {f['rank']}: expected all 4 GPUs visible: {l}"
        assert int(f["device"]) == int(f["local_rank"]) % 4, l
    seen.setdefault((f["host"], f["gpu"]), []).append(f["rank"])
    on_host = sum(1 for m in lines if f" host={f['host']} " in m)
    assert f.get("slurm_cpus_on_node") == str(int(cpus) * on_host), \
        f"rank {f['rank']}: the step has {f.get('slurm_cpus_on_node')} CPUs on its node, expected {cpus} x {on_host} tasks: {l}"
    assert f.get("omp_num_threads") == cpus and f.get("threads") == cpus, \
        f"rank {f['rank']}: OMP_NUM_THREADS {f.get('omp_num_threads')}, threads {f.get('threads')}, expected {cpus}: {l}"
assert len(seen) == 4, f"ranks share GPUs: {seen}"
print("gpu binding ok:", ", ".join(f"rank {r[0]} -> gpu {g}" for (h, g), r in sorted(seen.items())))
EOF
}

id=$(TESSERA_LAUNCHER=srun submit gpu-a --nodes=1 --ntasks=4 --cpus-per-task=2 --gpus-per-task=1 --time=2 \
  "$src/jobs/gpu_binding.sbatch") || fail "gpu binding job (option A)"
check_probe "$work/results/gpu-binding-$id/probe.txt" yes 2 || fail "gpu binding (option A: --gpus-per-task=1, srun)"

# Option B exactly as the script's comment tells a user to switch: swap the '#'s of the GPU lines.
sed -e 's/^#SBATCH --gpus-per-task=1/##SBATCH --gpus-per-task=1/' -e 's/^##SBATCH --gpus-per-node=4/#SBATCH --gpus-per-node=4/' \
  -e 's/^##SBATCH --gpu-bind=none/#SBATCH --gpu-bind=none/' "$src/jobs/gpu_binding.sbatch" >"$work/gpu_binding_option_b.sbatch"
grep -q '^#SBATCH --gpus-per-node=4' "$work/gpu_binding_option_b.sbatch" || fail "option B lines not found in jobs/gpu_binding.sbatch"
id=$(TESSERA_LAUNCHER=mpirun submit gpu-b --nodes=1 --ntasks=4 --cpus-per-task=1 --time=2 \
  "$work/gpu_binding_option_b.sbatch") || fail "gpu binding job (option B)"
check_probe "$work/results/gpu-binding-$id/probe.txt" no 1 || fail "gpu binding (option B: --gpus-per-node=4, mpirun)"

# Option C, the --gres form some centres use: swap the '#'s of option A and option C.
sed -e 's/^#SBATCH --gpus-per-task=1/##SBATCH --gpus-per-task=1/' -e 's/^##SBATCH --gres=gpu:4/#SBATCH --gres=gpu:4/' \
  "$src/jobs/gpu_binding.sbatch" >"$work/gpu_binding_option_c.sbatch"
grep -q '^#SBATCH --gres=gpu:4' "$work/gpu_binding_option_c.sbatch" || fail "option C line not found in jobs/gpu_binding.sbatch"
id=$(TESSERA_LAUNCHER=srun submit gpu-c --nodes=1 --ntasks=4 --cpus-per-task=2 --time=2 \
  "$work/gpu_binding_option_c.sbatch") || fail "gpu binding job (option C)"
check_probe "$work/results/gpu-binding-$id/probe.txt" no 2 || fail "gpu binding (option C: --gres=gpu:4, srun)"

# ---- 5. a Python program under srun ---------------------------------------------------------------
if [[ -n ${TESSERA_TEST_PYTHONPATH:-} ]]; then
  cat >"$work/python_job.py" <<'EOF'
import os
import tessera
x = tessera.arange(1001)  # on MPI.COMM_WORLD: every task of the step
ctx = x.context
print(f"python-job rank={ctx.rank} size={ctx.size} procid={os.environ.get('SLURM_PROCID')} "
      f"sum={int(tessera.sum(x))}", flush=True)
EOF
  printf '#!/bin/bash\nsrun --mpi=pmix %q %q\n' "$python" "$work/python_job.py" >"$work/python_job.sbatch"
  id=$(PYTHONPATH=$TESSERA_TEST_PYTHONPATH submit python --nodes=1 --ntasks=3 --time=2 "$work/python_job.sbatch") \
    || fail "python job (srun)"
  "$python" - "$work/python-$id.out" <<'EOF' || fail "python job (srun): $(tail -n 5 "$work/python-$id.out" 2>/dev/null)"
import re, sys
lines = [dict(re.findall(r"(\w+)=(\S+)", l)) for l in open(sys.argv[1]) if l.startswith("python-job ")]
assert sorted(int(f["rank"]) for f in lines) == [0, 1, 2], f"ranks {[f.get('rank') for f in lines]}, expected 0, 1, 2"
for f in lines:
    assert f["size"] == "3" and f["procid"] == f["rank"] and f["sum"] == "500500", f
print("python under srun ok: 3 ranks, each its Slurm task, sum 500500")
EOF
else
  echo "python job: the Python package is not built; not run"
fi

if ((failed)); then exit 1; fi
echo "PASS: Slurm jobs ran and their results check out"
exit 0
