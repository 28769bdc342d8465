"""What the job tests (check_jobs.py) run under mpiexec: one scenario per command-line word.

  fault-caught      with TESSERA_INJECT_FAULT=0:allgather on this one-rank job (the product of an int32
                    array gathers the ranks' partials; nothing before it does): the collective raises
                    tessera.CommunicationError, the program catches it, the next call raises it at
                    once, and the program ends normally.
  fault-uncaught    the same on several ranks, uncaught: the job ends (MPI_Abort) instead of
                    leaving the other ranks waiting in the collective.
  wait              every rank prints "ready <rank> <pid>" and sums in a loop for a minute; rank 0
                    first sleeps in Python, so that the others wait in the collective meanwhile.
  solve             every rank prints "ready <rank> <pid>" and starts a Jacobi solve of 10^9
                    iterations: one call that only a signal ends.
"""

import sys
import time

import numpy as np

import tessera

scenario = sys.argv[1]
ctx = tessera.init()

if scenario == "fault-caught":
    x = tessera.arange(100, dtype="int32")
    try:
        tessera.prod(x)
        print("no CommunicationError", flush=True)
        sys.exit(1)
    except tessera.CommunicationError as e:
        print("caught CommunicationError:", e, flush=True)
    try:
        tessera.prod(x)
        sys.exit(1)
    except tessera.CommunicationError as e:
        print("raised again:", e, flush=True)
    print("ended normally", flush=True)

elif scenario == "fault-uncaught":
    tessera.prod(tessera.arange(100, dtype="int32"))
    print("not reached", flush=True)

elif scenario == "wait":
    x = tessera.random(1 << 16, seed=1, dtype="float32")
    print("ready %d %d" % (ctx.rank, __import__("os").getpid()), flush=True)
    end = time.time() + 60
    while time.time() < end:
        if ctx.rank == 0:
            time.sleep(0.2)
        np.float32(tessera.sum(x))
    print("finished without a signal", flush=True)

elif scenario == "solve":
    u = tessera.zeros((64, 64))
    print("ready %d %d" % (ctx.rank, __import__("os").getpid()), flush=True)
    tessera.jacobi(u, "jacobi5", 1.0, iterations=10 ** 9)
    print("finished without a signal", flush=True)
