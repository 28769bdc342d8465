#!/usr/bin/env bash
# A throw-away Slurm cluster of several hosts on one machine: one network namespace per host, joined
# by veth pairs to a Linux bridge, munged and slurmctld in the root namespace, one slurmd per host.
# Configuration, state, logs and every node's spool live in one directory. Sourced by
# run_multinode_jobs.sh:
#   netns_cluster_start DIR NODES GPUS_PER_NODE  -> exports SLURM_CONF, starts everything, waits
#                                                   until every node is idle (77: cannot run here)
#   netns_cluster_stop                           -> stops every process it started or that runs in
#                                                   its namespaces (by PID), deletes the namespaces,
#                                                   veths and bridge; safe to call twice (trap it)
#   netns_cluster_node_pids NODE                 -> PIDs of the processes inside NODE's namespace
#   netns_cluster_shape RATE [DELAY] / _unshape  -> a slower inter-node link (tc on the veth pairs)
# NETNS_CLUSTER_NODES holds the node names, NETNS_CLUSTER_SUBNET the hosts' /24.
#
# What a host needs, and why (each learnt the hard way; see also ../../../shared/SLURM.md):
#  - Its own network namespace with lo up and one address on the bridge's /24 (10.X.Y.11, .12,
#    ...); the bridge itself holds .1 in the root namespace, where slurmctld listens
#    (SlurmctldHost=NAME(10.X.Y.1)). Every slurmd listens on the same port, each in its namespace.
#  - Entered with `nsenter --net=/run/netns/NS`, never `ip netns exec`: the latter remounts /sys
#    and hides the cgroup mounts, and slurmd then refuses to start.
#  - Its own hostname (a UTS namespace; `slurmd -N NAME`; NodeName = NodeHostname = NAME,
#    NodeAddr = its address). The ranks report gethostname(), Open MPI's mpirun finds the node it
#    runs on by name, and Open MPI's shared-memory segments and session directories are named after
#    the host: with one hostname on every host, two "nodes" pick the same /dev/shm segment and the
#    first collective crashes. The names carry a per-run tag, so two clusters on one machine never
#    share such a path.
#  - Its own mount namespace with a private /dev/shm (a tmpfs that vanishes with the host: ranks
#    killed in the fault tests leave no segments behind) and its own /etc/hosts naming every host,
#    so that a host name resolves to the host's address inside every namespace.
#  - A per-node TmpFS (TmpFS=DIR/nodes/%n/tmp): Slurm's pmix plugin creates spmix_appdir_* under
#    TmpFS on every node of a step, and with one /tmp for all nodes the second node fails with
#    "File exists". SlurmdSpoolDir, pid and log files carry %n for the same reason.
#  - MPI over the namespaces: Open MPI's TCP BTL and its out-of-band channel (mpirun <-> orted)
#    and PMIx's connections use the interfaces a process sees, i.e. the namespace's lo and its
#    bridge address; TCP leaves loopback out by default. run_multinode_jobs.sh still names the /24
#    (OMPI_MCA_btl_tcp_if_include, OMPI_MCA_oob_tcp_if_include) so that nothing picks another
#    route. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups ranks by the node Slurm/PMIx says they
#    run on, so ranks on different namespaces use TCP, ranks on one use shared memory.
# Nothing here touches the system's own /etc/slurm, /etc/munge, interfaces or daemons.

NETNS_CLUSTER_PIDS=()    # munged, slurmctld, then one slurmd per node (stop order: reversed)
NETNS_CLUSTER_NODES=()
NETNS_CLUSTER_NS=()      # namespace of each node
NETNS_CLUSTER_VETH=()    # root-side veth of each node
NETNS_CLUSTER_BRIDGE=""
NETNS_CLUSTER_SUBNET=""  # 10.X.Y (the /24 without its last octet)
NETNS_CLUSTER_DIR=""
NETNS_CLUSTER_SLURMD_PID=()  # per node index

_netns_skip() {
  echo "SKIP: $*" >&2
  return 77
}

_netns_wait_for() {  # _netns_wait_for SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  while ((SECONDS < deadline)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  return 1
}

_netns_port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A tag no namespace or link of this machine uses yet, and a /24 no route of it covers.
_netns_pick_names() {
  local tag try
  for try in $(seq 1 50); do
    tag=$(printf '%04x' $(((RANDOM * 32768 + RANDOM + $$) % 65536)))
    if ! ip link show "tsb$tag" >/dev/null 2>&1 && [[ ! -e /run/netns/tessera-$tag-1 ]]; then break; fi
  done
  NETNS_CLUSTER_TAG=$tag
  local routes second third
  routes=$(ip -4 route show table all 2>/dev/null)
  for try in $(seq 1 50); do
    second=$((200 + RANDOM % 50))
    third=$((RANDOM % 256))
    if ! grep -q "10\.$second\.$third\." <<<"$routes" && ! ip -4 addr | grep -q "inet 10\.$second\.$third\."; then
      NETNS_CLUSTER_SUBNET=10.$second.$third
      return 0
    fi
  done
  return 1
}

# netns_cluster_start DIR NODES GPUS_PER_NODE
netns_cluster_start() {
  local dir=$1 nodes=$2 gpus=$3
  NETNS_CLUSTER_DIR=$dir
  local tool
  for tool in ip nsenter unshare mount hostname munged slurmctld slurmd sbatch sinfo scontrol srun squeue; do
    command -v "$tool" >/dev/null 2>&1 ||
      { _netns_skip "'$tool' not found (packages: iproute2 util-linux slurmctld slurmd slurm-client munge)"; return 77; }
  done
  [[ $(id -u) -eq 0 ]] || { _netns_skip "network namespaces and a private Slurm need root (running as $(id -un))"; return 77; }
  _netns_pick_names || { _netns_skip "no free 10.x.y.0/24 for the test hosts"; return 77; }
  local tag=$NETNS_CLUSTER_TAG
  mkdir -p "$dir"/{munge,state,log,run}
  chmod 700 "$dir/munge"

  # ---- hosts: a bridge, one namespace + veth pair per node ----
  local bridge=tsb$tag
  ip link add "$bridge" type bridge 2>"$dir/log/ip.err" ||
    { _netns_skip "cannot create a bridge: $(cat "$dir/log/ip.err")"; return 77; }
  NETNS_CLUSTER_BRIDGE=$bridge
  ip addr add "$NETNS_CLUSTER_SUBNET.1/24" dev "$bridge" && ip link set "$bridge" up ||
    { _netns_skip "cannot configure bridge $bridge"; return 77; }
  local hosts="$dir/hosts" i name ns veth
  printf '127.0.0.1 localhost\n%s.1 %s\n' "$NETNS_CLUSTER_SUBNET" "$(hostname -s)" >"$hosts"
  for ((i = 1; i <= nodes; i++)); do
    name=t${tag}n$i
    ns=tessera-$tag-$i
    veth=tsv${tag}n$i
    ip netns add "$ns" 2>"$dir/log/ip.err" ||
      { _netns_skip "cannot create network namespace: $(cat "$dir/log/ip.err")"; return 77; }
    NETNS_CLUSTER_NS+=("$ns")
    ip link add "$veth" type veth peer name "tsp${tag}n$i" 2>"$dir/log/ip.err" ||
      { _netns_skip "cannot create a veth pair: $(cat "$dir/log/ip.err")"; return 77; }
    NETNS_CLUSTER_VETH+=("$veth")
    if ! { ip link set "tsp${tag}n$i" netns "$ns" &&
      ip -n "$ns" link set "tsp${tag}n$i" name eth0 &&
      ip -n "$ns" addr add "$NETNS_CLUSTER_SUBNET.$((10 + i))/24" dev eth0 &&
      ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up &&
      ip link set "$veth" master "$bridge" && ip link set "$veth" up; } 2>"$dir/log/ip.err"; then
      _netns_skip "cannot wire namespace $ns: $(cat "$dir/log/ip.err")"
      return 77
    fi
    NETNS_CLUSTER_NODES+=("$name")
    echo "$NETNS_CLUSTER_SUBNET.$((10 + i)) $name" >>"$hosts"
    mkdir -p "$dir/nodes/$name"/{spool,tmp}
  done
  # ---- munge: a fresh key, a private socket (reachable from every namespace: it is a file) ----
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 status=none
  chmod 400 "$dir/munge/munge.key"
  munged -f --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munge.seed" >"$dir/log/munged.out" 2>&1 ||
    { _netns_skip "munged did not start: $(tail -n 3 "$dir/log/munged.out" 2>/dev/null | tr '\n' ' ')"; return 77; }
  _netns_wait_for 10 test -s "$dir/munge/munged.pid" || { _netns_skip "munged wrote no pid file"; return 77; }
  NETNS_CLUSTER_PIDS+=("$(cat "$dir/munge/munged.pid")")

  local ctld_port=$((20000 + ($$ * 11) % 20000))
  while ! _netns_port_free "$ctld_port"; do ctld_port=$((ctld_port + 1)); done

  # Fake GPUs: existing device files, one per GPU, the same on every node (each node's GPU i is
  # that node's own: (host, gpu) is what identifies a physical GPU).
  local files=(/dev/null /dev/zero /dev/full /dev/random /dev/urandom) g
  : >"$dir/gres.conf"
  for ((g = 0; g < gpus; g++)); do echo "Name=gpu File=${files[g]}" >>"$dir/gres.conf"; done
  local node_lines="" first=${NETNS_CLUSTER_NODES[0]}
  for ((i = 1; i <= nodes; i++)); do
    name=${NETNS_CLUSTER_NODES[i - 1]}
    node_lines+="NodeName=$name NodeAddr=$NETNS_CLUSTER_SUBNET.$((10 + i)) NodeHostname=$name CPUs=$((2 * gpus)) RealMemory=4000 Gres=gpu:$gpus State=UNKNOWN"$'\n'
  done
  # SlurmdTimeout, MessageTimeout: a node whose slurmd stops answering is DOWN (its jobs end
  # NODE_FAIL) once a ping has failed (a connect that is refused is retried for MessageTimeout)
  # and SlurmdTimeout has passed: about 10-25 s here, against minutes with the defaults (300 s,
  # 10 s). Too short for a loaded real cluster. KillWait: seconds from SIGTERM to SIGKILL when a
  # step is ended.
  cat >"$dir/slurm.conf" <<EOF
ClusterName=tessera-mn$tag
SlurmctldHost=$(hostname -s)($NETNS_CLUSTER_SUBNET.1)
SlurmctldPort=$ctld_port
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/nodes/%n/spool
TmpFS=$dir/nodes/%n/tmp
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/nodes/%n/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/nodes/%n/slurmd.log
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
SlurmdTimeout=${NETNS_CLUSTER_SLURMD_TIMEOUT:-5}
InactiveLimit=0
MessageTimeout=${NETNS_CLUSTER_MESSAGE_TIMEOUT:-5}
KillWait=5
MinJobAge=600
${node_lines}PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  # srun --mpi=pmix across hosts, 6 ranks on 2 cores: with the pmix plugin's default fence about
  # one step in twenty crashed in MPI_Init (a rank's attach to a node-local peer's shared memory
  # failed with ENOENT, the pair fell back to TCP, and Open MPI's TCP transport called a null
  # handler); with the tree fence (PMIxCollFence=tree, or SLURM_PMIX_FENCE=tree in the job) one in
  # sixty; with that and every peer added in MPI_Init rather than on first use
  # (OMPI_MCA_mpi_add_procs_cutoff, set by run_multinode_jobs.sh) none in 300.
  echo "${NETNS_CLUSTER_MPI_CONF:-PMIxCollFence=tree}" >"$dir/mpi.conf"
  export SLURM_CONF=$dir/slurm.conf

  slurmctld -D -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
  NETNS_CLUSTER_PIDS+=("$!")
  if ! _netns_wait_for 20 scontrol ping; then
    echo "FAIL: slurmctld did not answer: $(tail -n 5 "$dir/log/slurmctld.log" "$dir/log/slurmctld.out" 2>/dev/null | tr '\n' ' ')" >&2
    return 1
  fi
  # Every host must reach slurmctld through the bridge (a kernel that filters bridged traffic would
  # not let it).
  for ns in "${NETNS_CLUSTER_NS[@]}"; do
    _netns_wait_for 10 nsenter --net="/run/netns/$ns" bash -c "exec 3<>/dev/tcp/$NETNS_CLUSTER_SUBNET.1/$ctld_port" ||
      { _netns_skip "namespace $ns cannot reach $NETNS_CLUSTER_SUBNET.1:$ctld_port through the bridge"; return 77; }
  done
  for ((i = 0; i < nodes; i++)); do netns_cluster_start_slurmd "$i" || return 1; done
  _netns_all_idle() { [[ $(sinfo -h -N -o '%T' | grep -cE '^(idle|mixed)') -eq $nodes ]]; }
  if ! _netns_wait_for 60 _netns_all_idle; then
    echo "FAIL: not all nodes came up idle: $(sinfo -h -N -o '%N %T %E' 2>&1 | tr '\n' ';')" >&2
    return 1
  fi
  return 0
}

# Starts (or restarts) the slurmd of node index I (0-based) inside that node's namespaces.
netns_cluster_start_slurmd() {
  local i=$1 dir=$NETNS_CLUSTER_DIR
  local name=${NETNS_CLUSTER_NODES[i]} ns=${NETNS_CLUSTER_NS[i]}
  # nsenter and unshare exec (no fork) and the shell execs slurmd: $! is slurmd's PID.
  nsenter --net="/run/netns/$ns" -- unshare --mount --uts --propagation private -- /bin/sh -c '
      hostname "$1" && mount --bind "$2" /etc/hosts &&
      mount -t tmpfs -o size=512m,mode=1777 tessera-shm /dev/shm &&
      exec "$3" -D -N "$1" -f "$4"' slurmd-host "$name" "$dir/hosts" "$(command -v slurmd)" "$SLURM_CONF" \
    >"$dir/nodes/$name/slurmd.out" 2>&1 &
  NETNS_CLUSTER_SLURMD_PID[i]=$!
  NETNS_CLUSTER_PIDS+=("$!")
}

# Stops the slurmd of node index I (its steps, and the tasks they run, go on: slurmstepd is a
# separate process).
netns_cluster_stop_slurmd() {
  local pid=${NETNS_CLUSTER_SLURMD_PID[$1]}
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

netns_cluster_node_pids() {  # netns_cluster_node_pids NODE_NAME
  local i
  for i in "${!NETNS_CLUSTER_NODES[@]}"; do
    [[ ${NETNS_CLUSTER_NODES[i]} == "$1" ]] && ip netns pids "${NETNS_CLUSTER_NS[i]}" 2>/dev/null
  done
}

_netns_stop_pid() {
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 20); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.25
  done
  kill -KILL "$pid" 2>/dev/null
  return 0
}

# A slower link between the hosts, on both ends of every veth pair (so that traffic between two
# hosts is limited both ways; ranks within a host talk through shared memory and are not slowed):
#   netns_cluster_shape RATE [DELAY]   e.g. 200mbit 500us
# With DELAY, netem adds that one-way delay and the rate limit; a kernel without netem (this
# machine's has none) gets the rate limit alone from a token bucket (tbf). Sets
# NETNS_CLUSTER_SHAPING to what was applied ("netem delay 500us rate 200mbit" or "tbf rate 200mbit").
netns_cluster_shape() {
  local rate=$1 delay=${2:-} i qdisc
  qdisc=(tbf rate "$rate" burst 32kb limit 8mb)
  NETNS_CLUSTER_SHAPING="tbf rate $rate"
  if [[ -n $delay ]] && tc qdisc replace dev "${NETNS_CLUSTER_VETH[0]}" root netem delay "$delay" rate "$rate" limit 10000 \
    2>/dev/null; then
    qdisc=(netem delay "$delay" rate "$rate" limit 10000)
    NETNS_CLUSTER_SHAPING="netem delay $delay rate $rate"
  fi
  for i in "${!NETNS_CLUSTER_NS[@]}"; do
    tc qdisc replace dev "${NETNS_CLUSTER_VETH[i]}" root "${qdisc[@]}" || return 1
    nsenter --net="/run/netns/${NETNS_CLUSTER_NS[i]}" tc qdisc replace dev eth0 root "${qdisc[@]}" || return 1
  done
}

netns_cluster_unshape() {
  local i
  for i in "${!NETNS_CLUSTER_NS[@]}"; do
    tc qdisc del dev "${NETNS_CLUSTER_VETH[i]}" root 2>/dev/null
    nsenter --net="/run/netns/${NETNS_CLUSTER_NS[i]}" tc qdisc del dev eth0 root 2>/dev/null
  done
  return 0
}

netns_cluster_stop() {
  local i pid pids
  # Whatever runs in the namespaces (slurmd, slurmstepd, ranks, orted): ours, by construction.
  for i in "${!NETNS_CLUSTER_NS[@]}"; do
    pids=$(ip netns pids "${NETNS_CLUSTER_NS[i]}" 2>/dev/null)
    for pid in $pids; do kill -TERM "$pid" 2>/dev/null; done
  done
  for ((i = ${#NETNS_CLUSTER_PIDS[@]} - 1; i >= 0; i--)); do _netns_stop_pid "${NETNS_CLUSTER_PIDS[i]}"; done
  for i in "${!NETNS_CLUSTER_NS[@]}"; do
    for pid in $(ip netns pids "${NETNS_CLUSTER_NS[i]}" 2>/dev/null); do _netns_stop_pid "$pid"; done
  done
  NETNS_CLUSTER_PIDS=()
  # Deleting a namespace deletes the veth end inside it, and with it the pair.
  for i in "${!NETNS_CLUSTER_NS[@]}"; do
    ip netns del "${NETNS_CLUSTER_NS[i]}" 2>/dev/null
    ip link del "${NETNS_CLUSTER_VETH[i]}" 2>/dev/null
  done
  NETNS_CLUSTER_NS=()
  NETNS_CLUSTER_VETH=()
  [[ -n $NETNS_CLUSTER_BRIDGE ]] && ip link del "$NETNS_CLUSTER_BRIDGE" 2>/dev/null
  NETNS_CLUSTER_BRIDGE=""
  return 0
}
