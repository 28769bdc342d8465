"""Masks from comparisons (x[x > 0], compress, counts) as NumPy evaluates them, sort and argsort, and
numpy.histogram / numpy.bincount, count for count."""

import numpy as np
import pytest

import tessera
from helpers import COMM, DTYPES, SIZES, expect, expect_distributed, expect_equal, expect_raises, global_data


@pytest.mark.parametrize("dtype", DTYPES)
def test_masks_as_numpy(dtype):
    for n in SIZES:
        data = global_data(n, dtype, seed=300 + n)
        if dtype[0] == "f" and n > 3:
            data[3] = np.nan  # NaN satisfies only !=
        x = tessera.from_global(data)
        s = 0.25 if dtype[0] == "f" else 17
        cases = [
            (x > s, data > s), (x >= s, data >= s), (x < s, data < s), (x <= s, data <= s),
            (x == data[0] if n else x == 0, data == (data[0] if n else 0)), (x != s, data != s),
            ((x > -s) & (x < s), (data > -s) & (data < s)),
            ((x < -s) | (x > s), (data < -s) | (data > s)),
            (~(x >= s), ~(data >= s)),
            ((x > 0) ^ (x > s), (data > 0) ^ (data > s)),
        ]
        for k, (mask, ref) in enumerate(cases):
            expect_distributed(x[mask], data[ref], "mask %d n=%d" % (k, n))
            expect_equal(mask.sum(), np.count_nonzero(ref), "count %d n=%d" % (k, n))
        expect_distributed(tessera.compress(x > s, x), np.compress(data > s, data), "compress n=%d" % n)
        expect_equal(tessera.count_nonzero(x), np.count_nonzero(data), "count_nonzero n=%d" % n)
        expect((x > s).any() == bool((data > s).any()) and (x < 5000).all() == bool((data < 5000).all()),
               "any and all n=%d" % n)


def test_integer_masks_with_float_and_out_of_range_scalars():
    data = np.arange(-20, 21, dtype=np.int32)
    x = tessera.from_global(data)
    for s in [2.5, -2.5, 3.0, 1e12, -1e12, 2 ** 40, -(2 ** 40), float("inf"), float("-inf"), float("nan"),
              np.float32(0.5), True]:
        for name, op in [("gt", np.greater), ("ge", np.greater_equal), ("lt", np.less), ("le", np.less_equal),
                         ("eq", np.equal), ("ne", np.not_equal)]:
            with np.errstate(invalid="ignore"):
                ref = op(data.astype(np.float64), float(s))
            mask = {"gt": x > s, "ge": x >= s, "lt": x < s, "le": x <= s, "eq": x == s, "ne": x != s}[name]
            expect_equal(mask.sum(), np.count_nonzero(ref), "x %s %r" % (name, s))
            expect_equal(x[mask].to_numpy(), data[ref], "x[x %s %r]" % (name, s))


def test_int64_masks_with_floats_beyond_2_to_53_compare_as_doubles():
    """numpy converts int64 to float64 for a comparison with a float: integers near 2^53 and beyond
    round, so 2^53 + 1 == 2.0**53 holds."""
    big = 2 ** 53
    data = np.array([big - 2, big - 1, big, big + 1, big + 2, big + 3, 2 ** 62 + 511, 2 ** 62 + 512, 2 ** 62 + 513,
                     -big - 1, -big, 2 ** 63 - 1, 2 ** 63 - 512, 2 ** 63 - 513, -2 ** 63], dtype=np.int64)
    x = tessera.from_global(data)
    for s in [2.0 ** 53, 2.0 ** 53 + 2, -2.0 ** 53, 2.0 ** 62, 2.0 ** 62 + 1024, 2.0 ** 63, -2.0 ** 63, 1e300,
              2 ** 63, 2 ** 63 + 4096, np.uint64(2 ** 63)]:  # an int of uint64's range: numpy compares as doubles
        for name, op in [("gt", np.greater), ("ge", np.greater_equal), ("lt", np.less), ("le", np.less_equal),
                         ("eq", np.equal), ("ne", np.not_equal)]:
            ref = op(data, s)
            mask = {"gt": x > s, "ge": x >= s, "lt": x < s, "le": x <= s, "eq": x == s, "ne": x != s}[name]
            expect_equal(mask.sum(), np.count_nonzero(ref), "int64 x %s %r" % (name, s))
            expect_equal(x[mask].to_numpy(), data[ref], "int64 x[x %s %r]" % (name, s))


def test_masks_of_2d_arrays_select_in_row_major_order():
    data = global_data(6 * 11, "float64", 8).reshape(6, 11)
    for layout in ["rows", "cols", "blocks"]:
        x = tessera.from_global(data, layout=layout)
        expect_distributed(x[x > 0.1], data[data > 0.1], "2-D mask, %s" % layout)
        expect_equal((x < 0).sum(), np.count_nonzero(data < 0), "2-D count")


def test_mask_errors():
    x, y = tessera.arange(10), tessera.arange(10)
    expect_raises(ValueError, lambda: (x > 1) & (y > 1), match="different arrays")
    expect_raises(ValueError, lambda: y[x > 1], match="another array")
    expect_raises(TypeError, lambda: x > y, match="scalar")
    expect_raises(ValueError, lambda: bool(x > 1))
    expect_raises(TypeError, lambda: np.asarray(x > 1))
    many = x > 0
    for _ in range(10):
        many = many & (x > 0)
    expect_raises(ValueError, lambda: x[many], match="more than 16")


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort(dtype):
    for n in SIZES:
        data = global_data(n, dtype, seed=400 + n, low=-5 if dtype[0] == "i" else None,
                           high=5 if dtype[0] == "i" else None)  # integers: many ties
        if dtype[0] == "f" and n > 5:
            data[2], data[5] = np.nan, -0.0
        x = tessera.from_global(data)
        expect_distributed(tessera.sort(x), np.sort(data, kind="stable"), "sort n=%d" % n)
        expect_distributed(tessera.argsort(x), np.argsort(data, kind="stable"), "argsort n=%d" % n)
        expect_distributed(x[x > 0].argsort(), np.argsort(data[data > 0], kind="stable"), "argsort of ragged")
    expect_raises(ValueError, lambda: tessera.sort(tessera.zeros((2, 3))), match="1-D")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sort_puts_every_nan_last_and_keeps_signed_zeros_in_order(dtype):
    """numpy's order, not IEEE total order: a NaN with the sign bit set (what x86 arithmetic makes,
    inf - inf) sorts last, NaNs of other payloads keep their order, -0 and +0 are equal (stable)."""
    bits = np.uint32 if dtype == "float32" else np.uint64
    top = bits(1) << bits(31 if dtype == "float32" else 63)
    with np.errstate(invalid="ignore"):
        made_nan = (np.array([np.inf]) - np.array([np.inf])).astype(dtype)[0]  # sign bit set on x86
    negative_nan = (np.array([np.nan], dtype).view(bits) | top).view(dtype)[0]
    payload_nan = (np.array([np.nan], dtype).view(bits) | bits(5)).view(dtype)[0]
    for n in (2, 7, 31, 33, 97):
        data = global_data(n, dtype, seed=450 + n)
        data[::3] = 0.0
        data[1::3] = -0.0
        specials = [made_nan, negative_nan, np.nan, payload_nan, -np.inf, np.inf]
        for k, v in enumerate(specials[: n // 2]):
            data[(5 * k + 2) % n] = v
        x = tessera.from_global(data)
        want = np.sort(data, kind="stable")
        got = tessera.sort(x).to_numpy()
        expect(got.view(bits).tolist() == want.view(bits).tolist(), "sort n=%d: %s vs numpy %s" % (n, got, want))
        expect_distributed(tessera.argsort(x), np.argsort(data, kind="stable"), "argsort n=%d" % n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_histogram_as_numpy(dtype):
    for n in SIZES:
        data = global_data(n, dtype, seed=500 + n)
        x = tessera.from_global(data)
        for bins, rng in [(10, None), (7, (-0.5, 0.5)), (1, None), (33, (-2000, 2000))]:
            counts, edges = tessera.histogram(x, bins=bins, range=rng)
            ref_counts, ref_edges = np.histogram(data, bins=bins, range=rng)
            expect_equal(counts, ref_counts, "histogram counts n=%d bins=%d range=%s" % (n, bins, rng))
            expect_equal(edges, ref_edges, "histogram edges n=%d bins=%d range=%s" % (n, bins, rng))
            expect(edges.dtype == ref_edges.dtype, "edges' dtype %s, numpy's %s" % (edges.dtype, ref_edges.dtype))
        given = [-1000, -0.5, 0, 0.25, 999]
        counts, edges = tessera.histogram(x, bins=given)
        expect_equal(counts, np.histogram(data, bins=given)[0], "histogram with edges n=%d" % n)
        with np.errstate(invalid="ignore", divide="ignore"):  # no samples: 0 / 0, as numpy warns
            density, _ = tessera.histogram(x, bins=5, range=(-1, 1), density=True)
            ref_density = np.histogram(data, bins=5, range=(-1, 1), density=True)[0]
        expect(np.allclose(density, ref_density, equal_nan=True), "density n=%d" % n)


@pytest.mark.skipif(not np.__version__.startswith("1."), reason="NumPy 2 refuses or bins these otherwise")
def test_histogram_of_the_samples_range_divides_as_numpy():
    """Without a range numpy's norm divides by max - min in the samples' type: float32 arithmetic, the
    exact integer difference (int64 beyond 2^53)."""
    big = 2 ** 62
    for data, bins in ((np.array([0.2356666, 1.014371, 1.0143417], np.float32), 7929138),
                       (np.array([big, big + 1500, big + 1500, big + 700], np.int64), 10)):
        counts, edges = tessera.histogram(tessera.from_global(data), bins=bins)
        want, want_edges = np.histogram(data, bins)
        expect(np.array_equal(counts, want), "histogram of %s, %d bins: bins %s, numpy %s" %
               (data, bins, np.nonzero(counts)[0], np.nonzero(want)[0]))
        expect_equal(edges, want_edges, "edges")


def test_histogram_errors_and_constant_data():
    x = tessera.full(13, 3.0)
    counts, edges = tessera.histogram(x, bins=4)
    ref = np.histogram(np.full(13, 3.0), bins=4)
    expect_equal(counts, ref[0], "constant data")
    expect_equal(edges, ref[1], "constant data's edges")
    with_nan = tessera.from_global(np.array([1.0, np.nan, 2.0]))
    expect_raises(ValueError, lambda: tessera.histogram(with_nan), match="not finite")
    expect_raises(ValueError, lambda: tessera.histogram(x, bins=0), match="positive")
    expect_raises(TypeError, lambda: tessera.histogram(x, bins=2.5), match="integer")
    expect_raises(ValueError, lambda: tessera.histogram(x, range=(2, 1)), match="larger")
    expect_raises(ValueError, lambda: tessera.histogram(x, bins=[0, 2, 1]))
    expect_raises(TypeError, lambda: tessera.histogram(x, weights=np.ones(13)), match="weights")


def test_bincount_as_numpy():
    for n in SIZES:
        data = global_data(n, "int32", 600 + n, 0, 40)
        x = tessera.from_global(data)
        expect_equal(tessera.bincount(x), np.bincount(data), "bincount n=%d" % n)
        expect_equal(tessera.bincount(x.astype("int64"), minlength=50), np.bincount(data, minlength=50), "minlength")
    expect_raises(ValueError, lambda: tessera.bincount(tessera.arange(-3, 3)), match="negative")
    expect_raises(TypeError, lambda: tessera.bincount(tessera.zeros(3)), match="integer")
    expect_raises(ValueError, lambda: tessera.bincount(tessera.zeros((2, 3), "int64")), match="1-D")
    expect(COMM.size >= 1)
