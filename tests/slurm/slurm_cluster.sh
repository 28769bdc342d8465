#!/usr/bin/env bash
# A throw-away single-node Slurm cluster (munged, slurmctld, slurmd) whose configuration, state,
# sockets and logs all live in one temporary directory. Sourced by run_slurm_jobs.sh:
#   slurm_cluster_start DIR   -> exports SLURM_CONF, starts the daemons, waits for the node (or returns 77)
#   slurm_cluster_stop        -> stops the daemons by PID (safe to call twice; trap it)
# Nothing here touches the system's own /etc/slurm or /etc/munge, nor any daemon it did not start.
# Return 77 means "cannot run Slurm here" (ctest SKIP_RETURN_CODE), with the reason on stderr.

SLURM_CLUSTER_PIDS=()
SLURM_CLUSTER_DIR=""

_slurm_skip() {
  echo "SKIP: $*" >&2
  return 77
}

# Waits up to $1 seconds for the command in $2.. to succeed.
_slurm_wait_for() {
  local seconds=$1
  shift
  local deadline=$((SECONDS + seconds))
  while ((SECONDS < deadline)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  return 1
}

_slurm_port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

slurm_cluster_start() {
  local dir=$1
  SLURM_CLUSTER_DIR=$dir
  local tool
  for tool in munged slurmctld slurmd sbatch sinfo scontrol srun; do
    command -v "$tool" >/dev/null 2>&1 ||
      { _slurm_skip "'$tool' not found (install Debian packages: slurmctld slurmd slurm-client munge libpmix2)"; return 77; }
  done
  # SlurmUser=root below: the daemons must run as root, as in the CI set-ups this follows.
  [[ $(id -u) -eq 0 ]] || { _slurm_skip "a private Slurm needs root here (running as $(id -un))"; return 77; }

  mkdir -p "$dir"/{munge,state,spool,log,run}
  chmod 700 "$dir/munge"
  local host
  host=$(hostname -s)

  # munge: a fresh key and a private socket, so that no system munged is needed or disturbed.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 status=none
  chmod 400 "$dir/munge/munge.key"
  munged -f --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munge.seed" >"$dir/log/munged.out" 2>&1 ||
    { _slurm_skip "munged did not start: $(tail -n 3 "$dir/log/munged.out" "$dir/log/munged.log" 2>/dev/null | tr '\n' ' ')"; return 77; }
  _slurm_wait_for 10 test -s "$dir/munge/munged.pid" || { _slurm_skip "munged wrote no pid file"; return 77; }
  SLURM_CLUSTER_PIDS+=("$(cat "$dir/munge/munged.pid")")

  # Ports of our own, so that a second cluster (or a real one) on this host does not collide.
  local ctld_port=$((20000 + ($$ * 7) % 20000)) slurmd_port
  while ! _slurm_port_free "$ctld_port" || ! _slurm_port_free $((ctld_port + 1)); do ctld_port=$((ctld_port + 2)); done
  slurmd_port=$((ctld_port + 1))

  # Four fake GPUs: existing device files, so that Slurm's gres plugin accepts them and hands each
  # task of a --gpus-per-task=1 job a different CUDA_VISIBLE_DEVICES.
  cat >"$dir/gres.conf" <<EOF
NodeName=$host Name=gpu File=/dev/null
NodeName=$host Name=gpu File=/dev/zero
NodeName=$host Name=gpu File=/dev/full
NodeName=$host Name=gpu File=/dev/random
EOF
  # cgroup-free plugins (no cgroup mount needed); config_overrides lets the node claim 8 CPUs
  # on a 2-core machine, so that 4-task jobs fit.
  cat >"$dir/slurm.conf" <<EOF
ClusterName=tessera-test
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdParameters=config_overrides
GresTypes=gpu
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$host CPUs=8 RealMemory=4000 Gres=gpu:4 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  export SLURM_CONF=$dir/slurm.conf

  # -D keeps each daemon in the foreground of its background job, so $! is the daemon's PID.
  slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
  SLURM_CLUSTER_PIDS+=("$!")
  _slurm_wait_for 20 scontrol ping ||
    { _slurm_skip "slurmctld did not answer: $(tail -n 5 "$dir/log/slurmctld.log" "$dir/log/slurmctld.out" 2>/dev/null | tr '\n' ' ')"; return 77; }
  slurmd -D -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
  SLURM_CLUSTER_PIDS+=("$!")
  _slurm_node_idle() { sinfo -h -N -o '%T' | grep -qE '^(idle|mixed)'; }
  _slurm_wait_for 30 _slurm_node_idle ||
    { _slurm_skip "the node did not come up idle ($(sinfo -h -N -o '%T %E' 2>&1)): $(tail -n 5 "$dir/log/slurmd.log" "$dir/log/slurmd.out" 2>/dev/null | tr '\n' ' ')"; return 77; }
  return 0
}

slurm_cluster_stop() {
  local pid
  # Reverse order: slurmd, slurmctld, then munged (the others authenticate through it).
  for ((i = ${#SLURM_CLUSTER_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${SLURM_CLUSTER_PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 1 20); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
  SLURM_CLUSTER_PIDS=()
}
