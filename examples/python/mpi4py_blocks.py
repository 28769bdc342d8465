#!/usr/bin/env python3
"""An mpi4py program hands each rank's block to Tessera and takes results back, without copies.

    mpirun -n 4 python3 mpi4py_blocks.py [--backend cpu | cuda]

Each rank makes its own block with NumPy (with CuPy on the cuda backend, where CuPy is installed),
blocks of different sizes. tessera.from_local makes one global array of them in rank order, using
the blocks' memory in place. Tessera sums, selects, sorts and counts the global array; the sorted
array's block comes back as a NumPy (or CuPy) array viewing Tessera's memory; plain mpi4py then
checks every result against what the ranks compute from their own blocks. Exits 1 on a mismatch.
"""

import argparse
import sys

import numpy as np
from mpi4py import MPI

import tessera


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="auto")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    ctx = tessera.init(comm, backend=args.backend)  # tessera works on a duplicate of comm
    xp = np
    if ctx.backend == "cuda":
        try:
            import cupy as xp  # noqa: PLC0415
        except ImportError:
            xp = np  # host blocks: from_local copies them to the GPU
    rank = comm.Get_rank()

    # This rank's block, made by the program itself: 1000 + 37 * rank normal samples.
    rng = np.random.default_rng(1234 + rank)
    block = xp.asarray(rng.standard_normal(1000 + 37 * rank))
    x = tessera.from_local(block)  # no copy where the block is in the backend's memory
    if rank == 0:
        print("global array: %s, blocks %s (%s)" % (x.global_shape, x.counts, "host" if xp is np else "GPU"))

    total = float(tessera.sum(x))
    positives = x[x > 0]
    ordered = tessera.sort(x)
    counts, edges = tessera.histogram(x, bins=8, range=(-4, 4))

    # Back: this rank's block of the sorted array, viewing Tessera's memory.
    mine = ordered.local if ctx.backend == "cpu" else xp.asarray(ordered.local)
    if xp is not np and ctx.backend == "cuda":
        mine = xp.asnumpy(mine)  # this check runs on the host

    # Plain mpi4py checks each result from the ranks' own blocks.
    own = np.asarray(block.get() if hasattr(block, "get") else block)
    failures = []
    if abs(total - comm.allreduce(float(own.sum()))) > 1e-9 * comm.allreduce(float(np.abs(own).sum())):
        failures.append("sum")
    if positives.global_shape[0] != comm.allreduce(int((own > 0).sum())):
        failures.append("count of x > 0")
    ends = comm.allgather((float(mine[0]), float(mine[-1])) if mine.size else None)
    ends = [e for e in ends if e is not None]
    if any(ends[i][1] > ends[i + 1][0] for i in range(len(ends) - 1)) or np.any(np.diff(mine) < 0):
        failures.append("sort order across ranks")
    if not np.array_equal(counts, comm.allreduce(np.histogram(own, bins=8, range=(-4, 4))[0], op=MPI.SUM)):
        failures.append("histogram")
    if rank == 0:
        print("sum %.6f, %d positive, histogram %s over edges %s" % (total, positives.global_shape[0], counts, edges))
        print("mpi4py and Tessera agree" if not failures else "MISMATCH: %s" % ", ".join(failures))
    sys.exit(1 if comm.allreduce(len(failures)) else 0)


if __name__ == "__main__":
    main()
