#!/usr/bin/env bash
# A peer lost in the middle of a step, on the GPU paths that poll: two ranks of tessera-stencil on
# one GPU (CUDA IPC between them), the halo through peer copies (TESSERA_HALO=peer-copy: device
# flags waited for by stream operations) and through stores into the neighbour's ghost cells
# (TESSERA_HALO=peer-store: the same, or, in the frame-last sweep, a polling thread). Once the solve runs, rank 1 is
#   - stopped (SIGSTOP): it never sets its flags again, as a dead peer would, while the launcher,
#     which would end the job at once for a dead process, sees nothing;
#   - killed (SIGKILL), under mpirun told not to end the job for it where it can be.
# Rank 0 must exit non-zero within TESSERA_MPI_TIMEOUT + 5 s of the fault, with a line naming
# rank 1 (the MPI watchdog's "waiting for rank 1", or a device wait's "rank 1's flags").
#
# usage: tests/gpu/peer_loss_gpu.sh BIN_DIR [OUT_DIR]
#   BIN_DIR: a CUDA build's bin/ (tessera-stencil); Open MPI's mpiexec on PATH; one GPU is enough.
# Exit 0: every case passed; 1: a case failed (its log is printed); 77: no GPU.
set -uo pipefail

bin=${1:?usage: peer_loss_gpu.sh BIN_DIR [OUT_DIR]}
out=${2:-$(mktemp -d /tmp/tessera-peer-loss.XXXXXX)}
mkdir -p "$out"
app=$bin/tessera-stencil
[[ -x $app ]] || { echo "FAIL: $app is not an executable"; exit 1; }
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }

timeout_s=10
bound=$((timeout_s + 5))
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
export TESSERA_MPI_TIMEOUT=$timeout_s
failed=0

# rank_pid LAUNCHER_PID RANK: the PID of that rank among the launcher's descendants.
rank_pid() {
  local root=$1 rank=$2 pid
  for pid in $(pgrep -f "$app"); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$rank" && { echo "$pid"; return 0; }
  done
  return 1
}

# case PATH FAULT
run_case() {
  local path=$1 fault=$2 name="$1-$2" log="$out/$1-$2.log"
  local extra=()
  [[ $fault == kill ]] && extra=(--mca orte_abort_on_non_zero_status 0)
  TESSERA_HALO=$path mpiexec -n 2 --oversubscribe "${extra[@]}" "$app" --backend cuda --op jacobi9 --dtype float32 \
    --nx 8192 --ny 8192 --iters 100000000 --check-every 1000000 --quiet >"$log" 2>&1 &
  local launcher=$!
  local r0="" r1="" _
  for _ in $(seq 1 120); do
    r0=$(rank_pid "$launcher" 0) && r1=$(rank_pid "$launcher" 1) && break
    sleep 0.25
  done
  if [[ -z $r0 || -z $r1 ]]; then
    echo "FAIL $name: the two ranks did not start"; tail -n 20 "$log"; failed=1
    kill -KILL "$launcher" 2>/dev/null; wait "$launcher" 2>/dev/null; return
  fi
  sleep 8  # well inside the solve (the halo path is set up in the first iteration)
  if ! kill -0 "$r0" 2>/dev/null; then
    echo "FAIL $name: rank 0 ended before the fault"; tail -n 20 "$log"; failed=1; wait "$launcher"; return
  fi
  local t0=$SECONDS
  if [[ $fault == stop ]]; then kill -STOP "$r1"; else kill -KILL "$r1"; fi
  while kill -0 "$r0" 2>/dev/null && ((SECONDS - t0 <= bound + 10)); do sleep 0.2; done
  local took=$((SECONDS - t0))
  kill -0 "$r0" 2>/dev/null && { kill -KILL "$r0"; echo "FAIL $name: rank 0 still running $took s after the fault"; failed=1; }
  kill -KILL "$r1" 2>/dev/null
  kill -CONT "$r1" 2>/dev/null
  # The launcher ends once both ranks have; where it does not (Open MPI told not to abort for a
  # killed rank can wait on), it is ended here: what is checked is rank 0's exit.
  local _w
  for _w in $(seq 1 50); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$launcher" 2>/dev/null; then
    echo "$name: the launcher was still running 10 s after both ranks ended; ended here"
    pkill -KILL -P "$launcher" 2>/dev/null
    kill -KILL "$launcher" 2>/dev/null
  fi
  wait "$launcher"
  local status=$?
  echo "$name: rank 0 ended $took s after the fault (bound $bound s); mpiexec status $status"
  ((took <= bound)) || { echo "FAIL $name: $took s > $bound s"; failed=1; }
  ((status != 0)) || { echo "FAIL $name: status 0"; failed=1; }
  if ! grep -qE "waiting for rank 1|rank 1's flags|rank 1 \(or its node\)" "$log"; then
    # A dead process is seen by Open MPI itself first (its own line names the rank's process).
    if [[ $fault == kill ]] && grep -qE "rank 1|process rank 1|\[\[[0-9]+,1\],1\]" "$log"; then
      echo "$name: the launcher named the killed rank first"
    else
      echo "FAIL $name: no line names rank 1"; failed=1
    fi
  fi
  grep -E "tessera: |rank 1" "$log" | head -n 4 | sed "s/^/  $name: /"
}

for path in peer-copy peer-store; do
  for fault in stop kill; do run_case "$path" "$fault"; done
done
echo "logs in $out"
((failed)) && { echo "FAIL"; exit 1; }
echo "PASS: rank 0 ended within $bound s of losing rank 1 on the peer-copy and peer-store paths"
