#!/usr/bin/env python3
"""fft end to end: arrays written by h5py (complex64 and complex128 as h5py's compound {r, i}),
transformed by tessera-fft and compared with numpy.fft (fftn, ifft along an axis, rfftn, rfft along
an axis, irfftn) under each norm, slab and pencil, sizes the ranks do not divide (N x 1 included),
the output in either layout; --verify passes; the JSON report's common fields; bad input (a pencil
grid that does not match the ranks, c2r of the wrong length, a 1-D dataset): exit status 2, one
line naming the flag, no output file."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, random_array, write_h5, read_h5, check_output_attributes, \
    check_common_json  # noqa: E402

h = Harness(__doc__)
inp = h.path("in.h5")
p = h.ranks


def complex_array(shape, dtype):
    part = np.dtype("float32" if dtype == "complex64" else "float64")
    return (random_array(h.rng, part, shape) + 1j * random_array(h.rng, part, shape)).astype(dtype)


def compare(what, got, want, single):
    eps = np.finfo(np.float32 if single else np.float64).eps
    tol = 10 * eps * max(1.0, np.log2(max(want.size, 2))) * max(1.0, float(np.abs(want).max(initial=0)))
    if not h.check(got.shape == want.shape, f"{what}: output shape {got.shape}, expected {want.shape}"):
        return
    err = float(np.abs(got.astype(np.complex128) - want).max(initial=0))
    h.check(err <= tol, f"{what}: max error {err:.3g} above {tol:.3g}")


# (name, data, args, numpy's result)
a0 = complex_array((9, 7, 5), "complex128")
a1 = random_array(h.rng, np.dtype("float32"), (13, 10))
x2 = random_array(h.rng, np.dtype("float64"), (5, 6, 7))
a2 = np.fft.rfftn(x2)  # complex 5 x 6 x 4: c2r back to 7 along the last axis
a3 = complex_array((2, 17), "complex64")
a4 = random_array(h.rng, np.dtype("float64"), (17, 1))
a5 = complex_array((6, 5, 4), "complex128")
a6 = complex_array((5, 7), "complex128")
runs = [
    ("c2c pencil ortho", a0, ["--decomposition", "pencil", "--norm", "ortho"], np.fft.fftn(a0, norm="ortho")),
    ("r2c slab float32, input layout", a1, ["--layout", "input"], np.fft.rfftn(a1.astype(np.float64))),
    ("c2r forward norm", a2, ["--kind", "c2r", "--real-length", "7", "--norm", "forward"],
     np.fft.irfftn(a2, s=(5, 6, 7), norm="forward")),
    ("c2c inverse along axis 0", a3, ["--inverse", "--axis", "0"], np.fft.ifft(a3.astype(np.complex128), axis=0)),
    ("r2c along axis 0 of N x 1", a4, ["--axis", "0", "--kind", "r2c"], np.fft.rfft(a4, axis=0)),
    # Spectra that no real array has (random on the self-conjugate planes too): c2r reads their
    # Hermitian part, as numpy does, and --verify checks F x against that part.
    ("c2r of a random spectrum", a5, ["--kind", "c2r", "--real-length", "6"], np.fft.irfftn(a5, s=(6, 5, 6))),
    ("c2r along axis 0 of a random spectrum", a6, ["--kind", "c2r", "--axis", "0", "--real-length", "8", "--norm", "ortho"],
     np.fft.irfft(a6, n=8, axis=0, norm="ortho")),
]
for c, (what, data, args, want) in enumerate(runs):
    write_h5(inp, f"/a{c}", data, "chunked" if c % 2 else "contiguous")
    out = h.path(f"out{c}.h5")
    res = h.run_json("fft", ["--input", f"{inp}:/a{c}", "--output", f"{out}:/y", "--verify", "--repeat", "1",
                             "--warmup", "0", *args])
    if not res:
        continue
    report, _ = res
    h.check(report.get("verified") is True, f"{what}: verified = {report.get('verified')!r}")
    got, attrs = read_h5(out, "/y")
    compare(what, got, want, data.dtype in (np.float32, np.complex64))
    if c == 0:
        check_common_json(h, report, "fft", "complex128", {"n0": 9, "n1": 7, "n2": 5})
        check_output_attributes(h, attrs, "fft", p, h.backend)

# Bad input: one line naming the flag, status 2, no output.
write_h5(inp, "/one_d", random_array(h.rng, np.dtype("float64"), (8,)))
bad = [
    (["--input", f"{inp}:/a0", "--decomposition", "pencil", "--grid", f"{p + 1}x1"], "--grid", "does not match"),
    (["--input", f"{inp}:/a2", "--kind", "c2r", "--real-length", "9"], "--real-length", "takes 5 complex values"),
    (["--input", f"{inp}:/one_d"], "--input", "2 or 3"),
    (["--shape", "1x4Gx4G"], "--shape", "pass 2^63 - 1"),  # the product of the last two overflows first
    (["--shape", "2x2Gx4G", "--kind", "r2c"], "--shape", "pass 2^63 - 1"),
    (["--shape", "4x4", "--norm", "both"], "--norm", "not one of"),
]
for k, (args, flag, words) in enumerate(bad):
    out = h.path(f"bad{k}.h5")
    status, stdout, stderr = h.run("fft", [*args, "--output", f"{out}:/y"])
    lines = [line for line in stderr.splitlines() if line.startswith("tessera-fft")]
    h.check(status == 2, f"bad input {args}: status {status}, expected 2")
    h.check(len(lines) == 1 and flag in lines[0] and words in lines[0], f"bad input {args}: stderr {stderr!r}")
    h.check(not os.path.exists(out), f"bad input {args}: output file made")
# 256^3 complex128: Parseval's sums over 2^24 terms each (summed plainly in double they strayed by
# 2.7e-13 relative, five times the check's bound of 10 eps log2 N, and a correct transform failed).
res = h.run_json("fft", ["--shape", "256x256x256", "--verify", "--repeat", "1", "--warmup", "0"])
if res:
    h.check(res[0].get("verified") is True, f"256^3: verified = {res[0].get('verified')!r}, {res[0].get('verify_detail')!r}")

# NaN or infinity in x: every element of the transform mixes them, so --verify cannot check (status
# 0, "not checked"), and, as numpy's, no element of the output is finite (which are NaN and which
# infinite depends on the algorithm's products).
for c, bad_value in enumerate((np.nan, np.inf)):
    data = random_array(h.rng, np.dtype("complex128"), (5, 4))
    data[2, 1] = bad_value
    write_h5(inp, f"/nonfinite{c}", data)
    out = h.path(f"nonfinite{c}.h5")
    res = h.run_json("fft", ["--input", f"{inp}:/nonfinite{c}", "--output", f"{out}:/y", "--verify", "--repeat", "1",
                             "--warmup", "0"])
    if res:
        report, _ = res
        h.check(report.get("verified") is None and "NaN or infinite" in report.get("verify_detail", ""),
                f"non-finite input: verified = {report.get('verified')!r}, {report.get('verify_detail')!r}")
        got, _ = read_h5(out, "/y")
        want = np.fft.fftn(data)
        h.check(got.shape == want.shape and not np.isfinite(got).any() and not np.isfinite(want).any(),
                f"non-finite input: finite elements in the output {got}")
h.finish()
