#!/usr/bin/env python3
"""The distributed benchmark's command line, as nccl-tests' is used: sizes from -b/-e/-f in bytes
per rank (K, M, G: powers of 1024), or --min/--max in elements per rank; the sizes it ran (JSON,
schema tessera-bench/2) against the list computed here; one VALID line per row and the closing
summary line with no INVALID row; --help on standard output with exit status 0; bad sizes refused
with exit status 2.

usage: test_bench_distributed.py BENCH MPIEXEC NP_FLAG [MPIEXEC_FLAGS...]
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchtest import BenchTest  # noqa: E402

bench, mpiexec, np_flag, *mpiexec_flags = sys.argv[1:]
test = BenchTest(mpiexec, np_flag, mpiexec_flags, "tessera-bench-")
work, check = test.work, test.check


def run(ranks, args):
    return test.run(ranks, bench, args, timeout=240)


def sizes_run(ranks, args, expected, dtype_bytes):
    report = os.path.join(work, f"r{len(os.listdir(work))}.json")
    status, out, err, cmd = run(ranks, [*args, "--algo", "reduce,scan", "-n", "2", "-w", "1", "--json", report])
    if not check(status == 0, f"status {status}: {cmd}\n{out}\n{err}"):
        return
    with open(report) as f:
        j = json.load(f)
    check(j["schema"] == "tessera-bench/2" and list(j) == ["schema", "benchmark", "configuration", "environment",
                                                           "rows", "summary"], f"{cmd}: report keys {list(j)}")
    results = j["rows"]
    for algo in ("reduce_sum", "inclusive_scan"):
        got = [r["elements_per_rank"] for r in results if r["algorithm"] == algo]
        check(got == expected, f"{cmd}: {algo} at {got} elements per rank, expected {expected}")
        got_bytes = [r["size_bytes"] for r in results if r["algorithm"] == algo]
        check(got_bytes == [e * dtype_bytes for e in expected], f"{cmd}: {algo} sizes {got_bytes} bytes")
    check(all(r["wrong"] == 0 and r["verdict"] == "VALID" for r in results),
          f"{cmd}: wrong values {[(r['wrong'], r['verdict']) for r in results]}")
    for r in results:
        t = r["time_s"]
        check(t["samples"] == 2 and 0 < t["min"] <= t["p50"] <= t["p95"] <= t["p99"] <= t["max"] and t["cv"] >= 0,
              f"{cmd}: time statistics {t}")
    valid = [line for line in out.splitlines() if line.startswith("VALID: tessera_bench_distributed ")]
    check(len(valid) == len(results) and "\nINVALID:" not in "\n" + out, f"{cmd}: verdict lines {valid}")
    last = [line for line in out.splitlines() if line.strip()][-1]
    check(last == f"# summary: {len(results)} rows, 0 INVALID: VALID",
          f"{cmd}: last line {last!r} is not the closing summary")


def sizes(first, last, factor):
    out = []
    while first <= last:
        out.append(first)
        first *= factor
    return out


# Bytes per rank, as nccl-tests: 1K .. 16K by 4 -> 256, 1024, 4096 floats; 128, 512, 2048 doubles.
sizes_run(2, ["-b", "1K", "-e", "16K", "-f", "4"], [b // 4 for b in sizes(1024, 16384, 4)], 4)
sizes_run(2, ["--minbytes", "1K", "--maxbytes", "16K", "--stepfactor", "4", "--dtype", "double"],
          [b // 8 for b in sizes(1024, 16384, 4)], 8)
# Elements per rank; not a power of two, and a factor of 3.
sizes_run(3, ["--min", "1000", "--max", "9000", "-f", "3"], sizes(1000, 9000, 3), 4)
# A byte count below one element still runs one element.
sizes_run(1, ["-b", "2", "-e", "8", "-f", "2"], [1, 2], 4)

status, out, err, cmd = run(1, ["--help"])
check(status == 0 and "usage:" in out and "-b" in out and err.strip() == "", f"--help: status {status}, {out!r} {err!r}")
for bad in (["-f", "1"], ["-b", "1x"], ["-b", "64K", "-e", "1K"], ["--min", "-4"], ["-e"]):
    status, out, err, cmd = run(1, bad)
    check(status == 2 and "tessera_bench_distributed:" in err, f"{' '.join(bad)}: status {status}, {err!r}")

test.finish()
print("all checks passed")
