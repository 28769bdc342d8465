"""Runs pytest on every rank of an MPI job: mpiexec -n N python3 run_pytest.py [pytest args].

Ranks other than 0 write nothing to stdout (their faults reach rank 0's report, conftest.py), and
every rank exits with the same status: 0 where all passed, 77 where every test was skipped (ctest:
skipped), 1 otherwise."""

import os
import sys

from mpi4py import MPI

if MPI.COMM_WORLD.rank != 0:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)

import pytest  # noqa: E402 - after the redirection, so that pytest's terminal is /dev/null too

here = os.path.dirname(os.path.abspath(__file__))
status = int(pytest.main(["-p", "no:cacheprovider", "--color=no", "--rootdir", here] + sys.argv[1:]))
if status == 77:
    result = 77
else:
    result = 0 if status == 0 else 1
result = MPI.COMM_WORLD.allreduce(result, op=MPI.MAX)
sys.stdout.flush()
sys.exit(result)
