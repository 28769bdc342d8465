#!/usr/bin/env python3
"""prefix_sum end to end: h5py-written inputs of every dtype and layout, the --output dataset against
numpy's cumsum (integers exactly, with wrap-around; floats within a rounding bound)."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, random_array, write_h5, read_h5, check_output_attributes, check_h5dump, \
    check_common_json  # noqa: E402

h = Harness(__doc__)
inp = h.path("in.h5")
cases = [("int32", 0, "contiguous"), ("int32", 2, "chunked"), ("int64", 97, "deflate"), ("float32", 1, "chunked"),
         ("float32", 1023, "deflate"), ("float64", 33, "contiguous"), ("float64", 129, "deflate")]
for i, (dtype, n, layout) in enumerate(cases):
    x = random_array(h.rng, np.dtype(dtype), n)
    if dtype == "int32" and n == 2:
        x = np.array([2**31 - 5, 100], dtype=np.int32)  # the scan wraps past 2^31, like the C++ sum
    name = f"/x{i}"
    write_h5(inp, name, x, layout)
    for exclusive in (i % 2 == 0,):  # inclusive and exclusive alternate (the wrapping int32 case inclusive)
        kind = "exclusive" if exclusive else "inclusive"
        what = f"prefix_sum {kind} {dtype} n={n} {layout} seed={h.seed}"
        out = h.path(f"out{i}_{kind}.h5")
        args = ["--input", f"{inp}:{name}", "--output", f"{out}:/scan", "--verify"] + (["--exclusive"] if exclusive else [])
        res = h.run_json("prefix_sum", args)
        if not res:
            continue
        report, _ = res
        check_common_json(h, report, "prefix_sum", dtype, {"n": n})
        h.check(report["verified"] is True, f"{what}: not verified: {report.get('verify_detail')}")
        got, attrs = read_h5(out, "/scan")
        check_output_attributes(h, attrs, "prefix_sum", h.ranks, h.backend)
        if not h.check(got.shape == (n,) and got.dtype == np.dtype(dtype), f"{what}: output {got.shape} {got.dtype}"):
            continue
        if dtype.startswith("int"):
            bits = np.dtype(dtype).itemsize * 8
            ref = np.cumsum(x.astype(np.int64))  # exact: |values| stay far below 2^63
            if exclusive:
                ref = np.concatenate([[0], ref[:-1]]) if n else ref
            if bits == 32:
                ref = ((ref + (1 << 31)) % (1 << 32)) - (1 << 31)
            bad = np.flatnonzero(got.astype(np.int64) != ref)
            h.check(bad.size == 0, f"{what}: {bad.size} wrong elements, first at {bad[:1]}")
        else:
            ref = np.cumsum(x.astype(np.longdouble))
            mag = np.cumsum(np.abs(x).astype(np.longdouble))
            if exclusive and n:
                ref = np.concatenate([[0], ref[:-1]])
                mag = np.concatenate([[0], mag[:-1]])
            u = np.finfo(dtype).eps / 2
            tol = u * (4 + math.sqrt(max(n, 1))) * mag
            bad = np.flatnonzero(np.abs(got.astype(np.longdouble) - ref) > tol)
            h.check(bad.size == 0, f"{what}: {bad.size} elements beyond tolerance, first at {bad[:1]}")
            if n:
                h.check(report["result"] == (float(got[-1]) if dtype == "float64" else report["result"])
                        and np.dtype(dtype).type(report["result"]) == got[-1],
                        f"{what}: json result {report['result']!r} is not the last element {got[-1]!r}")
        if i == 2:
            check_h5dump(h, out)

# Generated input, more ranks than elements where the rank count allows, and a larger odd size.
for n in (2, 65537):
    res = h.run_json("prefix_sum", ["--n", n, "--dtype", "int64", "--verify"])
    if res:
        h.check(res[0]["verified"] is True, f"generated n={n}: not verified")

h.finish()
