#!/usr/bin/env python3
"""Bad input to the apps: exit status 2, one line on stderr from the app naming the flag or dataset
and what is wrong, no hang (a timeout fails), no output file, and an existing file at the output
path left exactly as it was."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, program, random_array, write_h5  # noqa: E402

h = Harness(__doc__)
good = h.path("good.h5")
write_h5(good, "/v", random_array(h.rng, np.dtype("float64"), 50))
write_h5(good, "/m", random_array(h.rng, np.dtype("float64"), (4, 6)), "deflate")
write_h5(good, "/m2", random_array(h.rng, np.dtype("float64"), (5, 3)))
with open(h.path("text.h5"), "w") as f:
    f.write("not an HDF5 file\n")

G, P, F, M = "global_sum", "prefix_sum", "filter", "matmul"
cases = [
    # (app, args, words the message must contain)
    (G, ["--bogus"], ["unknown flag", "--bogus"]),
    (P, ["--dtype", "int8"], ["--dtype", "int8"]),
    (G, ["--input", "missing.h5:/v"], ["--input", "missing.h5"]),
    (F, ["--input", f"{good}:/nothere"], ["--input", "/nothere"]),
    (G, ["--input", f"{h.path('text.h5')}:/v"], ["--input", "not an HDF5 file"]),
    (P, ["--input", f"{good}:/m"], ["--input", "/m", "2-D"]),
    (M, ["--a", f"{good}:/m", "--b", f"{good}:/m2"], ["--a/--b", "do not multiply", "4 x 6", "5 x 3"]),
    (M, ["--a", f"{good}:/v", "--b", f"{good}:/m2"], ["--a", "/v", "2-D"]),
    (G, ["--n", "-5"], ["--n", "negative", "-5"]),
    (P, ["--n", "12abc"], ["--n", "12abc"]),
    (F, ["--n", "1e30"], ["--n", "1e30", "too large"]),
    (M, ["--m", "-3"], ["--m", "negative"]),
    (M, ["--size", "x"], ["--size", "'x'"]),
    (F, ["--predicate", "gt"], ["--predicate"]),
    (F, ["--predicate", "gt:abc", "--dtype", "int32"], ["--predicate", "abc"]),
    (F, ["--predicate", "between:5:1"], ["--predicate", "can never match", "exceeds"]),
    (F, ["--predicate", "gt:nan", "--dtype", "float32"], ["--predicate", "can never match", "NaN"]),
    (F, ["--predicate", "lt:-2147483648", "--dtype", "int32"], ["--predicate", "can never match"]),
    (G, ["--op", "avg"], ["--op", "avg"]),
    (M, ["--grid", "2x2"] if h.ranks != 4 else ["--grid", "3x3"], ["grid"]),
    (G, ["--input", "nocolon.h5"], ["--input", "FILE.h5:/DATASET"]),
    (P, ["--repeat", "0"], ["--repeat"]),
]
# A GPU asked for where none exists: CUDA_VISIBLE_DEVICES="" hides any GPU the machine has (and a
# build without CUDA has none), so this case runs on every machine.
no_gpu_case = len(cases)
cases.append((G, ["--backend", "cuda"], ["--backend cuda"]))

existing_bytes = b"an existing file that must survive\n"
for i, (app, args, words) in enumerate(cases):
    for existing in (i % 2 == 1,):  # alternate: no file at the output path / an existing one
        out = h.path(f"out_{i}_{int(existing)}.h5")
        if existing:
            with open(out, "wb") as f:
                f.write(existing_bytes)
        before = set(os.listdir(h.work))
        use_backend = "--backend" not in args
        env = {"CUDA_VISIBLE_DEVICES": ""} if i == no_gpu_case else None
        status, stdout, stderr = h.run(app, [*args, "--output", f"{out}:/r"], backend=use_backend, env=env)
        what = f"{app} {' '.join(args)} (existing output: {existing})"
        if status is None:
            continue
        h.check(status == 2, f"{what}: status {status}, expected 2\n{stdout}\n{stderr}")
        ours = [line for line in stderr.splitlines() if line.startswith(program(app) + ":")]
        h.check(len(ours) == 1, f"{what}: expected one line starting '{program(app)}:', got {ours}")
        if ours:
            h.check(all(w in ours[0] for w in words), f"{what}: message {ours[0]!r} lacks one of {words}")
        h.check(stdout.strip() == "", f"{what}: unexpected standard output {stdout!r}")
        if existing:
            with open(out, "rb") as f:
                h.check(f.read() == existing_bytes, f"{what}: the existing output file changed")
        else:
            h.check(not os.path.exists(out), f"{what}: an output file was created")
        after = set(os.listdir(h.work))
        h.check(after == before, f"{what}: files appeared: {sorted(after - before)}")

# An unwritable output destination is refused before any work.
status, _, stderr = h.run(G, ["--n", "10", "--output", h.path("no/such/dir/x.h5") + ":/r"])
h.check(status == 2 and "--output" in stderr and "no such directory" in stderr, f"bad --output dir: {status} {stderr}")
status, _, stderr = h.run(G, ["--n", "10", "--json", h.path("no/such/dir/r.json")])
h.check(status == 2 and "--json" in stderr, f"bad --json dir: {status} {stderr}")

# --help and --version succeed and print on rank 0 only.
for app in (G, P, F, M):
    status, stdout, _ = h.run(app, ["--help"], backend=False)
    h.check(status == 0 and stdout.count("usage:") == 1 and "--verify" in stdout, f"{app} --help: {status} {stdout!r}")
    status, stdout, _ = h.run(app, ["--version"], backend=False)
    h.check(status == 0 and len(stdout.strip().splitlines()) == 1, f"{app} --version: {status} {stdout!r}")
# ... and so do the scaling app's.
status, stdout, _ = h.run("scaling", ["--help"], backend=False)
h.check(status == 0 and stdout.count("usage:") == 1 and "--n-per-rank" in stdout, f"scaling --help: {status} {stdout!r}")
status, stdout, _ = h.run("scaling", ["--version"], backend=False)
h.check(status == 0 and len(stdout.strip().splitlines()) == 1 and "Tessera" in stdout, f"scaling --version: {status} {stdout!r}")
h.finish()
