#!/usr/bin/env python3
"""The OpenMP threads per rank the apps use, as their report shows them: the rank's share of its
node's cores when nothing says otherwise (here: no CPU binding, so every rank has the mask of this
process, and the share is max(1, cores // ranks)), OMP_NUM_THREADS where it is set, --threads above
both; a --threads that is not a positive count is refused. Results stay right (--verify)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness  # noqa: E402

h = Harness(__doc__)
cores = len(os.sched_getaffinity(0))
unbound = {"OMPI_MCA_hwloc_base_binding_policy": "none"}
args = ["--n", "300007", "--verify"]


def threads_of(env, extra=(), unset=(), ranks=None):
    report = h.path(f"threads_{len(os.listdir(h.work))}.json")
    status, out, err = h.run("global_sum", [*args, *extra, "--json", report], ranks=ranks, env={**unbound, **env},
                             unset=unset)
    if not h.check(status == 0, f"status {status}: {h.last_command}\n{out}\n{err}"):
        return None, ""
    import json
    with open(report) as f:
        return json.load(f), out


# The share, at one rank (all the cores) and at the test's rank count.
for ranks in sorted({1, h.ranks}):
    share = max(1, cores // ranks)
    what = f"{ranks} rank(s) on {cores} core(s)"
    report, table = threads_of({}, unset=["OMP_NUM_THREADS"], ranks=ranks)
    if report:
        t = report.get("threads", {})
        h.check(t.get("per_rank") == share and t.get("min") == share and t.get("max") == share,
                f"{what}, OMP_NUM_THREADS unset: threads {t}, expected {share} per rank")
        h.check(t.get("chosen_by") == "cores / ranks on the node", f"{what}: chosen by {t.get('chosen_by')!r}")
        h.check(report.get("verified") is True, f"{what}: not verified")
        if h.backend == "cpu":
            h.check(f"{share} OpenMP thread" in table and f"{cores} core" in table,
                    f"{what}: the table does not show the choice:\n{table}")

report, table = threads_of({"OMP_NUM_THREADS": "3"})
if report:
    t = report.get("threads", {})
    h.check(t.get("per_rank") == 3 and t.get("chosen_by") == "OMP_NUM_THREADS", f"OMP_NUM_THREADS=3: threads {t}")

report, table = threads_of({"OMP_NUM_THREADS": "3"}, extra=["--threads", "2"])
if report:
    t = report.get("threads", {})
    h.check(t.get("per_rank") == 2 and t.get("chosen_by") == "--threads", f"--threads 2 over OMP_NUM_THREADS=3: {t}")
    if h.backend == "cpu":
        h.check("2 OpenMP threads per rank (--threads)" in table, f"--threads 2: the table does not say so:\n{table}")

for bad in ("0", "1.5"):
    status, out, err = h.run("global_sum", ["--n", "10", "--threads", bad])
    h.check(status == 2 and "--threads" in err and out.strip() == "", f"--threads {bad}: status {status}, {err!r}")
h.finish()
