#!/usr/bin/env python3
"""histogram end to end, against numpy.histogram on inputs numpy wrote (h5py), count for count:
every dtype; samples exactly on the edges and on the upper bound, out of range, NaN and +-inf;
the default range (min and max, and all samples equal); all samples in one bin; 1 bin and 2^16 + 1
bins; edges from a file (also infinite outer edges); --distributed; the same counts at another rank
count; the output's two datasets and their attributes, and the PNG script; bad input (exit 2, one
line naming the flag, no output file, an existing file untouched)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, h5py, np, program, write_h5, read_h5, check_output_attributes, \
    check_common_json  # noqa: E402

h = Harness(__doc__)
inp = h.path("in.h5")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def with_edges_and_specials(x, edges, rng):
    """A copy of x with a fifth of the samples replaced by edges (as the dtype holds them) and, for
    floating point, NaN and infinities."""
    x = x.copy()
    k = x.size // 5
    if k and edges.size:
        pick = rng.integers(0, edges.size, k)
        where = rng.choice(x.size, k, replace=False)
        e = edges[pick]
        if np.issubdtype(x.dtype, np.integer):
            e = np.floor(e[np.isfinite(e)])
            where = where[:e.size]
        x[where] = e.astype(x.dtype)
    if np.issubdtype(x.dtype, np.floating) and x.size >= 8:
        x[rng.choice(x.size, 3, replace=False)] = [np.nan, np.inf, -np.inf]
    return x


def outside(x, lo, hi):
    """Samples below, above and NaN as numpy's histogram compares them (in float32 for float32
    samples with a range, in double otherwise)."""
    if x.dtype == np.float32:
        lo, hi = np.float32(lo), np.float32(hi)
    else:
        x = x.astype(np.float64)
    nan = int(np.count_nonzero(np.isnan(x))) if np.issubdtype(x.dtype, np.floating) else 0
    return int(np.count_nonzero(x < lo)), int(np.count_nonzero(x > hi)), nan


def run_case(what, x, args, want_counts, want_edges, want_outside, ranks=None, dataset="/h"):
    out = h.path(f"out_{len(os.listdir(h.work))}.h5")
    res = h.run_json("histogram", ["--input", f"{inp}:/x", *args, "--output", f"{out}:{dataset}", "--verify"], ranks)
    if not res:
        return None
    report, _ = res
    if ranks is None:
        check_common_json(h, report, "histogram", str(x.dtype), {"n": int(x.size)})
    h.check(report["verified"] is True, f"{what}: not verified: {report.get('verify_detail')}")
    counts, attrs = read_h5(out, dataset)
    edges, edge_attrs = read_h5(out, dataset + "_edges")
    check_output_attributes(h, attrs, "histogram", ranks or h.ranks, h.backend)
    check_output_attributes(h, edge_attrs, "histogram", ranks or h.ranks, h.backend)
    h.check(counts.dtype == np.int64 and edges.dtype == np.float64, f"{what}: dtypes {counts.dtype}, {edges.dtype}")
    if counts.shape != want_counts.shape or not np.array_equal(counts, want_counts):
        d = np.nonzero(counts != want_counts)[0] if counts.shape == want_counts.shape else []
        h.fail(f"{what}: counts differ from numpy.histogram in {len(d)} bins, first {list(d[:3])}: "
               f"got {list(counts[d[:3]])}, numpy {list(want_counts[d[:3]])} (shapes {counts.shape}, {want_counts.shape})")
    else:
        h.checks += 1
    # numpy's edges are of the comparison type (float32 for float32 samples): ours are the double
    # edges they were rounded from.
    h.check(edges.shape == want_edges.shape and np.array_equal(edges.astype(want_edges.dtype), want_edges),
            f"{what}: edges differ from numpy's: {edges[:4]} vs {want_edges[:4]}")
    got_outside = (int(attrs["below"]), int(attrs["above"]), int(attrs["nan"]))
    h.check(got_outside == want_outside, f"{what}: below/above/NaN {got_outside}, expected {want_outside}")
    r = report["result"]
    h.check((r["below"], r["above"], r["nan"]) == want_outside and r["in_bins"] == int(want_counts.sum()),
            f"{what}: json result {r}")
    h.check(sum(r["chart"]) == r["in_bins"] and 1 <= len(r["chart"]) <= 20, f"{what}: json chart {r['chart']}")
    return out


rng = h.rng
# Per dtype: equal bins over a range (bins, n, layout), then the default-range case and the edges
# case it gets (each dtype a different one, so that every case runs and the test stays short).
plans = {
    "int32": [(65537, 5003, "chunked")],
    "int64": [(1, 101, "contiguous")],
    "float32": [(65537, 5003, "deflate")],
    "float64": [(1, 101, "chunked")],
}
for i, dtype in enumerate(["int32", "int64", "float32", "float64"]):
    dt = np.dtype(dtype)
    lo, hi = (-900.5, 1000.0) if dt.kind == "i" else (-0.8, 0.9)
    for bins, n, layout in ([(100, 4099, "contiguous")] if i % 2 == 0 else []) + plans[dtype]:
        e = np.linspace(lo, hi, bins + 1)
        base = rng.integers(-1000, 1001, n).astype(dt) if dt.kind == "i" else rng.uniform(-1, 1, n).astype(dt)
        x = with_edges_and_specials(base, e, rng)
        write_h5(inp, "/x", x, layout)
        want, want_e = np.histogram(x, bins, range=(lo, hi))
        what = f"histogram {dtype} n={n} bins={bins} range={lo}:{hi} seed={h.seed}"
        distributed = bins == 100 and i == 2
        run_case(what + (" --distributed" if distributed else ""), x,
                 ["--bins", bins, "--range", f"{lo}:{hi}"] + (["--distributed"] if distributed else []), want, want_e,
                 outside(x, lo, hi))

    if i == 0 or i == 3:  # the default range: numpy's min and max
        x = rng.integers(-1000, 1001, 2000).astype(dt) if dt.kind == "i" else rng.uniform(-1, 1, 2000).astype(dt)
        write_h5(inp, "/x", x)
        want, want_e = np.histogram(x, 50)
        run_case(f"histogram {dtype} default range", x, ["--bins", 50], want, want_e, (0, 0, 0))
    elif i == 1:  # all samples equal: numpy widens the range by 0.5 each way
        same = np.full(77, 3, dtype=dt)
        write_h5(inp, "/x", same)
        want, want_e = np.histogram(same, 4)
        run_case(f"histogram {dtype} all samples equal", same, ["--bins", 4], want, want_e, (0, 0, 0))
    else:  # everything in one bin of many, and on the upper bound
        one = np.full(3001, 5, dtype=dt)
        one[::2] = 10
        write_h5(inp, "/x", one)
        want, want_e = np.histogram(one, 16, range=(0, 10))
        run_case(f"histogram {dtype} one bin", one, ["--bins", 16, "--range", "0:10"], want, want_e, (0, 0, 0))

    # Edges from a file; for floating point infinite outer ones (-inf and +inf samples land in them).
    edges = np.unique(rng.uniform(-1.1, 1.1, 40) if dt.kind == "f" else rng.uniform(-1100, 1100, 40) + 0.25)
    base = rng.integers(-1000, 1001, 3001).astype(dt) if dt.kind == "i" else rng.uniform(-1, 1, 3001).astype(dt)
    x = with_edges_and_specials(base, edges, rng)
    write_h5(inp, "/x", x)
    infinite = dt.kind == "f"
    given = edges.copy()
    if infinite:
        given[0], given[-1] = -np.inf, np.inf
    write_h5(inp, "/edges", given)
    want, want_e = np.histogram(x, given)
    xd = x.astype(np.float64)
    want_out = (int(np.count_nonzero(xd < given[0])), int(np.count_nonzero(xd > given[-1])),
                int(np.count_nonzero(np.isnan(xd))))
    distributed = i % 2 == 0
    run_case(f"histogram {dtype} --edges (infinite outer: {infinite}, distributed: {distributed})", x,
             ["--edges", f"{inp}:/edges"] + (["--distributed"] if distributed else []), want, want_e, want_out)

# float32 samples in ranges near the narrowest that float arithmetic bins: numpy's counts where the
# bins' norm, bins / (upper - lower), is a float (subnormal samples included); refused, with one line
# naming --range, where it is not (the samples binned by overflow: once [0, 1, 3] for numpy's
# [1, 0, 3], or every sample in the last two of 64 bins).
for lo, hi, bins in ((0.0, 1e-38, 3), (0.0, 1e-37, 8), (-3e-39, 4e-39, 2)):
    x = np.concatenate([rng.uniform(lo, hi, 997).astype(np.float32),
                        np.array([lo, hi, np.float32(1e-45), 0.0], dtype=np.float32)])
    write_h5(inp, "/x", x)
    want, want_e = np.histogram(x, bins, range=(lo, hi))
    run_case(f"histogram float32 in [{lo}, {hi}], {bins} bins", x, ["--bins", bins, "--range", f"{lo}:{hi}"], want,
             want_e, outside(x, lo, hi))
for x, args in ((np.array([1e-45, 1e-45, 3e-45, 0], dtype=np.float32), ["--bins", 3]),
                (np.linspace(0, 1e-43, 1000).astype(np.float32), ["--bins", 64, "--range", "0:1e-43"])):
    write_h5(inp, "/x", x)
    status, stdout, stderr = h.run("histogram", ["--input", f"{inp}:/x", *args, "--verify"])
    lines = [ln for ln in stderr.splitlines() if ln.startswith(program("histogram"))]
    h.check(status == 2 and len(lines) == 1 and "--range" in lines[0] and "too narrow" in lines[0],
            f"histogram float32 {args} on a range too narrow for float: status {status}, {lines}")

# Bins narrower than the samples' spacing: the edges, rounded to the comparison type, repeat, and
# numpy's estimate decides between the bins they bound (some bins stay empty); --verify's recount
# must follow numpy there, not a search of the edges. Default range and a given one. Without a
# range numpy divides by max - min in the samples' type (float32 arithmetic; the exact integer
# difference, which int64 beyond 2^53 rounds otherwise), and compares int64 samples as doubles.
big = 2**62
for x, args, numpy_args in (
        (rng.uniform(1e6, 1e6 + 1, 10001).astype(np.float32), ["--bins", 100], {"bins": 100}),
        (np.float32(3) + np.float32(2**-22) * rng.integers(-40, 41, 997).astype(np.float32), ["--bins", 333], {"bins": 333}),
        (rng.uniform(1e15, 1e15 + 2, 4099), ["--bins", 1000, "--range", "1e15:1000000000000002"],
         {"bins": 1000, "range": (1e15, 1e15 + 2)}),
        (np.array([0.2356666, 1.014371, 1.0143417], np.float32), ["--bins", 7929138], {"bins": 7929138}),
        (rng.uniform(0.1, 1.7, 1001).astype(np.float32), ["--bins", 1000003], {"bins": 1000003}),
        (np.array([big, big + 1500, big + 1500, big + 700], np.int64), ["--bins", 10], {"bins": 10}),
        (np.array([big, big + 1500, big + 1500, big + 700], np.int64), ["--bins", 10, "--range", f"{big}:{big + 2000}"],
         {"bins": 10, "range": (float(big), float(big + 2000))})):
    write_h5(inp, "/x", x)
    if not np.__version__.startswith("1."):
        # NumPy 2 refuses such bins, or (float32 edges computed in float32) counts them otherwise:
        # tessera follows NumPy 1.x, so here --verify alone.
        res = h.run_json("histogram", ["--input", f"{inp}:/x", *args, "--verify"])
        h.check(bool(res) and res[0]["verified"] is True, f"histogram {args}: not verified: {res and res[0].get('verify_detail')}")
        continue
    want, want_e = np.histogram(x, **numpy_args)
    lo, hi = numpy_args.get("range", (x.min(), x.max()))
    run_case(f"histogram {x.dtype} bins narrower than the samples' spacing, {args}", x, args, want, want_e,
             outside(x, lo, hi))

# The same counts at another rank count (generated input: element i depends on the seed only).
counts_at = {}
for ranks in sorted({h.ranks, 4 if h.ranks == 1 else 2}):
    out = h.path(f"ranks_{ranks}.h5")
    res = h.run_json("histogram", ["--n", 100003, "--dtype", "float32", "--bins", 333, "--output", f"{out}:/g"], ranks)
    if res:
        counts_at[ranks] = read_h5(out, "/g")[0]
first = next(iter(counts_at.values()), None)
for ranks, c in counts_at.items():
    h.check(np.array_equal(c, first), f"generated input: counts at {ranks} ranks differ from the first rank count's")

# The PNG script draws an output.
png = h.path("plot.png")
last = h.path(f"ranks_{h.ranks}.h5")
p = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", "plot_histogram.py"), f"{last}:/g", "--png", png],
                   capture_output=True, text=True, timeout=120)
if "needs h5py, numpy and matplotlib" in p.stderr:
    print("note: plot_histogram.py not checked (no matplotlib)")
else:
    h.check(p.returncode == 0 and os.path.getsize(png) > 1000, f"plot_histogram.py failed: {p.returncode} {p.stderr}")

# Bad input: exit 2, one line naming the flag, no output, an existing file untouched.
write_h5(inp, "/x", rng.uniform(-1, 1, 50).astype(np.float32))
write_h5(inp, "/edges_flat", np.array([0.0, 1.0, 1.0, 2.0]))
write_h5(inp, "/edges_down", np.array([3.0, 2.0, 1.0]))
write_h5(inp, "/edges_one", np.array([1.0]))
write_h5(inp, "/edges_2d", np.arange(6.0).reshape(2, 3))
write_h5(inp, "/edges_nan", np.array([0.0, np.nan, 1.0]))
write_h5(inp, "/with_inf", np.array([1.0, np.inf, 2.0], dtype=np.float32))
existing = h.path("existing.h5")
write_h5(existing, "/kept", np.arange(5.0))
with open(existing, "rb") as f:
    existing_bytes = f.read()
cases = [
    (["--range", "1:1"], ["--range", "below"]),
    (["--range", "2:1"], ["--range", "below"]),
    (["--range", "a:1"], ["--range", "'a'"]),
    (["--range", "5"], ["--range", "LO:HI"]),
    (["--range", "0:inf"], ["--range", "not finite"]),
    (["--range", "0:1e39"], ["--range", "float32"]),
    (["--bins", "0"], ["--bins", "0"]),
    (["--bins", "-3"], ["--bins", "-3"]),
    (["--bins", "x"], ["--bins", "'x'"]),
    (["--edges", f"{inp}:/edges_flat"], ["--edges", "strictly increasing", "edge 2"]),
    (["--edges", f"{inp}:/edges_down"], ["--edges", "strictly increasing", "edge 1"]),
    (["--edges", f"{inp}:/edges_one"], ["--edges", "at least 2"]),
    (["--edges", f"{inp}:/edges_2d"], ["--edges", "2-D", "1-D"]),
    (["--edges", f"{inp}:/edges_nan"], ["--edges", "NaN"]),
    (["--edges", f"{inp}:/nothere"], ["--edges", "/nothere"]),
    (["--edges", f"{inp}:/edges_flat", "--bins", "4"], ["--edges", "--bins"]),
]
# (At one rank count only: the app's flag checks do not depend on it. The values of --range and
# --bins are parsed alike on every rank: those at 1 rank; the --edges datasets, read by every rank,
# at the registered count.)
for i, (args, words) in enumerate(cases if h.ranks > 1 else []):
    for exists in (i % 2 == 1,):
        out = existing if exists else h.path(f"bad_{i}.h5")
        before = set(os.listdir(h.work))
        ranks = h.ranks if args[0] == "--edges" else 1
        status, stdout, stderr = h.run("histogram", ["--input", f"{inp}:/x", *args, "--output", f"{out}:/h"], ranks)
        what = f"histogram {' '.join(map(str, args))} (existing output: {exists})"
        if status is None:
            continue
        h.check(status == 2, f"{what}: status {status}, expected 2\n{stdout}\n{stderr}")
        ours = [line for line in stderr.splitlines() if line.startswith(program("histogram") + ":")]
        h.check(len(ours) == 1 and all(w in ours[0] for w in words), f"{what}: expected one line with {words}, got {ours}")
        h.check(stdout.strip() == "", f"{what}: unexpected standard output {stdout!r}")
        h.check(set(os.listdir(h.work)) == before, f"{what}: files appeared: {sorted(set(os.listdir(h.work)) - before)}")
        if exists:
            with open(existing, "rb") as f:
                h.check(f.read() == existing_bytes, f"{what}: the existing output file changed")
# Infinite samples leave no default range.
status, _, stderr = h.run("histogram", ["--input", f"{inp}:/with_inf"])
h.check(status == 2 and "--range" in stderr and "infinities" in stderr, f"infinite samples, no --range: {status} {stderr}")
# The edges' output dataset must not exist either (without --overwrite).
write_h5(existing, "/h_edges", np.arange(3.0))
status, _, stderr = h.run("histogram", ["--input", f"{inp}:/x", "--output", f"{existing}:/h"])
h.check(status == 2 and "/h_edges" in stderr and "already exists" in stderr, f"existing edges dataset: {status} {stderr}")

h.finish()
