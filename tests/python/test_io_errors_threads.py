"""HDF5 through the framework's parallel I/O (files h5py reads), errors as Python exceptions on every
rank, the GIL released while a rank waits in a collective, and the DLPack exchange on the host."""

import os
import threading
import time

import numpy as np
import pytest

import tessera
from tessera import _tessera
from dlpack_consumer import consume
from helpers import (COMM, DTYPES, expect, expect_distributed, expect_equal, expect_raises, global_data, host_only,
                     shared_directory)

h5py = pytest.importorskip("h5py")


@pytest.mark.parametrize("dtype", DTYPES)
def test_hdf5_round_trip(dtype, tmp_path_factory):
    directory = shared_directory(tmp_path_factory)
    path = os.path.join(directory, "arrays.h5")
    vector = global_data(101, dtype, 1)
    matrix = global_data(7 * 9, dtype, 2).reshape(7, 9)
    tessera.save_hdf5(tessera.from_global(vector), path, "/v_" + dtype)
    tessera.from_global(matrix, layout="cols").save_hdf5(path, "/group/m_" + dtype)
    COMM.Barrier()
    if COMM.rank == 0:
        with h5py.File(path, "r") as f:
            expect_equal(f["/v_" + dtype][...], vector, "h5py reads the 1-D dataset")
            expect_equal(f["/group/m_" + dtype][...], matrix, "h5py reads the 2-D dataset")
    expect_distributed(tessera.load_hdf5(path, "/v_" + dtype), vector, "load 1-D")
    expect_distributed(tessera.load_hdf5(path, "/group/m_" + dtype, layout="rows"), matrix, "load 2-D")
    expect_distributed(tessera.load_hdf5(path, "/v_" + dtype, dtype="float64"), vector.astype(np.float64),
                       "load converting")
    expect_raises(OSError, lambda: tessera.save_hdf5(tessera.zeros(3), path, "/v_" + dtype), match="exists")
    tessera.save_hdf5(tessera.zeros(3), path, "/v_" + dtype, overwrite=True)
    expect_distributed(tessera.load_hdf5(path, "/v_" + dtype), np.zeros(3), "overwritten")


def test_hdf5_errors_on_every_rank(tmp_path_factory):
    directory = shared_directory(tmp_path_factory)
    expect_raises(OSError, lambda: tessera.load_hdf5(os.path.join(directory, "none.h5"), "/x"), match="none.h5")
    path = os.path.join(directory, "not_hdf5.h5")
    if COMM.rank == 0:
        with open(path, "w") as f:
            f.write("plain text")
    COMM.Barrier()
    expect_raises(OSError, lambda: tessera.load_hdf5(path, "/x"), match="HDF5")
    good = os.path.join(directory, "good.h5")
    tessera.save_hdf5(tessera.from_global(np.array([1.5, np.nan])), good, "/f")
    expect_raises(OSError, lambda: tessera.load_hdf5(good, "/missing"), match="missing")
    expect_raises(ValueError, lambda: tessera.load_hdf5(good, "/f", dtype="int32"))
    for name in ("", ".", "/a/", "/a//b", "/a/../b"):  # names HDF5 refuses: an exception, not an abort
        expect_raises(OSError, lambda: tessera.save_hdf5(tessera.zeros(3), good, name, overwrite=True),
                      match="not a dataset name")
    expect_equal(tessera.load_hdf5(good, "/f").size, 2, "the file kept its dataset")


def test_errors_are_python_exceptions_on_every_rank():
    expect_raises(MemoryError, lambda: tessera.zeros(2 ** 61, "float64"))
    expect_raises(TypeError, lambda: tessera.zeros(3, "float16"), match="float16")
    expect_raises(TypeError, lambda: tessera.zeros(3, "complex256"), match="complex256")
    expect_raises(ValueError, lambda: tessera.zeros((2, 2), layout=(COMM.size + 1, 1)), match="grid")
    expect_raises(ValueError, lambda: tessera.zeros(-1))
    expect_raises(ValueError, lambda: tessera.from_global(np.zeros(4), root=COMM.size), match="not a rank")
    expect_raises(TypeError, lambda: tessera.sum(np.zeros(3)), match="DistArray")
    expect(issubclass(tessera.CommunicationError, RuntimeError), "CommunicationError is a RuntimeError")


def test_gil_is_released_while_a_rank_waits():
    # Rank 0 enters the collective late; meanwhile the others wait in it, and a Python thread on each
    # of them keeps counting, which it can only do while the waiting call does not hold the GIL.
    x = tessera.arange(1000)
    ticks = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    thread = threading.Thread(target=count)
    thread.start()
    time.sleep(0.05)
    before = ticks[0]
    if COMM.rank == 0:
        time.sleep(0.3)
    total = tessera.sum(x)  # the others wait here for about 0.3 s
    during = ticks[0] - before
    stop.set()
    thread.join()
    expect(total == 499500, "the sum")
    expect(COMM.rank == 0 or COMM.size == 1 or during > 20, "a thread ran %d times while the rank waited" % during)


def test_calls_from_two_threads_are_serialised():
    # Two threads of each rank sum their own arrays on their own contexts, at the same time.
    ctx_a, ctx_b = tessera.init(COMM.Dup()), tessera.init(COMM.Dup())
    results = {}

    def work(name, ctx):
        x = tessera.arange(10000, comm=ctx)
        results[name] = [int(tessera.sum(x)) for _ in range(20)]

    threads = [threading.Thread(target=work, args=("a", ctx_a)), threading.Thread(target=work, args=("b", ctx_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect(results.get("a") == [49995000] * 20 and results.get("b") == [49995000] * 20, "sums from two threads")


@host_only
def test_dlpack_export_and_import_on_the_host():
    data = global_data(37, "float32", 3)
    x = tessera.from_global(data)
    block = x._local_device()  # the exporter: on the cpu backend, host memory
    view = np.from_dlpack(block)
    expect(view.ctypes.data == x.local.ctypes.data or view.size == 0, "numpy takes the block without a copy")
    expect_equal(view, x.local, "the exported block")
    expect(block.__dlpack_device__() == (1, 0), "a host block is DLPack device (kDLCPU, 0)")
    for versioned in (False, True):
        got, device, name, pointer = consume(block, versioned=versioned)
        expect_equal(got, x.local, "the test's own DLPack consumer, versioned=%s" % versioned)
        expect(device == (1, 0) and name == ("dltensor_versioned" if versioned else "dltensor")
               and (pointer == x.local.ctypes.data or got.size == 0), "capsule %s" % name)
    source = np.arange(12, dtype=np.int64).reshape(3, 4)
    tensor = _tessera._import_dlpack(source.__dlpack__())
    expect(tensor.data == source.ctypes.data and tuple(tensor.shape) == (3, 4) and tensor.dtype == "int64"
           and tensor.device_type == 1 and not tensor.error, "the importer reads numpy's tensor")
    expect_raises(TypeError, lambda: _tessera._import_dlpack(3))
