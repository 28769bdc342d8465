#!/usr/bin/env python3
"""Sizes that cannot be made, for every app and every flag that makes a size: element counts whose
product passes 2^63 - 1 (a matrix of 2^32 x 2^32, a field of 2^40 x 2^40), byte counts that do not
fit in 64 bits, and blocks that do not fit in memory (generated, or read from an HDF5 dataset),
alone or together with the other ranks of the node. Each is exit status 2 with one line that names
the flag: never a crash, a fatal error with a stack, an abort box, a line per rank, or a hang. A
size at the edge of a flag's range that is valid runs (--bins 2^21)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, program  # noqa: E402

h = Harness(__doc__)
# Huge allocations must fail cleanly under AddressSanitizer too (the debug preset).
env = {"ASAN_OPTIONS": "allocator_may_return_null=1:" + os.environ.get("ASAN_OPTIONS", "")}
BIG = "9223372036854775807"  # 2^63 - 1, the largest size a flag takes


def refused(app, args, words, ranks=None, what=None):
    """app refuses args with exit 2 and exactly one line of its own that holds every word."""
    status, stdout, stderr = h.run(app, args, ranks=ranks, env=env)
    what = what or f"{app} {' '.join(map(str, args))} ({ranks or h.ranks} rank(s))"
    if status is None:
        return
    h.check(status == 2, f"{what}: status {status}, expected 2\n{stderr[-2000:]}")
    ours = [line for line in stderr.splitlines() if line.startswith(program(app) + ":")]
    h.check(len(ours) == 1, f"{what}: expected one line starting '{program(app)}:', got {ours}\n{stderr[-2000:]}")
    if ours:
        for word in words:
            h.check(word in ours[0], f"{what}: '{word}' missing from: {ours[0]}")
    for sign in ("fatal error", "AddressSanitizer", "MPI_ABORT", "Segmentation", "signal"):
        h.check(sign not in stderr, f"{what}: '{sign}' in stderr:\n{stderr[-2000:]}")


# The 1-D apps: 2^62 elements (no byte count per rank on few ranks, out of memory on more), 2^63 - 1,
# and counts that fit in 64 bits but not in memory.
for app in ("global_sum", "prefix_sum", "filter", "histogram", "sort"):
    refused(app, ["--n", "2^62"], ["--n"])
refused("sort", ["--n", BIG, "--dtype", "int64"], ["--n"])
refused("global_sum", ["--n", "2^45"], ["--n", "per rank", "out of memory"])
refused("prefix_sum", ["--n", "2^44", "--dtype", "int64"], ["--n", "per rank", "out of memory"])
refused("histogram", ["--n", "1000", "--bins", "2^31"], ["--bins", "out of range"])

# Matrices: the element count of each matrix, and the memory of the whole product or exchange.
PRODUCT = "pass 2^63 - 1"
refused("matmul", ["--size", "2^62"], ["--size", PRODUCT], ranks=1)  # on one rank it once grew without end
for ranks in (h.ranks,):
    refused("transpose", ["--m", "1", "--n", "2^62"], ["--m/--n", "out of memory"], ranks=ranks)
    refused("transpose", ["--m", "2^32", "--n", "2^32"], ["--m/--n", PRODUCT], ranks=ranks)
    refused("transpose", ["--m", "2^31", "--n", "2^31", "--dtype", "float64"], ["--m/--n", "out of memory"], ranks=ranks)
    refused("matmul", ["--size", "2^62"], ["--size", PRODUCT], ranks=ranks)
    refused("matmul", ["--m", "2^32", "--n", "2^32", "--k", "2"], ["--m/--k/--n", "C (M x N)", PRODUCT], ranks=ranks)
    refused("matmul", ["--m", "2", "--n", "2", "--k", "2^40"], ["--m/--k/--n", "out of memory"], ranks=ranks)
    refused("matmul", ["--size", "2^20"], ["--size", "out of memory", "per rank"], ranks=ranks)

# Fields and the convolution.
refused("stencil", ["--nx", "2^40", "--ny", "2^40"], ["--nx/--ny", PRODUCT])
refused("stencil", ["--nx", BIG, "--ny", "4"], ["--nx"])
refused("stencil", ["--nx", "2^20", "--ny", "2^20"], ["--nx/--ny", "out of memory"])
refused("stencil", ["--nx", "64", "--ny", "64", "--ghost", "2^20"], ["--nx/--ny", "out of memory"])
refused("stencil", ["--op", "convolve1d", "--n", "2^62"], ["--n"])
refused("stencil", ["--op", "convolve1d", "--n", "1000", "--radius", "2^62"], ["--radius"])

# The scaling study: every size is refused before the first progress line.
for args, words in ((["--op", "sum", "--n", "2^62"], ["--n", "2^64 bytes"]),
                    (["--op", "sum", "--mode", "weak", "--n-per-rank", "2^44"], ["--n-per-rank", "out of memory"]),
                    (["--op", "sum", "--mode", "weak", "--n-per-rank", "2^62", "--ranks", "1,2"], ["--n-per-rank"]),
                    (["--op", "matmul", "--n", "2^32"], ["--n"]),
                    (["--ping-bytes", "2^62"], ["--ping-bytes", "2G"])):
    status, stdout, stderr = h.run("scaling", args, env=env)
    what = f"scaling {' '.join(args)}"
    if status is None:
        continue
    h.check(status == 2, f"{what}: status {status}, expected 2\n{stderr[-2000:]}")
    ours = [line for line in stderr.splitlines() if line.startswith("tessera-scaling:")]
    h.check(len(ours) == 1 and all(w in ours[0] for w in words),
            f"{what}: expected one line, naming {words}, and no progress before it; got:\n{stderr[-2000:]}")
    h.check("fatal error" not in stderr, f"{what}: fatal error:\n{stderr[-2000:]}")

# Valid sizes at the edge of a flag's range run.
status, stdout, stderr = h.run("histogram", ["--n", "1000", "--bins", "2^21", "--range", "0:1", "--repeat", "1",
                                             "--warmup", "0"], env=env)
h.check(status == 0, f"histogram --bins 2^21: status {status}\n{stderr[-2000:]}")

# An HDF5 dataset too large to read: a dataset of 2^42 float64 elements, declared but never written
# (HDF5 allocates chunked storage lazily, so the file stays small); and a 2^40 x 2^40 matrix.
import h5py  # noqa: E402

big = h.path("big.h5")
with h5py.File(big, "w") as f:
    f.create_dataset("x", shape=(2 ** 42,), dtype="f8", chunks=(2 ** 20,))
    f.create_dataset("m", shape=(2 ** 40, 2 ** 40), dtype="f4", chunks=(1024, 1024))
refused("prefix_sum", ["--input", f"{big}:/x"], ["--input", "per rank"])
refused("transpose", ["--a", f"{big}:/m"], ["--a"])
h.finish()
