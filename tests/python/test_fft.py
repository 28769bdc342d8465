"""tessera.fft against numpy.fft on seeded random 2-D arrays: every function (fftn, ifftn, fft2,
ifft2, fft and ifft along either axis, rfftn, irfftn, rfft2, irfft2, rfft, irfft), every norm, single
and double precision, on shapes the ranks do not divide (1 x N, N x 1, primes, 2^k +- 1, fewer rows
than ranks), the local blocks and the layouts as well as the global result; Plan's reuse and
attributes; and the errors, raised on every rank."""

import numpy as np
import pytest

import tessera
import tessera.fft as tfft
from helpers import COMM, expect, expect_distributed, expect_raises, global_data

P = COMM.size
NORMS = ["backward", "ortho", "forward"]
SHAPES = [(1, 1), (1, 7), (7, 1), (2, 3), (5, 8), (17, 15), (31, 33), (3, 64)]


def tolerance(dtype, reference):
    """An FFT's error grows as eps * log(N) * the result's magnitude: a bound with room for that."""
    single = np.dtype(dtype) in (np.float32, np.complex64)
    scale = float(np.max(np.abs(reference))) if reference.size else 1.0
    return (2e-5 if single else 1e-13) * max(scale, 1.0)


def check(x, reference, dtype, message, layout=None):
    out_type = np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) else np.complex128
    if np.iscomplexobj(reference):
        reference = reference.astype(out_type)
    else:
        reference = reference.astype(np.float32 if out_type == np.complex64 else np.float64)
    atol = tolerance(dtype, reference)
    expect_distributed(x, reference, message, exact=False, rtol=0, atol=atol, whole=True)
    if layout is not None:
        expect(x.layout == layout, "%s: layout %s, expected %s" % (message, x.layout, layout))


def data_of(shape, dtype, seed):
    return global_data(shape[0] * shape[1], dtype, seed).reshape(shape)


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32", "float64"])
def test_complex_transforms(dtype):
    for i, shape in enumerate(SHAPES):
        norm = NORMS[i % 3]
        a = data_of(shape, dtype, seed=i)
        wide = a.astype(np.complex128)
        x = tessera.from_global(a)
        what = "%s %s norm=%s" % (dtype, shape, norm)
        X = tfft.fftn(x, norm=norm)
        check(X, np.fft.fftn(wide, norm=norm), dtype, "fftn " + what, layout=(1, P))
        check(tfft.ifftn(X, norm=norm), wide, dtype, "ifftn(fftn) " + what, layout=(P, 1))
        check(tfft.ifftn(x, norm=norm), np.fft.ifftn(wide, norm=norm), dtype, "ifftn " + what)
        check(tfft.fft2(x, norm=norm), np.fft.fft2(wide, norm=norm), dtype, "fft2 " + what)
        check(tfft.ifft2(x, norm=norm), np.fft.ifft2(wide, norm=norm), dtype, "ifft2 " + what)
        for axis in (0, 1, -1):
            check(tfft.fft(x, axis=axis, norm=norm), np.fft.fft(wide, axis=axis, norm=norm), dtype,
                  "fft axis=%d %s" % (axis, what))
            check(tfft.ifft(x, axis=axis, norm=norm), np.fft.ifft(wide, axis=axis, norm=norm), dtype,
                  "ifft axis=%d %s" % (axis, what))
        check(tfft.fftn(x, axes=(0,), norm=norm), np.fft.fftn(wide, axes=(0,), norm=norm), dtype,
              "fftn axes=(0,) " + what)
    expect(tfft.fftn(tessera.from_global(np.arange(6, dtype=np.int32).reshape(2, 3))).dtype == np.complex128,
           "integers transform in double precision")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_transforms(dtype):
    shapes = SHAPES + [(4, 1), (6, 2), (9, 16)]
    for i, shape in enumerate(shapes):
        norm = NORMS[i % 3]
        a = data_of(shape, dtype, seed=50 + i)
        wide = a.astype(np.float64)
        x = tessera.from_global(a)
        what = "%s %s norm=%s" % (dtype, shape, norm)
        X = tfft.rfftn(x, norm=norm)
        ref = np.fft.rfftn(wide, norm=norm)
        check(X, ref, dtype, "rfftn " + what, layout=(1, P))
        expect(X.global_shape == (shape[0], shape[1] // 2 + 1), "rfftn's layout is numpy's")
        check(tfft.irfftn(X, s=shape, norm=norm), wide, dtype, "irfftn(rfftn, s) " + what, layout=(P, 1))
        spectrum = tessera.from_global(ref.astype(np.complex64 if dtype == "float32" else np.complex128))
        if shape[1] > 1:
            check(tfft.irfftn(spectrum, norm=norm), np.fft.irfftn(ref, norm=norm), dtype, "irfftn " + what)
            check(tfft.irfft2(spectrum, norm=norm), np.fft.irfft2(ref, norm=norm), dtype, "irfft2 " + what)
        check(tfft.rfft2(x, norm=norm), np.fft.rfft2(wide, norm=norm), dtype, "rfft2 " + what)
        for axis in (0, 1):
            R = tfft.rfft(x, axis=axis, norm=norm)
            check(R, np.fft.rfft(wide, axis=axis, norm=norm), dtype, "rfft axis=%d %s" % (axis, what))
            check(tfft.irfft(R, n=shape[axis], axis=axis, norm=norm), wide, dtype,
                  "irfft(rfft) axis=%d %s" % (axis, what))
    odd = data_of((5, 9), dtype, seed=3)
    spectrum = np.fft.rfftn(odd.astype(np.float64))
    check(tfft.irfftn(tessera.from_global(spectrum.astype(np.complex64 if dtype == "float32" else np.complex128)),
                      s=(5, 9)), np.fft.irfftn(spectrum, s=(5, 9)), dtype, "irfftn of an odd length (s)")


def test_every_norm_on_every_function():
    a = data_of((13, 10), "complex128", seed=7)
    r = data_of((13, 10), "float64", seed=8)
    x, y = tessera.from_global(a), tessera.from_global(r)
    for norm in NORMS + [None]:
        check(tfft.fftn(x, norm=norm), np.fft.fftn(a, norm=norm), "complex128", "fftn norm=%s" % norm)
        check(tfft.ifftn(x, norm=norm), np.fft.ifftn(a, norm=norm), "complex128", "ifftn norm=%s" % norm)
        check(tfft.fft(x, norm=norm), np.fft.fft(a, norm=norm), "complex128", "fft norm=%s" % norm)
        check(tfft.ifft(x, axis=0, norm=norm), np.fft.ifft(a, axis=0, norm=norm), "complex128",
              "ifft norm=%s" % norm)
        check(tfft.rfftn(y, norm=norm), np.fft.rfftn(r, norm=norm), "float64", "rfftn norm=%s" % norm)
        check(tfft.irfftn(x, norm=norm), np.fft.irfftn(a, norm=norm), "complex128", "irfftn norm=%s" % norm)
        check(tfft.rfft(y, axis=0, norm=norm), np.fft.rfft(r, axis=0, norm=norm), "float64", "rfft norm=%s" % norm)
        check(tfft.irfft(x, norm=norm), np.fft.irfft(a, norm=norm), "complex128", "irfft norm=%s" % norm)


def test_layouts_in_and_out():
    a = data_of((11, 9), "complex128", seed=9)
    ref = np.fft.fftn(a)
    for layout in ("rows", "cols", "blocks", (1, P)):
        x = tessera.from_global(a, layout=layout)
        check(tfft.fftn(x), ref, "complex128", "fftn of an input in layout %s" % (layout,), layout=(1, P))
        expect(x.layout == tessera.redistribute(x, layout).layout, "the input is left as it was")
        check(x, a, "complex128", "the input keeps its values")
    x = tessera.from_global(a)
    check(tfft.fftn(x, layout="rows"), ref, "complex128", "fftn(layout='rows')", layout=(P, 1))
    check(tfft.fftn(x, layout="blocks"), ref, "complex128", "fftn(layout='blocks')",
          layout=tessera.zeros((2, 2), layout="blocks").layout)
    # ifftn of an array already in the forward output's layout moves nothing; from another layout it is the same.
    X = tfft.fftn(x)
    check(tfft.ifftn(tessera.redistribute(X, "blocks")), a, "complex128", "ifftn of a spectrum on another grid")


@pytest.mark.parametrize("dtype", ["complex64", "float64"])
def test_plan_reuse_and_attributes(dtype):
    shape = (19, 6)
    plan = tfft.Plan(shape, dtype, norm="ortho", effort="estimate")
    real = dtype == "float64"
    expect(plan.kind == ("r2c" if real else "c2c"), "kind %s" % plan.kind)
    expect(plan.shape == shape and plan.output_shape == ((19, 4) if real else shape),
           "shapes %s -> %s" % (plan.shape, plan.output_shape))
    expect(plan.decomposition == "slab" and plan.grid == (P, 1), "slab over %s" % (plan.grid,))
    expect(plan.input_layout == (P, 1) and plan.output_layout == (1, P), "layouts %s -> %s"
           % (plan.input_layout, plan.output_layout))
    expect(plan.exchanges == (1 if P > 1 else 0), "exchanges %d" % plan.exchanges)
    expect(plan.layout_text == "[0,-1] -> [-1,0]", "layout_text %r" % plan.layout_text)
    expect(plan.norm == "ortho" and plan.output_dtype == (np.complex128 if real else np.complex64), "norm, dtype")
    for seed in range(3):
        a = data_of(shape, dtype, seed=seed)
        x = tessera.from_global(a, layout="rows")
        X = plan.forward(x)
        ref = np.fft.rfftn(a, norm="ortho") if real else np.fft.fftn(a.astype(np.complex128), norm="ortho")
        check(X, ref, dtype, "Plan.forward seed=%d" % seed, layout=plan.output_layout)
        (r0, c0), (rows, cols) = plan.output_box
        expect(X.local_offset == (r0, c0) and X.local_shape == (rows, cols), "output_box is the output's block")
        (r0, c0), (rows, cols) = plan.input_box
        expect(x.local_offset == (r0, c0) and x.local_shape == (rows, cols), "input_box is the input's block")
        check(plan.inverse(X), a, dtype, "Plan.inverse seed=%d" % seed, layout=plan.input_layout)
    # The exchange in chunks beside the transforms: the same spectrum.
    chunked = tfft.Plan(shape, dtype, norm="ortho", effort="estimate", exchange_chunks=3)
    a = data_of(shape, dtype, seed=5)
    X = chunked.forward(tessera.from_global(a, layout="rows"))
    ref = np.fft.rfftn(a, norm="ortho") if real else np.fft.fftn(a.astype(np.complex128), norm="ortho")
    check(X, ref, dtype, "exchange_chunks=3 forward", layout=chunked.output_layout)
    check(chunked.inverse(X), a, dtype, "exchange_chunks=3 inverse", layout=chunked.input_layout)
    back = tfft.Plan(shape, dtype, return_to_input_layout=True, effort="estimate")
    expect(back.output_layout == (P, 1), "return_to_input_layout: output layout %s" % (back.output_layout,))
    a = data_of(shape, dtype, seed=4)
    X = back.forward(tessera.from_global(a))
    ref = np.fft.rfftn(a) if real else np.fft.fftn(a.astype(np.complex128))
    check(X, ref, dtype, "return_to_input_layout forward", layout=(P, 1))
    check(back.inverse(X), a, dtype, "return_to_input_layout inverse", layout=(P, 1))
    batched = tfft.Plan(shape, dtype, axes=0, effort="estimate")
    a = data_of(shape, dtype, seed=5)
    ref = np.fft.rfft(a, axis=0) if real else np.fft.fft(a.astype(np.complex128), axis=0)
    check(batched.forward(tessera.from_global(a)), ref, dtype, "batched Plan along axis 0")


def test_errors_on_every_rank():
    m = tessera.from_global(data_of((4, 6), "complex128", seed=1))
    r = tessera.from_global(data_of((4, 6), "float64", seed=1))
    v = tessera.from_global(global_data(8, "complex128", 1))
    expect_raises(ValueError, lambda: tfft.fftn(v), match="2-D")
    expect_raises(ValueError, lambda: tfft.fft(v), match="2-D")
    expect_raises(TypeError, lambda: tfft.fftn(np.zeros((2, 2))), match="DistArray")
    expect_raises(ValueError, lambda: tfft.fftn(m, norm="bad"), match="norm")
    expect_raises(ValueError, lambda: tfft.fftn(m, s=(4, 8)), match="pad or crop")
    expect_raises(ValueError, lambda: tfft.fft(m, n=3), match="pad or crop")
    expect_raises(ValueError, lambda: tfft.fft(m, axis=2), match="out of bounds")
    expect_raises(ValueError, lambda: tfft.fftn(m, axes=(0, 0)), match="repeated")
    expect_raises(TypeError, lambda: tfft.rfftn(m), match="complex128")
    expect_raises(ValueError, lambda: tfft.rfftn(r, axes=(1, 0)), match="axes")
    expect_raises(ValueError, lambda: tfft.irfftn(m, s=(4, 7)), match="values along axis")
    expect_raises(ValueError, lambda: tfft.irfft(tessera.from_global(np.ones((3, 1), np.complex128))),
                  match="number of data points")
    expect_raises(ValueError, lambda: tfft.Plan((4, 6, 8)), match="2-D")
    expect_raises(ValueError, lambda: tfft.Plan((0, 6)), match="data points")
    expect_raises(TypeError, lambda: tfft.Plan((4, 6), "int32"), match="int32")
    expect_raises(ValueError, lambda: tfft.Plan((4, 6), decomposition="pencil", effort="estimate"), match="pencil")
    expect_raises(ValueError, lambda: tfft.Plan((4, 6), decomposition="cubes"), match="decomposition")
    expect_raises(ValueError, lambda: tfft.Plan((4, 6), effort="patient"), match="effort")
    expect_raises(ValueError, lambda: tfft.Plan((4, 6), effort="estimate", exchange_chunks=65), match="exchange_chunks")
    expect_raises(TypeError, lambda: tfft.Plan((4, 6), exchange_chunks=1.5), match="exchange_chunks")
    plan = tfft.Plan((4, 6), "complex128", effort="estimate")
    expect_raises(ValueError, lambda: plan.forward(tessera.from_global(data_of((4, 5), "complex128", 1))),
                  match="shape")
    expect_raises(TypeError, lambda: tfft.Plan((4, 6), "float64", effort="estimate").forward(m), match="real")
    expect_raises(ValueError, lambda: plan.forward(v), match="2-D")
