"""Distributed fast Fourier transforms of 2-D tessera.DistArrays, with numpy.fft's names and results.

    import tessera, tessera.fft
    x = tessera.random((1000, 999), seed=1)          # float64
    X = tessera.fft.rfftn(x)                         # complex128, shape (1000, 500), numpy's layout
    y = tessera.fft.irfftn(X, s=x.shape)             # x again

fftn/ifftn, fft2/ifft2 (complex to complex over both axes), fft/ifft (batched 1-D transforms along
one axis), rfftn/irfftn, rfft2/irfft2, rfft/irfft (real input, the last transformed axis n//2 + 1
long), each with norm="backward" | "ortho" | "forward". float32 and complex64 compute in single
precision (complex64 out), everything else in double (complex128 out; integers as float64).

The transforms run on tessera's distributed FFT (C++ tessera::fft::Plan: FFTW on the cpu backend,
cuFFT on cuda) with a slab decomposition: the input cut into row blocks (layout P x 1), the forward
output into column blocks (layout 1 x P), each rank's block a row-major box of the global array.
The result is the global array numpy.fft returns, element for element; its ``layout`` attribute
says where it lies ((1, P) after a forward 2-D transform), and ``layout=`` asks for another (one
more all-to-all). An input on another grid is redistributed first. Plan makes the plan once and
reuses it; the functions make one per call. Errors are ValueError and TypeError, raised on every
rank. Collective over the array's ranks.
"""

import numbers as _numbers

import numpy as _np

from . import _tessera
from ._tessera import DistArray

__all__ = ["Plan", "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn",
           "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn"]

_NORMS = ("backward", "ortho", "forward")


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _NORMS:
        raise ValueError('Invalid norm value %r; should be "backward", "ortho" or "forward".' % (norm,))
    return norm


def _require_2d(a, what):
    if not isinstance(a, DistArray):
        raise TypeError("%s: a tessera.DistArray is needed, not %s" % (what, type(a).__name__))
    if a.ndim != 2:
        raise ValueError("%s: a 2-D DistArray is needed (this one is %d-D; tessera's distributed FFT transforms "
                         "2-D arrays, or batches of 1-D transforms along one axis of a 2-D array)" % (what, a.ndim))


def _axes(axes, what):
    """The transformed axes as a sorted tuple: (0, 1), (0,) or (1,) (2-D arrays)."""
    if axes is None:
        return (0, 1)
    if isinstance(axes, (_numbers.Integral, _np.integer)):
        axes = (axes,)
    out = []
    for ax in axes:
        if not isinstance(ax, (_numbers.Integral, _np.integer)):
            raise TypeError("%s: axes must be integers, not %s" % (what, type(ax).__name__))
        if not -2 <= ax < 2:
            raise ValueError("%s: axis %d is out of bounds for a 2-D array" % (what, ax))
        out.append(int(ax) % 2)
    if len(out) == 0:
        raise ValueError("%s: no axes to transform" % what)
    if len(set(out)) != len(out):
        raise ValueError("%s: repeated axes %r are not supported" % (what, tuple(axes)))
    return tuple(out)


def _precision(dtype):
    """True for single precision (float32, complex64)."""
    return dtype.name in ("float32", "complex64")


def _complex_name(single):
    return "complex64" if single else "complex128"


def _real_name(single):
    return "float32" if single else "float64"


def _plan_axis(axes):
    return -1 if len(axes) == 2 else axes[0]


def _check_s(s, shape, axes, what):
    """s (numpy's lengths along the axes) must leave the array as it is: tessera neither pads nor crops."""
    if s is None:
        return
    s = tuple(int(n) for n in s)
    if len(s) != len(axes):
        raise ValueError("%s: s and axes must have the same length" % what)
    for n, ax in zip(s, axes):
        if n < 1:
            raise ValueError("%s: invalid number of data points (%d) specified" % (what, n))
        if n != shape[ax]:
            raise ValueError("%s: s=%r would pad or crop axis %d (length %d); tessera transforms the array's own "
                             "lengths (s=None)" % (what, s, ax, shape[ax]))


def _relayout(out, layout):
    if layout is None:
        return out
    from . import redistribute
    return redistribute(out, layout)


class Plan:
    """A distributed FFT plan for 2-D arrays of one shape, made once and reused (collective).

    ``shape``: the input's global shape (for a real plan the real array's). ``dtype``: the input's
    type: complex64 or complex128 make a complex-to-complex plan, float32 or float64 a real one
    (forward: real to complex, the last transformed axis n//2 + 1 long; inverse: back to real).
    ``axes``: None or (0, 1) for a 2-D transform, one axis for a batch of 1-D transforms along it.
    ``norm``: numpy.fft's. ``decomposition``: "slab" (the input cut along axis 0 over every rank;
    "pencil" is for 3-D arrays, which tessera's Python arrays are not). ``return_to_input_layout``:
    the forward output in the input's layout (one more exchange). ``effort``: "estimate" or
    "measure" (FFTW's planning; cuFFT ignores it). ``exchange_chunks``: the exchange and the
    transforms before it in this many chunks, each chunk's exchange beside the next chunk's
    transforms (0: the backend's default, 4 on a GPU and 1 on the CPU; at most 64).

    ``forward(a)`` and ``inverse(A)`` return new DistArrays: the forward output in
    ``output_layout`` (a DistArray layout, (1, P) for a slab 2-D transform), the inverse's in
    ``input_layout`` ((P, 1)). Arrays on another grid are redistributed first; arrays of another
    dtype are converted (a complex input of a real plan's forward is a TypeError).
    ``input_box`` / ``output_box``: this rank's block ((row, col), (rows, cols)); ``layout_text``:
    which grid dimension cuts each axis, as the C++ plan states it; ``exchanges``: all-to-alls
    per transform."""

    def __init__(self, shape, dtype="complex128", axes=None, norm=None, decomposition="slab", grid=None,
                 return_to_input_layout=False, effort="measure", exchange_chunks=0, comm=None):
        from . import _context
        shape = tuple(int(n) for n in shape)
        if len(shape) != 2:
            raise ValueError("fft.Plan: the shape of a 2-D array is needed, not %r (tessera's arrays are 1-D or "
                             "2-D)" % (shape,))
        if any(n < 1 for n in shape):
            raise ValueError("fft.Plan: invalid number of data points in shape %r" % (shape,))
        try:
            dt = _np.dtype(dtype)
        except TypeError:
            raise TypeError("fft.Plan: dtype %r is not a NumPy dtype" % (dtype,)) from None
        if dt.name not in ("float32", "float64", "complex64", "complex128"):
            raise TypeError("fft.Plan: dtype %s is not supported (float32, float64, complex64 or complex128)" % dt)
        if effort not in ("estimate", "measure"):
            raise ValueError("fft.Plan: effort must be 'estimate' or 'measure', not %r" % (effort,))
        if isinstance(exchange_chunks, bool) or not isinstance(exchange_chunks, (int, _np.integer)):
            raise TypeError("fft.Plan: exchange_chunks must be an integer, not %r" % (exchange_chunks,))
        rows, cols = (0, 0) if grid is None else (int(grid[0]), int(grid[1]))
        ax = _axes(axes, "fft.Plan")
        ctx = _context(comm)
        self.dtype = dt
        self.axes = ax
        self._plan = _tessera._FftPlan(ctx, list(shape), dt.kind == "f", _precision(dt), _plan_axis(ax),
                                       _norm(norm), str(decomposition), rows, cols, bool(return_to_input_layout),
                                       effort == "measure", int(exchange_chunks))

    def __getattr__(self, name):
        if name in ("shape", "output_shape"):
            return tuple(getattr(self._plan, name))
        if name in ("norm", "decomposition", "grid", "input_layout", "output_layout", "input_box", "output_box",
                    "layout_text", "exchanges", "context"):
            return getattr(self._plan, name)
        raise AttributeError(name)

    @property
    def kind(self):
        """"r2c" (a real plan) or "c2c"."""
        return "r2c" if self._plan.r2c else "c2c"

    @property
    def output_dtype(self):
        return _np.dtype(_complex_name(self._plan.single))

    def forward(self, a, layout=None):
        """The forward transform of ``a`` (collective). ``layout``: redistribute the result there."""
        _require_2d(a, "fft.Plan.forward")
        want = self.dtype.name
        if self._plan.r2c and a.dtype.kind == "c":
            raise TypeError("fft.Plan.forward: a real plan takes a real array (this one is %s)" % a.dtype)
        if a.dtype.name != want:
            a = a.astype(want)
        return _relayout(self._plan.forward(a), layout)

    def inverse(self, a, layout=None):
        """The inverse transform of ``a`` (the forward output's shape; collective)."""
        _require_2d(a, "fft.Plan.inverse")
        want = self.output_dtype.name
        if a.dtype.name != want:
            a = a.astype(want)
        return _relayout(self._plan.inverse(a), layout)

    def __repr__(self):
        return "fft.Plan(shape=%s, dtype=%s, kind=%s, axes=%s, norm=%s, %s %dx%d, %s)" % (
            self.shape, self.dtype, self.kind, self.axes, self.norm, self.decomposition, self.grid[0], self.grid[1],
            self.layout_text)


def _plan_for(a, real, ax, norm):
    """A slab plan for a's shape and precision, and a in the plan's input type (converted where needed)."""
    single = _precision(a.dtype)
    name = _real_name(single) if real else _complex_name(single)
    plan = _tessera._FftPlan(a.context, list(a.global_shape), real, single, _plan_axis(ax), _norm(norm), "slab",
                             0, 0, False, False, 0)
    return plan, (a if a.dtype.name == name else a.astype(name))


def _c2c(a, s, axes, norm, layout, inverse, what):
    _require_2d(a, what)
    ax = _axes(axes, what)
    _check_s(s, a.global_shape, ax, what)
    plan, x = _plan_for(a, False, ax, norm)
    # The inverse takes the forward output's layout: the binding redistributes x there where it lies elsewhere.
    out = plan.inverse(x) if inverse else plan.forward(x)
    return _relayout(out, layout)


def _r2c(a, s, axes, norm, layout, what):
    _require_2d(a, what)
    if a.dtype.kind == "c":
        raise TypeError("%s: a real array is needed (this one is %s)" % (what, a.dtype))
    ax = _axes(axes, what)
    if len(ax) == 2 and axes is not None and int(tuple(axes)[-1]) % 2 != 1:
        raise ValueError("%s: the last of axes is the halved one; only axes=(0, 1) (the last axis halved) is "
                         "supported" % what)
    _check_s(s, a.global_shape, ax, what)
    plan, x = _plan_for(a, True, ax, norm)
    return _relayout(plan.forward(x), layout)


def _c2r(a, s, axes, norm, layout, what):
    _require_2d(a, what)
    ax = _axes(axes, what)
    if len(ax) == 2 and axes is not None and int(tuple(axes)[-1]) % 2 != 1:
        raise ValueError("%s: the last of axes is the halved one; only axes=(0, 1) (the last axis halved) is "
                         "supported" % what)
    shape = list(a.global_shape)
    half = ax[-1]
    m = shape[half]
    if s is None:
        n = 2 * (m - 1)
        if n < 1:
            raise ValueError("%s: invalid number of data points (%d) specified" % (what, n))
    else:
        s = tuple(int(v) for v in s)
        if len(s) != len(ax):
            raise ValueError("%s: s and axes must have the same length" % what)
        for v, axis in zip(s[:-1], ax[:-1]):
            if v != shape[axis]:
                raise ValueError("%s: s=%r would pad or crop axis %d (length %d)" % (what, s, axis, shape[axis]))
        n = s[-1]
        if n < 1:
            raise ValueError("%s: invalid number of data points (%d) specified" % (what, n))
        if n // 2 + 1 != m:
            raise ValueError("%s: s[-1]=%d needs %d values along axis %d, the array has %d (tessera neither pads "
                             "nor crops)" % (what, n, n // 2 + 1, half, m))
    real_shape = list(shape)
    real_shape[half] = n
    single = _precision(a.dtype)
    plan = _tessera._FftPlan(a.context, real_shape, True, single, _plan_axis(ax), _norm(norm), "slab", 0, 0, False,
                             False, 0)
    name = _complex_name(single)
    x = a if a.dtype.name == name else a.astype(name)
    return _relayout(plan.inverse(x), layout)


def fftn(a, s=None, axes=None, norm=None, layout=None):
    """numpy.fft.fftn of a 2-D array over ``axes`` (both by default; one axis: a batch of 1-D
    transforms). ``s`` must be None or the array's own lengths. Collective."""
    return _c2c(a, s, axes, norm, layout, False, "fftn")


def ifftn(a, s=None, axes=None, norm=None, layout=None):
    """numpy.fft.ifftn (see fftn). Collective."""
    return _c2c(a, s, axes, norm, layout, True, "ifftn")


def fft2(a, s=None, axes=(-2, -1), norm=None, layout=None):
    """numpy.fft.fft2. Collective."""
    return _c2c(a, s, axes, norm, layout, False, "fft2")


def ifft2(a, s=None, axes=(-2, -1), norm=None, layout=None):
    """numpy.fft.ifft2. Collective."""
    return _c2c(a, s, axes, norm, layout, True, "ifft2")


def fft(a, n=None, axis=-1, norm=None, layout=None):
    """numpy.fft.fft along one axis of a 2-D array (a batch of 1-D transforms). ``n`` must be None
    or the axis' length. Collective."""
    return _c2c(a, None if n is None else (n,), (axis,), norm, layout, False, "fft")


def ifft(a, n=None, axis=-1, norm=None, layout=None):
    """numpy.fft.ifft along one axis of a 2-D array. Collective."""
    return _c2c(a, None if n is None else (n,), (axis,), norm, layout, True, "ifft")


def rfftn(a, s=None, axes=None, norm=None, layout=None):
    """numpy.fft.rfftn of a real 2-D array: the last transformed axis n//2 + 1 long. Collective."""
    return _r2c(a, s, axes, norm, layout, "rfftn")


def irfftn(a, s=None, axes=None, norm=None, layout=None):
    """numpy.fft.irfftn: the real array whose rfftn ``a`` is; the last axis 2*(m - 1) long, or
    s[-1] (odd lengths need s). Collective."""
    return _c2r(a, s, axes, norm, layout, "irfftn")


def rfft2(a, s=None, axes=(-2, -1), norm=None, layout=None):
    """numpy.fft.rfft2. Collective."""
    return _r2c(a, s, axes, norm, layout, "rfft2")


def irfft2(a, s=None, axes=(-2, -1), norm=None, layout=None):
    """numpy.fft.irfft2. Collective."""
    return _c2r(a, s, axes, norm, layout, "irfft2")


def rfft(a, n=None, axis=-1, norm=None, layout=None):
    """numpy.fft.rfft along one axis of a real 2-D array. Collective."""
    return _r2c(a, None if n is None else (n,), (axis,), norm, layout, "rfft")


def irfft(a, n=None, axis=-1, norm=None, layout=None):
    """numpy.fft.irfft along one axis of a 2-D array (``n``: the real length, default 2*(m - 1)). Collective."""
    return _c2r(a, None if n is None else (n,), (axis,), norm, layout, "irfft")
