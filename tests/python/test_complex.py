"""complex64 and complex128 arrays against NumPy: creation (from_global, from_local without a copy,
full, random), local blocks, items, HDF5 (h5py's compound {r, i}), sums, products, scans,
arithmetic, conversions, transpose, redistribution and matmul, on sizes the ranks do not divide;
and the TypeError (naming the dtype) of every operation that needs an order."""

import os

import numpy as np
import pytest

import tessera
from helpers import (COMM, SIZES, counter_values, correctly_rounded_sum, expect, expect_close, expect_distributed,
                     expect_equal, expect_raises, global_data, host_only, shared_directory)

CDTYPES = ["complex64", "complex128"]
SHAPES = [(0, 3), (1, 1), (1, 7), (7, 1), (5, 3), (17, 15), (33, 2)]


def eps(dtype):
    return np.finfo(np.dtype(dtype)).eps


def unit_circle(n, dtype, seed):
    """Values of magnitude about 1 (products of thousands of them neither overflow nor vanish)."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(0.999, 1.001, n) * np.exp(1j * rng.uniform(-np.pi, np.pi, n))).astype(dtype)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_creation_blocks_and_items(dtype):
    for n in SIZES:
        data = global_data(n, dtype, seed=n)
        expect_distributed(tessera.from_global(data), data, "from_global n=%d" % n, whole=True)
        root = COMM.size - 1
        x = tessera.from_global(data if COMM.rank == root else None, root=root)
        expect_distributed(x, data, "from_global root n=%d" % n)
        gathered = x.gather(root=0)
        if COMM.rank == 0:
            expect_equal(gathered, data, "gather n=%d" % n)
        if n:
            expect_equal(x[n - 1], data[n - 1], "x[-1] n=%d" % n)
            expect(type(x[0]) is np.dtype(dtype).type, "an item's type is numpy's %s" % dtype)
    for shape in SHAPES:
        data = global_data(shape[0] * shape[1], dtype, seed=7).reshape(shape)
        for layout in ("rows", "cols", "blocks"):
            m = tessera.from_global(data, layout=layout)
            expect_distributed(m, data, "from_global %s %s" % (shape, layout), whole=True)
        if shape[0] and shape[1]:
            expect_equal(m[shape[0] - 1, shape[1] - 1], data[-1, -1], "x[i, j]")
    value = 1.5 - 2.25j
    expect_distributed(tessera.full((5, 3), value, dtype), np.full((5, 3), value, dtype), "full 2-D")
    expect_distributed(tessera.full(33, value), np.full(33, value), "full infers complex128")
    expect_distributed(tessera.zeros(31, dtype), np.zeros(31, dtype), "zeros")
    expect_distributed(tessera.ones((3, 7), dtype), np.ones((3, 7), dtype), "ones")


@pytest.mark.parametrize("dtype", CDTYPES)
def test_random_is_pairs_of_the_real_sequence(dtype):
    real = "float32" if dtype == "complex64" else "float64"
    for n in (0, 1, 33, 97):
        pairs = counter_values(11, 2 * n, real)
        expected = (pairs[0::2] + 1j * pairs[1::2]).astype(dtype)
        expect_distributed(tessera.random(n, seed=11, dtype=dtype), expected, "random n=%d" % n)
    pairs = counter_values(12, 2 * 7 * 5, real)
    expected = (pairs[0::2] + 1j * pairs[1::2]).astype(dtype).reshape(7, 5)
    for layout in ("rows", "cols", "blocks"):
        expect_distributed(tessera.random((7, 5), seed=12, dtype=dtype, layout=layout), expected,
                           "random 2-D %s: the same array on any grid" % layout)


@host_only
@pytest.mark.parametrize("dtype", CDTYPES)
def test_from_local_views_complex_blocks(dtype):
    counts = [(3 * r + 1) % 5 for r in range(COMM.size)]
    n = sum(counts)
    data = global_data(n, dtype, seed=3)
    offset = sum(counts[:COMM.rank])
    block = data[offset:offset + counts[COMM.rank]].copy()
    x = tessera.from_local(block)
    expect_distributed(x, data, "from_local 1-D", whole=True)
    expect(not x.owns_memory, "a contiguous complex block is viewed without a copy")
    if counts[COMM.rank]:
        block[0] = 42 - 1j
        expect_equal(x.local[0], block[0], "the view sees the block's memory")
    rows, cols = 7, 5
    data2 = global_data(rows * cols, dtype, seed=4).reshape(rows, cols)
    m = tessera.from_global(data2)
    (r0, c0), (lr, lc) = m.local_offset, m.local_shape
    y = tessera.from_local(np.ascontiguousarray(data2[r0:r0 + lr, c0:c0 + lc]), layout=m.layout)
    expect_distributed(y, data2, "from_local 2-D", whole=True)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_sums_products_and_scans(dtype):
    for n in SIZES:
        data = global_data(n, dtype, seed=100 + n)
        x = tessera.from_global(data)
        s = tessera.sum(x)
        expect(type(s) is np.dtype(dtype).type, "sum's type %s" % type(s))
        expect_close(s, np.sum(data.astype(np.complex128)), 0, atol=4 * n * eps(dtype), message="sum n=%d" % n)
        exact = tessera.sum(x, exact=True)
        expect_equal(exact.real, correctly_rounded_sum(data.real), "exact sum's real part n=%d" % n)
        expect_equal(exact.imag, correctly_rounded_sum(data.imag), "exact sum's imaginary part n=%d" % n)
        if n:
            expect_close(tessera.mean(x), np.mean(data.astype(np.complex128)), 0, atol=4 * eps(dtype),
                         message="mean n=%d" % n)
        cs = tessera.cumsum(x)
        expect_distributed(cs, np.cumsum(data), "cumsum n=%d" % n, exact=False, rtol=0, atol=4 * n * eps(dtype) + 1e-30)
        ex = tessera.cumsum(x, exclusive=True)
        ref = np.concatenate([[0], np.cumsum(data)[:-1]]).astype(dtype) if n else data
        expect_distributed(ex, ref, "exclusive cumsum n=%d" % n, exact=False, rtol=0,
                           atol=4 * n * eps(dtype) + 1e-30)
        units = unit_circle(n, dtype, seed=n)
        u = tessera.from_global(units)
        expect_close(tessera.prod(u), np.prod(units.astype(np.complex128)), 0, atol=16 * n * eps(dtype) + 1e-30,
                     message="prod n=%d" % n)
        expect(type(tessera.prod(u)) is np.dtype(dtype).type, "prod's type")
        expect_distributed(tessera.cumprod(u), np.cumprod(units.astype(np.complex128)).astype(dtype),
                           "cumprod n=%d" % n, exact=False, rtol=0, atol=16 * n * eps(dtype) + 1e-30)
        ref = np.concatenate([[1], np.cumprod(units)[:-1]]).astype(dtype) if n else units
        expect_distributed(tessera.cumprod(u, exclusive=True), ref, "exclusive cumprod n=%d" % n, exact=False,
                           rtol=0, atol=16 * n * eps(dtype) + 1e-30)
    data = global_data(17 * 15, dtype, seed=5).reshape(17, 15)
    m = tessera.from_global(data, layout="blocks")
    expect_close(m.sum(), np.sum(data.astype(np.complex128)), 0, atol=1e3 * eps(dtype), message="2-D sum")
    expect_distributed(m.cumsum(), np.cumsum(data.astype(np.complex128)).astype(dtype), "2-D cumsum (row-major)",
                       exact=False, rtol=0, atol=1e3 * eps(dtype))


@pytest.mark.parametrize("dtype", CDTYPES)
def test_arithmetic_and_conversions(dtype):
    for n in (0, 1, 33, 97):
        a, b = global_data(n, dtype, seed=1), global_data(n, dtype, seed=2)
        x, y = tessera.from_global(a), tessera.from_global(b)
        tol = dict(exact=False, rtol=8 * eps(dtype), atol=8 * eps(dtype))
        expect_distributed(x + y, a + b, "add n=%d" % n, **tol)
        expect_distributed(x - y, a - b, "subtract n=%d" % n, **tol)
        expect_distributed(x * y, a * b, "multiply n=%d" % n, **tol)
        expect_distributed(x / y, a / b, "divide n=%d" % n, **tol)
        expect_distributed(-x, -a, "negative n=%d" % n)
        expect_distributed(x * (2 - 1j), a * np.array(2 - 1j, dtype), "times a complex scalar n=%d" % n, **tol)
        expect_distributed((1 + 3j) / x, np.array(1 + 3j, dtype) / a, "a scalar divided by n=%d" % n, **tol)
        expect_distributed(x + 2, a + 2, "plus an int keeps %s" % dtype, **tol)
        expect_distributed(x.astype("complex128"), a.astype(np.complex128), "astype complex128")
        expect_distributed(x.astype("complex64"), a.astype(np.complex64), "astype complex64")
        real = global_data(n, "float32", seed=3)
        r = tessera.from_global(real)
        expect_distributed(r.astype(dtype), real.astype(dtype), "float32 -> %s" % dtype)
        mixed = r + x
        expect(mixed.dtype == np.result_type(np.float32, np.dtype(dtype)), "float32 + %s is %s" % (dtype, mixed.dtype))
        expect_distributed(mixed, real + a, "float32 array + complex array", **tol)
        expect_distributed(r * 1j, real * np.complex64(1j), "a float32 array times 1j is complex64", **tol)
        ints = tessera.from_global(np.arange(n, dtype=np.int32))
        expect_distributed(ints + 1j, np.arange(n, dtype=np.int32) + 1j, "int32 + 1j is complex128")
    x = tessera.from_global(global_data(5, dtype, seed=1))
    expect_raises(TypeError, lambda: x.astype("float64"), match=dtype)
    expect_raises(TypeError, lambda: abs(x), match=dtype)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_products_and_quotients_are_numpys_bits(dtype):
    """numpy's formulas with each operation rounded alone, written out here in float ufuncs: the
    product and Smith's quotient (a scale 1 / denominator multiplied in), a zero divisor of either
    sign dividing by +0. (NumPy 1.x's own `*` and `/` give these bits; NumPy 2's `*` may fuse.)"""
    a, b = global_data(1001, dtype, seed=11), global_data(1001, dtype, seed=12)
    b[:4] = [complex(-0.0, -0.0), complex(0.0, -0.0), complex(-0.0, 0.0), 0]
    b[4:8] = [complex(1e-30, 3.0), complex(-7.0, 1e-30), complex(2.0, -2.0), complex(-3.0, 3.0)]
    x, y = tessera.from_global(a), tessera.from_global(b)
    real = np.float32 if dtype == "complex64" else np.float64

    def product(p, q):  # each operation a ufunc of its own: rounded alone (NumPy 2 may fuse its own product)
        out = np.empty_like(p)
        out.real = np.subtract(np.multiply(p.real, q.real), np.multiply(p.imag, q.imag))
        out.imag = np.add(np.multiply(p.real, q.imag), np.multiply(p.imag, q.real))
        return out

    def quotient(p, q):  # numpy/core/src/umath/loops.c.src
        out = np.empty(np.broadcast(p, q).shape, dtype)
        p, q = np.broadcast_to(p, out.shape), np.broadcast_to(q, out.shape)
        br, bi = np.abs(q.real), np.abs(q.imag)
        zero = (br == 0) & (bi == 0)
        first = (br >= bi) & ~zero
        second = br < bi
        one = real(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out.real[zero], out.imag[zero] = p.real[zero] / br[zero], p.imag[zero] / br[zero]
            rat = q.imag[first] / q.real[first]
            scl = one / (q.real[first] + q.imag[first] * rat)
            out.real[first] = (p.real[first] + p.imag[first] * rat) * scl
            out.imag[first] = (p.imag[first] - p.real[first] * rat) * scl
            rat = q.real[second] / q.imag[second]
            scl = one / (q.imag[second] + q.real[second] * rat)
            out.real[second] = (p.real[second] * rat + p.imag[second]) * scl
            out.imag[second] = (p.imag[second] * rat - p.real[second]) * scl
        return out

    with np.errstate(divide="ignore", invalid="ignore"):
        for what, got, want in (("product", x * y, product(a, b)), ("quotient", x / y, quotient(a, b)),
                                ("scalar quotient", (1 + 3j) / y, quotient(np.array(1 + 3j, dtype), b))):
            g = got.to_numpy().view(real)
            w = want.view(real)
            same = (g.view(np.uint32 if real == np.float32 else np.uint64) ==
                    w.view(np.uint32 if real == np.float32 else np.uint64)) | (np.isnan(g) & np.isnan(w))
            expect(bool(same.all()), "%s: %d of %d parts differ from numpy's bits, first at %s" %
                   (what, int((~same).sum()), same.size, np.nonzero(~same)[0][:3]))


@pytest.mark.parametrize("dtype", CDTYPES)
def test_transpose_redistribute_matmul(dtype):
    tol = 64 * eps(dtype)
    for (rows, cols) in SHAPES:
        data = global_data(rows * cols, dtype, seed=rows * 100 + cols).reshape(rows, cols)
        m = tessera.from_global(data)
        expect_distributed(m.T, data.T, "transpose %dx%d" % (rows, cols), whole=True)
        for layout in ("rows", "cols", (1, COMM.size)):
            expect_distributed(tessera.redistribute(m, layout), data, "redistribute %s" % (layout,))
        other = global_data(cols * 3, dtype, seed=9).reshape(cols, 3)
        p = m @ tessera.from_global(other, layout="cols")
        ref = data.astype(np.complex128) @ other.astype(np.complex128)
        expect_distributed(p, ref.astype(dtype), "matmul %dx%d @ %dx3" % (rows, cols, cols), exact=False, rtol=0,
                           atol=tol * (cols + 1))
    a = tessera.from_global(global_data(6, dtype, 1).reshape(2, 3))
    expect_raises(ValueError, lambda: a @ a, match="align")
    expect_raises(TypeError, lambda: a @ a.T.astype("complex128" if dtype == "complex64" else "complex64"),
                  match="dtype")


@pytest.mark.parametrize("dtype", CDTYPES)
def test_hdf5_round_trip(dtype, tmp_path_factory):
    h5py = pytest.importorskip("h5py")
    directory = shared_directory(tmp_path_factory)
    path = os.path.join(directory, "complex_%s.h5" % dtype)
    vector = global_data(97, dtype, seed=1)
    matrix = global_data(17 * 5, dtype, seed=2).reshape(17, 5)
    tessera.save_hdf5(tessera.from_global(vector), path, "/v")
    tessera.save_hdf5(tessera.from_global(matrix, layout="blocks"), path, "/group/m")
    # A ragged 1-D array writes in global order too.
    counts = [(2 * r + 1) % 4 for r in range(COMM.size)]
    offset = sum(counts[:COMM.rank])
    ragged = global_data(sum(counts), dtype, seed=3)
    tessera.save_hdf5(tessera.from_local(ragged[offset:offset + counts[COMM.rank]].copy()), path, "/ragged")
    COMM.Barrier()
    if COMM.rank == 0:
        with h5py.File(path, "r") as f:
            expect_equal(f["/v"][...], vector, "h5py reads the 1-D dataset")
            expect_equal(f["/group/m"][...], matrix, "h5py reads the 2-D dataset")
            expect_equal(f["/ragged"][...], ragged, "h5py reads the ragged 1-D dataset")
        with h5py.File(path, "a") as f:
            f["/from_h5py"] = matrix.T.copy()
            f["/vector_h5py"] = vector[::-1].copy()
    COMM.Barrier()
    expect_distributed(tessera.load_hdf5(path, "/v"), vector, "load 1-D", whole=True)
    expect_distributed(tessera.load_hdf5(path, "/group/m", layout="cols"), matrix, "load 2-D")
    expect_distributed(tessera.load_hdf5(path, "/from_h5py"), matrix.T, "load h5py's 2-D")
    expect_distributed(tessera.load_hdf5(path, "/vector_h5py"), vector[::-1], "load h5py's 1-D")
    expect_raises(TypeError, lambda: tessera.load_hdf5(path, "/v", dtype="float64"), match=dtype)


@pytest.mark.parametrize("dtype", CDTYPES)
def test_operations_that_need_an_order_refuse_complex(dtype):
    x = tessera.from_global(global_data(33, dtype, seed=1))
    m = tessera.from_global(global_data(12, dtype, seed=1).reshape(3, 4))
    cases = {
        "min": lambda: tessera.min(x), "max": lambda: x.max(), "sort": lambda: tessera.sort(x),
        "argsort": lambda: x.argsort(), "histogram": lambda: tessera.histogram(x),
        "mask": lambda: x > 0, "equality mask": lambda: x == 1, "2-D mask": lambda: m[m < 0],
        "count_nonzero": lambda: tessera.count_nonzero(x),
    }
    for name, call in cases.items():
        got = expect_raises(TypeError, call, match=dtype)
        expect(got is None or "order" in str(got) or name == "count_nonzero", "%s: the message says why" % name)
    expect_raises(TypeError, lambda: tessera.arange(5, dtype=dtype), match="complex")
    expect_raises(TypeError, lambda: tessera.jacobi(m, iterations=1), match=dtype)
    expect_raises(TypeError, lambda: tessera.bincount(x), match=dtype)
