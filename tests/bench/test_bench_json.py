#!/usr/bin/env python3
"""The --json reports (schema tessera-bench/2) of the distributed sort and stencil benchmarks on the
cpu backend, 3 ranks: the keys of the report, its configuration and environment, and of each row,
one row per size (and type and op), the sizes and the grid against the command line, the checks
passed (VALID in the row and on its verdict line), the time statistics ordered, the times positive
and the rates consistent with them;
an existing report replaced whole with no temporary file left; a --json destination that cannot be
written refused with one line naming --json and exit status 2, before the work (a missing
directory, a directory) or after it (a device that refuses the bytes), leaving no file behind.

usage: test_bench_json.py SORT_BENCH STENCIL_BENCH MPIEXEC NP_FLAG [MPIEXEC_FLAGS...]
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchtest import BenchTest  # noqa: E402

sort_bench, stencil_bench, mpiexec, np_flag, *mpiexec_flags = sys.argv[1:]
RANKS = 3
test = BenchTest(mpiexec, np_flag, mpiexec_flags, "tessera-bench-json-")
work, check = test.work, test.check


def run(bench, args):
    return test.run(RANKS, bench, args, timeout=120)


def positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


HARNESS_ROW_KEYS = ["time_s", "share", "verdict"]


def check_v2(name, j, out, iters):
    """The parts of a tessera-bench/2 report that the harness writes."""
    check(list(j) == ["schema", "benchmark", "configuration", "environment", "rows", "summary"],
          f"{name}: top-level keys {list(j)}")
    check(j["schema"] == "tessera-bench/2" and j["benchmark"] == name, f"{name}: {j['schema']!r} {j['benchmark']!r}")
    c, e = j["configuration"], j["environment"]
    check(c["iters"] == iters and c["ranks"] == RANKS and c["command"].split()[0].endswith(name) and
          "--json" in c["options"], f"{name}: configuration {c}")
    check(all(k in e for k in ("tessera", "revision", "mpi", "hdf5", "cuda_runtime", "cuda_driver", "nccl", "devices",
                               "timestamp")) and e["devices"] == [{"name": "cpu", "sms": None, "memory_gib": None}] and
          e["mpi"] and e["hdf5"], f"{name}: environment {e}")
    for r in j["rows"]:
        t = r["time_s"]
        check(t["samples"] == iters and 0 < t["min"] <= t["p50"] <= t["p95"] <= t["p99"] <= t["max"] and
              t["min"] <= t["mean"] <= t["max"] and t["cv"] >= 0 and r["verdict"] == "VALID", f"{name}: row {r}")
    lines = [line for line in out.splitlines() if line.startswith(("VALID:", "INVALID:"))]
    check(len(lines) == len(j["rows"]) and all(line.startswith(f"VALID: {name} ") for line in lines),
          f"{name}: verdict lines {lines}")
    check(j["summary"] == {"rows": len(j["rows"]), "invalid": 0, "verdict": "VALID"} and
          out.rstrip().splitlines()[-1] == f"# summary: {len(j['rows'])} rows, 0 INVALID: VALID",
          f"{name}: summary {j['summary']}, last line {out.rstrip().splitlines()[-1]!r}")


# The sort: 33, 132 and 528 keys per rank (by 4 up to 600), two key types, keys and argsort.
report = os.path.join(work, "sort.json")
with open(report, "w") as f:
    f.write("an older report")
status, out, err, cmd = run(sort_bench, ["--min", "33", "--max", "600", "-f", "4", "-n", "2", "-w", "1",
                                         "--types", "int32,double", "--json", report])
if check(status == 0, f"status {status}: {cmd}\n{out}\n{err}"):
    with open(report) as f:
        j = json.load(f)
    check_v2("tessera_bench_sort_distributed", j, out, 2)
    expected = [(t, op, n) for t in ("int32", "double") for n in (33, 132, 528) for op in ("keys", "argsort")]
    got = [(r["type"], r["op"], r["per_rank"]) for r in j["rows"]]
    check(got == expected, f"sort: rows {got}, expected {expected}")
    keys = ["type", "op", "per_rank", "global", "total_s", "gkeys_per_s", "local_sort_s", "splitters_s",
            "exchange_s", "merge_s", "local_alone_s", "exchange_gbs", "alltoall_alone_gbs", "wrong", "path",
            *HARNESS_ROW_KEYS]
    for r in j["rows"]:
        check(list(r) == keys, f"sort: row keys {list(r)}")
        check(r["global"] == RANKS * r["per_rank"] and r["wrong"] == 0 and r["path"] == "mpi-host", f"sort: row {r}")
        check(positive(r["total_s"]) and positive(r["local_alone_s"]) and positive(r["alltoall_alone_gbs"]),
              f"sort: times and rates {r}")
        check(close(r["gkeys_per_s"], r["global"] / r["total_s"] / 1e9), f"sort: gkeys_per_s {r}")
        check(list(r["share"]) == ["alltoall_alone"] and
              close(r["share"]["alltoall_alone"], r["exchange_gbs"] / r["alltoall_alone_gbs"]), f"sort: share {r}")
    check(os.listdir(work) == ["sort.json"], f"sort: files left beside the report: {os.listdir(work)}")

# The stencil step: blocks of 31 and 33 cells a side on a grid of the 3 ranks.
report = os.path.join(work, "stencil.json")
status, out, err, cmd = run(stencil_bench, ["--sizes", "31,33", "--iters", "2", "--warmup", "1", "--dtype", "double",
                                            "--run", "3", "--json", report])
if check(status == 0, f"status {status}: {cmd}\n{out}\n{err}"):
    with open(report) as f:
        j = json.load(f)
    check_v2("tessera_bench_stencil_step", j, out, 2)
    c = j["configuration"]
    check(c["statistic"].startswith("fields *_s: the slowest rank's median"), f"stencil: statistic {c['statistic']!r}")
    grid_rows, grid_cols = (int(x) for x in c["grid"].split("x"))
    check(grid_rows * grid_cols == RANKS and c["device_path"] == "mpi-host" and c["stencil"] == "5-point" and
          c["dtype"] == "double" and c["ghost"] == 1 and c["iters"] == 2 and c["run"] == 3, f"stencil: report {c}")
    check([r["block"] for r in j["rows"]] == [31, 33], f"stencil: blocks {[r['block'] for r in j['rows']]}")
    times = ["sweep_s", "split_s", "exchange_s", "back_to_back_s", "overlapped_s", "run_sweep_s", "run_split_s",
             "run_exchange_s", "run_back_to_back_s", "run_overlapped_s"]
    keys = ["block", "rows", "cols", *times, "halo_bytes", "peers", "halo_path", "agree", *HARNESS_ROW_KEYS]
    for r in j["rows"]:
        check(list(r) == keys, f"stencil: row keys {list(r)}")
        check(r["rows"] == r["block"] * grid_rows and r["cols"] == r["block"] * grid_cols and r["agree"] is True and
              r["peers"] == 2 and r["halo_path"] == "mpi-host", f"stencil: row {r}")
        # A ghost row or column of `block` doubles to each of the middle rank's two neighbours.
        check(r["halo_bytes"] == 2 * r["block"] * 8, f"stencil: halo_bytes {r['halo_bytes']}, block {r['block']}")
        check(all(positive(r[k]) for k in times), f"stencil: times {r}")
        check(list(r["share"]) == ["sweep_alone"] and close(r["share"]["sweep_alone"], r["sweep_s"] / r["overlapped_s"]),
              f"stencil: share {r}")

# Destinations that cannot be written: one line naming --json, exit status 2, no file left.
for bench, path, args in ((sort_bench, os.path.join(work, "missing", "r.json"), ["--min", "33", "--max", "33"]),
                          (stencil_bench, work, ["--sizes", "31"]),
                          (stencil_bench, "/dev/full", ["--sizes", "31", "--iters", "1", "--warmup", "0"])):
    before = sorted(os.listdir(work))
    status, out, err, cmd = run(bench, [*args, "--json", path])
    name = os.path.basename(bench) + ":"
    lines = [line for line in err.splitlines() if line.startswith(name)]
    check(status == 2 and len(lines) == 1 and lines[0].startswith(name + " --json: ") and path in lines[0],
          f"{cmd}: status {status}, {err!r}")
    check(sorted(os.listdir(work)) == before, f"{cmd}: files {sorted(os.listdir(work))}, before {before}")

test.finish()
print("all checks passed")
