"""pytest under mpiexec: every rank runs every test; a failure on any rank (an exception, or a fault
a check of helpers.py recorded) fails the test on every rank, the report saying which ranks failed
and why; only rank 0 prints.

TESSERA_TEST_BACKEND=cpu (default) or cuda picks the backend of the default context; with cuda and no
usable GPU the run ends with status 77 (ctest: skipped)."""

import os

import pytest
from mpi4py import MPI

import helpers
import tessera

COMM = MPI.COMM_WORLD


def pytest_sessionstart(session):
    backend = os.environ.get("TESSERA_TEST_BACKEND", "cpu")
    try:
        tessera.init(backend=backend)
    except ValueError as e:
        if backend == "cuda":
            pytest.exit("no usable GPU for the cuda backend: %s" % e, returncode=77)
        raise


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call":
        return
    mine = None
    if report.failed:
        mine = str(report.longrepr)[-1500:]
    elif helpers.FAULTS:
        mine = "\n".join(helpers.FAULTS[:5]) + ("\n... %d faults in all" % len(helpers.FAULTS)
                                               if len(helpers.FAULTS) > 5 else "")
    helpers.FAULTS.clear()
    failures = COMM.allgather(mine)
    failed_ranks = [r for r, f in enumerate(failures) if f is not None]
    if failed_ranks and not report.failed:
        report.outcome = "failed"
        first = failed_ranks[0]
        report.longrepr = "failed on rank(s) %s; rank %d:\n%s" % (failed_ranks, first, failures[first])
