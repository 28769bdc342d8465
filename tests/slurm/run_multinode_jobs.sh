#!/usr/bin/env bash
# Several nodes for real: a private Slurm cluster of three hosts in network namespaces
# (netns_cluster.sh), 2 tasks per node, one fake GPU per task through gres, the CPU backend, and
# the project's own job scripts from jobs/ submitted with sbatch across the hosts:
#   1. jobs/gpu_binding.sbatch, 3 nodes x 2 tasks: option A (--gpus-per-task=1, srun) and option B
#      (--gpus-per-node=2 --gpu-bind=none, mpirun): every rank names its node and GPU, and the
#      six (node, GPU) pairs are distinct;
#   2. jobs/apps.sbatch on inputs written here with h5py: 3 nodes and 1 node (2 ranks) with srun;
#      the results (JSON and the HDF5 files written from all hosts) against numpy, and the 3-node run
#      against the 1-node run (check_multinode.py). (mpirun across the hosts is the binding job's
#      option B, and the fault jobs' second launcher.)
#   3. jobs/scaling.sbatch over 1, 2 and 3 nodes: the reports checked by
#      tests/scaling/check_scaling_json.py and gathered by jobs/gather_scaling.py;
#   4. the two-level network on a slower link between the hosts (tc on the veth pairs): the
#      scaling app fitted on 1 and 2 nodes predicts 3 (tests/scaling/check_two_level_json.py);
#   5. faults: the ranks of one node killed in the middle of a job made of collectives (srun, then
#      mpirun), and that node's slurmd stopped (and the node marked down, as slurmctld would after
#      SlurmdTimeout): the job must end within the deadline with a non-zero status and a message
#      naming the lost node, no rank may be left running, and no output file may exist;
#   6. restart: jobs/stencil.sbatch (checkpoints every few hundred iterations, --restart auto) on
#      the 3 hosts loses one host after its first checkpoint (the host's ranks and slurmd killed):
#      every rank is gone within TESSERA_MPI_TIMEOUT + 5 s; the job, resubmitted on the 2 remaining
#      hosts with another process grid, resumes from the last checkpoint and ends with the field
#      bitwise equal to an uninterrupted run's.
# Everything the test starts is stopped by PID and every namespace, veth, bridge and file it made
# is removed on exit, also on failure or interruption (trap).
# Exit 0: all passed; 77: this machine cannot run it (no root, no namespaces, no Slurm: reason
# printed; ctest reports SKIPPED); anything else: failed.
#
# usage: run_multinode_jobs.sh BIN_DIR SOURCE_DIR PYTHON
#   TESSERA_SLURM_KEEP=1 keeps the work directory (configuration, logs, results) for a look;
#   TESSERA_MULTINODE_PARTS="binding apps scaling twolevel faults restart" (the default) runs only the parts named;
#   the part usr1 (not in the default) checks jobs/stencil.sbatch's SIGUSR1, requeue and resume.
set -uo pipefail

bin=${1:?usage: run_multinode_jobs.sh BIN_DIR SOURCE_DIR PYTHON}
src=${2:?source dir}
python=${3:?python}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=netns_cluster.sh
source "$here/netns_cluster.sh"

for app in tessera-scaling tessera-global-sum tessera-prefix-sum tessera-filter tessera-matmul tessera-stencil; do
  [[ -x $bin/$app ]] || { echo "FAIL: $bin/$app is not an executable"; exit 1; }
done
bin=$(realpath "$bin")
src=$(realpath "$src")
"$python" -c "import numpy, h5py" 2>/dev/null || { echo "SKIP: $python lacks numpy or h5py (the independent checks need both)"; exit 77; }

# The Slurm commands below must talk to our cluster only, never to one this machine belongs to.
unset SLURM_CONF
# A short path: Unix sockets of PMIx and Open MPI live below it (their paths must stay < 108 bytes).
work=$(mktemp -d /tmp/tessera-mn.XXXXXX)
failed=0
started=$SECONDS
parts=" ${TESSERA_MULTINODE_PARTS:-binding apps scaling twolevel faults restart} "
want() { [[ $parts == *" $1 "* ]]; }
# Our own deadline, below ctest's TIMEOUT (600 s): ctest would kill this script without running
# the trap, and leave the daemons and namespaces behind.
(
  sleep 540 &
  trap 'kill $!' TERM
  wait $! && echo "FAIL: no end after 540 s; stopping" && kill -TERM $$
) &
deadline_pid=$!

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  kill "$deadline_pid" 2>/dev/null
  if [[ ${SLURM_CONF:-} == "$work/slurm.conf" ]]; then
    local jobs
    jobs=$(timeout 10 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
    [[ -n ${jobs// /} ]] && timeout 10 scancel $jobs 2>/dev/null
  fi
  netns_cluster_stop
  if ((rc != 0 && rc != 77)); then
    echo "---- logs of the failed run ----"
    tail -n 15 "$work"/log/slurmctld.log "$work"/nodes/*/slurmd.log "$work"/*.out 2>/dev/null
  fi
  if [[ -n ${TESSERA_SLURM_KEEP:-} ]]; then
    echo "kept $work"
  else
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

netns_cluster_start "$work" 3 2
rc=$?
((rc == 77)) && exit 77
((rc != 0)) && { echo "FAIL: could not start the cluster"; exit 1; }
nodes=("${NETNS_CLUSTER_NODES[@]}")
node_list=$(IFS=,; echo "${nodes[*]}")
echo "cluster: $(sinfo -h -N -o '%N %T cpus=%c gres=%G' | tr '\n' ';') on $NETNS_CLUSTER_SUBNET.0/24 ($((SECONDS - started)) s)"

# Open MPI as root, oversubscribed, ranks that yield (as every MPI test here), and its TCP
# transport and out-of-band channel on the hosts' subnet only.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
# hwloc without I/O devices: reading every PCI device's configuration space costs each rank and
# launcher about 0.03 s of CPU in a VM (tests/CMakeLists.txt).
export HWLOC_COMPONENTS=-linuxio,-pci
export OMPI_MCA_btl_tcp_if_include=$NETNS_CLUSTER_SUBNET.0/24 OMPI_MCA_oob_tcp_if_include=$NETNS_CLUSTER_SUBNET.0/24
# Every peer set up in MPI_Init, not on first use: under srun the lazy set-up crashed MPI_Init now
# and then (netns_cluster.sh, at mpi.conf).
export OMPI_MCA_mpi_add_procs_cutoff=1024
# Open MPI's session directories (and anything else a job puts in TMPDIR) inside the work
# directory: a rank killed in the fault tests leaves nothing in the machine's /tmp.
export TMPDIR=$work/tmp
mkdir -p "$TMPDIR"
export TESSERA_RESULTS=$work/results

# ---- jobs ------------------------------------------------------------------------------------------

# job_state ID -> "STATE EXITCODE" (e.g. "FAILED 1:0")
job_state() {
  scontrol show job -o "$1" 2>/dev/null | sed -nE 's/.*JobState=([A-Z_]+).* ExitCode=([0-9]+:[0-9]+).*/\1 \2/p'
}

# wait_job ID SECONDS: polls until the job has ended; prints its final "STATE EXITCODE"; status 0
# when it ended within the deadline.
wait_job() {
  local id=$1 deadline=$((SECONDS + $2)) state
  while ((SECONDS < deadline)); do
    state=$(job_state "$id")
    case ${state%% *} in
      PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED | "") sleep 0.5 ;;
      *) echo "$state"; return 0 ;;
    esac
  done
  echo "$(job_state "$id") (deadline of $2 s passed)"
  return 1
}

# submit NAME SBATCH-ARGS...: submits, prints the job id.
submit() {
  local name=$1
  shift
  local out
  out=$(sbatch --parsable --chdir="$work" --output="$work/$name-%j.out" "$@" 2>&1) ||
    { echo "FAIL: sbatch $name: $out" >&2; return 1; }
  echo "${out%%;*}"
}

# Open MPI 4.1 started by srun --mpi=pmix on this oversubscribed machine has crashed in MPI_Init
# (netns_cluster.sh says how often, and what made it rare): a segfault after a failed attach to a
# node-local peer's shared memory or a failed TCP connect to it. Nothing of Tessera has run then.
startup_crash() {  # startup_crash NAME ID: the job's output shows that crash
  local files=("$work/$1-$2.out" "$work"/results/*-"$2"/*.err)
  grep -qs "Segmentation fault" "${files[@]}" &&
    grep -qsE "shared memory initialization|failed to TCP connect to a peer" "${files[@]}"
}

# run_job NAME SBATCH-ARGS...: submits, waits (180 s at most), prints the job id; status 1 unless
# the job COMPLETED with exit code 0. A job that failed by the start-up crash above is submitted
# once more (reported on stderr); any other failure, or a second crash, fails.
run_job() {
  local name=$1 id state t0=$SECONDS attempt
  for attempt in 1 2; do
    id=$(submit "$@") || return 1
    state=$(wait_job "$id" 180)
    echo "job $name ($id): $state after $((SECONDS - t0)) s" >&2
    [[ $state == "COMPLETED 0:0" ]] && break
    if ((attempt == 1)) && startup_crash "$name" "$id"; then
      echo "RETRY: job $name ($id): Open MPI crashed in MPI_Init under srun (a known start-up race); submitting again" >&2
      continue
    fi
    echo "FAIL: job $name ($id) ended $state" >&2
    tail -n 30 "$work/$name-$id.out" >&2 2>/dev/null
    local err  # the ranks' own words: the error files of the job's launches go with the work directory
    for err in "$work"/results/*-"$id"/*.err; do
      [[ -s $err ]] && { echo "---- ${err#"$work"/}:"; tail -n 20 "$err"; } >&2
    done
    return 1
  done
  echo "$id"
}

# ---- 1. GPU binding across three nodes --------------------------------------------------------------
if want binding; then
  per_node=(--nodes=3 --ntasks-per-node=2 --cpus-per-task=1 --time=3)
  if id=$(TESSERA_BIN=$bin/tessera-scaling TESSERA_LAUNCHER=srun run_job gpu-a "${per_node[@]}" --gpus-per-task=1 \
    "$src/jobs/gpu_binding.sbatch"); then
    "$python" "$here/check_multinode.py" probe "$work/results/gpu-binding-$id/probe.txt" --nodes "$node_list" --per-node 2 \
      --visible 1 || fail "gpu binding, option A (--gpus-per-task=1, srun)"
  else
    fail "gpu binding job, option A"
  fi
  # Option B exactly as the script tells a user to switch: swap the '#'s of its GPU lines.
  sed -e 's/^#SBATCH --gpus-per-task=1/##SBATCH --gpus-per-task=1/' -e 's/^##SBATCH --gpus-per-node=/#SBATCH --gpus-per-node=/' \
    -e 's/^##SBATCH --gpu-bind=none/#SBATCH --gpu-bind=none/' "$src/jobs/gpu_binding.sbatch" >"$work/gpu_binding_option_b.sbatch"
  grep -q '^#SBATCH --gpus-per-node=' "$work/gpu_binding_option_b.sbatch" || fail "option B lines not found in jobs/gpu_binding.sbatch"
  if id=$(TESSERA_BIN=$bin/tessera-scaling TESSERA_LAUNCHER=mpirun run_job gpu-b "${per_node[@]}" --gpus-per-node=2 \
    "$work/gpu_binding_option_b.sbatch"); then
    "$python" "$here/check_multinode.py" probe "$work/results/gpu-binding-$id/probe.txt" --nodes "$node_list" --per-node 2 \
      --visible all || fail "gpu binding, option B (--gpus-per-node=2 --gpu-bind=none, mpirun)"
  else
    fail "gpu binding job, option B"
  fi
fi

# ---- 2. the apps: three nodes against one ---------------------------------------------------------
if want apps; then
  # Inputs from numpy (not the app's generator): 100003 doubles, A 37 x 29, B 29 x 41.
  "$python" - "$work/inputs.h5" <<'EOF' || fail "writing the inputs"
import sys, h5py, numpy as np
rng = np.random.default_rng(20261123)
with h5py.File(sys.argv[1], "w") as f:
    f["x"] = rng.standard_normal(100003)
    f["A"] = rng.uniform(-1, 1, (37, 29))
    f["B"] = rng.uniform(-1, 1, (29, 41))
EOF
  apps_env=(TESSERA_BIN_DIR=$bin TESSERA_BACKEND=cpu TESSERA_INPUT=$work/inputs.h5:/x
    "TESSERA_MATMUL_INPUTS=$work/inputs.h5:/A $work/inputs.h5:/B" TESSERA_REPEAT=2)
  apps_dirs=()
  for run in "3 srun" "1 srun"; do
    read -r n launcher <<<"$run"
    if id=$(export "${apps_env[@]}" TESSERA_LAUNCHER="$launcher"
      run_job "apps-$n-$launcher" --nodes="$n" --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-task=1 --time=5 \
        "$src/jobs/apps.sbatch"); then
      apps_dirs+=("$work/results/apps-$id")
    else
      fail "apps job on $n node(s) with $launcher"
    fi
  done
  if ((${#apps_dirs[@]} == 2)); then
    "$python" "$here/check_multinode.py" apps "${apps_dirs[0]}" --one-node "${apps_dirs[1]}" \
      --ranks 6 --ranks-one 2 --input "$work/inputs.h5:/x" --a "$work/inputs.h5:/A" --b "$work/inputs.h5:/B" ||
      fail "apps: results across three nodes"
  fi
fi

# ---- 3. the scaling driver over nodes ---------------------------------------------------------------
if want scaling; then
  if id=$(TESSERA_BIN=$bin/tessera-scaling TESSERA_OPS="sum" TESSERA_BACKEND=cpu TESSERA_DTYPE=float64 TESSERA_REPEAT=3 \
    TESSERA_N=100003 TESSERA_N_PER_RANK=30011 TESSERA_LAUNCHER=srun \
    run_job scaling --nodes=3 --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-task=1 --time=5 "$src/jobs/scaling.sbatch"); then
    results=$work/results/scaling-$id
    for n in 1 2 3; do
      ranks=$((2 * n))
      case $n in 1) expect=1,2 ;; 2) expect=1,2,4 ;; *) expect=1,2,4,6 ;; esac
      report=$results/sum-nodes$n-ranks$ranks.json
      if [[ ! -s $report ]]; then fail "scaling: $report missing"; continue; fi
      "$python" "$src/tests/scaling/check_scaling_json.py" "$report" --op sum --dtype float64 --expect-ranks "$expect" \
        --strong-n 100003 --weak-n-per-rank 30011 || fail "scaling: report of $n node(s)"
      grep -q "\"runtime\": \"$ranks ranks on $n node" "$report" || fail "scaling: $report was not spread over $n node(s)"
    done
    if "$python" "$src/jobs/gather_scaling.py" "$results" --out "$work/plots" --table "$work/plots/table.md" >"$work/gather.out" 2>&1; then
      rows=$(grep -c "| $id | sum | " "$work/plots/table.md")
      # strong and weak at 1,2 + 1,2,4 + 1,2,4,6 ranks
      ((rows == 18)) || fail "gather: $rows table rows, expected 18"
    else
      fail "gather_scaling.py: $(tail -n 5 "$work/gather.out")"
    fi
  else
    fail "scaling job over 3 nodes"
  fi
fi

# ---- 4. the two-level network, on a slower link between the hosts ------------------------------------
# One launch of 6 ranks on 3 nodes measures collectives within a node and among the nodes, fits
# the model on the points and collectives on 1 and 2 nodes and predicts those on 3
# (tests/scaling/check_two_level_json.py recomputes the fit and prints the errors); a ping of 1 MiB,
# not the default 4, is 40 ms on the slow link (4 MiB pings made most of the job's time). The veth pairs
# are shaped to 200 Mbit/s (and 500 us more delay where the kernel has netem), so the link between
# the hosts is far slower than shared memory within one.
if want twolevel; then
  rate_mbit=200
  if netns_cluster_shape ${rate_mbit}mbit 500us; then
    echo "link between the hosts: $NETNS_CLUSTER_SHAPING"
    if id=$(TESSERA_BIN=$bin/tessera-scaling TESSERA_OPS="sum matmul" TESSERA_BACKEND=cpu TESSERA_DTYPE=float64 \
      TESSERA_REPEAT=3 TESSERA_N=1000003 TESSERA_N_PER_RANK=200003 TESSERA_MATMUL_N=192 TESSERA_MATMUL_N_PER_RANK=96 \
      TESSERA_NODE_COUNTS=3 TESSERA_LAUNCHER=srun TESSERA_SCALING_ARGS="--ping-bytes 1M" \
      run_job two-level --nodes=3 --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-task=1 --time=5 "$src/jobs/scaling.sbatch"); then
      for op in sum matmul; do
        report=$work/results/scaling-$id/$op-nodes3-ranks6.json
        if [[ ! -s $report ]]; then fail "two-level: $report missing"; continue; fi
        "$python" "$src/tests/scaling/check_two_level_json.py" "$report" --nodes 3 --ranks-per-node 2 \
          --max-inter-Bps $((rate_mbit * 1000000 / 8)) || fail "two-level: $op report"
        grep -E "^two-level (network|check)" "$work/results/scaling-$id/$op-nodes3-ranks6.txt"
      done
    else
      fail "two-level scaling job"
    fi
  else
    fail "could not shape the links between the hosts (tc)"
  fi
  netns_cluster_unshape
fi

# ---- 5. faults: a node lost in the middle of a job ---------------------------------------------------
# The job: the prefix sum of a small array repeated without end (each repeat a barrier, an exscan
# and reductions of the timings: the ranks spend their time in collectives), with outputs that
# would only appear at the end. TESSERA_MPI_TIMEOUT: a rank left waiting for a lost peer ends itself.
node2=${nodes[1]}
fault_env=(TESSERA_BIN_DIR=$bin TESSERA_BACKEND=cpu TESSERA_APPS=scan TESSERA_N=6000 TESSERA_REPEAT=1000000
  TESSERA_MPI_TIMEOUT=8)

ranks_in() {  # ranks_in NODE: PIDs of the app's ranks running on NODE
  local pid
  for pid in $(netns_cluster_node_pids "$1"); do
    [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$bin/tessera-prefix-sum" ]] && echo "$pid"
  done
}
count_ranks() {  # count_ranks NODE...
  local n=0 node
  for node in "$@"; do n=$((n + $(ranks_in "$node" | wc -l))); done
  echo "$n"
}
wait_ranks() {  # wait_ranks COUNT SECONDS NODE...: until exactly COUNT ranks run on the NODEs
  local count=$1 deadline=$((SECONDS + $2))
  shift 2
  while ((SECONDS < deadline)); do
    (($(count_ranks "$@") == count)) && return 0
    sleep 0.5
  done
  return 1
}

# fault NAME HOW LAUNCHER: HOW = ranks (kill the node's ranks) or slurmd (stop the node's slurmd)
fault() {
  local name=$1 how=$2 launcher=$3 id attempt before
  for attempt in 1 2; do
    id=$(export "${fault_env[@]}" TESSERA_LAUNCHER="$launcher"
      submit "$name" --nodes=3 --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-task=1 --time=10 --no-requeue \
        "$src/jobs/apps.sbatch") || { fail "$name: submit"; return; }
    if ! wait_ranks 6 60 "${nodes[@]}"; then
      fail "$name: the 6 ranks did not start ($(job_state "$id"))"
      return
    fi
    # Well inside the loop of collectives, and still the same six ranks (MPI_Init went well).
    before=$(for node in "${nodes[@]}"; do ranks_in "$node"; done | sort)
    sleep 3
    [[ $(for node in "${nodes[@]}"; do ranks_in "$node"; done | sort) == "$before" ]] && break
    wait_job "$id" 30 >/dev/null
    # A job that ends before the fault never reached what this part checks (a loss in the middle
    # of a job): its start is the apps part's subject. Said, with the ranks' own words, and
    # submitted once more; a second early end fails.
    local early
    early="$(tail -n 5 "$work/$name-$id.out" 2>/dev/null) $(tail -q -n 5 "$work/results/apps-$id/"*.err 2>/dev/null)"
    if ((attempt == 1)); then
      echo "RETRY: job $name ($id): its ranks ended before the fault; submitting again. The job's words: $early"
      continue
    fi
    fail "$name: the job's ranks ended before the fault, twice: $early"
    return
  done
  local t0=$SECONDS pid
  if [[ $how == ranks ]]; then
    for pid in $(ranks_in "$node2"); do kill -KILL "$pid"; done
    echo "$name: killed the ranks on $node2"
  else
    netns_cluster_stop_slurmd 1
    # What slurmctld does once SlurmdTimeout has passed without an answer (15-20 s here, the
    # surviving ranks spinning all the while), at once: the node down. Slurm's own detection is
    # Slurm's; what is checked here is the job's end, its words and the lost node's ranks.
    scontrol update nodename="$node2" state=down reason="slurmd lost in a test" ||
      fail "$name: scontrol could not mark $node2 down"
    echo "$name: stopped the slurmd of $node2 and marked it down"
  fi
  local state
  state=$(wait_job "$id" 90) || fail "$name: job $id still not ended $((SECONDS - t0)) s after the fault: $state"
  local ended=$((SECONDS - t0))
  echo "$name: job $id ended $state, $ended s after the fault"
  [[ ${state#* } != 0:0 ]] || fail "$name: job $id ended with status 0"
  # No rank of the job left running: on the surviving nodes at once, on the lost node (whose own
  # slurmd is gone and cannot end them) through the MPI watchdog.
  wait_ranks 0 10 "${nodes[0]}" "${nodes[2]}" || fail "$name: ranks still running on the surviving nodes 10 s after the job ended"
  local t1=$SECONDS
  if wait_ranks 0 40 "$node2"; then
    echo "$name: no rank left on $node2 $((SECONDS - t1)) s after the job ended"
  else
    fail "$name: ranks still running on $node2 40 s after the job ended"
  fi
  local log=$work/$name-$id.out results=$work/results/apps-$id
  if [[ $how == ranks ]]; then
    grep -qE "$node2.*(Killed|signal 9)|(Killed|signal 9).*$node2" "$log" ||
      fail "$name: the job's output does not name the lost node $node2 and the killed ranks: $(tail -n 5 "$log")"
  else
    grep -qE "Node failure on $node2|nodes of this job that Slurm marks down or not responding: $node2 *$" "$log" ||
      fail "$name: the job's output does not name the lost node $node2: $(tail -n 5 "$log")"
  fi
  echo "$name: the job's own words: $(grep -hE "$node2|NODE FAILURE" "$log" | head -n 3 | tr '\n' ' ')"
  local left
  left=$(ls -A "$results" 2>/dev/null | grep -vE '^(environment\.txt|scan\.(txt|err))$' | tr '\n' ' ')
  [[ -z $left ]] || fail "$name: output files exist after the failed job: $left"
}
if want faults; then
  fault fault-ranks-srun ranks srun
  fault fault-ranks-mpirun ranks mpirun
  fault fault-slurmd slurmd srun
fi

# ---- 6. a long solve that loses a host and resumes on the others -------------------------------------
# The stencil job (jobs/stencil.sbatch) on 3 hosts, a checkpoint every 200 iterations; once the
# first is written, host 2's ranks and slurmd are killed. The job is submitted with --no-requeue
# (Slurm's requeue would wait for 3 hosts), and the test resubmits it on the 2 others with another
# grid: --restart auto continues from the newest checkpoint that verifies.
if want restart; then
  t_restart=$SECONDS
  if want faults; then  # the slurmd test above stopped host 2's: bring it back
    netns_cluster_start_slurmd 1
    for _ in $(seq 1 60); do
      [[ $(sinfo -h -n "$node2" -o %T 2>/dev/null) == idle ]] && break
      sleep 0.5
    done
  fi
  restart_timeout=10
  problem=(TESSERA_BIN_DIR=$bin TESSERA_BACKEND=cpu TESSERA_OP=jacobi9 TESSERA_DTYPE=float64 TESSERA_NX=45 TESSERA_NY=37
    TESSERA_ITERS=2400 TESSERA_CHECK_EVERY=100 TESSERA_CHECKPOINT_EVERY=200 TESSERA_MPI_TIMEOUT=$restart_timeout
    TESSERA_RUN_DIR=$work/results/stencil-run)
  "$bin/tessera-stencil" --backend cpu --op jacobi9 --dtype float64 --nx 45 --ny 37 --iters 2400 --check-every 100 \
    --output "$work/stencil-reference.h5:/u" --quiet >/dev/null || fail "restart: the uninterrupted run"
  ranks_of_stencil() {  # PIDs of tessera-stencil ranks on the NODEs
    local node pid
    for node in "$@"; do
      for pid in $(netns_cluster_node_pids "$node"); do
        [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$bin/tessera-stencil" ]] && echo "$pid"
      done
    done
  }
  ckdir=$work/results/stencil-run/checkpoints
  if id=$(export "${problem[@]}" TESSERA_GRID=3x2; submit stencil-lost --nodes=3 --ntasks-per-node=2 --cpus-per-task=1 \
    --gpus-per-task=1 --time=5 --no-requeue "$src/jobs/stencil.sbatch"); then
    for _ in $(seq 1 240); do
      compgen -G "$ckdir/checkpoint-*.h5" >/dev/null && break
      sleep 0.25
    done
    if ! compgen -G "$ckdir/checkpoint-*.h5" >/dev/null; then
      fail "restart: no checkpoint written ($(job_state "$id")): $(tail -n 5 "$work/stencil-lost-$id.out")"
    elif [[ -s $work/results/stencil-run/field.h5 ]]; then
      fail "restart: the job ended before its host could be lost (make it longer)"
    else
      t0=$SECONDS
      for pid in $(ranks_of_stencil "$node2"); do kill -KILL "$pid"; done
      netns_cluster_stop_slurmd 1
      echo "restart: killed the ranks and the slurmd of $node2 after $(ls "$ckdir" | tr '\n' ' ')"
      for _ in $(seq 1 $(((restart_timeout + 5) * 4))); do
        [[ -z $(ranks_of_stencil "${nodes[0]}" "${nodes[2]}") ]] && break
        sleep 0.25
      done
      if [[ -z $(ranks_of_stencil "${nodes[0]}" "${nodes[2]}") ]]; then
        echo "restart: every rank gone $((SECONDS - t0)) s after the host was lost (bound: TESSERA_MPI_TIMEOUT $restart_timeout + 5 s)"
      else
        fail "restart: ranks still running on the surviving hosts $((SECONDS - t0)) s after the host was lost"
      fi
      # What slurmctld does once SlurmdTimeout has passed (10-25 s here), at once: the lost host
      # down, so that the first job ends and frees the two others.
      scontrol update nodename="$node2" state=down reason="lost in a test" ||
        fail "restart: scontrol could not mark $node2 down"
      if id2=$(export "${problem[@]}" TESSERA_GRID=1x4; run_job stencil-resumed --nodes=2 --exclude="$node2" \
        --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-task=1 --time=5 "$src/jobs/stencil.sbatch"); then
        "$python" - "$work/stencil-reference.h5" "$work/results/stencil-run/field.h5" "$work/results/stencil-run/stencil.json" <<'EOF' || fail "restart: the resumed run (job $id2)"
import json, sys, h5py
ref, got = (h5py.File(p, "r")["/u"][...] for p in sys.argv[1:3])
report = json.load(open(sys.argv[3]))
resumed = report["result"]["resumed_iteration"]
assert report["parameters"]["grid"] == "1x4" and report["ranks"] == 4, report["parameters"]
assert 0 < resumed < 2400 and report["result"]["iterations"] == 2400, report["result"]
assert ref.dtype == got.dtype and ref.shape == got.shape and ref.tobytes() == got.tobytes(), "fields differ"
print(f"restart: resumed on 2 hosts (grid 1x4) from iteration {resumed}; the field is bitwise the uninterrupted run's")
EOF
      else
        fail "restart: the resubmitted job on the 2 remaining hosts"
      fi
    fi
  else
    fail "restart: submit"
  fi
  echo "restart: $((SECONDS - t_restart)) s"
fi

# ---- 7. the time limit's signal: checkpoint, requeue, resume (not in the default parts: Slurm
# holds a requeued job back before it starts again, which costs the suite time) -------------------
# jobs/stencil.sbatch on one host; once its first checkpoint is written, the batch script gets
# SIGUSR1 as --signal=B:USR1@120 would send it (scancel --signal=USR1 --batch): the ranks write a
# checkpoint and exit 75, the script requeues the job, and the second start (SLURM_RESTART_COUNT 1)
# resumes from that checkpoint and ends with the field bitwise equal to an uninterrupted run's.
if want usr1; then
  t_usr1=$SECONDS
  usr1_problem=(TESSERA_BIN_DIR=$bin TESSERA_BACKEND=cpu TESSERA_OP=jacobi5 TESSERA_DTYPE=float32 TESSERA_NX=61 TESSERA_NY=29
    TESSERA_ITERS=40000 TESSERA_CHECK_EVERY=100 TESSERA_CHECKPOINT_EVERY=2000 TESSERA_MPI_TIMEOUT=30
    TESSERA_RUN_DIR=$work/results/stencil-usr1)
  "$bin/tessera-stencil" --backend cpu --op jacobi5 --dtype float32 --nx 61 --ny 29 --iters 40000 --check-every 100 \
    --output "$work/usr1-reference.h5:/u" --quiet >/dev/null || fail "usr1: the uninterrupted run"
  ckdir=$work/results/stencil-usr1/checkpoints
  if id=$(export "${usr1_problem[@]}"; submit stencil-usr1 --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 \
    --gpus-per-task=1 --time=5 "$src/jobs/stencil.sbatch"); then
    for _ in $(seq 1 240); do
      compgen -G "$ckdir/checkpoint-*.h5" >/dev/null && break
      sleep 0.25
    done
    # The batch shell alone, as --signal=B:USR1 signals it.
    batch=""
    for pid in $(netns_cluster_node_pids "${nodes[0]}" | sort -n); do
      grep -qs "slurm_script" "/proc/$pid/cmdline" && [[ $(readlink "/proc/$pid/exe") == */bash ]] && { batch=$pid; break; }
    done
    if [[ -n $batch ]]; then kill -USR1 "$batch"; else fail "usr1: no batch shell found on ${nodes[0]}"; fi
    state=$(wait_job "$id" 150) || fail "usr1: job $id not done: $state"
    echo "usr1: job $id ended $state after $((SECONDS - t_usr1)) s"
    grep -h "SIGUSR1\|requeue\|start [0-9]" "$work/stencil-usr1-$id.out" | head -n 5
    "$python" - "$work/usr1-reference.h5" "$work/results/stencil-usr1/field.h5" "$work/results/stencil-usr1/stencil.json" <<'EOF' || fail "usr1: the requeued run"
import json, sys, h5py
ref, got = (h5py.File(p, "r")["/u"][...] for p in sys.argv[1:3])
report = json.load(open(sys.argv[3]))
resumed = report["result"]["resumed_iteration"]
assert report["parameters"]["slurm_restart_count"] == 1, report["parameters"]
assert 0 < resumed < 40000 and report["result"]["iterations"] == 40000, report["result"]
assert ref.tobytes() == got.tobytes(), "fields differ"
print(f"usr1: requeued (SLURM_RESTART_COUNT 1), resumed from iteration {resumed}; the field is bitwise the uninterrupted run's")
EOF
  else
    fail "usr1: submit"
  fi
  echo "usr1: $((SECONDS - t_usr1)) s"
fi

echo "total $((SECONDS - started)) s"
if ((failed)); then exit 1; fi
echo "PASS: three hosts, jobs across them, and a node lost mid-job"
exit 0
