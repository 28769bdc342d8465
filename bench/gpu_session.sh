#!/usr/bin/env bash
# Everything that needs a GPU, in stages that each end within 10 minutes on one machine; logs, JSON
# and plots go to ${OUT:-out}/.
#
#   bench/gpu_session.sh readme-test   the README's test command, unchanged (GPU tests included)
#   bench/gpu_session.sh single        README demo; kernel benchmark; sanitizers; the multi-rank and
#                                      app tests on the cuda backend on one GPU; distributed bench
#   bench/gpu_session.sh multi         after readme-test on a machine with 2+ GPUs: README demo, the
#                                      multi-rank and app tests on the cuda backend (1 rank, then one
#                                      per GPU), the scaling study, the distributed and kernel benches
#   bench/gpu_session.sh build         configure (sm_90 only: half the compile time) and build ./build,
#                                      instead of readme-test where the time is short
#   bench/gpu_session.sh multi-tests   the first half of multi, plus the GPU tests (tessera_gpu_tests)
#   bench/gpu_session.sh multi-bench   the second half: scaling study, plots, distributed benchmark
#                                      (float and double), the exact-sum rows of the kernel benchmark
#   bench/gpu_session.sh generic       build the test and bench targets (sm_90), then the open
#                                      algorithms on the GPU: GPU tests, the multi-rank tests of the
#                                      open and the precompiled algorithms on the cuda backend (1 rank,
#                                      then 3 sharing the GPU)
#   bench/gpu_session.sh generic-check the same build, then memcheck and racecheck of the generic
#                                      passes, tessera_bench_generic, and the kernel benchmark's
#                                      reduce, scan and select rows
#   bench/gpu_session.sh build-time    the clean build time on two cores of this tree and of OLD_SRC
#   bench/gpu_session.sh generic-more  after generic on the same machine: app tests on cuda, the
#                                      install test (examples compiled by nvcc, run on the GPU), the
#                                      README demo
# Each mode ends within 10 minutes; multi = multi-tests + multi-bench may not.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${OUT:-$root/out}
mkdir -p "$out"
build=${BUILD_DIR:-$root/build}
export BUILD_DIR=$build JOBS=${JOBS:-$(nproc)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none
export NCCL_NVLS_ENABLE=0  # NVLink multicast must stay off on these shared hosts
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
log() { echo "[gpu_session $(date +%H:%M:%S)] $*"; }
status=0
step() {  # step NAME TIMEOUT COMMAND...: runs, logs to $out/NAME.log, records failure
  local name=$1 limit=$2; shift 2
  log "$name: $*"
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  log "$name: status $rc"
  tail -n "${TAIL:-15}" "$out/$name.log"
  [ $rc -eq 0 ] || status=1
}

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; cmake --version | head -1;
  mpirun --version | head -1; nvcc --version | tail -2; } >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

case "${1:-}" in
  readme-test)
    TAIL=40 step readme_test 570 bash scripts/run.sh test
    ;;
  single)
    TAIL=25 step readme_demo 120 bash scripts/run.sh demo
    step mpi_tests_cuda_np1 120 env TESSERA_TEST_BACKEND=cuda mpirun -n 1 "$build/tests/mpi/tessera_mpi_tests"
    step app_tests_cuda 200 env TESSERA_TEST_BACKEND=cuda ctest --test-dir "$build" -L apps --output-on-failure -j4
    step sanitize 150 env OUT="$out" bash bench/gpu.sh sass sanitize
    TAIL=60 step bench_kernels 280 env OUT="$out" bash bench/gpu.sh bench
    TAIL=40 step bench_distributed_np1 90 mpirun -n 1 "$build/bench/distributed/tessera_bench_distributed" \
      --backend cuda --min 16M --max 256M --matmul-min 4096 --matmul-max 8192 --iters 10 --json "$out/bench_distributed_np1.json"
    ;;
  build)
    generator=""; command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
    TAIL=5 step build 500 bash -c "cmake -S . -B '$build' $generator -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 ${CMAKE_ARGS:-} && cmake --build '$build' -j $JOBS"
    ;;
  multi | multi-tests | multi-bench)
    # After readme-test or build, on the same machine: reuses ./build.
    if [ "$1" != multi-bench ]; then
      TAIL=12 step readme_demo 100 bash scripts/run.sh demo
      step mpi_tests_cuda 150 bash -c "for np in 1 $gpus; do echo \"== \$np rank(s), one per GPU\"; TESSERA_TEST_BACKEND=cuda mpirun -n \$np '$build/tests/mpi/tessera_mpi_tests' || exit 1; done"
      # The np3 app tests share 2 GPUs (staged path): about 40 s each on 2 x H200.
      step app_tests_cuda 300 env TESSERA_TEST_BACKEND=cuda ctest --test-dir "$build" -L apps --output-on-failure -j4
      [ "$1" = multi-tests ] && TAIL=8 step gpu_tests 200 "$build/tests/gpu/tessera_gpu_tests"
    fi
    if [ "$1" != multi-tests ]; then
      for op in sum scan filter matmul; do
        # 6 to 12 rounds of 3 calls per point (the app's defaults).
        if [ $op = matmul ]; then sizes=(--n 16384 --n-per-rank 8192 --dtype float64); else sizes=(--n 2^29 --n-per-rank 2^28); fi
        TAIL=6 step "scaling_$op" 150 mpirun -n "$gpus" "$build/bin/tessera-scaling" --op $op --mode both --backend cuda \
          "${sizes[@]}" --json "$out/scaling_$op.json" --csv "$out/scaling_$op.csv"
      done
      step plots 40 bash -c "python3 jobs/gather_scaling.py $out/scaling_*.json --out $out --table $out/scaling_table.md"
      for dtype in float double; do
        TAIL=30 step "bench_distributed_$dtype" 100 mpirun -n "$gpus" "$build/bench/distributed/tessera_bench_distributed" \
          --backend cuda --dtype $dtype --min 64M --max 256M --matmul-min 8192 --matmul-max 16384 --iters 5 --warmup 2 \
          --json "$out/bench_distributed_$dtype.json"
      done
      if [ "$1" = multi ]; then
        TAIL=45 step bench_kernels 80 "$build/bench/kernels/tessera_bench_kernels" --json "$out/bench_kernels.json"
      else
        TAIL=8 step bench_kernels_exact 40 "$build/bench/kernels/tessera_bench_kernels" --ops exact,reduce --sizes 268435456
      fi
    fi
    ;;
  generic | generic-check)
    # Configure and build what these stages run (a no-op when ./build is already built).
    generator=""; command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
    TAIL=5 step build 420 bash -c "cmake -S . -B '$build' $generator -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 ${CMAKE_ARGS:-} && cmake --build '$build' -j $JOBS --target tessera_gpu_tests \
      tessera_generic_tests tessera_mpi_tests tessera_bench_generic tessera_bench_kernels"
    if [ "$1" = generic ]; then
      TAIL=25 step gpu_tests 240 "$build/tests/gpu/tessera_gpu_tests"
      step generic_cuda 200 bash -c "for np in 1 3; do echo \"== \$np rank(s)\"; TESSERA_TEST_BACKEND=cuda mpirun -n \$np '$build/tests/generic/tessera_generic_tests' || exit 1; done"
      step mpi_tests_cuda 120 bash -c "for np in 1 3; do echo \"== \$np rank(s)\"; TESSERA_TEST_BACKEND=cuda mpirun -n \$np '$build/tests/mpi/tessera_mpi_tests' || exit 1; done"
    else
      step memcheck 150 env TESSERA_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 9 \
        "$build/tests/gpu/tessera_gpu_tests" --gtest_filter='GenericGpu.*:KernelsGpu*:ScanTwoPass*'
      step racecheck 200 env TESSERA_GPU_TEST_SMALL=1 compute-sanitizer --tool racecheck --error-exitcode 9 \
        "$build/tests/gpu/tessera_gpu_tests" --gtest_filter='GenericGpu.*'
      TAIL=20 step bench_generic 120 "$build/bench/kernels/tessera_bench_generic"
      TAIL=20 step bench_kernels 150 "$build/bench/kernels/tessera_bench_kernels" --ops reduce,scan,select --sizes 268435456
    fi
    ;;
  compare-kernels)
    # The kernel benchmark's reduce, scan and select rows of this tree and of another one (OLD_SRC,
    # a source tree of an earlier revision), built alike and run in alternation, twice each: a
    # regression check on the same GPU in the same call.
    old_src=${OLD_SRC:?compare-kernels needs OLD_SRC}
    generator=""; command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
    TAIL=3 step build_old 300 bash -c "cmake -S '$old_src' -B '$old_src/build' $generator -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build '$old_src/build' -j $JOBS --target tessera_bench_kernels"
    for round in 1 2; do
      TAIL=30 step "bench_kernels_new_$round" 120 "$build/bench/kernels/tessera_bench_kernels" --ops reduce,scan,select --sizes 268435456
      TAIL=30 step "bench_kernels_old_$round" 120 "$old_src/build/bench/kernels/tessera_bench_kernels" --ops reduce,scan,select --sizes 268435456
    done
    ;;
  build-time)
    # The clean build of the README's configuration (every target, the default architectures), of
    # this tree and of another one (OLD_SRC), each on two cores of its own (taskset), side by side;
    # then the same without tests and benchmarks (the libraries and the apps), on two more pairs.
    old_src=${OLD_SRC:?build-time needs OLD_SRC}
    generator=""; command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
    timed_build() {  # timed_build CORES SOURCE NAME [CMAKE ARGS...]
      local cores=$1 src=$2 name=$3; shift 3
      local dir="$src/build-clean-$name"; rm -rf "$dir"
      local start=$(date +%s.%N)
      taskset -c "$cores" bash -c "cmake -S '$src' -B '$dir' $generator -DCMAKE_BUILD_TYPE=Release $* >/dev/null && cmake --build '$dir' -j 2" \
        >"$out/build_time_$name.log" 2>&1
      local rc=$? end=$(date +%s.%N)
      echo "$name: status $rc, $(awk "BEGIN{printf \"%.1f\", $end - $start}") s on cores $cores $*" | tee -a "$out/build_time.txt"
      # The slowest steps, from ninja's log.
      awk 'NR>1 {printf "%8.1f s  %s\n", ($2-$1)/1000, $4}' "$dir/.ninja_log" 2>/dev/null | sort -rn | head -12 >"$out/build_time_${name}_slowest.txt"
    }
    log "build-time: old ($old_src) and new ($root), each on two cores"
    lean="-DTESSERA_BUILD_TESTS=OFF -DTESSERA_BUILD_BENCH=OFF"
    timed_build 0,1 "$old_src" old & timed_build 2,3 "$root" new &
    timed_build 4,5 "$old_src" old-lean $lean & timed_build 6,7 "$root" new-lean $lean & wait
    [ "$(grep -c "status 0" "$out/build_time.txt")" = 4 ] || status=1
    ;;
  generic-more)
    cmake --build "$build" -j "$JOBS" >"$out/build_rest.log" 2>&1 || { tail -30 "$out/build_rest.log"; status=1; }
    step app_tests_cuda 300 env TESSERA_TEST_BACKEND=cuda ctest --test-dir "$build" -L apps --output-on-failure -j4
    step install_test 400 ctest --test-dir "$build" -L install --output-on-failure -j2
    TAIL=25 step readme_demo 150 bash scripts/run.sh demo
    ;;
  *)
    echo "usage: bench/gpu_session.sh readme-test|single|multi|build|multi-tests|multi-bench|generic|generic-check|compare-kernels|build-time|generic-more" >&2
    exit 2
    ;;
esac
log "done, status $status"
exit $status
