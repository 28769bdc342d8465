"""Tessera from Python: global arrays cut into one block per MPI rank, on the CPU or one GPU per rank.

    from mpi4py import MPI
    import tessera
    x = tessera.random(10**8, seed=1, dtype="float32")   # on tessera.init()'s context: MPI.COMM_WORLD
    print(tessera.sum(x), x[x > 0.5].global_shape)

Run under ``mpirun -n 4 python3 script.py`` (or srun). mpi4py initialises and finalises MPI; tessera
duplicates the communicator it is given. docs/PYTHON.md describes the whole package.
"""

import atexit as _atexit
import builtins as _builtins
import math as _math
import numbers as _numbers
import sys as _sys

import numpy as _np
from mpi4py import MPI as _MPI

from . import _tessera
from ._tessera import CommunicationError, Context, DeviceBlock, DistArray

__version__ = _tessera.version
built_with_cuda = _tessera.built_with_cuda

__all__ = [
    "CommunicationError", "Context", "DeviceBlock", "DistArray", "Mask",
    "init", "default_context",
    "from_local", "from_global", "zeros", "ones", "full", "empty", "arange", "random",
    "load_hdf5", "save_hdf5",
    "sum", "prod", "min", "max", "mean", "cumsum", "cumprod", "count_nonzero", "compress",
    "sort", "argsort", "histogram", "bincount",
    "transpose", "redistribute", "matmul", "stencil", "jacobi", "fft",
]

DTYPES = ("int32", "int64", "float32", "float64", "complex64", "complex128")
_DTYPES_TEXT = "int32, int64, float32, float64, complex64 or complex128"

# Stops the MPI watchdog before mpi4py finalises MPI (atexit runs this first: it is registered
# after mpi4py's own handler).
_atexit.register(_tessera._shutdown)

# ---------------------------------------------------------------------------------------------
# Contexts

_default = None
_contexts = []          # (mpi4py communicator, Context) for every context made, in order
_hook_installed = False


def init(comm=None, backend="auto", device=None, threads=None, abort_on_uncaught=True):
    """A context over the ranks of ``comm`` (an mpi4py communicator; default MPI.COMM_WORLD).

    Collective over ``comm``, which tessera duplicates (its own error handler on the duplicate;
    the caller's communicator is left as it was). ``backend``: "auto" (cuda where every rank has a
    GPU, else cpu), "cpu" or "cuda". ``device``: the GPU ordinal of this rank (default: the
    node-local rank modulo the visible GPUs). ``threads``: OpenMP threads of this rank's host work
    (default: OMP_NUM_THREADS, else its share of the node's cores). The first context made becomes
    the default one, which functions without ``comm=`` use.

    ``abort_on_uncaught``: where the job has more than one rank, an exception that nothing catches
    (a Ctrl-C's KeyboardInterrupt included) ends the whole job with MPI_Abort after its traceback
    is printed, instead of leaving the other ranks waiting in a collective (``python -m mpi4py``
    does the same).
    """
    global _default, _hook_installed
    if comm is None:
        comm = _MPI.COMM_WORLD
    if isinstance(comm, Context):
        raise TypeError("init: comm must be an mpi4py communicator (a tessera.Context is already initialised)")
    if device is not None and (not isinstance(device, _numbers.Integral) or device < 0):
        raise ValueError("init: device must be a GPU ordinal (an integer >= 0) or None")
    if threads is not None and (not isinstance(threads, _numbers.Integral) or threads < 1):
        raise ValueError("init: threads must be a positive integer or None")
    ctx = _tessera._init(comm, str(backend), int(threads or 0), -1 if device is None else int(device))
    _contexts.append((comm, ctx))
    if _default is None:
        _default = ctx
    if abort_on_uncaught and not _hook_installed and _MPI.COMM_WORLD.Get_size() > 1:
        _install_abort_hook()
        _hook_installed = True
    return ctx


def default_context():
    """The default context (made by the first tessera.init, which this calls where none was made)."""
    return _default if _default is not None else init()


def _context(comm):
    if comm is None:
        return default_context()
    if isinstance(comm, Context):
        return comm
    if isinstance(comm, _MPI.Comm):
        for known, ctx in _contexts:
            if known is comm:
                return ctx
        return init(comm)
    raise TypeError("comm must be a tessera.Context, an mpi4py communicator or None, not %s" % type(comm).__name__)


def _install_abort_hook():
    previous = _sys.excepthook

    def abort_on_uncaught(kind, value, traceback):
        previous(kind, value, traceback)
        try:
            if _MPI.Is_initialized() and not _MPI.Is_finalized():
                _sys.stderr.write("tessera: rank %d: uncaught %s; ending the job (MPI_Abort)\n"
                                  % (_MPI.COMM_WORLD.Get_rank(), kind.__name__))
                _sys.stderr.flush()
                _MPI.COMM_WORLD.Abort(1)
        except Exception:
            pass

    _sys.excepthook = abort_on_uncaught


def _layout(layout, ctx):
    """A process grid shape: None or "blocks" (MPI_Dims_create's), "rows" (P x 1), "cols" (1 x P), (R, C)."""
    if layout is None or layout == "blocks":
        return (0, 0)
    if layout == "rows":
        return (ctx.size, 1)
    if layout in ("cols", "columns"):
        return (1, ctx.size)
    if isinstance(layout, tuple) and len(layout) == 2 and all(isinstance(v, _numbers.Integral) for v in layout):
        return (int(layout[0]), int(layout[1]))
    raise ValueError("layout must be None, 'blocks', 'rows', 'cols' or a (rows, cols) grid, not %r" % (layout,))


def _dtype_name(dtype, what="dtype"):
    try:
        name = _np.dtype(dtype).name
    except TypeError:
        raise TypeError("%s %r is not a NumPy dtype" % (what, dtype)) from None
    if name not in DTYPES:
        raise TypeError("%s %s is not supported (%s)" % (what, name, _DTYPES_TEXT))
    return name


# ---------------------------------------------------------------------------------------------
# Making arrays

def _host_block(block):
    """A NumPy block tessera can take: (array, error kind, message)."""
    try:
        array = _np.asarray(block)
    except Exception as e:  # noqa: BLE001 - any conversion failure is this rank's TypeError
        return None, "type", "the block cannot be converted to a NumPy array (%s)" % e
    if array.dtype.name not in DTYPES:
        return None, "type", "a block of dtype %s is not supported (%s)" % (array.dtype, _DTYPES_TEXT)
    if array.ndim not in (1, 2):
        return None, "value", "a block must be 1-D or 2-D (this one is %d-D)" % array.ndim
    if not (array.flags.c_contiguous and array.flags.aligned and array.flags.writeable
            and array.dtype.isnative):
        array = _np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("="))  # a copy
    return array, "", ""


def from_local(block, comm=None, layout=None):
    """The global array whose rank r block is what rank r passes. Collective.

    ``block``: a NumPy array (or anything numpy.asarray takes), or on the cuda backend a GPU array
    with ``__cuda_array_interface__`` or ``__dlpack__`` (CuPy, PyTorch, Numba, JAX). 1-D blocks of
    any sizes (0 included) make a 1-D array in rank order, without a copy where the memory allows:
    a C-contiguous, aligned, writable block in the backend's own memory (host memory under cpu, the
    rank's GPU under cuda) is used in place, and the DistArray keeps it alive; others are copied.
    2-D blocks must form the balanced block layout of the ``layout`` grid; they are used in place
    on the same terms where they also start on a 16-byte boundary, and copied otherwise. Errors
    (a dtype the ranks disagree on, a block in the wrong memory) are raised on every rank.
    """
    ctx = _context(comm)
    rows_cols = _layout(layout, ctx)
    cai = getattr(block, "__cuda_array_interface__", None) if not isinstance(block, _np.ndarray) else None
    if cai is not None:
        try:
            shape = tuple(int(n) for n in cai["shape"])
            dtype = _np.dtype(cai["typestr"]).name
            strides = cai.get("strides")
            error, message = "", ""
            if strides is not None:
                itemsize = _np.dtype(cai["typestr"]).itemsize
                expected = _np.empty(shape, dtype=_np.dtype(cai["typestr"])).strides if all(shape) else strides
                if tuple(strides) != tuple(expected) or itemsize == 0:
                    error, message = "value", "the GPU block is not C-contiguous (make it so first, e.g. cupy.ascontiguousarray)"
            if dtype not in DTYPES:
                error, message = "type", "a block of dtype %s is not supported (%s)" % (dtype, _DTYPES_TEXT)
            stream = cai.get("stream") if int(cai.get("version", 0)) >= 3 else None
            data = int(cai["data"][0] or 0)
        except (KeyError, TypeError, ValueError) as e:
            return _tessera._from_local(ctx, "type", "a malformed __cuda_array_interface__ (%s)" % e, "", [], 0, 2,
                                        None, None, rows_cols)
        # Outside the try: the errors this call raises on every rank are the caller's to see.
        return _tessera._from_local(ctx, error, message, dtype, list(shape), data, 2, block, stream, rows_cols)
    if (not isinstance(block, _np.ndarray) and hasattr(block, "__dlpack__")
            and hasattr(block, "__dlpack_device__") and block.__dlpack_device__()[0] != 1):
        # A GPU tensor without __cuda_array_interface__ (JAX): the producer orders its work before
        # our stream; the array keeps the tensor.
        capsule = block.__dlpack__(stream=ctx.stream or None)
        tensor = _tessera._import_dlpack(capsule)
        kind = "value" if tensor.error else ""
        return _tessera._from_local(ctx, kind, tensor.error, tensor.dtype, list(tensor.shape), tensor.data,
                                    tensor.device_type, tensor, None, rows_cols)
    array, error, message = _host_block(block)
    if array is None:
        return _tessera._from_local(ctx, error, message, "", [], 0, 1, None, None, rows_cols)
    return _tessera._from_local(ctx, "", "", array.dtype.name, list(array.shape),
                                array.__array_interface__["data"][0], 1, array, None, rows_cols)


def from_global(array, comm=None, root=None, layout=None):
    """The global array ``array`` (1-D or 2-D), cut into the block layout. Collective; copies.

    ``root=None``: every rank passes the same array, and keeps its block. ``root=r``: only rank r's
    array counts (the others may pass None); rank r sends each rank its block.
    """
    ctx = _context(comm)
    rows_cols = _layout(layout, ctx)
    if root is not None and (not isinstance(root, _numbers.Integral) or root < 0):
        raise ValueError("from_global: root must be a rank (an integer >= 0) or None")
    holds = root is None or ctx.rank == root
    if not holds:
        return _tessera._from_global(ctx, None, int(root), "", "", rows_cols)
    host, error, message = _host_block(array) if _np.ndim(array) in (1, 2) else (None, "value", "")
    if host is None and not message:
        message = "from_global: only 1-D and 2-D arrays are supported (got %d-D)" % _np.ndim(array)
    return _tessera._from_global(ctx, host, -1 if root is None else int(root), error, message, rows_cols)


def _shape(shape):
    if isinstance(shape, _numbers.Integral):
        return int(shape)
    return tuple(int(n) for n in shape)


def _agreed(ctx, make_arguments):
    """The arguments of a creation call, made and checked on every rank, then agreed in one
    collective: where make_arguments() raised on some rank, every rank raises that rank's error
    (TypeError or ValueError), so that none is left waiting in a collective the others never enter."""
    try:
        arguments, kind, message = make_arguments(), 0, ""
    except TypeError as e:
        arguments, kind, message = None, 2, str(e)
    except (ValueError, OverflowError, IndexError) as e:
        arguments, kind, message = None, 1, str(e)
    _tessera._agree(ctx, kind, message)
    return arguments


def full(shape, fill_value, dtype=None, comm=None, layout=None):
    """An array of ``shape`` (n, or (rows, cols)) holding ``fill_value``. Collective."""
    ctx = _context(comm)

    def arguments():
        kind = dtype
        if kind is None:
            kind = _np.asarray(fill_value).dtype
            if isinstance(fill_value, _np.generic) and kind.name in ("int32", "int64", "float32", "float64",
                                                                      "complex64", "complex128"):
                pass  # a NumPy scalar keeps its type, as numpy.full does
            elif kind.kind == "i":
                kind = "int64"
            elif kind.kind in "fb":
                kind = "float64"
            elif kind.kind == "c":
                kind = "complex128"
        name = _dtype_name(kind)
        return _shape(shape), name, _np.array(fill_value).astype(name).item(), _layout(layout, ctx)

    return _tessera._full(ctx, *_agreed(ctx, arguments))


def zeros(shape, dtype="float64", comm=None, layout=None):
    """An array of zeros. Collective."""
    return full(shape, 0, dtype, comm, layout)


def ones(shape, dtype="float64", comm=None, layout=None):
    """An array of ones. Collective."""
    return full(shape, 1, dtype, comm, layout)


def empty(shape, dtype="float64", comm=None, layout=None):
    """An array whose contents are undefined. Collective."""
    ctx = _context(comm)
    return _tessera._full(ctx, *_agreed(ctx, lambda: (_shape(shape), _dtype_name(dtype), None, _layout(layout, ctx))))


def random(shape, seed=0, dtype="float64", comm=None, layout=None):
    """Tessera's counter-based random array: element i (i * cols + j in 2-D) depends on (seed, i)
    only, so the same seed gives the same global array on any number of ranks. floats: multiples of
    2^-23 (float32) or 2^-52 (float64) in [-1, 1); integers in [-1000, 1000]; complex64 (complex128):
    element k is (r[2k], r[2k + 1]), r the float32 (float64) sequence of the seed. Collective."""
    ctx = _context(comm)

    def arguments():
        if not isinstance(seed, _numbers.Integral) or not 0 <= seed < 2 ** 64:
            raise ValueError("random: seed must be an integer in [0, 2^64)")
        return _shape(shape), _dtype_name(dtype), int(seed), _layout(layout, ctx)

    return _tessera._random(ctx, *_agreed(ctx, arguments))


def arange(start, stop=None, step=1, dtype=None, comm=None):
    """numpy.arange's values, computed as numpy computes them, in the block layout. Collective."""
    ctx = _context(comm)

    def arguments():
        first, last = (0, start) if stop is None else (start, stop)
        if step == 0:
            raise ValueError("arange: step must not be zero")
        integral = all(isinstance(v, (_numbers.Integral, _np.integer)) for v in (first, last, step))
        name = _dtype_name(dtype if dtype is not None else "int64" if integral else "float64")
        if name.startswith("complex"):
            raise TypeError("arange: complex dtypes are not supported (make a float array and convert it)")
        if integral:
            n = len(range(int(first), int(last), int(step)))
        else:
            n = _builtins.max(0, _math.ceil((float(last) - float(first)) / float(step)))
        if name.startswith("int"):
            if not all(float(v).is_integer() for v in (first, step)):
                raise ValueError("arange: an integer dtype needs an integer start and step")
            first_integer, step_integer = int(first), int(step)
            if not (-2 ** 63 <= first_integer < 2 ** 63 and -2 ** 63 <= step_integer < 2 ** 63):
                raise ValueError("arange: start and step must fit in int64")
            return n, name, 0.0, 0.0, first_integer, step_integer
        return n, name, float(first), float(first) + float(step), 0, 0

    return _tessera._arange(ctx, *_agreed(ctx, arguments))


def load_hdf5(path, dataset, dtype=None, comm=None, layout=None):
    """A 1-D or 2-D dataset of an HDF5 file, read by every rank's own hyperslab (the framework's
    parallel I/O). ``dtype``: the element type to convert to (default: the file's). Collective;
    OSError on every rank for a missing file or dataset, a file that is not HDF5."""
    ctx = _context(comm)
    name = None if dtype is None else _dtype_name(dtype)
    return _tessera._load_hdf5(ctx, str(path), str(dataset), name, _layout(layout, ctx))


def save_hdf5(array, path, dataset, overwrite=False):
    """Writes ``array`` as one dataset of ``path`` (added to an existing file, whose other objects are
    kept; written under a temporary name and renamed when complete). Collective."""
    _require_array(array, "save_hdf5")
    array._save_hdf5(str(path), str(dataset), bool(overwrite))


# ---------------------------------------------------------------------------------------------
# Reductions and scans

def _require_array(a, what):
    if not isinstance(a, DistArray):
        raise TypeError("%s: a tessera.DistArray is needed, not %s" % (what, type(a).__name__))


def _whole(what, a, axis, dtype=None, out=None, keepdims=False):
    _require_array(a, what)
    if out is not None:
        raise TypeError("%s: out= is not supported (the result is returned)" % what)
    if keepdims:
        raise TypeError("%s: keepdims=True is not supported" % what)
    if dtype is not None:
        raise TypeError("%s: dtype= is not supported (convert with astype first)" % what)
    if axis is not None and not (a.ndim == 1 and axis in (0, -1)):
        raise ValueError("%s: axis=%r is not supported: tessera reduces over the whole array (axis=None)"
                         % (what, axis))


def sum(a, axis=None, dtype=None, out=None, keepdims=False, exact=False):  # noqa: A001 - numpy's name
    """The sum of all elements (numpy.sum with axis=None): int64 for integer arrays (wrapping as numpy
    does), the array's type for floats and complex numbers. ``exact=True``: the correctly rounded sum
    of the exact values (complex: of the real and the imaginary parts apart), the same bits on any
    number of ranks and either backend. Collective."""
    _whole("sum", a, axis, dtype, out, keepdims)
    return _tessera._reduce(a, _tessera._Reduction.exact_sum if exact else _tessera._Reduction.sum)


def prod(a, axis=None, dtype=None, out=None, keepdims=False):
    """The product of all elements (int64 for integer arrays, wrapping). Collective."""
    _whole("prod", a, axis, dtype, out, keepdims)
    return _tessera._reduce(a, _tessera._Reduction.prod)


def min(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """The smallest element (a NaN wins, as in numpy). ValueError for an empty array. Collective."""
    _whole("min", a, axis, None, out, keepdims)
    return _tessera._reduce(a, _tessera._Reduction.min)


def max(a, axis=None, out=None, keepdims=False):  # noqa: A001
    """The largest element (a NaN wins, as in numpy). ValueError for an empty array. Collective."""
    _whole("max", a, axis, None, out, keepdims)
    return _tessera._reduce(a, _tessera._Reduction.max)


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """The mean (float64 for integer arrays, the array's type for floats; NaN for an empty one). Collective."""
    _whole("mean", a, axis, dtype, out, keepdims)
    n = a.size
    if a.dtype.kind == "i":  # summed in float64, as numpy does (an int64 sum would wrap)
        return _np.float64(_tessera._reduce(a, _tessera._Reduction.float64_sum)) / n if n else _np.float64("nan")
    total = _tessera._reduce(a, _tessera._Reduction.sum)
    return a.dtype.type(total / n) if n else a.dtype.type("nan")


def _scan(what, a, axis, dtype, out, exclusive, product):
    _require_array(a, what)
    if out is not None:
        raise TypeError("%s: out= is not supported (the result is returned)" % what)
    if dtype is not None:
        raise TypeError("%s: dtype= is not supported (convert with astype first)" % what)
    if axis is not None and not (a.ndim == 1 and axis in (0, -1)):
        raise ValueError("%s: axis=%r is not supported (axis=None: over the flattened array)" % (what, axis))
    return _tessera._scan(a, product, bool(exclusive))


def cumsum(a, axis=None, dtype=None, out=None, exclusive=False):
    """Running sums in global (row-major) order, int64 for integer arrays; ``exclusive=True``: element
    i holds the sum of the elements before it (0 first). 1-D result. Collective."""
    return _scan("cumsum", a, axis, dtype, out, exclusive, False)


def cumprod(a, axis=None, dtype=None, out=None, exclusive=False):
    """Running products (int64 for integer arrays); ``exclusive=True``: of the elements before (1 first). Collective."""
    return _scan("cumprod", a, axis, dtype, out, exclusive, True)


# ---------------------------------------------------------------------------------------------
# Masks: comparisons with scalars, evaluated on the device inside the select and count kernels

# The C++ MaskOp and PredicateKind values.
_COMPARE, _CONSTANT, _NEGATE, _BOTH, _EITHER, _DIFFER = range(6)
_GT, _GE, _LT, _LE, _EQ, _NE, _BETWEEN, _NONZERO = range(8)


def _constant(value):
    return (_CONSTANT, _NONZERO, bool(value), 0.0, 0)


def _compare_step(dtype, kind, scalar):
    """One comparison of an element of ``dtype`` with ``scalar``, as numpy evaluates it, made exact
    in the element type (an integer array compared with 2.5, a value beyond the type's range): a
    step, or a list of steps (int64 against a float beyond 2^53, which numpy compares as doubles)."""
    if isinstance(scalar, (bool, _np.bool_)):
        scalar = int(scalar)
    if not isinstance(scalar, (_numbers.Real, _np.integer, _np.floating)):
        raise TypeError("a mask compares an array with a scalar, not %s" % type(scalar).__name__)
    if dtype.kind == "f":
        return (_COMPARE, kind, False, float(dtype.type(scalar)), 0)
    info = _np.iinfo(dtype)
    if isinstance(scalar, (_numbers.Integral, _np.integer)):
        s = int(scalar)
        if dtype.itemsize == 8 and 2 ** 63 <= s < 2 ** 64 and _NUMPY_1:
            # numpy 1.x makes such an integer uint64 and compares int64 with uint64 as doubles;
            # numpy 2 compares integers exactly, as below
            return _double_compare_steps(info, kind, float(s))
        low = high = s
        integral = True
    else:
        s = float(scalar)
        if _math.isnan(s):
            return _constant(kind == _NE)
        if _math.isinf(s):
            if kind in (_GT, _GE):
                return _constant(s < 0)
            if kind in (_LT, _LE):
                return _constant(s > 0)
            return _constant(kind == _NE)
        if abs(s) >= 2.0**53 and dtype.itemsize == 8:
            return _double_compare_steps(info, kind, s)
        low, high = _math.floor(s), _math.ceil(s)
        integral = low == high
    # x > s <=> x >= floor(s) + 1;  x >= s <=> x >= ceil(s);  x < s <=> x <= ceil(s) - 1;  x <= s <=> x <= floor(s)
    if kind == _GT:
        kind, value = _GE, low + 1
    elif kind == _GE:
        value = high
    elif kind == _LT:
        kind, value = _LE, high - 1
    elif kind == _LE:
        value = low
    else:
        if not integral or not info.min <= s <= info.max:
            return _constant(kind == _NE)
        return (_COMPARE, kind, False, 0.0, int(s))
    if kind == _GE:
        if value <= info.min:
            return _constant(True)
        if value > info.max:
            return _constant(False)
    else:
        if value >= info.max:
            return _constant(True)
        if value < info.min:
            return _constant(False)
    return (_COMPARE, kind, False, 0.0, int(value))


_NUMPY_1 = _np.__version__.startswith("1.")


def _first_int(pred, low, high):
    """The first integer in [low, high] where the monotone predicate holds, or high + 1."""
    if not pred(high):
        return high + 1
    while low < high:
        mid = (low + high) // 2
        if pred(mid):
            high = mid
        else:
            low = mid + 1
    return low


def _double_compare_steps(info, kind, s):
    """An int64 array against a float beyond 2^53, as numpy compares them: both as doubles, where
    the integers round (the ones near s to s itself). A double of an int64 is monotone in it, so
    each comparison is one of integer thresholds: the first x whose double reaches s, and the first
    whose double passes it."""
    ge = _first_int(lambda x: float(x) >= s, info.min, info.max)
    gt = _first_int(lambda x: float(x) > s, info.min, info.max)

    def at_least(value):
        return [_constant(True)] if value <= info.min else [_constant(False)] if value > info.max else \
            [(_COMPARE, _GE, False, 0.0, int(value))]

    def at_most(value):
        return [_constant(True)] if value >= info.max else [_constant(False)] if value < info.min else \
            [(_COMPARE, _LE, False, 0.0, int(value))]

    if kind == _GT:
        return at_least(gt)
    if kind == _GE:
        return at_least(ge)
    if kind == _LT:
        return at_most(ge - 1)
    if kind == _LE:
        return at_most(gt - 1)
    # == and !=: the integers whose double is s, [ge, gt - 1] (none, one, or a run of them)
    steps = at_least(ge) + at_most(gt - 1) + [(_BOTH, _NONZERO, False, 0.0, 0)] if ge < gt else [_constant(False)]
    return steps + [(_NEGATE, _NONZERO, False, 0.0, 0)] if kind == _NE else steps


class Mask:
    """The elements of one array for which comparisons with scalars hold: ``x > 0``,
    ``(x >= -1) & (x < 1)``, ``~(x == 3)``. Not evaluated until used: ``x[mask]`` (numpy.compress's
    selection, on the device), ``mask.sum()`` / ``count_nonzero(mask)``, ``mask.any()``,
    ``mask.all()``. Combines with masks of the same array only."""

    __slots__ = ("array", "steps")
    __array_ufunc__ = None

    def __init__(self, array, steps):
        self.array = array
        self.steps = steps

    def _combine(self, other, op):
        if not isinstance(other, Mask):
            return NotImplemented
        if other.array is not self.array:
            raise ValueError("masks of two different arrays cannot be combined")
        return Mask(self.array, self.steps + other.steps + [(op, _NONZERO, False, 0.0, 0)])

    def __and__(self, other):
        return self._combine(other, _BOTH)

    def __or__(self, other):
        return self._combine(other, _EITHER)

    def __xor__(self, other):
        return self._combine(other, _DIFFER)

    def __invert__(self):
        return Mask(self.array, self.steps + [(_NEGATE, _NONZERO, False, 0.0, 0)])

    def __bool__(self):
        raise ValueError("the truth value of a mask is ambiguous: use mask.any() or mask.all()")

    def __array__(self, *args, **kwargs):
        raise TypeError("a tessera Mask is evaluated on the ranks: select with x[mask], count with mask.sum()")

    def sum(self):
        """How many elements the mask holds for (collective)."""
        return _np.int64(_tessera._count(self.array, self.steps))

    count_nonzero = sum

    def any(self):
        return bool(self.sum() > 0)

    def all(self):
        return bool(self.sum() == self.array.size)

    def __repr__(self):
        return "Mask(%d steps over %r)" % (len(self.steps), self.array)


def _require_ordered(a, what):
    """TypeError for an operation that orders elements, on a complex array (raised alike on every
    rank: the dtype is the same on all)."""
    if a.dtype.kind == "c":
        raise TypeError("%s: %s arrays are not supported (complex numbers have no order; tessera does not sort "
                        "them lexicographically as numpy does)" % (what, a.dtype))


def _mask_of(a, kind, scalar):
    _require_ordered(a, "a mask (comparison)")
    if isinstance(scalar, DistArray):
        raise TypeError("comparisons of two DistArrays are not supported: compare with a scalar")
    step = _compare_step(a.dtype, kind, scalar)
    return Mask(a, step if isinstance(step, list) else [step])


def compress(condition, a):
    """The elements of ``a`` where ``condition`` (a Mask of ``a``) holds, in global (row-major) order:
    a 1-D array with each rank keeping its own (``.balance()`` evens the blocks). Collective."""
    _require_array(a, "compress")
    if not isinstance(condition, Mask):
        raise TypeError("compress: condition must be a tessera Mask (a comparison of the array with a scalar)")
    if condition.array is not a:
        raise ValueError("compress: the mask was made from another array")
    return _tessera._compress(a, condition.steps)


def count_nonzero(a):
    """How many elements of a Mask hold, or how many elements of an array are not zero. Collective."""
    if isinstance(a, Mask):
        return a.sum()
    _require_array(a, "count_nonzero")
    return _np.int64(_tessera._count(a, [(_COMPARE, _NONZERO, False, 0.0, 0)]))


# ---------------------------------------------------------------------------------------------
# Sorting and histograms

def sort(a):
    """The sorted elements of a 1-D array, in the block layout (stable; floats in IEEE total order,
    NaN last as in numpy). Collective."""
    _require_array(a, "sort")
    return _tessera._sort(a, False)


def argsort(a, kind=None):
    """The global indices (int64) that sort a 1-D array; stable (numpy's kind='stable'). Collective."""
    _require_array(a, "argsort")
    return _tessera._sort(a, True)


def histogram(a, bins=10, range=None, density=False, weights=None):  # noqa: A002 - numpy's name
    """numpy.histogram(a, bins, range): (counts, bin_edges), NumPy arrays on every rank, count for
    count numpy's. ``bins``: a number of equal bins, or the edges (increasing). Collective."""
    _require_array(a, "histogram")
    _require_ordered(a, "histogram")
    if weights is not None:
        raise TypeError("histogram: weights= is not supported")
    if isinstance(bins, str):
        raise TypeError("histogram: bins=%r (a rule for choosing bins) is not supported: pass a count or edges" % bins)
    if _np.ndim(bins) == 0:
        if not isinstance(bins, (_numbers.Integral, _np.integer)) or isinstance(bins, (bool, _np.bool_)):
            raise TypeError("`bins` must be an integer or an array of edges, not %r" % (bins,))
        n = int(bins)
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        if range is not None:
            first, last = range
            if first > last:
                raise ValueError("max must be larger than min in range parameter.")
            if not (_np.isfinite(first) and _np.isfinite(last)):
                raise ValueError("supplied range of [%s, %s] is not finite" % (first, last))
        elif a.size == 0:
            first, last = 0, 1
        else:
            first, last = min(a), max(a)
            if not (_np.isfinite(first) and _np.isfinite(last)):
                raise ValueError("autodetected range of [%s, %s] is not finite" % (first, last))
        width = 0.0  # numpy's norm divides by max - min in the samples' type where it takes the range from them
        if range is None and a.size and first != last:
            width = float(last - first) if a.dtype == _np.float32 else \
                float(int(last) - int(first)) if a.dtype.kind == "i" else 0.0
        if first == last:
            first = first - 0.5
            last = last + 0.5
        bin_type = _np.result_type(first, last, a.dtype)
        if _np.issubdtype(bin_type, _np.integer):
            bin_type = _np.result_type(bin_type, float)
        edges = _np.linspace(first, last, n + 1, endpoint=True, dtype=bin_type)
        counts = _tessera._histogram_even(a, n, float(first), float(last), width)[0]
    else:
        edges = _np.asarray(bins)
        if edges.ndim != 1 or edges.size < 2:
            raise ValueError("histogram: bins must be a count or at least two edges")
        counts = _tessera._histogram_edges(a, edges.astype(_np.float64))[0]
    if density:
        widths = _np.array(_np.diff(edges), float)
        return counts / widths / counts.sum(), edges
    return counts, edges


def bincount(x, weights=None, minlength=0):
    """numpy.bincount of an integer array: counts of each value 0 .. max(x), at least ``minlength``
    of them; NumPy array on every rank. Collective."""
    _require_array(x, "bincount")
    if weights is not None:
        raise TypeError("bincount: weights= is not supported")
    if x.dtype.kind != "i":
        raise TypeError("bincount: an integer array is needed (this one is %s)" % x.dtype)
    if x.ndim != 1:
        raise ValueError("bincount: a 1-D array is needed (this one is %d-D), as numpy.bincount" % x.ndim)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    bins = int(minlength)
    if x.size:
        if min(x) < 0:
            raise ValueError("'list' argument must have no negative elements")
        top = int(max(x)) + 1
        bins = top if top > bins else bins
    if bins == 0:
        return _np.zeros(0, dtype=_np.int64)
    return _tessera._bincount(x, bins)[0]


# ---------------------------------------------------------------------------------------------
# Matrices and stencils

def transpose(a):
    """A^T of a 2-D array, on its grid (one all-to-all). Collective."""
    _require_array(a, "transpose")
    return _tessera._transpose(a)


def redistribute(a, layout):
    """The same 2-D array on another grid: "rows" (P x 1), "cols" (1 x P), "blocks" or (R, C).
    One all-to-all. Collective."""
    _require_array(a, "redistribute")
    rows, cols = _layout(layout, a.context)
    return _tessera._redistribute(a, rows, cols)


def matmul(a, b):
    """a @ b of 2-D arrays of one dtype (SUMMA; b moves to a's grid first where its grid differs).
    Collective."""
    _require_array(a, "matmul")
    _require_array(b, "matmul")
    return _tessera._matmul(a, b)


_NAMED_WEIGHTS = {
    "jacobi5": ([[0.0, 0.25, 0.0], [0.25, 0.0, 0.25], [0.0, 0.25, 0.0]], False),
    "jacobi9": ([[0.05, 0.2, 0.05], [0.2, 0.0, 0.2], [0.05, 0.2, 0.05]], True),
}


def _weights(weights, what):
    if isinstance(weights, str):
        if weights not in _NAMED_WEIGHTS:
            raise ValueError(what + ": weights must be 'jacobi5', 'jacobi9' or a 3 x 3 array, not %r" % weights)
        w, nine = _NAMED_WEIGHTS[weights]
        return [v for row in w for v in row], nine
    w = _np.asarray(weights, dtype=_np.float64)
    if w.shape != (3, 3):
        raise ValueError("%s: weights must be a 3 x 3 array (north-west .. south-east), not of shape %s"
                         % (what, w.shape))
    nine = bool(w[0, 0] or w[0, 2] or w[2, 0] or w[2, 2])
    return [float(v) for v in w.ravel()], nine


def _boundary(boundary, what):
    """The Dirichlet boundary of jacobi and stencil: a function boundary(i, j), or a real number
    (a Python or NumPy scalar, bool included, or a 0-d array of a real dtype)."""
    if callable(boundary):
        return boundary
    real = isinstance(boundary, (_numbers.Real, _np.floating, _np.integer, _np.bool_))
    if not real and getattr(boundary, "ndim", None) == 0:
        dtype = getattr(boundary, "dtype", None)
        real = getattr(dtype, "kind", None) in ("b", "i", "u", "f")
    if not real:
        raise TypeError("%s: boundary must be a real number or a function boundary(i, j) of the ghost cells' "
                        "indices, not %r" % (what, boundary))
    try:
        value = float(boundary)
    except OverflowError:
        value = None
    # A finite value beyond float64 (an int of 400 digits, a long double) is refused, not made inf.
    if value is None or (_math.isinf(value) and _np.isfinite(_np.asarray(boundary, dtype=_np.longdouble))):
        raise ValueError("%s: the boundary value is too large for a float64" % what)
    return value


def _jacobi_iterate(u, weights, boundary, iterations, tol, check_every, what):
    _require_array(u, what)
    w, nine = _weights(weights, what)
    boundary = _boundary(boundary, what)
    result, done, residual, converged = _tessera._jacobi(u, w, nine, boundary, int(iterations), float(tol),
                                                         int(check_every), what)
    return result, {"iterations": done, "residual": residual, "converged": converged}


def jacobi(u, weights="jacobi5", boundary=0.0, iterations=1000, tol=0.0, check_every=1):
    """The Jacobi iteration u <- S u of a 3 x 3 stencil on a 2-D float array with Dirichlet boundary
    values around it: ``boundary`` a scalar, or a function boundary(i, j) of NumPy arrays of the
    cells' global indices (i = -1 or rows, j = -1 or cols on the ring around the array). Every
    ``check_every`` iterations the residual max |u_k - u_(k-1)| is taken; the first below ``tol``
    stops. Each cell is centre*u + north + south + west + east (+ the corners), every product and
    sum rounded in the array's type, the same on any grid and backend. Returns (u, info) with
    info = {"iterations", "residual", "converged"}. Collective."""
    return _jacobi_iterate(u, weights, boundary, iterations, tol, check_every, "jacobi")


def stencil(u, weights="jacobi5", boundary=0.0):
    """One sweep of the stencil (jacobi with one iteration). Collective."""
    return _jacobi_iterate(u, weights, boundary, 1, 0.0, 1, "stencil")[0]


# ---------------------------------------------------------------------------------------------
# DistArray's Python side: NumPy's names as methods and operators

def _binary(op, reflected=False):
    def apply(self, other):
        if isinstance(other, DistArray):
            a, b = (other, self) if reflected else (self, other)
            common = _np.result_type(a.dtype, b.dtype)
            if op == _tessera._Binary.divide and common.kind == "i":
                common = _np.dtype("float64")
            if a.dtype != common:
                a = a.astype(common)
            if b.dtype != common:
                b = b.astype(common)
            return _tessera._binary(a, b, op)
        if isinstance(other, (bool, _np.bool_)):
            other = int(other)
        if isinstance(other, _np.generic) and other.dtype.kind in "iufc":
            common = _np.result_type(self.dtype, other)        # numpy's own rule for its scalars
        elif isinstance(other, _numbers.Integral):
            # A Python int keeps the array's type where it fits (numpy's rule for Python scalars).
            common = self.dtype if self.dtype.kind in "fc" or _fits(other, self.dtype) else _np.dtype("int64")
        elif isinstance(other, _numbers.Real):
            common = self.dtype if self.dtype.kind in "fc" else _np.dtype("float64")
        elif isinstance(other, (_numbers.Complex, _np.complexfloating)):
            # numpy's rule: a complex array keeps its type; a float32 array goes to complex64, others to complex128.
            common = self.dtype if self.dtype.kind == "c" else _np.result_type(self.dtype, _np.complex64)
        else:
            return NotImplemented
        if op == _tessera._Binary.divide and common.kind == "i":
            common = _np.dtype("float64")
        name = _dtype_name(common, "result dtype")
        a = self if self.dtype == common else self.astype(name)
        return _tessera._binary_scalar(a, _np.array(other).astype(name).item(), op, reflected)
    return apply


def _fits(value, dtype):
    info = _np.iinfo(dtype)
    return info.min <= value <= info.max


def _getitem(self, key):
    if isinstance(key, Mask):
        return compress(key, self)
    if isinstance(key, (bool, _np.bool_)) or (isinstance(key, tuple) and any(isinstance(k, (bool, _np.bool_))
                                                                             for k in key)):
        raise TypeError("a DistArray does not take boolean indices (numpy's x[True] adds an axis): use a Mask")
    if isinstance(key, (_numbers.Integral, _np.integer)):
        key = (key,)
    if isinstance(key, tuple) and all(isinstance(k, (_numbers.Integral, _np.integer)) for k in key):
        shape = self.global_shape
        if len(key) > len(shape):
            raise IndexError("too many indices for array: array is %d-dimensional, but %d were indexed"
                             % (len(shape), len(key)))
        index = []
        for d, k in enumerate(key):
            k = int(k)
            if not -shape[d] <= k < shape[d]:
                raise IndexError("index %d is out of bounds for axis %d with size %d" % (k, d, shape[d]))
            index.append(k + shape[d] if k < 0 else k)
        return self._item(index)
    raise TypeError("a DistArray takes a Mask (x[x > 0]) or integer indices; for slices of this rank's "
                    "block use .local, for the whole array to_numpy()")


def _local(self):
    """This rank's block without a copy: a NumPy array on the cpu backend (a view of the block's
    memory, which the DistArray keeps), a DeviceBlock (__cuda_array_interface__, __dlpack__) on cuda:
    cupy.asarray(x.local), torch.from_dlpack(x.local)."""
    if self.context.backend == "cpu":
        return self._local_host()
    return self._local_device()


def _to_numpy(self):
    """The whole array as a NumPy array on every rank. Collective; the array must fit in each rank's memory."""
    return self._gather(-1)


def _gather(self, root=0):
    """The whole array as a NumPy array on ``root``, None on the other ranks. Collective."""
    if not isinstance(root, _numbers.Integral) or root < 0:
        raise ValueError("gather: root must be a rank (an integer >= 0)")
    return self._gather(int(root))


def _repr(self):
    return "DistArray(global_shape=%s, dtype=%s, ranks=%d, backend=%s%s)" % (
        self.global_shape, self.dtype, self.context.size, self.context.backend,
        "" if self.ndim == 1 else ", layout=%dx%d" % self.layout)


def _no_array(self, *args, **kwargs):
    raise TypeError("a DistArray is not converted implicitly: use x.to_numpy() or x.gather() for the whole "
                    "array, x.local for this rank's block")


def _no_bool(self):
    raise ValueError("the truth value of a DistArray is ambiguous")


def _no_iter(self):
    raise TypeError("a DistArray is not iterated element by element: iterate over x.local or x.to_numpy()")


def _astype(self, dtype, copy=True):
    """The array converted to ``dtype`` (numpy's astype; NaN and out-of-range floats become the
    integer type's smallest value). Local (no communication)."""
    name = _dtype_name(dtype)
    if not copy and self.dtype.name == name:
        return self
    return _tessera._astype(self, name)


def _abs(self):
    if self.dtype.kind == "c":
        raise TypeError("abs: the magnitude of a %s array is not supported" % self.dtype)
    return _tessera._unary(self, _tessera._Unary.absolute)


def _cmp(kind):
    def compare(self, other):
        return _mask_of(self, kind, other)
    return compare


def _attach():
    B = _tessera._Binary
    methods = {
        "local": property(_local),
        "shape": property(lambda self: self.global_shape, doc="The global shape (numpy's name)."),
        "size": property(lambda self: int(_np.prod(self.global_shape)), doc="Elements in the whole array."),
        "T": property(transpose, doc="The transpose of a 2-D array (collective)."),
        "to_numpy": _to_numpy,
        "gather": _gather,
        "astype": _astype,
        "sum": lambda self, axis=None, dtype=None, out=None, keepdims=False, exact=False:
            sum(self, axis, dtype, out, keepdims, exact),
        "prod": lambda self, axis=None, dtype=None, out=None, keepdims=False: prod(self, axis, dtype, out, keepdims),
        "min": lambda self, axis=None, out=None, keepdims=False: min(self, axis, out, keepdims),
        "max": lambda self, axis=None, out=None, keepdims=False: max(self, axis, out, keepdims),
        "mean": lambda self, axis=None, dtype=None, out=None, keepdims=False: mean(self, axis, dtype, out, keepdims),
        "cumsum": lambda self, axis=None, dtype=None, out=None, exclusive=False:
            cumsum(self, axis, dtype, out, exclusive),
        "cumprod": lambda self, axis=None, dtype=None, out=None, exclusive=False:
            cumprod(self, axis, dtype, out, exclusive),
        "argsort": lambda self, axis=-1, kind=None: argsort(self, kind),
        "transpose": transpose,
        "redistribute": redistribute,
        "balance": lambda self: _tessera._balance(self),
        "save_hdf5": lambda self, path, dataset, overwrite=False: save_hdf5(self, path, dataset, overwrite),
        "__getitem__": _getitem,
        "__len__": lambda self: self.global_shape[0],
        "__repr__": _repr,
        "__array__": _no_array,
        "__array_ufunc__": None,
        "__bool__": _no_bool,
        "__iter__": _no_iter,
        "__add__": _binary(B.add), "__radd__": _binary(B.add, True),
        "__sub__": _binary(B.subtract), "__rsub__": _binary(B.subtract, True),
        "__mul__": _binary(B.multiply), "__rmul__": _binary(B.multiply, True),
        "__truediv__": _binary(B.divide), "__rtruediv__": _binary(B.divide, True),
        "__neg__": lambda self: _tessera._unary(self, _tessera._Unary.negative),
        "__pos__": lambda self: self,
        "__abs__": _abs,
        "__matmul__": lambda self, other: matmul(self, other) if isinstance(other, DistArray) else NotImplemented,
        "__gt__": _cmp(_GT), "__ge__": _cmp(_GE), "__lt__": _cmp(_LT), "__le__": _cmp(_LE),
        "__eq__": _cmp(_EQ), "__ne__": _cmp(_NE),
        "__hash__": None,
    }
    for name, value in methods.items():
        setattr(DistArray, name, value)


_attach()

from . import fft  # noqa: E402 - the submodule needs the names above
