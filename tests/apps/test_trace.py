"""The NVTX ranges a profiler sees: apps run with NVTX's injection interface pointing at the test
recorder (tests/support/nvtx_recorder.cpp, NVTX_INJECTION64_PATH in the environment, as Nsight
Systems sets it), and each rank's record is checked: the domain "Tessera", ranges that nest and
close, the algorithm's range naming its size and the rank, its phases inside it, the halo
exchanges and the HDF5 reads and writes."""
import glob
import os
import re
import sys

from apptest import Harness, write_h5

h = Harness(__doc__)
if not os.environ.get("NVTX_INJECTION64_PATH"):
    print("SKIP: NVTX_INJECTION64_PATH (the recorder) is not set")
    sys.exit(77)


def records(app, args, tag=None):
    """Runs app with the recorder; returns each rank's list of (depth, message), or None."""
    where = h.path(f"nvtx_{tag or app}")  # one directory per run
    os.makedirs(where, exist_ok=True)
    status, out, err = h.run(app, args, env={"TESSERA_NVTX_RECORD": where})
    if not h.check(status == 0, f"{app}: status {status}: {h.last_command}\n{out}\n{err}"):
        return None
    logs = sorted(glob.glob(os.path.join(where, "nvtx.*.log")))
    if not h.check(len(logs) == h.ranks, f"{app}: {len(logs)} records for {h.ranks} ranks"):
        return None
    ranks = []
    for log in logs:
        stack, seen = [], []
        domains = []
        with open(log) as f:
            for line in f.read().splitlines():
                kind, _, rest = line.partition(" ")
                if kind == "domain":
                    domains.append(rest)
                elif kind == "push":
                    domain, _, message = rest.partition(" ")
                    h.check(domain == "Tessera", f"{app}: a range outside the domain Tessera: {line}")
                    seen.append((len(stack), message))
                    stack.append(message)
                elif kind == "pop":
                    if h.check(stack, f"{app}: a pop without a push in {log}"):
                        stack.pop()
        h.check(domains == ["Tessera"], f"{app}: domains {domains} in {log}, expected the one domain Tessera")
        h.check(not stack, f"{app}: ranges left open at exit in {log}: {stack}")
        ranks.append(seen)
    return ranks


def expect(app, ranks, top, phases, n=None):
    """Each rank has the range `top` naming n and the rank, with each of `phases` inside it."""
    named = set()
    for seen in ranks:
        for i, (depth, message) in enumerate(seen):
            m = re.fullmatch(re.escape(top) + r" \((?:n (\d+), )?rank (\d+) of (\d+)\)", message)
            if not m:
                continue
            if n is not None:
                h.check(m.group(1) == str(n), f"{app}: '{message}' names n {m.group(1)}, expected {n}")
            h.check(int(m.group(3)) == h.ranks, f"{app}: '{message}' names {m.group(3)} ranks")
            named.add(int(m.group(2)))
            inside = []
            for d, inner in seen[i + 1:]:
                if d <= depth:
                    break
                inside.append(inner)
            for phase in phases:
                h.check(any(x.startswith(phase) for x in inside),
                        f"{app}: no range '{phase}' inside '{message}' (inside: {sorted(set(inside))})")
            break
    h.check(named == set(range(h.ranks)), f"{app}: the range '{top} (..., rank r of {h.ranks})' on ranks {sorted(named)}")


def anywhere(app, ranks, prefix):
    for r, seen in enumerate(ranks):
        h.check(any(m.startswith(prefix) for _, m in seen), f"{app}: no range '{prefix}...' on rank {r}")


# A reduction read from a file: the three phases, and the read.
x = h.rng.random(1009)
write_h5(h.path("x.h5"), "/x", x)
got = records("global_sum", ["--input", h.path("x.h5") + ":/x", "--repeat", 1, "--warmup", 0])
if got:
    expect("global_sum", got, "transform_reduce",
           ["transform_reduce: local", "transform_reduce: communication", "transform_reduce: fix-up"], n=1009)
    anywhere("global_sum", got, "read " + h.path("x.h5") + ":/x")
# The exact sum: the same three phases under its own name.
got = records("global_sum", ["--input", h.path("x.h5") + ":/x", "--reproducible", "--repeat", 1, "--warmup", 0],
              tag="global_sum_reproducible")
if got:
    expect("global_sum", got, "reproducible_sum",
           ["reproducible_sum: local", "reproducible_sum: communication", "reproducible_sum: fix-up"], n=1009)

# The sort: its exchange's phases inside the sort's range, then the one commit of its outputs.
got = records("sort", ["--n", 3001, "--values", "--output", h.path("s.h5") + ":/s", "--repeat", 1, "--warmup", 0])
if got:
    expect("sort", got, "sort", ["sort: local sort", "sort: splitters", "sort: exchange"], n=3001)
    expect("sort", got, "sort: exchange", ["sort: exchange: plan", "sort: exchange: exchange", "sort: exchange: unpack"],
           n=3001)
    anywhere("sort", got, "write " + h.path("s.h5"))

# A transpose on the exchange skeleton.
got = records("transpose", ["--m", 37, "--n", 29, "--repeat", 1, "--warmup", 0])
if got:
    expect("transpose", got, "transpose", ["transpose: plan", "transpose: exchange", "transpose: unpack"], n=37 * 29)

# Jacobi iterations and their halo exchanges.
got = records("stencil", ["--nx", 30, "--ny", 40, "--iters", 3, "--repeat", 1, "--warmup", 0])
if got:
    expect("stencil", got, "jacobi: iteration", [])
    for prefix in ("halo: send", "halo: receive", "jacobi: residual"):
        anywhere("stencil", got, prefix)

h.finish()
