#!/usr/bin/env python3
"""matmul end to end: A and B written by h5py (float and integer files, chunked and compressed),
odd shapes and grids, the --output C against numpy's A @ B."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, random_array, write_h5, read_h5, check_output_attributes, check_h5dump, \
    check_common_json  # noqa: E402

h = Harness(__doc__)
inp = h.path("in.h5")
grids = {1: [None, "1x1"], 3: [None, "1x3", "3x1"], 2: [None, "2x1"], 4: [None, "2x2", "1x4"]}.get(h.ranks, [None])
cases = [("float64", "float64", 7, 13, 5, "contiguous", "8"), ("float32", "float32", 33, 31, 17, "deflate", "4"),
         ("int32", "int32", 9, 4, 11, "chunked", None), ("float64", "float32", 1, 1, 1, "contiguous", None),
         ("float32", "float32", 5, 0, 3, "contiguous", None)]
for i, (adtype, bdtype, m, k, n, layout, panel) in enumerate(cases):
    a = random_array(h.rng, np.dtype(adtype), (m, k))
    b = random_array(h.rng, np.dtype(bdtype), (k, n))
    write_h5(inp, f"/a{i}", a, layout)
    write_h5(inp, f"/b{i}", b, layout)
    # Computed in float32 only when both files are float32; integer files read as float64.
    dtype = "float32" if adtype == bdtype == "float32" else "float64"
    ref = a.astype(np.longdouble) @ b.astype(np.longdouble)
    mag = np.abs(a).astype(np.longdouble) @ np.abs(b).astype(np.longdouble)
    for grid in (grids[i % len(grids)],):  # the grids of this rank count alternate over the cases
        what = f"matmul {adtype}x{bdtype} {m}x{k}x{n} {layout} grid={grid} panel={panel} seed={h.seed}"
        out = h.path(f"c{i}_{grid}.h5")
        args = ["--a", f"{inp}:/a{i}", "--b", f"{inp}:/b{i}", "--output", f"{out}:/C", "--verify"]
        args += ["--grid", grid] if grid else []
        args += ["--panel", panel] if panel else []
        res = h.run_json("matmul", args)
        if not res:
            continue
        report, _ = res
        check_common_json(h, report, "matmul", dtype, {"m": m, "k": k, "n": n})
        h.check(report["verified"] is True, f"{what}: not verified: {report.get('verify_detail')}")
        c, attrs = read_h5(out, "/C")
        check_output_attributes(h, attrs, "matmul", h.ranks, h.backend)
        if not h.check(c.shape == (m, n) and c.dtype == np.dtype(dtype), f"{what}: C is {c.shape} {c.dtype}"):
            continue
        u = np.finfo(dtype).eps / 2
        tol = u * (4 + math.sqrt(max(k, 1))) * mag
        bad = np.argwhere(np.abs(c.astype(np.longdouble) - ref) > tol)
        h.check(bad.size == 0, f"{what}: {len(bad)} elements of C beyond tolerance, first {bad[:1].tolist()}")
    if i == 0:
        check_h5dump(h, out)

# Generated matrices: the same C at any rank count (elements depend on seed and index only), checked
# by Freivalds at a size where no one would want the dense reference.
gen = ["--m", "67", "--k", "45", "--n", "53", "--dtype", "float64", "--verify"]
ours, one = h.run_json("matmul", gen), h.run_json("matmul", gen, ranks=1)
if ours and one:
    h.check(ours[0]["verified"] is True and one[0]["verified"] is True, "generated matmul not verified")
    h.check(math.isclose(ours[0]["result"], one[0]["result"], rel_tol=1e-9, abs_tol=1e-9),
            f"sum of C differs: {ours[0]['result']} on {h.ranks} ranks, {one[0]['result']} on 1")

# The report names the local product that ran: under cpu OpenBLAS where the build has it
# (TESSERA_TEST_OPENBLAS=1, set by the build), the blocked kernel ("host") otherwise.
openblas = os.environ.get("TESSERA_TEST_OPENBLAS") == "1"
for local, dtype, want_cpu in [("cublas", "float64", "openblas" if openblas else "host"),
                               ("vendor", "float32", "openblas" if openblas else "host"),
                               ("tiled", "float64", "host")]:
    res = h.run_json("matmul", ["--size", 33, "--local", local, "--dtype", dtype, "--repeat", 1, "--warmup", 0,
                                "--verify"])
    if res:
        want = want_cpu if h.backend == "cpu" else local
        h.check(res[0]["parameters"]["local"] == want,
                f"--local {local} --dtype {dtype} on {h.backend}: the report names "
                f"{res[0]['parameters']['local']!r}, expected {want!r}")
        h.check(res[0]["verified"] is True, f"--local {local} --dtype {dtype}: not verified")

h.finish()
