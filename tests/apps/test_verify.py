#!/usr/bin/env python3
"""--verify end to end: correct results pass (exit 0) on data that used to raise false alarms
(10,000 x 0.1, constant and same-sign arrays) and on random data; results made slightly wrong by
the test-only switch TESSERA_TEST_PERTURB fail (exit 1): a sum a few ulps off, one scan element off
by a relative 1e-6, one filter element dropped, one element of C off by a relative 1e-4, one
histogram count moved to the next bin, two sorted keys swapped or one changed, one transposed element
changed, one stencil cell or convolution output off after any number of iterations; NaN inputs
that leave nothing to compare are reported as not checked (exit 0, "verified": null); a malformed
switch is refused (exit 2, one line)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, random_array, write_h5  # noqa: E402

h = Harness(__doc__)
inp = h.path("in.h5")
PERTURB = "TESSERA_TEST_PERTURB"


def verdict(app, args, want_status, what, env=None):
    """Runs app with --verify --json; checks the status and returns the report (or None)."""
    report = h.path(f"report_{len(os.listdir(h.work))}.json")
    status, out, err = h.run(app, [*args, "--verify", "--repeat", "1", "--warmup", "0", "--json", report], env=env)
    if not h.check(status == want_status, f"{what}: status {status}, expected {want_status}: {h.last_command}\n{out}\n{err}"):
        return None
    import json
    with open(report) as f:
        return json.load(f)


def passes(app, args, what):
    r = verdict(app, args, 0, what)
    if r:
        h.check(r["verified"] is True, f"{what}: verified = {r['verified']!r}: {r.get('verify_detail')}")


def fails(app, args, perturb, what):
    r = verdict(app, args, 1, f"{what} ({PERTURB}={perturb})", env={PERTURB: perturb})
    if r:
        h.check(r["verified"] is False, f"{what}: verified = {r['verified']!r}: {r.get('verify_detail')}")


# Correct results that --verify must accept on data where rounding errors add up: 10,000 x 0.1
# (same-sign terms whose errors drift together), constant and same-sign arrays, in both float types.
n = 100003
for dtype in ("float32", "float64"):
    write_h5(inp, f"/tenths_{dtype}", np.full(10000, 0.1, dtype))
    write_h5(inp, f"/constant_{dtype}", np.full(n, 0.1, dtype))
    write_h5(inp, f"/positive_{dtype}", np.abs(random_array(h.rng, np.dtype(dtype), n)))
    passes("global_sum", ["--input", f"{inp}:/tenths_{dtype}"], f"global_sum 10,000 x 0.1 {dtype}")
    for data in ("constant", "positive"):
        source = ["--input", f"{inp}:/{data}_{dtype}"]
        passes("global_sum", source, f"global_sum {data} {dtype}")
        passes("prefix_sum", source, f"prefix_sum {data} {dtype}")
    passes("prefix_sum", ["--input", f"{inp}:/constant_{dtype}", "--exclusive"], f"prefix_sum --exclusive constant {dtype}")
passes("filter", ["--input", f"{inp}:/constant_float32", "--predicate", "ge:0.1"], "filter constant")
passes("matmul", ["--m", "33", "--k", "64", "--n", "17"], "matmul 33x64x17")

# Results made slightly wrong: --verify must say so and exit 1.
fails("global_sum", ["--n", n, "--reproducible"], "ulps:3", "global_sum float32 3 ulps off")
fails("global_sum", ["--n", n], "negate", "global_sum: -sum")
fails("global_sum", ["--n", n], "value:0", "global_sum: 0")
fails("prefix_sum", ["--n", n], "relative:1e-6", "prefix_sum: the largest element x(1 + 1e-6)")
fails("prefix_sum", ["--input", f"{inp}:/constant_float32", "--exclusive"], "relative:1e-6@77777",
      "prefix_sum --exclusive constant: element 77777 x(1 + 1e-6)")
fails("prefix_sum", ["--n", n, "--dtype", "float64"], "drop@65536", "prefix_sum float64: element 65536 left out")
fails("filter", ["--n", n, "--predicate", "gt:0.5", "--rebalance"], "drop", "filter: one kept element dropped")
fails("matmul", ["--m", "33", "--k", "64", "--n", "17"], "relative:1e-4", "matmul: the largest element of C x(1 + 1e-4)")
fails("matmul", ["--m", "33", "--k", "64", "--n", "17", "--dtype", "float64"], "relative:1e-9@100",
      "matmul float64: element 100 of C x(1 + 1e-9)")

# The other apps: correct results pass, one element made wrong fails, at every size and iteration.
passes("histogram", ["--n", n, "--bins", "4096"], "histogram 4096 bins")
passes("sort", ["--n", n, "--values"], "sort --values")
passes("transpose", ["--m", "33", "--n", "17", "--to", "cols"], "transpose 33x17")
passes("stencil", ["--nx", "33", "--ny", "31", "--iters", "3000", "--tol", "1e-6", "--check-every", "10"],
       "stencil: jacobi5 converged")
passes("stencil", ["--op", "convolve1d", "--n", n, "--radius", "2"], "stencil: convolve1d")
# A tall field: its boundary values once overflowed to NaN, which must never verify.
passes("stencil", ["--nx", "1", "--ny", "1000", "--iters", "400", "--tol", "1e-12", "--dtype", "float64"],
       "stencil: a tall field (ny + 1 > 226 (nx + 1))")
fails("histogram", ["--n", n, "--bins", "64"], "move", "histogram: one count of the fullest bin moved to the next")
fails("histogram", ["--n", n, "--bins", "64", "--distributed"], "move@40", "histogram --distributed: bin 40's count moved")
fails("sort", ["--n", n, "--dtype", "int32"], "add:1@5", "sort int32: key 5 plus 1")
fails("sort", ["--n", n, "--values"], "swap", "sort --values: the middle pair swapped")
fails("transpose", ["--m", "33", "--n", "17", "--dtype", "int32"], "add:1@5", "transpose int32: element 5 plus 1")
fails("transpose", ["--m", "33", "--n", "17", "--to", "cols"], "relative:1e-7", "transpose: an element x(1 + 1e-7)")
fails("stencil", ["--nx", "32", "--ny", "32", "--iters", "1"], "add:1000",
      "stencil: a cell off by 1000 after one iteration")
fails("stencil", ["--nx", "33", "--ny", "31", "--iters", "3000", "--tol", "1e-6", "--check-every", "10"], "add:1e-5@500",
      "stencil: converged, cell 500 off by 1e-5")
fails("stencil", ["--op", "convolve1d", "--n", "1000003", "--radius", "2"], "add:1e-3",
      "stencil convolve1d float32 at n = 1e6: the largest output off by 1e-3")
fails("stencil", ["--op", "convolve1d", "--n", "10007", "--radius", "3", "--boundary", "periodic", "--dtype", "float64"],
      "relative:1e-9@0", "stencil convolve1d periodic float64: output 0 x(1 + 1e-9)")
# The field ops (apply_stencil on Field<T, D>): the last step against the host, and PRK's norm.
passes("stencil", ["--op", "star:2", "--nx", "20", "--ny", "17", "--nz", "9", "--iters", "5"], "stencil star:2 3-D")
fails("stencil", ["--op", "star:2", "--nx", "20", "--ny", "17", "--nz", "9", "--iters", "5"], "relative:1e-4",
      "stencil star:2 3-D: the largest cell x(1 + 1e-4)")
fails("stencil", ["--op", "box:1", "--nx", "20", "--ny", "17", "--iters", "3", "--dtype", "float64"], "add:1e-9@200",
      "stencil box:1 float64: cell 200 off by 1e-9")
fails("stencil", ["--op", "prk-star:2", "--nx", "20", "--ny", "17", "--iters", "3"], "add:1e-3@47",
      "stencil prk-star:2: OUT's interior cell 47 off by 1e-3")

# tessera-fft: Parseval and the round trip from the run's input to its output and back. An
# inverse run's output is checked against its input (F x against the spectrum it read, for c2r
# that spectrum's Hermitian part), so that a wrong inverse fails as a wrong forward does.
for kind in (["--kind", "c2c"], ["--kind", "c2c", "--inverse"], ["--kind", "r2c"], ["--kind", "c2r"],
             ["--kind", "c2r", "--axis", "1"], ["--kind", "c2c", "--inverse", "--decomposition", "pencil"]):
    for dtype, change in (("float64", "relative:1e-9"), ("float32", "relative:1e-2@11")):
        shape = ["--shape", "13x8x6" if "pencil" in kind else ("12x9" if "--axis" in kind else "7x10x5")]
        dt = ["--dtype", dtype if kind[1] == "r2c" else ("complex128" if dtype == "float64" else "complex64")]
        passes("fft", [*kind, *shape, *dt], f"fft {' '.join(kind)} {dtype}")
        fails("fft", [*kind, *shape, *dt], change, f"fft {' '.join(kind)} {dtype}: one output element changed")

# Nothing computed: the initial field is not a result to call right.
r = verdict("stencil", ["--nx", "16", "--ny", "16", "--iters", "0"], 0, "stencil --iters 0")
if r:
    h.check(r["verified"] is None, f"stencil --iters 0: verified = {r['verified']!r}: {r.get('verify_detail')}")

# NaN in A: no element of C can be compared. Not "matches": not checked, exit 0, verified null.
a = random_array(h.rng, np.dtype("float32"), (6, 5))
a[:, 2] = np.nan
write_h5(inp, "/nan_a", a)
write_h5(inp, "/nan_b", random_array(h.rng, np.dtype("float32"), (5, 4)))
r = verdict("matmul", ["--a", f"{inp}:/nan_a", "--b", f"{inp}:/nan_b"], 0, "matmul with NaN in every row of A")
if r:
    h.check(r["verified"] is None and "could be compared" in r.get("verify_detail", ""),
            f"matmul with NaN inputs: verified = {r['verified']!r}: {r.get('verify_detail')}")

# The switch is refused when malformed, and by an app that does not take its kind.
for app, spec in (("global_sum", "ulps:0"), ("prefix_sum", "relative:"), ("filter", "relative:1e-6"),
                  ("global_sum", "negate@3"), ("sort", "drop"), ("histogram", "add:1"), ("transpose", "swap"),
                  ("stencil", "move")):
    args = ["--n", "10"] + (["--op", "convolve1d"] if app == "stencil" else [])
    status, out, err = h.run(app, args, ranks=1, env={PERTURB: spec})
    lines = [line for line in err.splitlines() if line.startswith("tessera-")]
    h.check(status == 2 and len(lines) == 1 and PERTURB in lines[0],
            f"{PERTURB}={spec} for {app}: status {status}, stderr {err!r}")

h.finish()
