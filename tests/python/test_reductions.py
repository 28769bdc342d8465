"""Reductions and scans against NumPy: sum (and the correctly rounded sum), prod, min, max, mean,
cumsum and cumprod with their exclusive forms, for the four dtypes on sizes the ranks do not divide,
1-D and 2-D."""

import numpy as np
import pytest

import tessera
from helpers import (DTYPES, SIZES, correctly_rounded_sum, expect, expect_close, expect_distributed, expect_equal,
                     expect_raises, global_data)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions(dtype):
    for n in SIZES:
        data = global_data(n, dtype, seed=100 + n)
        x = tessera.from_global(data)
        s, p = tessera.sum(x), tessera.prod(tessera.from_global(global_data(n, dtype, 5, -2, 2) if dtype[0] == "i"
                                                                else global_data(n, dtype, 5, 0.99, 1.01)))
        ref_p = np.prod(global_data(n, dtype, 5, -2, 2) if dtype[0] == "i" else global_data(n, dtype, 5, 0.99, 1.01))
        exact = tessera.sum(x, exact=True)
        expect(type(s) is np.sum(data).dtype.type, "sum's type %s, numpy's %s" % (type(s), np.sum(data).dtype))
        if dtype[0] == "i":
            expect_equal(s, np.sum(data), "sum n=%d" % n)
            expect_equal(exact, np.sum(data), "exact sum n=%d" % n)
            expect_equal(p, ref_p, "prod n=%d" % n)
        else:
            # Any order of summation is within n ulps of 1 (|x| < 1) of the exact sum.
            atol = 2 * n * np.finfo(dtype).eps
            expect_close(s, np.sum(data, dtype=np.float64), 0, atol=atol, message="sum n=%d" % n)
            expect_close(np.sum(x), np.sum(data, dtype=np.float64), 0, atol=atol, message="numpy.sum calls .sum")
            expect_close(p, ref_p, 4 * n * np.finfo(dtype).eps, message="prod n=%d" % n)
            expect_equal(exact, correctly_rounded_sum(data), "correctly rounded sum n=%d" % n)
            expect(type(exact) is np.dtype(dtype).type, "exact sum's type")
        expect_close(tessera.mean(x), np.mean(data, dtype=np.float64) if n else np.nan, 0,
                     atol=2 * np.finfo(np.float32).eps, message="mean n=%d" % n)
        if n:
            expect_equal(tessera.min(x), np.min(data), "min n=%d" % n)
            expect_equal(x.max(), np.max(data), "max n=%d" % n)
            expect(type(x.max()) is np.dtype(dtype).type, "max's type")
    empty = tessera.zeros(0, dtype)
    expect_raises(ValueError, lambda: tessera.min(empty), match="zero-size")
    expect_raises(ValueError, lambda: empty.max(), match="zero-size")


def test_integer_sums_widen_and_wrap_as_numpy():
    data = np.full(1000, 2 ** 31 - 1, dtype=np.int32)
    x = tessera.from_global(data)
    expect_equal(tessera.sum(x), np.sum(data), "int32 sums in int64")
    big = np.full(7, 2 ** 62, dtype=np.int64)
    expect_equal(tessera.sum(tessera.from_global(big)), np.sum(big), "int64 wraps like numpy")
    expect_equal(tessera.prod(tessera.from_global(np.full(70, 3, np.int32))), np.prod(np.full(70, 3, np.int32)),
                 "int32 products in wrapping int64")


def test_integer_mean_sums_in_float64():
    """numpy.mean of integers accumulates in float64: no wrapping where the int64 sum would."""
    for data in (np.array([2 ** 62] * 3, dtype=np.int64), np.array([2 ** 63 - 1, 2 ** 63 - 1, -5], dtype=np.int64),
                 np.full(33, 2 ** 31 - 1, dtype=np.int32)):
        got = tessera.mean(tessera.from_global(data))
        expect(got.dtype == np.float64 and abs(got - np.mean(data)) <= 1e-15 * abs(np.mean(data)),
               "mean of %s: %r, numpy %r" % (data[:3], got, np.mean(data)))


def test_nan_wins_min_and_max():
    data = global_data(97, "float64", 1)
    data[50] = np.nan
    x = tessera.from_global(data)
    expect(np.isnan(tessera.min(x)) and np.isnan(tessera.max(x)), "NaN propagates as in numpy")
    expect(np.isnan(tessera.sum(x, exact=True)), "the exact sum of a NaN is NaN")


def test_exact_sum_does_not_depend_on_rank_count():
    # Cancelling large terms: the plain sum's rounding depends on the order, the exact one cannot.
    data = np.array([1e20, 1.0, -1e20, 3.0, 1e-3] * 41, dtype=np.float64)
    expect_equal(tessera.sum(tessera.from_global(data), exact=True), correctly_rounded_sum(data), "exact")


def test_axis_and_out_are_refused():
    x = tessera.arange(10)
    expect_raises(ValueError, lambda: tessera.sum(tessera.zeros((3, 4)), axis=1), match="axis")
    expect_raises(TypeError, lambda: x.sum(out=np.zeros(1)), match="out=")
    expect_equal(x.sum(axis=0), 45, "axis=0 of a 1-D array is the whole array")


@pytest.mark.parametrize("dtype", DTYPES)
def test_scans(dtype):
    acc = "int64" if dtype[0] == "i" else dtype
    for n in SIZES:
        data = global_data(n, dtype, seed=200 + n)
        x = tessera.from_global(data)
        small = global_data(n, dtype, 9, -3, 3) if dtype[0] == "i" else global_data(n, dtype, 9, 0.999, 1.001)
        y = tessera.from_global(small)
        inclusive, exclusive = tessera.cumsum(x), tessera.cumsum(x, exclusive=True)
        products, products_before = tessera.cumprod(y), y.cumprod(exclusive=True)
        ref = np.cumsum(data, dtype=acc)
        ref_before = np.concatenate([np.zeros(1 if n else 0, acc), ref[:-1]]).astype(acc)
        pref = np.cumprod(small, dtype=acc)
        pref_before = np.concatenate([np.ones(1 if n else 0, acc), pref[:-1]]).astype(acc)
        exact = dtype[0] == "i"
        eps = 0 if exact else np.finfo(dtype).eps
        # Any order of the additions is within n ulps of 1 (|x| < 1); products near 1 within n ulps.
        expect_distributed(inclusive, ref, "cumsum n=%d" % n, exact, 0, 2 * n * eps)
        expect_distributed(exclusive, ref_before, "exclusive cumsum n=%d" % n, exact, 0, 2 * n * eps)
        expect_distributed(products, pref, "cumprod n=%d" % n, exact, 4 * n * eps)
        expect_distributed(products_before, pref_before, "exclusive cumprod n=%d" % n, exact, 4 * n * eps)


def test_scan_of_ragged_and_2d_arrays():
    data = global_data(61, "int64", 4)
    x = tessera.from_global(data)
    kept = x[x > 0]  # ragged: each rank keeps its own
    expect_distributed(tessera.cumsum(kept), np.cumsum(data[data > 0]), "cumsum of a ragged array")
    m = global_data(7 * 9, "float64", 3).reshape(7, 9)
    expect_distributed(tessera.cumsum(tessera.from_global(m)), np.cumsum(m), "cumsum of 2-D: row-major", False, 1e-12)
    expect_close(tessera.sum(tessera.from_global(m)), np.sum(m), 1e-12, message="sum of 2-D")
    expect_equal(tessera.max(tessera.from_global(m, layout="cols")), np.max(m), "max of 2-D")
