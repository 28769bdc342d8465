#!/usr/bin/env python3
"""User stencils (field_stencil_numpy.cpp) against numpy: the functor and the numpy formula of the
same arithmetic, side by side below, on random fields of sizes no grid divides, at each rank count
given. The results must be bitwise numpy's: the same operations in the same order on each cell.

  test_field_stencil_numpy.py PROGRAM MPIEXEC [--ranks 1,3] [--mpiexec-flag FLAG ...]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

PAIR = np.dtype({"names": ["a", "b"], "formats": ["<f8", "<f4"], "offsets": [0, 8], "itemsize": 16})


def shifted(padded, width, n, d0, d1, d2):
    """The field at offset (d0, d1, d2): the padded array's window."""
    return padded[width + d0:width + d0 + n[0], width + d1:width + d1 + n[1], width + d2:width + d2 + n[2]]


def variable_star(u, c):
    # C++ (VariableStar, radius 2, star; axis 0 Dirichlet 0, axes 1 and 2 periodic):
    #   c(0,0,0) * (u(-2,0,0) + u(2,0,0)) + 0.5 * (u(0,-1,0) + u(0,1,0)) - c(0,0,1) * u(0,0,-2) + u(0,0,0)
    n = u.shape
    pad = lambda x: np.pad(np.pad(x, ((2, 2), (0, 0), (0, 0)), mode="constant"), ((0, 0), (2, 2), (2, 2)), mode="wrap")
    U = lambda *d: shifted(pad(u), 2, n, *d)
    C = lambda *d: shifted(pad(c), 2, n, *d)
    return C(0, 0, 0) * (U(-2, 0, 0) + U(2, 0, 0)) + 0.5 * (U(0, -1, 0) + U(0, 1, 0)) - C(0, 0, 1) * U(0, 0, -2) + U(0, 0, 0)


def pair_star(p):
    # C++ (PairStar, radius 1, star; every axis periodic):
    #   r.a = p(-1,0,0).a + 0.25 * p(0,0,1).a;   r.b = p(0,1,0).b - float(p(0,0,0).a)
    n = p.shape
    A = lambda *d: shifted(np.pad(p["a"], 1, mode="wrap"), 1, n, *d)
    B = lambda *d: shifted(np.pad(p["b"], 1, mode="wrap"), 1, n, *d)
    r = np.zeros(n, dtype=PAIR)
    r["a"] = A(-1, 0, 0) + 0.25 * A(0, 0, 1)
    r["b"] = B(0, 1, 0) - A(0, 0, 0).astype(np.float32)
    return r


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("program")
    parser.add_argument("mpiexec")
    parser.add_argument("--ranks", default="1,3")
    parser.add_argument("--mpiexec-flag", action="append", default=[])
    args = parser.parse_args()
    rng = np.random.default_rng(20261129)
    failures = 0
    for n in [(7, 5, 3), (13, 2, 11)]:  # periodic axes need at least the ghost width's 2 cells
        u = rng.uniform(-1, 1, n)
        # Powers of two: c times anything is exact, so a multiply-add the device fuses rounds as numpy's
        # multiply then add does.
        c = np.ldexp(np.where(rng.uniform(size=n) < 0.5, -1.0, 1.0), rng.integers(-3, 3, n))
        p = np.zeros(n, dtype=PAIR)
        p["a"] = rng.uniform(-1, 1, n)
        p["b"] = rng.uniform(-1, 1, n).astype(np.float32)
        want_u, want_p = variable_star(u, c), pair_star(p)
        for ranks in [int(r) for r in args.ranks.split(",")]:
            with tempfile.TemporaryDirectory() as work:
                u.tofile(os.path.join(work, "u.f64"))
                c.tofile(os.path.join(work, "c.f64"))
                p.tofile(os.path.join(work, "p.pair"))
                cmd = [args.mpiexec, "-n", str(ranks)] + args.mpiexec_flag + [args.program, work] + [str(x) for x in n]
                run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
                print(run.stdout.strip())
                if run.returncode != 0:
                    print(f"FAIL {n} at {ranks} ranks: exit {run.returncode}\n{run.stderr}")
                    failures += 1
                    continue
                got_u = np.fromfile(os.path.join(work, "out_u.f64"), dtype="<f8").reshape(n)
                got_p = np.fromfile(os.path.join(work, "out_p.pair"), dtype=PAIR).reshape(n)
                for name, ok in [("variable star", np.array_equal(got_u, want_u)),
                                 ("pair .a", np.array_equal(got_p["a"], want_p["a"])),
                                 ("pair .b", np.array_equal(got_p["b"], want_p["b"]))]:
                    if not ok:
                        print(f"FAIL {name} {n} at {ranks} ranks: differs from numpy")
                        failures += 1
    print("test_field_stencil_numpy:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
