#!/usr/bin/env python3
"""transpose end to end: A written by h5py (each dtype, complex64 and complex128 as h5py's compound
{r, i} included; contiguous, chunked and compressed), pairs of
layouts of the rank count (row blocks, column blocks, 2-D and explicit grids), the --output B against
numpy's A.T (or A itself with --op redistribute), and the position checksum of the report against
one computed here with numpy; generated matrices give the same checksum at any rank count; bad
input: exit status 2, one line naming the flag, no output file."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, program, random_array, write_h5, read_h5, check_output_attributes, \
    check_common_json  # noqa: E402

K = np.uint64(0x9E3779B97F4A7C15)


def splitmix64(x):
    with np.errstate(over="ignore"):
        z = x + K
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def element_bits(b):
    """Each element's bytes as a little-endian integer; elements of 16 bytes (complex128) as two 8-byte
    words w0, w1 combined as splitmix64(w0) ^ w1, as the app defines it."""
    size = b.dtype.itemsize
    if size <= 8:
        return np.ascontiguousarray(b).view(np.dtype(f"<u{size}")).astype(np.uint64)
    words = np.ascontiguousarray(b).view(np.dtype("<u8")).reshape(*b.shape, size // 8)
    bits = words[..., 0]
    for k in range(1, size // 8):
        bits = splitmix64(bits) ^ words[..., k]
    return bits


def position_checksum(b):
    """sum of splitmix64(splitmix64(i) ^ j) * (bits(b_ij) + K) modulo 2^64, as the app defines it."""
    rows, cols = b.shape
    i = np.arange(rows, dtype=np.uint64)[:, None]
    j = np.arange(cols, dtype=np.uint64)[None, :]
    bits = element_bits(b)
    with np.errstate(over="ignore"):
        return int((splitmix64(splitmix64(i) ^ j) * (bits + K)).sum(dtype=np.uint64))


h = Harness(__doc__)
inp = h.path("in.h5")
p = h.ranks
two_d = {1: "1x1", 2: "2x1", 3: "3x1", 4: "2x2"}.get(p, f"{p}x1")
pairs = [("rows", "rows"), ("rows", "cols"), ("cols", "2d"), (two_d, "rows")]
cases = [("float32", 37, 23, "contiguous"), ("float64", 64, 1, "chunked"), ("int32", 1, 70, "deflate"),
         ("int64", 2, 9, "contiguous"), ("float32", 0, 6, "contiguous"), ("complex64", 19, 8, "chunked"),
         ("complex128", 5, 33, "deflate")]
ops = ["transpose", "transpose", "redistribute"]
for c, (dtype, m, n, layout) in enumerate(cases):
    if dtype.startswith("complex"):  # h5py writes them as the compound {r, i}
        part = np.dtype("float32" if dtype == "complex64" else "float64")
        a = (random_array(h.rng, part, (m, n)) + 1j * random_array(h.rng, part, (m, n))).astype(dtype)
    else:
        a = random_array(h.rng, np.dtype(dtype), (m, n))
    if not dtype.startswith("int") and a.size > 1:
        a.flat[0] = -0.0  # a sign that only a bit-exact copy keeps
    write_h5(inp, f"/a{c}", a, layout)
    # Two or three of the layout pairs per case, every pair and both operations over the cases.
    runs = [(*pairs[(c + k) % len(pairs)], ops[k]) for k in range(2 if c % 2 else 3)]
    for k, (frm, to, op) in enumerate(runs):
        what = f"{op} {dtype} {m}x{n} {layout} --from {frm} --to {to} seed={h.seed}"
        out = h.path(f"b{c}_{k}.h5")
        args = ["--a", f"{inp}:/a{c}", "--from", frm, "--to", to, "--op", op, "--output", f"{out}:/B", "--verify",
                "--repeat", "1", "--warmup", "0"]
        if k == 0:
            args += ["--m", str(m), "--n", str(n)]  # restating the file's shape is allowed
        res = h.run_json("transpose", args)
        if not res:
            continue
        report, _ = res
        check_common_json(h, report, "transpose", dtype, {"m": m, "n": n})
        h.check(report["verified"] is True, f"{what}: not verified: {report.get('verify_detail')}")
        h.check(str(report.get("verify_detail", "")).count(report["result"]) == 2,
                f"{what}: the check names another checksum than the result's {report['result']}: "
                f"{report.get('verify_detail')}")
        want = a.T if op == "transpose" else a
        b, attrs = read_h5(out, "/B")
        check_output_attributes(h, attrs, "transpose", h.ranks, h.backend)
        if not h.check(b.shape == want.shape and b.dtype == want.dtype, f"{what}: B is {b.shape} {b.dtype}"):
            continue
        h.check(b.tobytes() == np.ascontiguousarray(want).tobytes(), f"{what}: B differs from numpy's, bit for bit")
        h.check(int(report["result"], 16) == position_checksum(want),
                f"{what}: reported checksum {report['result']} differs from numpy's {position_checksum(want):#018x}")

# Generated matrices: the same result at any rank count (elements depend on seed and index only).
gen = ["--m", "301", "--n", "157", "--dtype", "float64", "--from", "cols", "--to", "2d", "--verify"]
ours, one = h.run_json("transpose", gen), h.run_json("transpose", gen, ranks=1)
if ours and one:
    h.check(ours[0]["verified"] is True and one[0]["verified"] is True, "generated transpose not verified")
    h.check(ours[0]["result"] == one[0]["result"],
            f"checksum differs: {ours[0]['result']} on {h.ranks} ranks, {one[0]['result']} on 1")
    h.check(ours[0]["parameters"].get("phase_names", {}).get("local") == "pack", "json parameters.phase_names")

# Generated complex matrices: the same at any rank count too.
gen = ["--m", "97", "--n", "31", "--dtype", "complex128", "--from", "2d", "--to", "rows", "--verify", "--op",
       "redistribute"]
ours, one = h.run_json("transpose", gen), h.run_json("transpose", gen, ranks=1)
if ours and one:
    h.check(ours[0]["verified"] is True and one[0]["verified"] is True, "generated complex redistribute not verified")
    h.check(ours[0]["dtype"] == "complex128", f"json dtype {ours[0]['dtype']!r}")
    h.check(ours[0]["result"] == one[0]["result"],
            f"complex checksum differs: {ours[0]['result']} on {h.ranks} ranks, {one[0]['result']} on 1")

# Bad input: exit 2, one line from the app naming the flag, no output file.
write_h5(inp, "/vector", random_array(h.rng, np.dtype("float64"), 12))
write_h5(inp, "/m", random_array(h.rng, np.dtype("float64"), (4, 6)))
too_many = "3x3" if p != 9 else "2x2"
bad = [
    (["--a", f"{inp}:/vector"], ["--a", "/vector", "2-D"]),
    (["--a", f"{inp}:/m", "--m", "5"], ["--m", "5", "4 rows"]),
    (["--a", f"{inp}:/m", "--n", "7"], ["--n", "7", "6 columns"]),
    (["--grid", too_many, "--to", "2d"], ["--grid", too_many]),
    (["--to", too_many], ["--to", too_many]),
    # Flags every rank parses alike, to a verdict that does not depend on the rank count: 1 rank.
    (["--from", "diagonal"], ["--from", "unknown layout", "diagonal"], 1),
    (["--op", "rotate"], ["--op", "rotate"], 1),
    (["--input", f"{inp}:/m"], ["--input", "--a"], 1),
    (["--a", f"{inp}:/m", "--dtype", "complex64"], ["--a", "/m", "compound", "complex64"]),
    (["--dtype", "complex32"], ["--dtype", "complex32"], 1),
]
for i, (args, words, *count) in enumerate(bad):
    out = h.path(f"bad_{i}.h5")
    before = set(os.listdir(h.work))
    status, stdout, stderr = h.run("transpose", [*args, "--m", "8", "--n", "8", "--output", f"{out}:/B"]
                                   if "--a" not in args else [*args, "--output", f"{out}:/B"],
                                   ranks=count[0] if count else None)
    what = f"transpose {' '.join(args)}"
    if status is None:
        continue
    h.check(status == 2, f"{what}: status {status}, expected 2\n{stdout}\n{stderr}")
    lines = [line for line in stderr.splitlines() if line.startswith(program("transpose") + ":")]
    h.check(len(lines) == 1, f"{what}: expected one line starting '{program('transpose')}:', got {lines}")
    if lines:
        h.check(all(w in lines[0] for w in words), f"{what}: message {lines[0]!r} lacks one of {words}")
    h.check(stdout.strip() == "", f"{what}: unexpected standard output {stdout!r}")
    h.check(not os.path.exists(out), f"{what}: an output file was created")
    h.check(set(os.listdir(h.work)) == before, f"{what}: files appeared")
h.finish()
