"""The cost of calling Tessera from Python: the sum of n float32 (tessera.sum) against the same call
from C++ (tessera_bench_sum_call), at one rank, in alternating runs of both.

    python3 bench/python/overhead.py --cpp build/bin/tessera_bench_sum_call [--n 1000000]
        [--backend cpu] [--calls 2000] [--rounds 15] [--pairs 3]

For each of --pairs pairs it runs the C++ program once and the Python rounds once (the same n,
calls per round, rounds); each side's time per call is the median over its rounds, and the
reported figure per side is the fastest of its pairs' medians. Run with PYTHONPATH=build/python (or
the package installed). Prints one line per side and the difference per call."""

import argparse
import re
import subprocess
import sys
import time

import numpy as np

import tessera


def python_rounds(x, calls, rounds, ctx):
    tessera.sum(x)  # warm-up
    per_call = []
    for _ in range(rounds):
        ctx.comm.Barrier()
        start = time.perf_counter()
        for _ in range(calls):
            tessera.sum(x)
        per_call.append((time.perf_counter() - start) / calls * 1e6)
    return float(np.median(per_call))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpp", required=True, help="the tessera_bench_sum_call executable")
    parser.add_argument("--n", type=int, default=1000000)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()

    ctx = tessera.init(backend=args.backend)
    if ctx.size != 1:
        sys.exit("overhead.py: run it on one rank (the C++ program runs beside it, also on one)")
    x = tessera.random(args.n, seed=1, dtype="float32")
    cpp, py = [], []
    for _ in range(args.pairs):
        out = subprocess.run([args.cpp, "--n", str(args.n), "--calls", str(args.calls), "--rounds", str(args.rounds),
                              "--backend", args.backend], check=True, capture_output=True, text=True).stdout
        cpp.append(float(re.search(r"median_us=([0-9.]+)", out).group(1)))
        py.append(python_rounds(x, args.calls, args.rounds, ctx))
    c, p = min(cpp), min(py)
    print("threads=%d backend=%s n=%d (%s)" % (ctx.threads, ctx.backend, args.n, ctx.describe()))
    print("C++    sum: %9.3f us per call (medians of %d pairs: %s)" % (c, args.pairs, " ".join("%.3f" % v for v in cpp)))
    print("Python sum: %9.3f us per call (medians of %d pairs: %s)" % (p, args.pairs, " ".join("%.3f" % v for v in py)))
    print("Python - C++: %+.3f us per call (%+.2f%%)" % (p - c, 100.0 * (p - c) / c))


if __name__ == "__main__":
    main()
