#!/usr/bin/env python3
"""global_sum end to end: h5py-written inputs of every dtype and layout, results against Python's
exact arithmetic (ints, fractions.Fraction) and numpy."""
import math
import os
import sys
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, random_array, write_h5, read_h5, check_output_attributes, check_h5dump, \
    check_common_json  # noqa: E402


def wrap(v, bits):
    return ((v + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))


def is_correctly_rounded(value, exact, ftype):
    """value (of type ftype) is a nearest ftype to the exact rational sum."""
    v = ftype(value)
    if not np.isfinite(v):
        return False
    up = np.nextafter(v, ftype(np.inf))
    down = np.nextafter(v, ftype(-np.inf))
    d = abs(Fraction(float(v)) - exact)
    return d <= abs(Fraction(float(up)) - exact) and d <= abs(Fraction(float(down)) - exact)


h = Harness(__doc__)
inp = h.path("in.h5")
cases = [("int32", 0, "contiguous"), ("int32", 97, "deflate"), ("int64", 33, "chunked"),
         ("float32", 1, "contiguous"), ("float32", 1025, "deflate"), ("float64", 31, "chunked"),
         ("float64", 257, "contiguous")]
for i, (dtype, n, layout) in enumerate(cases):
    x = random_array(h.rng, np.dtype(dtype), n)
    name = f"/x{i}"
    write_h5(inp, name, x, layout)
    what = f"global_sum {dtype} n={n} {layout} seed={h.seed}"
    # Every case sums; min and max once per kind of element (their kernels are tested in the MPI
    # suites; here the flag, the file and the JSON).
    for op in ("sum", "min", "max") if i in (1, 5) else ("sum",):
        res = h.run_json("global_sum", ["--input", f"{inp}:{name}", "--op", op, "--verify"])
        if not res:
            continue
        report, _ = res
        check_common_json(h, report, "global_sum", dtype, {"n": n})
        h.check(report["verified"] is True, f"{what} --op {op}: not verified: {report.get('verify_detail')}")
        got = report["result"]
        if op != "sum":
            ref = x.min() if op == "min" else x.max()
            h.check(np.dtype(dtype).type(got) == ref, f"{what} --op {op}: got {got}, expected {ref}")
        elif dtype.startswith("int"):
            ref = wrap(sum(int(v) for v in x), np.dtype(dtype).itemsize * 8)
            h.check(got == ref, f"{what}: sum {got}, expected {ref}")
        else:
            ref = math.fsum(float(v) for v in x)
            u = np.finfo(dtype).eps / 2
            tol = u * (4 + math.sqrt(n)) * sum(abs(float(v)) for v in x)
            h.check(abs(float(got) - ref) <= tol, f"{what}: sum {got}, expected {ref} within {tol}")
    if dtype.startswith("float") and i in (4, 6):
        res = h.run_json("global_sum", ["--input", f"{inp}:{name}", "--reproducible", "--verify"])
        if res:
            report, _ = res
            exact = sum((Fraction(float(v)) for v in x), Fraction(0))
            h.check(is_correctly_rounded(report["result"], exact, np.dtype(dtype).type),
                    f"{what} --reproducible: {report['result']!r} is not the correctly rounded sum {float(exact)!r}")

# Integers beyond 2^53, where a double would lose them: JSON must carry the exact (wrapped) sum.
big = h.rng.integers(2**59, 2**60, size=37, dtype=np.int64)
write_h5(inp, "/big", big)
res = h.run_json("global_sum", ["--input", f"{inp}:/big", "--verify"])
if res:
    report, text = res
    ref = wrap(sum(int(v) for v in big), 64)
    h.check(report["result"] == ref and isinstance(report["result"], int),
            f"int64 sum beyond 2^53: json has {report['result']!r}, expected {ref}")

# The file's type converts to a requested one: int32 file summed as float64 (exact at this size).
x = random_array(h.rng, np.dtype("int32"), 101)
write_h5(inp, "/as_float", x, "deflate")
res = h.run_json("global_sum", ["--input", f"{inp}:/as_float", "--dtype", "float64", "--reproducible"])
if res:
    report, _ = res
    h.check(report["dtype"] == "float64" and report["result"] == float(x.astype(np.int64).sum()),
            f"int32 file as float64: {report['result']!r}, expected {x.sum()}")

# --reproducible is bitwise the same at any rank count; the float32 value round-trips through JSON.
gen = ["--n", "100003", "--seed", "7", "--reproducible", "--dtype", "float32"]
ours, one = h.run_json("global_sum", gen), h.run_json("global_sum", gen, ranks=1)
if ours and one:
    h.check(ours[0]["result"] == one[0]["result"],
            f"--reproducible differs between {h.ranks} ranks ({ours[0]['result']!r}) and 1 ({one[0]['result']!r})")
    h.check(np.float32(ours[0]["result"]) == np.float32(ours[0]["result"]).astype(np.float64),
            "float32 result does not read back as a float32")

# --output: a one-element dataset with the result, readable by h5py and h5dump.
out = h.path("sum_out.h5")
x = random_array(h.rng, np.dtype("int64"), 55)
write_h5(inp, "/for_output", x)
res = h.run_json("global_sum", ["--input", f"{inp}:/for_output", "--output", f"{out}:/result/sum"])
if res:
    data, attrs = read_h5(out, "/result/sum")
    h.check(data.shape == (1,) and int(data[0]) == int(x.sum()), f"--output holds {data!r}, expected [{x.sum()}]")
    check_output_attributes(h, attrs, "global_sum", h.ranks, h.backend)
    check_h5dump(h, out)

h.finish()
