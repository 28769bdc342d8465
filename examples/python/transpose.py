#!/usr/bin/env python3
"""The Parallel Research Kernels' transpose (PRK's PYTHON/transpose-numpy-mpi.py) on Tessera.

    mpirun -n 4 python3 transpose.py <iterations> <order> [rows | cols | blocks]

B += A^T, then A += 1, iterations + 1 times, for order x order float64 matrices in the block layout
named (default: 2-D blocks); the first iteration is a warm-up outside the timing. A(i, j) starts at
i * order + j, so B(i, j) ends at (order * j + i + iterations / 2) * (iterations + 1): the run
validates as PRK's does, when the L1 norm of B minus that is below 1e-8. The order need not divide
by the number of ranks. Exits 1 where it does not validate.
"""

import sys

import numpy as np
from mpi4py import MPI

import tessera


def main():
    comm = MPI.COMM_WORLD
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: transpose.py <iterations> <order> [rows | cols | blocks]")
    iterations, order = int(sys.argv[1]), int(sys.argv[2])
    layout = sys.argv[3] if len(sys.argv) == 4 else "blocks"
    if iterations < 1 or order < 1:
        sys.exit("ERROR: iterations and order must be >= 1")
    ctx = tessera.init(comm)
    if ctx.rank == 0:
        print("Parallel Research Kernels, Python on Tessera: matrix transpose B = A^T")
        print("Number of ranks      =", ctx.size, "(%s)" % ctx.describe())
        print("Number of iterations =", iterations)
        print("Matrix order         =", order, "(layout %s)" % layout)

    # Each rank makes its own block of A where the layout puts it.
    where = tessera.empty((order, order), layout=layout)
    (r0, c0), (rows, cols) = where.local_offset, where.local_shape
    a = tessera.from_local(np.fromfunction(lambda i, j: (r0 + i) * order + (c0 + j), (rows, cols), dtype=np.float64),
                           layout=layout)
    b = tessera.zeros((order, order), layout=layout)

    for k in range(iterations + 1):
        if k == 1:
            ctx.synchronize()
            comm.Barrier()
            t0 = MPI.Wtime()
        b = b + a.T
        a = a + 1.0
    ctx.synchronize()
    comm.Barrier()
    transpose_time = MPI.Wtime() - t0

    # The expected B, block by block, and the L1 norm of the difference (on the device under cuda).
    expected = np.fromfunction(lambda i, j: ((iterations / 2.0) + (order * (c0 + j) + (r0 + i))) * (iterations + 1.0),
                               (rows, cols), dtype=np.float64)
    abserr = float(tessera.sum(abs(b - tessera.from_local(expected, layout=layout))))
    epsilon = 1.0e-8
    nbytes = 2 * order ** 2 * 8
    if abserr < epsilon:
        if ctx.rank == 0:
            print("Solution validates")
            avgtime = transpose_time / iterations
            print("Rate (MB/s): %.3f Avg time (s): %.6f" % (1.0e-6 * nbytes / avgtime, avgtime))
    else:
        if ctx.rank == 0:
            print("ERROR: error", abserr, "exceeds threshold", epsilon)
        sys.exit(1)


if __name__ == "__main__":
    main()
