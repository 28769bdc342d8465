#!/usr/bin/env python3
"""sort end to end: h5py-written inputs of every dtype (NaN, infinities and signed zeros among the
floats), the sorted keys (--output) and the argsort (--values, <dataset>_index) against a stable numpy
argsort of the keys in IEEE total order, bit for bit; generated distributions verified and equal at
1 and P ranks; the bad-input contract."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, random_array, write_h5, read_h5, check_output_attributes, \
    check_common_json, check_h5dump  # noqa: E402

h = Harness(__doc__)
inp = h.path("in.h5")


def total_order_key(x):
    """Unsigned integers in the order of the keys: IEEE total order for floats (-NaN first, -0 < +0,
    +NaN last), numeric order for integers. Computed here with numpy, independently of the app."""
    if x.dtype.kind == "f":
        u = x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64)
        top = u.dtype.type(1) << u.dtype.type(8 * x.dtype.itemsize - 1)
        return np.where(u & top, ~u, u | top)
    return x.astype(np.int64 if x.dtype.itemsize == 8 else np.int32)


def reference_order(x):
    return np.argsort(total_order_key(x), kind="stable")


def with_specials(x):
    if x.dtype.kind == "f" and x.size:
        specials = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0], dtype=x.dtype)
        x[::5] = specials[np.arange(x[::5].size) % specials.size]
    elif x.size:
        x[::4] = 7  # runs of equal keys: stability shows in the argsort
    return x


cases = [("int32", 0, "contiguous"), ("int32", 1025, "chunked"), ("int64", 33, "deflate"),
         ("float32", 1, "contiguous"), ("float32", 4099, "deflate"), ("float64", 10007, "chunked"),
         ("float64", 2, "contiguous")]
for i, (dtype, n, layout) in enumerate(cases):
    x = with_specials(random_array(h.rng, np.dtype(dtype), n))
    name = f"/x{i}"
    write_h5(inp, name, x, layout)
    order = reference_order(x)
    for values in ((False, True) if i % 3 == 1 else (i % 2 == 0,)):
        what = f"sort {dtype} n={n} {layout} values={values} seed={h.seed}"
        out = h.path(f"out{i}_{int(values)}.h5")
        args = ["--input", f"{inp}:{name}", "--output", f"{out}:/sorted", "--verify"] + (["--values"] if values else [])
        res = h.run_json("sort", args)
        if not res:
            continue
        report, _ = res
        check_common_json(h, report, "sort", dtype, {"n": n})
        h.check(report["verified"] is True, f"{what}: not verified: {report.get('verify_detail')}")
        h.check(report["result"]["keys"] == n, f"{what}: json result {report['result']!r}")
        h.check(all(isinstance(report["result"]["steps"].get(k), (int, float))
                    for k in ("local_sort", "splitters", "exchange", "merge")), f"{what}: json steps {report['result']!r}")
        # The steps are those of the rank and repeat the phases come from: they add up to them.
        steps, phases = report["result"]["steps"], report["timing"]["phases"]
        for parts, phase in ((("local_sort",), "local"), (("splitters", "exchange"), "communication"), (("merge",), "fixup")):
            total = sum(steps[k] for k in parts)
            h.check(abs(total - phases[phase]) <= 1e-9 + 1e-6 * phases[phase],
                    f"{what}: steps {'+'.join(parts)} = {total} s against the phase {phase} {phases[phase]} s")
        got, attrs = read_h5(out, "/sorted")
        check_output_attributes(h, attrs, "sort", h.ranks, h.backend)
        ref = x[order]
        h.check(got.dtype == np.dtype(dtype) and got.shape == ref.shape and got.tobytes() == ref.tobytes(),
                f"{what}: sorted keys differ from numpy's stable total-order sort; first differences "
                f"{[(j, got[j], ref[j]) for j in range(min(got.size, ref.size)) if got[j:j+1].tobytes() != ref[j:j+1].tobytes()][:3]}")
        if values:
            index, _ = read_h5(out, "/sorted_index")
            h.check(index.dtype == np.int64 and np.array_equal(index, order),
                    f"{what}: argsort differs from numpy's stable argsort at "
                    f"{[j for j in range(min(index.size, order.size)) if index[j] != order[j]][:5]}")
            if i == 4:
                check_h5dump(h, out)

# Generated distributions: verified, sorted (numpy), and (three of them) the same array at 1 rank
# and at P ranks.
for k, (dtype, distribution) in enumerate((("int32", "uniform"), ("float64", "normal"), ("int64", "sorted"),
                                           ("float32", "reverse"), ("int32", "few-unique"), ("float64", "all-equal"),
                                           ("int64", "zipf"))):
    what = f"generated {dtype} {distribution}"
    outs = []
    for ranks in sorted({1, h.ranks}) if k == 0 else [h.ranks]:
        out = h.path(f"gen_{dtype}_{distribution}_{ranks}.h5")
        res = h.run_json("sort", ["--n", "20011", "--dtype", dtype, "--distribution", distribution, "--values",
                                  "--verify", "--seed", "7", "--output", f"{out}:/s"], ranks=ranks)
        if not res:
            continue
        h.check(res[0]["verified"] is True and res[0]["parameters"]["distribution"] == distribution,
                f"{what} on {ranks} rank(s): {res[0].get('verify_detail')} {res[0]['parameters']!r}")
        outs.append((read_h5(out, "/s")[0], read_h5(out, "/s_index")[0]))
    if len(outs) == 2:
        h.check(outs[0][0].tobytes() == outs[1][0].tobytes() and np.array_equal(outs[0][1], outs[1][1]),
                f"{what}: the result on {h.ranks} ranks differs from the result on 1 rank")
    if outs:
        k = total_order_key(outs[-1][0])
        h.check(bool(np.all(k[1:] >= k[:-1])), f"{what}: output not in order")
        h.check(np.array_equal(np.sort(outs[-1][1]), np.arange(20011)), f"{what}: the index is not a permutation")

# Bad input: one line naming what was wrong, status 2, no output file.
write_h5(inp, "/matrix", np.zeros((3, 4), dtype=np.float64))
# (Flags every rank parses alike, to a verdict that does not depend on the rank count: 1 rank.)
bad = [(["--dtype", "uint8"], "--dtype", 1),
       (["--input", f"{inp}:/matrix"], "/matrix", None),
       (["--distribution", "bimodal"], "--distribution", 1),
       (["--input", f"{inp}:/x1", "--distribution", "sorted"], "--distribution", 1),
       (["--input", f"{inp}:/missing"], "/missing", None)]
for args, named, ranks in bad:
    out = h.path("bad.h5")
    status, stdout, stderr = h.run("sort", args + ["--output", f"{out}:/s"], ranks)
    lines = [line for line in stderr.splitlines() if line.startswith("tessera-sort:")]
    h.check(status == 2 and len(lines) == 1 and named in lines[0] and not os.path.exists(out),
            f"sort {' '.join(args)}: status {status}, stderr {stderr!r}, output left: {os.path.exists(out)}")

h.finish()
