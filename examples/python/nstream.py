#!/usr/bin/env python3
"""The Parallel Research Kernels' nstream (PRK's PYTHON/nstream-numpy-mpi.py) on Tessera.

    mpirun -n 4 python3 nstream.py <iterations> <length>

A += B + scalar * C (B = C = 2, scalar = 3) on float64 vectors of `length` elements in all, iterations
+ 1 times, the first a warm-up outside the timing. Validates as PRK does: the L1 norm of A against
the same recurrence on scalars, times the length, within a relative 1e-8. Bandwidth counts
4 * length * 8 bytes per iteration (PRK's convention). Exits 1 where it does not validate.
"""

import sys

from mpi4py import MPI

import tessera


def main():
    comm = MPI.COMM_WORLD
    if len(sys.argv) != 3:
        sys.exit("usage: nstream.py <iterations> <length>")
    iterations, length = int(sys.argv[1]), int(sys.argv[2])
    if iterations < 1 or length < 1:
        sys.exit("ERROR: iterations and length must be >= 1")
    ctx = tessera.init(comm)
    if ctx.rank == 0:
        print("Parallel Research Kernels, Python on Tessera: STREAM triad A = B + scalar * C")
        print("Number of ranks      =", ctx.size, "(%s)" % ctx.describe())
        print("Number of iterations =", iterations)
        print("Vector length        =", length)

    a = tessera.zeros(length)
    b = tessera.full(length, 2.0)
    c = tessera.full(length, 2.0)
    scalar = 3.0
    for k in range(iterations + 1):
        if k == 1:
            ctx.synchronize()
            comm.Barrier()
            t0 = MPI.Wtime()
        a = a + (b + scalar * c)
    ctx.synchronize()
    comm.Barrier()
    nstream_time = MPI.Wtime() - t0

    ar, br, cr = 0.0, 2.0, 2.0
    for _ in range(iterations + 1):
        ar += br + scalar * cr
    ar *= length
    asum = float(tessera.sum(abs(a)))
    epsilon = 1.0e-8
    if abs(ar - asum) / asum > epsilon:
        if ctx.rank == 0:
            print("Failed Validation on output array")
            print("        Expected checksum:", ar)
            print("        Observed checksum:", asum)
        sys.exit(1)
    if ctx.rank == 0:
        print("Solution validates")
        avgtime = nstream_time / iterations
        nbytes = 4.0 * length * 8
        print("Rate (MB/s): %.3f Avg time (s): %.6f" % (1.0e-6 * nbytes / avgtime, avgtime))


if __name__ == "__main__":
    main()
