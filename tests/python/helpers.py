"""Checks and NumPy references for the tests of the Python package.

A check records a fault on its rank and lets the test go on, so that no rank leaves a test early
and the others wait in a collective it never reaches; when the test ends, conftest.py gathers
every rank's faults once and fails the test on every rank where any rank found one."""

import os
from fractions import Fraction

import numpy as np
import pytest
from mpi4py import MPI

import tessera

COMM = MPI.COMM_WORLD
BACKEND = os.environ.get("TESSERA_TEST_BACKEND", "cpu")
# For the tests of host memory: blocks viewed without a copy, .local as a NumPy array.
host_only = pytest.mark.skipif(BACKEND != "cpu", reason="host memory (the cpu backend)")
DTYPES = ["int32", "int64", "float32", "float64"]
# 0, 1, sizes below the rank count, 2^k + 1, primes (4099 above 2^12), and one divided by every rank count.
SIZES = [0, 1, 2, 33, 97, 1200, 4099]


FAULTS = []  # this rank's faults in the running test (conftest.py reads and clears it)


def expect(condition, message=""):
    """Records `message` as a fault of this rank where `condition` is false."""
    if not condition:
        FAULTS.append(str(message)[:2000])


def expect_equal(actual, expected, message=""):
    """Arrays (or scalars) equal in value and shape, NaN equal to NaN."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    ok = actual.shape == expected.shape and bool(np.array_equal(actual, expected, equal_nan=expected.dtype.kind == "f"))
    expect(ok, "%s: got %s, expected %s" % (message, _short(actual), _short(expected)))


def expect_close(actual, expected, rtol, atol=0.0, message=""):
    """Within rtol and atol of each other (complex numbers compared as complex128)."""
    wide = np.complex128 if np.iscomplexobj(actual) or np.iscomplexobj(expected) else np.float64
    actual = np.asarray(actual, dtype=wide)
    expected = np.asarray(expected, dtype=wide)
    ok = actual.shape == expected.shape and bool(np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True))
    expect(ok, "%s: got %s, expected %s" % (message, _short(actual), _short(expected)))


def expect_raises(kind, function, match=None):
    """function() raises `kind` on every rank (with `match` in its message)."""
    got = None
    try:
        function()
    except Exception as e:  # noqa: BLE001
        got = e
    ok = isinstance(got, kind) and (match is None or match in str(got))
    expect(ok, "expected %s%s, got %r" % (kind.__name__, " matching %r" % match if match else "", got))
    return got


def _short(a):
    text = np.array2string(np.asarray(a), threshold=20, edgeitems=4)
    return text if len(text) < 600 else text[:600] + "..."


def global_data(n, dtype, seed, low=None, high=None):
    """The same seeded random global array on every rank (NaN-free)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        low = -1000 if low is None else low
        high = 1000 if high is None else high
        return rng.integers(low, high + 1, size=n).astype(dtype)
    low = -1.0 if low is None else low
    high = 1.0 if high is None else high
    if dtype.kind == "c":
        return (rng.uniform(low, high, size=n) + 1j * rng.uniform(low, high, size=n)).astype(dtype)
    return rng.uniform(low, high, size=n).astype(dtype)


def block_of(n, ranks, rank):
    """The balanced block partition: rank's (offset, count)."""
    base, extra = divmod(n, ranks)
    count = base + (1 if rank < extra else 0)
    offset = rank * base + (rank if rank < extra else extra)
    return offset, count


def expect_distributed(x, expected, message="", exact=True, rtol=0.0, atol=0.0, whole=False):
    """x (a DistArray) holds `expected` (the global NumPy array): shape, dtype, every rank's layout
    and local block (together the whole array: the layouts are checked to tile it), and with
    whole=True also the array to_numpy() gathers."""
    ctx = x.context
    expected = np.asarray(expected)
    expect(x.global_shape == expected.shape,
           "%s: global_shape %s, expected %s" % (message, x.global_shape, expected.shape))
    expect(x.dtype == expected.dtype, "%s: dtype %s, expected %s" % (message, x.dtype, expected.dtype))
    if x.ndim == 1:
        counts, offsets = list(x.counts), list(x.offsets)
        starts = [int(v) for v in np.cumsum([0] + counts[:-1])]
        expect(len(counts) == ctx.size and sum(counts) == expected.shape[0] and offsets == starts,
               "%s: counts %s, offsets %s" % (message, counts, offsets))
        offset, count = x.local_offset[0], x.local_shape[0]
        expect(offset == offsets[ctx.rank] and count == counts[ctx.rank], "%s: local offset/shape" % message)
        piece = expected[offset:offset + count]
    else:
        (r0, c0), (rows, cols) = x.local_offset, x.local_shape
        expect(x.counts[ctx.rank] == (rows, cols) and x.offsets[ctx.rank] == (r0, c0), "%s: layout" % message)
        piece = expected[r0:r0 + rows, c0:c0 + cols]
    local = local_block(x)
    if exact:
        expect_equal(local, piece, message + " (local block)")
    else:
        expect_close(local, piece, rtol, atol, message=message + " (local block)")
    if whole:
        gathered = x.to_numpy()
        if exact:
            expect_equal(gathered, expected, message + " (whole)")
        else:
            expect_close(gathered, expected, rtol, atol, message=message + " (whole)")


def local_block(x):
    """This rank's block as a NumPy copy, on either backend (on cuda through DLPack)."""
    if x.context.backend == "cpu":
        return np.array(x.local)
    from dlpack_consumer import consume  # noqa: PLC0415
    return consume(x.local)[0]


def shared_directory(tmp_path_factory):
    """A directory every rank sees (rank 0's temporary directory, by name)."""
    name = str(tmp_path_factory.mktemp("shared")) if COMM.rank == 0 else None
    return COMM.bcast(name, root=0)


def counter_values(seed, n, dtype):
    """tessera.random's values, from kernels/counter_rng.hpp's definition (splitmix64-style bits)."""
    def mix(z):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))
    with np.errstate(over="ignore"):
        s = mix(np.array([seed], dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15))
        i = np.arange(n, dtype=np.uint64)
        bits = mix(s ^ (i * np.uint64(0xD1B54A32D192ED03) + np.uint64(0x8CB92BA72F3D8DD7)))
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return ((bits >> np.uint64(40)).astype(np.int32).astype(np.float32) * np.float32(2.0 ** -23)
                - np.float32(1.0)).astype(np.float32)
    if dtype == np.float64:
        return (bits >> np.uint64(11)).astype(np.int64).astype(np.float64) * 2.0 ** -52 - 1.0
    return ((bits % np.uint64(2001)).astype(np.int64) - 1000).astype(dtype)


def correctly_rounded_sum(values):
    """The exact sum of the values rounded to nearest (ties to even) in their own type."""
    dtype = values.dtype
    exact = sum((Fraction(float(v)) for v in values), Fraction(0))
    guess = dtype.type(float(exact))  # double rounding can be one ulp off: look at the neighbours
    best = guess
    for candidate in (np.nextafter(guess, dtype.type(-np.inf)), guess, np.nextafter(guess, dtype.type(np.inf))):
        d, b = abs(Fraction(float(candidate)) - exact), abs(Fraction(float(best)) - exact)
        if d < b or (d == b and int(candidate.view(np.uint32 if dtype == np.float32 else np.uint64)) % 2 == 0):
            best = candidate
    return best
