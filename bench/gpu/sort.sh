#!/usr/bin/env bash
# The sort's GPU run: the radix sort's GPU tests against the CPU backend, compute-sanitizer
# (memcheck, racecheck) at small sizes, the benchmark against cub::DeviceRadixSort with a profile
# of both sorts' kernels (ncu), the distributed sort's tests on the cuda backend (1 and 3 ranks
# sharing the GPU), the sort app, and the distributed sort's benchmark per step. A summary goes to
# stdout; full logs to ${OUT:-out}/sort/.
#
#   bash bench/gpu/sort.sh <build-dir>
#   SORT_STEPS="tests bench" bash bench/gpu/sort.sh <build-dir>     (a subset, in this order)
set -uo pipefail

BUILD_DIR="$(cd "${1:?usage: bench/gpu/sort.sh <build-dir>}" && pwd)"
DEFAULT_STEPS="tests sanitize bench study profile mpi distributed"
# shellcheck source=bench/gpu/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_run_init sort

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader || true
TESTS="${BUILD_DIR}/tests/gpu/tessera_gpu_sort_tests"
BENCH="${BUILD_DIR}/bench/kernels/tessera_bench_sort"

if wants tests; then
  step gpu_sort_tests 200 env OMP_NUM_THREADS=16 "${TESTS}" --gtest_filter="${SORT_TEST_FILTER:--*Huge*}"
  grep -E "PASSED|FAILED|SKIPPED|OK .*(Large|Huge)|tests ran" "${OUT_DIR}/gpu_sort_tests.log" || true
fi

if wants sanitize; then
  step memcheck 40 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "${TESTS}" --gtest_filter='-*Large*:*Huge*'
  tail -2 "${OUT_DIR}/memcheck.log"
  step racecheck 120 env TESSERA_GPU_TEST_SMALL=1 OMP_NUM_THREADS=16 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "${TESTS}" --gtest_filter='SortGpu/4.Keys*:SortGpuValues.*'
  tail -2 "${OUT_DIR}/racecheck.log"
fi

if wants bench; then
  step bench_sort 60 "${BENCH}" --sizes 67108864,268435456 --json "${OUT_DIR}/bench_sort.json"
  cat "${OUT_DIR}/bench_sort.log"
fi

if wants study; then
  step bench_sort_study 45 "${BENCH}" --study --sizes 268435456 --reps 10 --warmup 2
  grep -E "^study" "${OUT_DIR}/bench_sort_study.log"
fi

if wants profile; then
  # Our kernels and CUB's for one sort of 2^26 uint32 keys and of 2^26 (uint32, uint32) pairs: the
  # first five matching launches of each sort are ours (histogram, 4 places), the next five CUB's.
  metrics=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active
  metrics+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__occupancy_limit_registers
  metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__cycles_active.avg
  for stall in barrier long_scoreboard short_scoreboard mio_throttle lg_throttle membar wait math_pipe_throttle no_instruction; do
    metrics+=,smsp__average_warps_issue_stalled_${stall}_per_issue_active.ratio
  done
  for row in keys-uint32 keys-int32; do
    step "ncu_${row}" 60 ncu --csv --kernel-name regex:'onesweep|Onesweep|radix_histogram|HistogramKernel' --launch-count 10 \
      --metrics "${metrics}" "${BENCH}" --only "${row}" --sizes 67108864 --reps 1 --warmup 0
    python3 - "${OUT_DIR}/ncu_${row}.log" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1], errors="replace")) if len(r) > 10]
if not rows:
    print("no ncu rows"); sys.exit()
head = rows[0]
k_id, k_name, k_metric, k_value = head.index("ID"), head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
table = {}
for r in rows[1:]:
    name = r[k_name]
    short = ("cub " if "cub" in name.lower() else "ours ") + ("onesweep" if "nesweep" in name else "histogram")
    table.setdefault((int(r[k_id]), short), {})[r[k_metric].replace("smsp__average_warps_issue_stalled_", "stall_").replace("_per_issue_active.ratio", "")] = r[k_value]
metrics = sorted({m for v in table.values() for m in v})
print("id kernel " + " ".join(metrics))
for (i, short), v in sorted(table.items()):
    print(f"{i} {short.replace(' ', '_')} " + " ".join(v.get(m, "-").replace(",", "") for m in metrics))
PY
  done
fi

if wants mpi; then
  for np in 1 3; do
    step "mpi_sort_np${np}" 60 env TESSERA_TEST_BACKEND=cuda OMP_NUM_THREADS=4 mpirun -n "${np}" \
      "${BUILD_DIR}/tests/mpi/tessera_mpi_tests" --gtest_filter='DistSort*'
    grep -E "PASSED|FAILED|tests ran|tessera tests" "${OUT_DIR}/mpi_sort_np${np}.log" | head -5
  done
fi

if wants app; then
  APP="${BUILD_DIR}/bin/tessera-sort"
  for np in 1 3; do
    for dist in uniform all-equal; do
      step "app_np${np}_${dist}" 60 mpirun -n "${np}" "${APP}" --backend cuda --n 50000017 --dtype float32 \
        --distribution "${dist}" --values --verify --repeat 3 --warmup 1
      grep -E "ran on|sort steps|result|verified|time  " "${OUT_DIR}/app_np${np}_${dist}.log"
    done
  done
fi

if wants distributed; then
  DIST="${BUILD_DIR}/bench/distributed/tessera_bench_sort_distributed"
  step dist_np1 60 mpirun -n 1 "${DIST}" --backend cuda --types int32,float,int64 --min 64M --max 256M -f 4 -n 5 -w 2 \
    --json "${OUT_DIR}/dist_np1.json"
  cat "${OUT_DIR}/dist_np1.log"
  step dist_np3 60 mpirun -n 3 "${DIST}" --backend cuda --types int32,double --min 16M --max 16M -n 3 -w 1 \
    --json "${OUT_DIR}/dist_np3.json"
  cat "${OUT_DIR}/dist_np3.log"
fi

log "done, status ${STATUS}"
exit "${STATUS}"
