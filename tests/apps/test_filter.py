#!/usr/bin/env python3
"""filter end to end: every predicate on h5py-written inputs of every dtype and layout, the kept
elements (--output) against numpy boolean indexing, bit for bit, ragged and rebalanced."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, random_array, write_h5, read_h5, check_output_attributes, check_h5dump, \
    check_common_json  # noqa: E402

h = Harness(__doc__)
inp = h.path("in.h5")


def reference(x, predicate):
    kind, _, rest = predicate.partition(":")
    if kind == "nonzero":
        return x[x != 0]
    if kind == "between":
        lo, hi = (x.dtype.type(v) for v in rest.split(":", 1) if True) if not rest.startswith("-") else \
            (x.dtype.type(rest[:rest.index(":", 1)]), x.dtype.type(rest[rest.index(":", 1) + 1:]))
        return x[(lo <= x) & (x <= hi)]
    a = x.dtype.type(rest)
    return x[{"gt": x > a, "ge": x >= a, "lt": x < a, "le": x <= a, "eq": x == a, "ne": x != a}[kind]]


cases = [("int32", 0, "contiguous", "gt:0"), ("int32", 97, "deflate", "between:-100:250"),
         ("int64", 33, "chunked", "eq:7"), ("int64", 64, "contiguous", "nonzero"),
         ("float32", 1, "chunked", "lt:0.25"), ("float32", 1025, "deflate", "between:-0.5:0.125"),
         ("float64", 31, "contiguous", "ge:-0.75"), ("float64", 257, "deflate", "ne:0"),
         ("float64", 100, "chunked", "le:-2")]
for i, (dtype, n, layout, predicate) in enumerate(cases):
    x = random_array(h.rng, np.dtype(dtype), n)
    if dtype == "int64" and predicate == "eq:7":
        x[::3] = 7
    if predicate == "nonzero" or predicate == "ne:0":
        x[::2] = 0
    name = f"/x{i}"
    write_h5(inp, name, x, layout)
    ref = reference(x, predicate)
    for rebalance in (i % 2 == 1,):  # ragged and rebalanced alternate over the cases
        what = f"filter {predicate} {dtype} n={n} {layout} rebalance={rebalance} seed={h.seed}"
        out = h.path(f"out{i}_{int(rebalance)}.h5")
        args = ["--input", f"{inp}:{name}", "--predicate", predicate, "--output", f"{out}:/kept", "--verify"]
        res = h.run_json("filter", args + (["--rebalance"] if rebalance else []))
        if not res:
            continue
        report, _ = res
        check_common_json(h, report, "filter", dtype, {"n": n})
        h.check(report["verified"] is True, f"{what}: not verified: {report.get('verify_detail')}")
        h.check(report["result"] == ref.size, f"{what}: json result {report['result']!r}, expected {ref.size}")
        got, attrs = read_h5(out, "/kept")
        check_output_attributes(h, attrs, "filter", h.ranks, h.backend)
        h.check(got.dtype == np.dtype(dtype) and got.shape == ref.shape and got.tobytes() == ref.tobytes(),
                f"{what}: kept {got.size} elements, expected {ref.size}; first differences "
                f"{[(j, got[j], ref[j]) for j in range(min(got.size, ref.size)) if got[j] != ref[j]][:3]}")
        if i == 1:
            check_h5dump(h, out)

# Generated input: count agrees between rank counts (element i depends on seed and i only).
gen = ["--n", "10007", "--predicate", "gt:0.5", "--verify"]
ours, one = h.run_json("filter", gen), h.run_json("filter", gen, ranks=1)
if ours and one:
    h.check(ours[0]["result"] == one[0]["result"] and ours[0]["verified"] is True,
            f"generated filter: {ours[0]['result']} kept on {h.ranks} ranks, {one[0]['result']} on 1")

h.finish()
