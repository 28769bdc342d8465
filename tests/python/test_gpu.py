"""The cuda backend from Python: each rank's GPU block handed to CuPy and PyTorch and taken back
without a copy (__cuda_array_interface__ v3, __dlpack__ with its stream argument), and the same
through the DLPack consumer of dlpack_consumer.py where neither library is installed. Runs only with
TESSERA_TEST_BACKEND=cuda (the ctest python_gpu_tests_np*)."""

import numpy as np
import pytest

import tessera
from dlpack_consumer import consume
from helpers import (BACKEND, COMM, DTYPES, correctly_rounded_sum, expect, expect_distributed, expect_equal,
                     global_data)

pytestmark = pytest.mark.skipif(BACKEND != "cuda", reason="the cuda backend (TESSERA_TEST_BACKEND=cuda)")

try:
    import cupy
except ImportError:
    cupy = None
try:
    import torch
    if not torch.cuda.is_available():
        torch = None
except ImportError:
    torch = None


def test_context_is_on_the_gpu():
    ctx = tessera.default_context()
    expect(ctx.backend == "cuda" and ctx.device is not None and ctx.stream != 0, "cuda context: %s" % ctx.describe())


@pytest.mark.parametrize("dtype", DTYPES + ["complex64", "complex128"])
def test_cuda_array_interface_and_dlpack_export(dtype):
    for n in [0, 1, 33, 4099]:
        data = global_data(n, dtype, seed=n)
        x = tessera.from_global(data)
        off, count = x.local_offset[0], x.local_shape[0]
        block = x.local
        cai = block.__cuda_array_interface__
        expect(cai["version"] == 3 and cai["shape"] == (count,) and cai["typestr"] == np.dtype(dtype).str
               and cai["strides"] is None and cai["stream"] == x.context.stream
               and (count == 0 or cai["data"][0] != 0), "CAI %s" % cai)
        expect(block.__dlpack_device__() == (2, x.context.device), "DLPack device")
        for versioned in (False, True):
            got, device, name, pointer = consume(block, versioned=versioned, stream=1)
            expect_equal(got, data[off:off + count], "DLPack export n=%d versioned=%s" % (n, versioned))
            expect(name == ("dltensor_versioned" if versioned else "dltensor") and device == (2, x.context.device)
                   and (count == 0 or pointer == cai["data"][0]), "capsule %s on %s" % (name, device))
        got, _, _, _ = consume(block, stream=-1)  # no ordering asked: the consumer synchronises itself
        expect(got.shape == (count,), "stream=-1")


@pytest.mark.skipif(cupy is None, reason="CuPy is not installed")
def test_cupy_both_ways_without_copies():
    n = 1000 + COMM.size
    data = global_data(n, "float32", 7)
    x = tessera.from_global(data)
    view = cupy.asarray(x.local)  # __cuda_array_interface__: no copy
    expect(view.data.ptr == x.local.ptr or view.size == 0, "CuPy views the block")
    expect_equal(cupy.asnumpy(view), data[x.local_offset[0]:][:x.local_shape[0]], "CuPy reads the block")
    also = cupy.from_dlpack(x.local)
    expect(also.data.ptr == view.data.ptr or view.size == 0, "cupy.from_dlpack views the block")
    view *= 2  # on CuPy's stream; tessera's work after it must see it
    cupy.cuda.get_current_stream().synchronize()
    expect(abs(float(tessera.sum(x)) - 2 * float(np.sum(data, dtype=np.float64))) < 1e-3 * n, "the doubled sum")
    # A CuPy block handed to tessera: used in place, kept alive by the array.
    mine = cupy.arange(5 + COMM.rank, dtype=cupy.float64)
    y = tessera.from_local(mine)
    expect(not y.owns_memory and y.local.ptr == mine.data.ptr, "from_local views the CuPy block")
    del mine
    expected = np.concatenate([np.arange(5 + r, dtype=np.float64) for r in range(COMM.size)])
    expect_distributed(y, expected, "from_local of CuPy blocks")
    strided = cupy.arange(20, dtype=cupy.float64)[::2]
    try:
        tessera.from_local(strided)
        raised = None
    except ValueError as e:
        raised = e
    expect(raised is not None and "contiguous" in str(raised), "a strided GPU block is refused: %r" % raised)


@pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed")
def test_torch_both_ways_without_copies():
    data = global_data(777, "float64", 9)
    x = tessera.from_global(data)
    t = torch.from_dlpack(x.local)
    expect(t.is_cuda and (t.numel() == 0 or t.data_ptr() == x.local.ptr), "torch views the block")
    expect_equal(t.cpu().numpy(), data[x.local_offset[0]:][:x.local_shape[0]], "torch reads the block")
    mine = torch.full((3 + COMM.rank,), float(COMM.rank), dtype=torch.float64, device="cuda:%d" % x.context.device)
    y = tessera.from_local(mine)
    expect(not y.owns_memory and y.local.ptr == mine.data_ptr(), "from_local views the tensor")
    expected = np.concatenate([np.full(3 + r, float(r)) for r in range(COMM.size)])
    expect_distributed(y, expected, "from_local of torch tensors")


def test_host_blocks_are_copied_to_the_gpu():
    block = np.arange(4 + COMM.rank, dtype=np.int64)
    x = tessera.from_local(block)
    expect(x.owns_memory, "a host block on the cuda backend is copied to the device")
    expect_distributed(x, np.concatenate([np.arange(4 + r) for r in range(COMM.size)]), "from_local of host blocks")


def test_algorithms_on_the_gpu_match_numpy():
    data = global_data(100003, "float32", 3)
    x = tessera.from_global(data)
    expect_equal(tessera.sum(x, exact=True), correctly_rounded_sum(data), "the correctly rounded sum on the GPU")
    expect_distributed(x[x > 0.5], data[data > 0.5], "mask on the GPU")
    expect_distributed(tessera.sort(x), np.sort(data), "sort on the GPU")
    expect_equal(tessera.histogram(x, bins=64)[0], np.histogram(data, bins=64)[0], "histogram on the GPU")
    expect_distributed(tessera.cumsum(tessera.arange(1000, dtype="int32")), np.cumsum(np.arange(1000, dtype=np.int32)),
                       "cumsum widened on the GPU")


@pytest.mark.skipif(cupy is None, reason="CuPy is not installed")
def test_cupy_complex_blocks_and_fft():
    import tessera.fft as tfft  # noqa: PLC0415
    rows, cols = 17, 12
    data = global_data(rows * cols, "complex64", 11).reshape(rows, cols)
    x = tessera.from_global(data, layout="rows")
    view = cupy.asarray(x.local)
    expect(view.dtype == cupy.complex64 and (view.size == 0 or view.data.ptr == x.local.ptr), "CuPy views a complex block")
    (r0, c0), (lr, lc) = x.local_offset, x.local_shape
    expect_equal(cupy.asnumpy(view), data[r0:r0 + lr, c0:c0 + lc], "CuPy reads the complex block")
    mine = cupy.asarray(data[r0:r0 + lr, c0:c0 + lc])
    y = tessera.from_local(mine, layout="rows")
    expect(not y.owns_memory, "from_local views a CuPy complex block")
    X = tfft.fftn(y, norm="ortho")
    ref = np.fft.fftn(data.astype(np.complex128), norm="ortho")
    expect_distributed(X, ref.astype(np.complex64), "fftn of CuPy blocks on the GPU (cuFFT)", exact=False, rtol=0,
                       atol=1e-4 * float(np.abs(ref).max()), whole=True)
    inverse = tfft.ifftn(X, norm="ortho")
    expect_distributed(inverse, data, "ifftn on the GPU", exact=False, rtol=0, atol=1e-5)
    back = cupy.asarray(inverse.local)
    (r0, c0), (lr, lc) = X.local_offset, X.local_shape
    spectrum = cupy.asarray(X.local)
    expect(bool(cupy.allclose(spectrum, cupy.asarray(ref[r0:r0 + lr, c0:c0 + lc].astype(np.complex64)), rtol=0,
                              atol=1e-4 * float(np.abs(ref).max()))), "CuPy reads the spectrum's block")
    expect(back.dtype == cupy.complex64, "ifftn keeps complex64")
