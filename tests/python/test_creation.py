"""Making arrays: from each rank's block (zero-copy), from a global array, by generators; the layout
attributes and the local blocks; the explicit ways back to NumPy."""

import numpy as np
import pytest
from mpi4py import MPI

import tessera
from helpers import (COMM, DTYPES, SIZES, block_of, counter_values, expect, expect_distributed, expect_equal,
                     expect_raises, global_data, host_only, local_block)


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_global_every_rank_and_root(dtype):
    for n in SIZES:
        data = global_data(n, dtype, seed=n)
        expect_distributed(tessera.from_global(data), data, "from_global n=%d" % n, whole=True)
        for root in range(COMM.size):
            x = tessera.from_global(data if COMM.rank == root else None, root=root)
            expect_distributed(x, data, "from_global n=%d root=%d" % (n, root))
            off, count = block_of(n, COMM.size, COMM.rank)
            expect(x.local_offset == (off,) and x.local_shape == (count,), "balanced block layout")


@host_only
@pytest.mark.parametrize("dtype", DTYPES)
def test_from_local_uneven_blocks_without_copy(dtype):
    # Rank r holds 3r + 1 elements (rank 0 one, rank 3 ten): a ragged layout in rank order.
    counts = [(3 * r + 1) % 5 for r in range(COMM.size)]  # some ranks empty at 4 ranks (r = 3: 0)
    n = sum(counts)
    data = global_data(n, dtype, seed=7)
    offset = sum(counts[:COMM.rank])
    block = data[offset:offset + counts[COMM.rank]].copy()
    x = tessera.from_local(block)
    expect_distributed(x, data, "from_local", whole=True)
    expect(list(x.counts) == counts, "counts %s, expected %s" % (x.counts, counts))
    expect(not x.owns_memory, "from_local of a contiguous host block views it")
    # The same memory: what the block holds now, the array holds, and its .local is the block.
    if block.size:
        block[0] = 42
    expect(np.shares_memory(x.local, block) or block.size == 0, ".local is the block itself")
    expect_equal(x.local, block, ".local after a change to the block")
    expect(int(tessera.count_nonzero(x == 42)) == COMM.allreduce(int((block == 42).sum())), "count sees the change")


def test_from_local_copies_what_it_cannot_view():
    data = np.arange(40, dtype=np.float64).reshape(20, 2)[:, 0]  # strided: copied
    x = tessera.from_local(data)
    expect(x.context.backend != "cpu" or not np.shares_memory(x.local, data), "a strided block is copied")
    expect_equal(local_block(x), data, "copied block")
    y = tessera.from_local([1, 2, 3])  # a list: numpy.asarray, int64
    expect(y.dtype == np.int64 and y.global_shape == (3 * COMM.size,), "a list becomes an int64 block")


def test_from_local_errors_on_every_rank():
    # One rank's block has another dtype: TypeError on every rank.
    block = np.zeros(3, dtype=np.float32 if COMM.rank == COMM.size - 1 and COMM.size > 1 else np.float64)
    if COMM.size > 1:
        expect_raises(TypeError, lambda: tessera.from_local(block), match="dtype")
    # An unsupported dtype on one rank only.
    bad = np.zeros(2, dtype=np.float16 if COMM.rank == 0 else np.float64)
    expect_raises(TypeError, lambda: tessera.from_local(bad), match="float16")
    # 2-D on one rank, 1-D on the others.
    shape = (2, 2) if COMM.rank == 0 and COMM.size > 1 else (4,)
    if COMM.size > 1:
        expect_raises(ValueError, lambda: tessera.from_local(np.zeros(shape)), match="1-D")
    expect_raises(ValueError, lambda: tessera.from_local(np.zeros((2, 2, 2))), match="1-D or 2-D")


class StridedGpuBlock:
    """A GPU array as __cuda_array_interface__ describes it: every other float64 of a buffer."""
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f8", "data": (0, False), "strides": (16,), "version": 3,
                                "stream": None}


def test_from_local_refuses_a_strided_gpu_block_with_its_own_error():
    # Refused before the memory is touched, with the error that names the reason (not as a
    # malformed interface).
    expect_raises(ValueError, lambda: tessera.from_local(StridedGpuBlock()), match="not C-contiguous")


def aligned_copy(block, offset):
    """A copy of block whose data starts `offset` bytes past a 16-byte boundary."""
    raw = np.zeros(block.nbytes + 32, dtype=np.uint8)
    first = (-raw.__array_interface__["data"][0]) % 16 + offset
    out = raw[first:first + block.nbytes].view(block.dtype).reshape(block.shape)
    out[...] = block
    return out


def test_from_local_2d_blocks():
    for rows, cols in [(7, 5), (3, 9), (1, 1), (12, 2)]:
        data = global_data(rows * cols, "float64", seed=rows).reshape(rows, cols)
        ref = tessera.from_global(data)
        r0, c0 = ref.local_offset
        lr, lc = ref.local_shape
        x = tessera.from_local(data[r0:r0 + lr, c0:c0 + lc])
        expect_distributed(x, data, "from_local 2-D %dx%d" % (rows, cols), whole=True)
        # A C-contiguous block on a 16-byte boundary is used in place; one 8 bytes off it is copied.
        block = np.ascontiguousarray(data[r0:r0 + lr, c0:c0 + lc])
        here, off = aligned_copy(block, 0), aligned_copy(block, 8)
        y = tessera.from_local(here)
        expect_distributed(y, data, "from_local 2-D in place %dx%d" % (rows, cols), whole=True)
        z = tessera.from_local(off)
        expect_distributed(z, data, "from_local 2-D off 16 bytes %dx%d" % (rows, cols), whole=True)
        if y.context.backend == "cpu":
            expect(not y.owns_memory, "a 2-D block on a 16-byte boundary is viewed")
            expect(z.owns_memory, "a 2-D block off a 16-byte boundary is copied")
            if block.size:
                here[0, 0] = off[0, 0] = 42.0
                expect(local_block(y)[0, 0] == 42.0, "the viewed 2-D block sees a change to the caller's block")
                expect(local_block(z)[0, 0] == block[0, 0], "the copied 2-D block does not")
        # One rank's block off the boundary: every rank copies (the copies' allocation is collective).
        mixed = tessera.from_local(aligned_copy(block, 8 if COMM.rank == COMM.size - 1 else 0))
        expect_distributed(mixed, data, "from_local 2-D, one rank's block off 16 bytes", whole=True)
        off_somewhere = COMM.allreduce(int(COMM.rank == COMM.size - 1 and block.size > 0)) > 0
        expect(mixed.context.backend != "cpu" or mixed.owns_memory == off_somewhere,
               "one block off 16 bytes: copied everywhere (%s), expected %s" % (mixed.owns_memory, off_somewhere))
    # Blocks that are not the balanced layout of the grid.
    if COMM.size > 1:
        wrong = np.zeros((1 + COMM.rank, 2))
        expect_raises(ValueError, lambda: tessera.from_local(wrong, layout="rows"), match="balanced")


@pytest.mark.parametrize("dtype", DTYPES)
def test_generators(dtype):
    for n in SIZES:
        expect_distributed(tessera.zeros(n, dtype), np.zeros(n, dtype), "zeros")
        expect_distributed(tessera.ones(n, dtype), np.ones(n, dtype), "ones")
        expect_distributed(tessera.full(n, 7, dtype), np.full(n, 7, dtype), "full")
        expect_distributed(tessera.random(n, seed=n + 11, dtype=dtype), counter_values(n + 11, n, dtype),
                           "random n=%d" % n)
        e = tessera.empty(n, dtype)
        expect(e.global_shape == (n,) and e.dtype == np.dtype(dtype), "empty")
    x = tessera.random((9, 13), seed=5, dtype=dtype)
    expect_distributed(x, counter_values(5, 9 * 13, dtype).reshape(9, 13), "random 2-D")


@pytest.mark.parametrize("dtype", DTYPES)
def test_arange_as_numpy(dtype):
    if dtype.startswith("int"):
        cases = [(10,), (3, 40, 7), (-5, 5), (100, 0, -3), (0,), (5, 5)]
    else:
        cases = [(10,), (0.1, 100.0, 0.3), (-3.7, 1000.0, 0.77), (1.0, 0.0, -0.125), (0.0,)]
    for args in cases:
        expect_distributed(tessera.arange(*args, dtype=dtype), np.arange(*args, dtype=dtype), "arange%s" % (args,))


def test_arange_default_dtypes():
    expect_distributed(tessera.arange(5), np.arange(5), "int default")
    expect_distributed(tessera.arange(0.5, 3), np.arange(0.5, 3), "float default")


def test_gather_and_items():
    data = global_data(33, "int64", seed=3)
    x = tessera.from_global(data)
    for root in range(COMM.size):
        g = x.gather(root)
        expect((g is None) == (COMM.rank != root), "gather gives the array on the root only")
        if COMM.rank == root:
            expect_equal(g, data, "gather")
        else:
            expect(True)
    expect(x[0] == data[0] and x[32] == data[32] and x[-1] == data[-1], "single elements")
    expect(type(x[5]) is np.int64, "an element is a NumPy scalar")
    expect_raises(IndexError, lambda: x[33], match="index 33 is out of bounds for axis 0 with size 33")
    expect_raises(IndexError, lambda: x[-34], match="index -34 is out of bounds")
    expect_raises(IndexError, lambda: x[2 ** 70], match="out of bounds")
    expect_raises(IndexError, lambda: x[1, 2], match="too many indices")
    expect_raises(TypeError, lambda: x[True], match="boolean")
    m = tessera.from_global(data.reshape(3, 11))
    expect_raises(IndexError, lambda: m[1, 11], match="axis 1 with size 11")
    expect(m[2, 3] == data[2 * 11 + 3] and m[-1, -1] == data[-1], "2-D elements")
    expect_raises(TypeError, lambda: x[1:3], match="Mask")


def test_full_takes_the_type_of_a_numpy_scalar():
    for value in (np.float32(1.5), np.int32(7), np.complex64(1 - 2j), 1.5, 7, 1 - 2j):
        x = tessera.full(5, value)
        want = np.full(5, value)
        expect(x.dtype == want.dtype, "full(5, %r): %s, numpy %s" % (value, x.dtype, want.dtype))
        expect_equal(x.to_numpy(), want, "full(5, %r)" % value)


def test_no_implicit_conversion():
    x = tessera.arange(4)
    expect_raises(TypeError, lambda: np.asarray(x), match="to_numpy")
    expect_raises(ValueError, lambda: bool(x))
    expect_raises(TypeError, lambda: list(x))


@host_only
def test_local_block_is_writable_view():
    x = tessera.zeros(COMM.size * 3 + 1, "float64")
    x.local[:] = COMM.rank + 1
    counts = x.counts
    expect(float(tessera.sum(x)) == float(sum((r + 1) * counts[r] for r in range(COMM.size))),
           "writes through .local reach the array")


def test_contexts_on_several_communicators():
    # A context on each half of the ranks, and one on all of them, side by side.
    half = COMM.Split(COMM.rank % 2, COMM.rank)
    half.Set_errhandler(MPI.ERRORS_ARE_FATAL)
    ctx_half = tessera.init(half)
    ctx_all = tessera.init(MPI.COMM_WORLD)
    a = tessera.arange(10, comm=ctx_half)
    b = tessera.arange(10, comm=ctx_all)
    expect(ctx_half.size == half.size and ctx_half.rank == half.rank, "the half context's ranks")
    expect(ctx_half.comm is half and a.context is ctx_half, "the context keeps the caller's communicator")
    expect(int(tessera.sum(a)) == 45 and int(tessera.sum(b)) == 45, "sums on both contexts")
    expect(tessera.from_local(np.ones(2), comm=half).global_shape == (2 * half.size,), "from_local on a comm")
    # The caller's communicator keeps its error handler (tessera sets its own on a duplicate).
    expect(half.Get_errhandler() == MPI.ERRORS_ARE_FATAL, "the caller's communicator is untouched")
    half.Free()


def test_creation_arguments_that_differ_between_ranks_raise_on_every_rank():
    if COMM.size == 1:
        return
    first = COMM.rank == 0
    expect_raises(TypeError, lambda: tessera.zeros(5, "float64" if first else "float32"), match="dtype")
    expect_raises(ValueError, lambda: tessera.zeros((4, 4), layout="cols" if first else "rows"), match="layout")
    expect_raises(ValueError, lambda: tessera.ones(5 + COMM.rank), match="shape")
    expect_raises(ValueError, lambda: tessera.random(7, seed=COMM.rank), match="seed")
    expect_raises(ValueError, lambda: tessera.arange(3 + COMM.rank), match="length")
    expect_raises(ValueError, lambda: tessera.arange(0.5 + 0.25 * COMM.rank, 9.5), match="start")
    expect_raises(ValueError, lambda: tessera.full(4, 1 if first else 2 ** 40, dtype="int64"), match="fill value")
    # Arguments bad on one rank only: that rank's error on every rank, no rank left waiting.
    expect_raises(ValueError, lambda: tessera.zeros(4 if first else -1), match="negative")
    expect_raises(TypeError, lambda: tessera.zeros(4, dtype="float64" if first else "uint8"), match="uint8")
    expect_raises(ValueError, lambda: tessera.random(4, seed=0 if first else -1), match="seed")
    expect_raises(ValueError, lambda: tessera.arange(0, 5, 1 if first else 0), match="step")
    expect_raises(ValueError, lambda: tessera.zeros((4, 4), layout="blocks" if first else "diagonal"), match="layout")
    expect_equal(tessera.zeros(5).sum(), 0.0, "a creation after the refusals")


def test_init_errors():
    expect_raises(ValueError, lambda: tessera.init(backend="gpu"), match="unknown backend")
    expect_raises(TypeError, lambda: tessera.init(comm=42), match="mpi4py")
    if not tessera.built_with_cuda:
        expect_raises(ValueError, lambda: tessera.init(backend="cuda"), match="CUDA")
