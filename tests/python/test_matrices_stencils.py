"""2-D arrays: layouts, transpose and redistribution, matmul (@), element-wise arithmetic and
conversions, the stencil step and the Jacobi solve, against NumPy."""

import numpy as np
import pytest

import tessera
from helpers import COMM, DTYPES, expect, expect_close, expect_distributed, expect_equal, expect_raises, global_data

SHAPES = [(1, 1), (2, 3), (13, 17), (4, 33)]
LAYOUTS = ["rows", "cols", "blocks"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_and_redistribute(dtype):
    for rows, cols in SHAPES:
        data = global_data(rows * cols, dtype, seed=rows * 100 + cols).reshape(rows, cols)
        for layout in LAYOUTS:
            x = tessera.from_global(data, layout=layout)
            expect_distributed(x, data, "from_global %dx%d %s" % (rows, cols, layout), whole=True)
            expect_distributed(x.T, data.T, "transpose %dx%d %s" % (rows, cols, layout))
            for to in LAYOUTS if rows * cols > 2 else []:
                y = tessera.redistribute(x, to)
                expect_distributed(y, data, "redistribute %s -> %s" % (layout, to))
                expect(y.layout == tessera.zeros((1, 1), layout=to).layout, "the target layout")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul(dtype):
    tol = 1e-5 if dtype == "float32" else 1e-12
    for m, k, n in [(1, 1, 1), (5, 7, 3), (17, 9, 13), (2, 31, 4)]:
        a_data = global_data(m * k, dtype, seed=m).reshape(m, k)
        b_data = global_data(k * n, dtype, seed=n).reshape(k, n)
        a = tessera.from_global(a_data)
        b = tessera.from_global(b_data)
        ref = a_data.astype(np.float64) @ b_data.astype(np.float64)
        expect_distributed(a @ b, ref.astype(dtype), "a @ b %dx%dx%d" % (m, k, n), False, 0, tol * k)
        # b on another grid moves to a's first.
        other = tessera.from_global(b_data, layout="cols")
        expect_distributed(tessera.matmul(a, other), ref.astype(dtype), "matmul across grids", False, 0, tol * k)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_matmul_wraps_as_numpy(dtype):
    info = np.iinfo(dtype)
    for m, k, n in [(1, 1, 1), (5, 7, 3), (17, 9, 13), (2, 31, 4), (0, 3, 2), (3, 0, 2)]:
        # Values over the whole range: the products and sums overflow and wrap, as NumPy's do.
        a_data = global_data(m * k, dtype, seed=m + 7, low=info.min, high=info.max - 1).reshape(m, k)
        b_data = global_data(k * n, dtype, seed=n + 7, low=info.min, high=info.max - 1).reshape(k, n)
        with np.errstate(all="ignore"):
            ref = a_data @ b_data
        a = tessera.from_global(a_data)
        expect_distributed(a @ tessera.from_global(b_data), ref, "a @ b %s %dx%dx%d" % (dtype, m, k, n))
        expect_distributed(tessera.matmul(a, tessera.from_global(b_data, layout="cols")), ref,
                           "matmul across grids %s %dx%dx%d" % (dtype, m, k, n))


def test_matmul_errors():
    a = tessera.zeros((3, 4))
    expect_raises(ValueError, lambda: a @ tessera.zeros((5, 2)), match="do not align")
    expect_raises(TypeError, lambda: tessera.zeros((2, 2), "int32") @ tessera.zeros((2, 2), "int64"), match="dtype")
    expect_raises(TypeError, lambda: a @ tessera.zeros((4, 2), "float32"), match="dtype")
    expect_raises(ValueError, lambda: tessera.arange(4.0) @ tessera.arange(4.0), match="2-D")


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_and_astype(dtype):
    for shape in [(0,), (1,), (33,), (1000,), (7, 5), (4, 9)]:
        n = int(np.prod(shape))
        a_data = global_data(n, dtype, seed=n).reshape(shape)
        b_data = global_data(n, dtype, seed=n + 1).reshape(shape)
        a = tessera.from_global(a_data)
        b = tessera.from_global(b_data, layout="cols") if len(shape) == 2 else tessera.from_global(b_data)
        with np.errstate(all="ignore"):
            cases = [(a + b, a_data + b_data), (a - b, a_data - b_data), (a * b, a_data * b_data),
                     (a + 3, a_data + 3), (3 - a, 3 - a_data), (a * 2, a_data * 2), (-a, -a_data),
                     (abs(a), np.abs(a_data)), (a / b, a_data / b_data), (2 / a, 2 / a_data),
                     (a + 0.5, a_data + 0.5)]
        for k, (got, ref) in enumerate(cases):
            expect_distributed(got, ref, "element-wise %d %s %s" % (k, dtype, shape))
        for to in DTYPES:
            with np.errstate(all="ignore"):
                expect_distributed(a.astype(to), a_data.astype(to), "astype %s -> %s" % (dtype, to))
    x = tessera.arange(10, dtype=dtype)
    expect_raises(ValueError, lambda: x + tessera.arange(11, dtype=dtype), match="broadcast")


def test_mixed_dtypes_follow_numpy():
    i = tessera.arange(5, dtype="int32")
    f = tessera.arange(5, dtype="float32")
    expect((i + f).dtype == np.result_type(np.int32, np.float32), "int32 + float32")
    expect((i + 2 ** 40).dtype == np.int64, "a large Python int widens")
    expect((f * 2.5).dtype == np.float32, "a Python float keeps float32")
    expect((i / 2).dtype == np.float64, "true division of integers")
    ragged = i[i > 1]
    expect_equal((ragged + tessera.arange(3, dtype="int32")).to_numpy(), np.arange(2, 5) + np.arange(3),
                 "a ragged operand is balanced first")


def reference_step(u, w, boundary, dtype):
    """One sweep in numpy, the terms added as the kernels add them (tessera/kernels/stencil.hpp)."""
    rows, cols = u.shape
    p = np.empty((rows + 2, cols + 2), dtype=dtype)
    p[1:-1, 1:-1] = u
    i = np.arange(-1, rows + 1)
    j = np.arange(-1, cols + 1)
    ring = np.zeros_like(p, dtype=bool)
    ring[0, :] = ring[-1, :] = ring[:, 0] = ring[:, -1] = True
    ii, jj = np.meshgrid(i, j, indexing="ij")
    p[ring] = boundary(ii[ring], jj[ring]) if callable(boundary) else boundary
    w = w.astype(dtype)
    c, n, s, we, e = w[1, 1], w[0, 1], w[2, 1], w[1, 0], w[1, 2]
    out = c * p[1:-1, 1:-1] + n * p[:-2, 1:-1] + s * p[2:, 1:-1] + we * p[1:-1, :-2] + e * p[1:-1, 2:]
    if w[0, 0] or w[0, 2] or w[2, 0] or w[2, 2]:
        out = out + w[0, 0] * p[:-2, :-2] + w[0, 2] * p[:-2, 2:] + w[2, 0] * p[2:, :-2] + w[2, 2] * p[2:, 2:]
    return out.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stencil_and_jacobi_bitwise_as_numpy(dtype):
    rows, cols = 9, 11  # every rank needs a row and a column: 4 ranks make 2 x 2
    data = global_data(rows * cols, dtype, seed=11).reshape(rows, cols)
    hot_top = lambda i, j: np.where(i < 0, 1.0, 0.0)  # noqa: E731
    named = {"jacobi5": np.array([[0, .25, 0], [.25, 0, .25], [0, .25, 0]]),
             "jacobi9": np.array([[.05, .2, .05], [.2, 0, .2], [.05, .2, .05]])}
    for weights in ["jacobi5", "jacobi9", np.array([[0, 1, 0], [2, -3, 0.5], [0, 0.25, 0]])]:
        w = named[weights] if isinstance(weights, str) else weights
        for layout in LAYOUTS:
            x = tessera.from_global(data, layout=layout)
            for boundary in [0.0, 2.5, hot_top]:
                got = tessera.stencil(x, weights, boundary)
                expect_distributed(got, reference_step(data, w, boundary, dtype), "stencil %s %s" % (layout, weights
                                   if isinstance(weights, str) else "custom"))
            solved, info = tessera.jacobi(x, weights, hot_top, iterations=25)
            ref = data
            for _ in range(25):
                ref = reference_step(ref, w, hot_top, dtype)
            expect_distributed(solved, ref, "25 Jacobi iterations %s" % layout)
            expect(info["iterations"] == 25 and not info["converged"], "info %s" % info)


def test_jacobi_converges_and_stops():
    x = tessera.zeros((8, 8))
    solved, info = tessera.jacobi(x, "jacobi5", 1.0, iterations=100000, tol=1e-6, check_every=10)
    expect(info["converged"] and info["iterations"] % 10 == 0 and info["residual"] < 1e-6, "converged: %s" % info)
    expect_close(solved.to_numpy(), np.ones((8, 8)), 0, 1e-4, "the steady state of boundary 1 is 1")


def test_stencil_errors():
    expect_raises(TypeError, lambda: tessera.stencil(tessera.zeros((4, 4), "int32")), match="float")
    expect_raises(ValueError, lambda: tessera.stencil(tessera.arange(5.0)), match="2-D")
    expect_raises(ValueError, lambda: tessera.stencil(tessera.zeros((4, 4)), "jacobi7"), match="weights")
    if COMM.size > 1:
        expect_raises(ValueError, lambda: tessera.stencil(tessera.zeros((1, 1))), match="row")
    expect_raises(ValueError, lambda: tessera.stencil(tessera.zeros((4, 4)), boundary=lambda i, j: np.ones(3)),
                  match="values")
    for boundary in ("periodic", None, [1.0, 2.0], 1 + 2j):
        expect_raises(TypeError, lambda: tessera.stencil(tessera.zeros((4, 4)), boundary=boundary), match="boundary")
    got = tessera.stencil(tessera.zeros((4, 4), "float32"), boundary=np.float32(2.5)).to_numpy()
    expect_equal(got[0, 0], np.float32(0.25) * np.float32(2.5) * 2, "a NumPy scalar boundary")
    # 0-d arrays of a real dtype and both kinds of bool are numbers, as NumPy takes them.
    for boundary, value in ((np.array(2.5), 2.5), (np.array(3, dtype=np.int16), 3.0), (True, 1.0),
                            (np.bool_(True), 1.0), (np.array(False), 0.0)):
        got = tessera.stencil(tessera.zeros((4, 4)), boundary=boundary).to_numpy()
        expect_equal(got[0, 0], 0.25 * value * 2, "the boundary %r" % (boundary,))
    for boundary in (np.array([1.0]), np.array(1 + 2j), np.array("1")):
        expect_raises(TypeError, lambda: tessera.stencil(tessera.zeros((4, 4)), boundary=boundary),
                      match="stencil: boundary")
    expect_raises(ValueError, lambda: tessera.jacobi(tessera.zeros((4, 4)), boundary=10**400), match="jacobi: the boundary value")
    if np.finfo(np.longdouble).max > np.finfo(np.float64).max:  # x86's 80-bit long double
        expect_raises(ValueError, lambda: tessera.stencil(tessera.zeros((4, 4)), boundary=np.longdouble("1e400")),
                      match="stencil: the boundary value")
    got = tessera.stencil(tessera.zeros((4, 4)), boundary=np.inf).to_numpy()
    expect_equal(got[0, 0], np.inf, "an infinite boundary is a float")
    # stencil's errors name stencil, jacobi's jacobi.
    expect_raises(ValueError, lambda: tessera.stencil(tessera.zeros((4, 4)), "jacobi7"), match="stencil: weights")
    expect_raises(TypeError, lambda: tessera.stencil(tessera.zeros((4, 4), "int32")), match="stencil: ")
    expect_raises(ValueError, lambda: tessera.jacobi(tessera.zeros((4, 4)), iterations=-1), match="jacobi: iterations")

    def fails_on_last_rank(i, j):
        if COMM.rank == COMM.size - 1:
            raise ValueError("no boundary here")
        return np.zeros(len(i))

    # The callback fails on one rank: every rank raises, none is left in the iterations.
    expect_raises(ValueError, lambda: tessera.jacobi(tessera.zeros((4, 4)), boundary=fails_on_last_rank,
                                                     iterations=3), match="no boundary here")
