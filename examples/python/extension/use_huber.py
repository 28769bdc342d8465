#!/usr/bin/env python3
"""Calls the extension built from this directory (CMakeLists.txt): the Huber loss of residuals held
as a tessera.DistArray, summed by a C++ functor on every rank's block, against NumPy's answer.

    PYTHONPATH=build-huber:<where tessera is> mpirun -n 4 python3 use_huber.py
"""

import sys

import numpy as np
from mpi4py import MPI

import huber
import tessera

comm = MPI.COMM_WORLD
x = tessera.random(100003, seed=5, dtype="float64") * 3.0      # residuals in [-3, 3)
x.context.synchronize()                                          # the extension works on a stream of its own
got = huber.huber_sum(x.local, comm, delta=1.0)                 # the rank's block, without a copy
r = x.to_numpy()
expected = np.sum(np.where(np.abs(r) <= 1.0, 0.5 * r * r, np.abs(r) - 0.5))
if comm.rank == 0:
    print("huber_sum %.9g, numpy %.9g" % (got, expected))
sys.exit(0 if abs(got - expected) <= 1e-9 * abs(expected) else 1)
