#!/usr/bin/env python3
"""Sizes that cannot be made: a byte count that does not fit in 64 bits, and blocks that do not fit
in memory (generated, or read from an HDF5 dataset). Each is exit status 2 with one line that names
the flag and the bytes per rank: never a crash, a fatal error with a stack, or a hang."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, program  # noqa: E402

h = Harness(__doc__)
# Huge allocations must fail cleanly under AddressSanitizer too (the debug preset).
env = {"ASAN_OPTIONS": "allocator_may_return_null=1:" + os.environ.get("ASAN_OPTIONS", "")}

# On 1 to 4 ranks the 2^62-element cases have no byte count per rank (more than 2^64); 2^61 int64
# elements have one on 3 or more ranks (then they do not fit in memory).
overflow_or_oom = ["--n", "per rank"]
cases = [
    # (app, args, words the one line must contain)
    ("global_sum", ["--n", "2^62"], ["--n", "2^64 bytes"] if h.ranks < 2 else overflow_or_oom),
    ("prefix_sum", ["--n", "2^62", "--dtype", "float64"], ["--n", "2^64 bytes"] if h.ranks < 3 else overflow_or_oom),
    ("filter", ["--n", "2^61", "--dtype", "int64"], overflow_or_oom),
    ("global_sum", ["--n", "2^45"], ["--n", "per rank", "out of memory"]),
    ("prefix_sum", ["--n", "2^44", "--dtype", "int64"], ["--n", "per rank", "out of memory"]),
]
for app, args, words in cases:
    status, stdout, stderr = h.run(app, args, env=env)
    what = f"{app} {' '.join(args)}"
    if status is None:
        continue
    h.check(status == 2, f"{what}: status {status}, expected 2\n{stderr[-2000:]}")
    ours = [line for line in stderr.splitlines() if line.startswith(program(app) + ":")]
    h.check(len(ours) == 1, f"{what}: expected one line starting '{program(app)}:', got {ours}\n{stderr[-2000:]}")
    if ours:
        for word in words:
            h.check(word in ours[0], f"{what}: '{word}' missing from: {ours[0]}")
    h.check("fatal error" not in stderr and "AddressSanitizer" not in stderr, f"{what}: crashed:\n{stderr[-2000:]}")

# The scaling app: a point whose block has no byte count, and one that does not fit.
for args, words in ((["--op", "sum", "--n", "2^62"], ["--n", "2^64 bytes"]),
                    (["--op", "sum", "--mode", "weak", "--n-per-rank", "2^44"], ["out of memory"])):
    status, stdout, stderr = h.run("scaling", args, env=env)
    what = f"scaling {' '.join(args)}"
    if status is None:
        continue
    h.check(status == 2, f"{what}: status {status}, expected 2\n{stderr[-2000:]}")
    ours = [line for line in stderr.splitlines() if line.startswith("tessera-scaling:") and any(w in line for w in words)]
    h.check(len(ours) == 1, f"{what}: expected one line naming {words}, got:\n{stderr[-2000:]}")
    h.check("fatal error" not in stderr, f"{what}: fatal error:\n{stderr[-2000:]}")

# An HDF5 dataset too large to read: a dataset of 2^42 float64 elements, declared but never written
# (HDF5 allocates chunked storage lazily, so the file stays small).
import h5py  # noqa: E402

big = h.path("big.h5")
with h5py.File(big, "w") as f:
    f.create_dataset("x", shape=(2 ** 42,), dtype="f8", chunks=(2 ** 20,))
status, stdout, stderr = h.run("prefix_sum", ["--input", f"{big}:/x"], env=env)
if status is not None:
    h.check(status == 2, f"prefix_sum of a 2^42-element dataset: status {status}, expected 2\n{stderr[-2000:]}")
    ours = [line for line in stderr.splitlines() if line.startswith(program("prefix_sum") + ":")]
    h.check(len(ours) == 1 and "--input" in ours[0] and "per rank" in ours[0],
            f"prefix_sum of a 2^42-element dataset: expected one line naming --input and the bytes per rank, got {ours}")
h.finish()
