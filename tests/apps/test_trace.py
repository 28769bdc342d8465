"""The NVTX ranges a profiler sees: apps run with NVTX's injection interface pointing at the test
recorder (tests/support/nvtx_recorder.cpp, NVTX_INJECTION64_PATH in the environment, as Nsight
Systems sets it), and each rank's record is checked: the domain "Tessera", ranges that nest and
close, the algorithm's range naming its size and the rank, its phases inside it, the halo
exchanges and the HDF5 reads and writes. On the cuda backend, where Nsight Compute (ncu) is
installed, the same ranges as a profiler on the GPU machine shows them: each kernel's NVTX stack
(ncu --nvtx) inside a reduction names the domain Tessera, the reduction's range and its phase."""
import glob
import os
import re
import shutil
import subprocess
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

# Under a profiler on the GPU machine: Nsight Compute with NVTX support, one rank, the kernels of a
# reduction of generated samples. ncu injects itself through NVTX_INJECTION64_PATH: the recorder's
# is left out of this run.
ncu = os.environ.get("TESSERA_TEST_NCU") or shutil.which("ncu") or (
    "/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else None)
if h.backend == "cuda" and ncu:
    env = {k: v for k, v in os.environ.items() if k not in ("NVTX_INJECTION64_PATH", "TESSERA_NVTX_RECORD")}
    cmd = [ncu, "--nvtx", "--metrics", "gpu__time_duration.sum",
           os.path.join(h.bin, "tessera-global-sum"), "--backend", "cuda", "--n", "100003", "--repeat", "1",
           "--warmup", "0", "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300, env=env, cwd=h.work)
    if h.check(p.returncode == 0, f"ncu: status {p.returncode}: {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"):
        # Each profiled kernel's "NVTX Push/Pop Stack for Thread N:" and the lines indented below it.
        stacks, lines = [], p.stdout.splitlines()
        for i, line in enumerate(lines):
            if "NVTX Push/Pop Stack" in line:
                indent = len(line) - len(line.lstrip())
                block = []
                for nxt in lines[i + 1:]:
                    if not nxt.strip() or len(nxt) - len(nxt.lstrip()) <= indent:
                        break
                    block.append(nxt.strip())
                stacks.append("\n".join(block))
        top = "transform_reduce (n 100003, rank 0 of 1)"
        inside = [b for b in stacks if "Tessera" in b and top in b]
        h.check(stacks, f"ncu: no kernel with an NVTX stack:\n{p.stdout[-3000:]}")
        h.check(any("transform_reduce: local" in b for b in inside),
                f"ncu: no kernel inside '{top}' and its local phase in the domain Tessera; the stacks:\n" +
                "\n--\n".join(stacks))
        print(f"ncu: {len(stacks)} kernels profiled, {len(inside)} inside '{top}'")
elif h.backend == "cuda":
    print("ncu not found: the ranges under a profiler on the GPU are not checked here")

h.finish()
