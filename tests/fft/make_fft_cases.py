#!/usr/bin/env python3
"""Writes the distributed FFT tests' cases: random inputs and numpy.fft's transforms of them, as raw
little-endian files, and a manifest (one case a line) that tests/fft/test_fft.cpp reads.

    make_fft_cases.py OUTDIR

Manifest line: name kind real decomposition axis norm return shape(comma-separated) input output
  kind c2c|r2c; real float|double; decomposition slab|pencil; axis -1 (all) or 0|1; norm
  backward|ortho|forward; return 0|1 (return_to_input_layout); input: the array (complex or real);
  output: numpy's forward transform (complex, of the same precision as computed in double and
  rounded to the plan's type).
"""
import os
import sys

import numpy as np


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261129)
    shapes2 = [(1, 1), (1, 17), (17, 1), (2, 3), (7, 5), (13, 17), (31, 33), (3, 64), (65, 2)]
    shapes3 = [(1, 1, 1), (1, 1, 6), (5, 1, 1), (2, 3, 1), (5, 7, 3), (3, 5, 8), (9, 4, 11), (1, 13, 2), (7, 2, 17)]
    norms = ["backward", "ortho", "forward"]
    cases = []
    i = 0
    for real in ("double", "float"):
        for kind in ("c2c", "r2c"):
            for shape in shapes2:
                for axis in (-1, 0, 1):
                    cases.append((kind, real, "slab", axis, norms[i % 3], i % 2, shape))
                    i += 1
            for shape in shapes3:
                for dec in ("slab", "pencil"):
                    cases.append((kind, real, dec, -1, norms[i % 3], i % 2, shape))
                    i += 1
    lines = []
    for n, (kind, real, dec, axis, norm, ret, shape) in enumerate(cases):
        x = rng.standard_normal(shape)
        if kind == "c2c":
            x = x + 1j * rng.standard_normal(shape)
        axes = None if axis < 0 else (axis,)
        rt = np.float32 if real == "float" else np.float64
        ct = np.complex64 if real == "float" else np.complex128
        x = x.astype(rt if kind == "r2c" else ct)
        # The reference is numpy's transform of the input as the plan sees it (rounded to its type).
        xd = x.astype(np.float64 if kind == "r2c" else np.complex128)
        if kind == "c2c":
            y = np.fft.fftn(xd, norm=norm) if axes is None else np.fft.fft(xd, axis=axis, norm=norm)
        else:
            y = np.fft.rfftn(xd, norm=norm) if axes is None else np.fft.rfft(xd, axis=axis, norm=norm)
        name = f"c{n:03d}"
        x.astype(x.dtype.newbyteorder("<")).tofile(os.path.join(out, name + ".in"))
        y.astype(np.complex128).astype(np.dtype(np.complex128).newbyteorder("<")).tofile(os.path.join(out, name + ".out"))
        lines.append(" ".join([name, kind, real, dec, str(axis), norm, str(ret), ",".join(map(str, shape)),
                               name + ".in", name + ".out"]))
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
