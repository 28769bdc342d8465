#!/usr/bin/env python3
"""Checks a scaling app report against references computed here, independently of the app:
the checksums from the generator's definition (counter_rng.hpp re-implemented below), Amdahl's fit
by the least-squares optimality of what it reports, Karp-Flatt and Gustafson from the measured times,
the projection's internal consistency. Standard library only.

Per point, the median over rounds and its 95% interval are recomputed from the round times (order
statistics of the binomial distribution), and the noisy flags, the stopping rule of the rounds, the
fits' verdicts and the withholding of a projection whose held-out check failed are checked against
the thresholds the report states.

usage: check_scaling_json.py REPORT.json --op OP --dtype DTYPE --seed S --expect-ranks 1,2,4
                             [--strong-n N] [--weak-n-per-rank N] [--expect-projection shown|withheld]
"""
import argparse
import json
import math
import sys

MASK = (1 << 64) - 1
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def counter_value(seed, index, dtype):
    bits = mix64(mix64((seed + 0x9E3779B97F4A7C15) & MASK) ^ ((index * 0xD1B54A32D192ED03 + 0x8CB92BA72F3D8DD7) & MASK))
    if dtype == "float32":
        return (bits >> 40) * 2.0 ** -23 - 1.0
    if dtype == "float64":
        return (bits >> 11) * 2.0 ** -52 - 1.0
    return bits % 2001 - 1000


def reference_checksum(op, dtype, seed, size):
    """The exact value (math.fsum) each op reports as its checksum, and a tolerance."""
    if op in ("sum", "scan"):
        exact = math.fsum(counter_value(seed, i, dtype) for i in range(size))
        if dtype in ("int32", "int64"):
            bits = 32 if dtype == "int32" else 64
            wrapped = int(exact) % (1 << bits)
            return (wrapped - (1 << bits) if wrapped >= 1 << (bits - 1) else wrapped), 0.0
        eps = 2.0 ** -23 if dtype == "float32" else 2.0 ** -52
        # Any summation order: |error| <= (n - 1) eps sum|x| <= n^2 eps; a looser practical bound
        # still far below the size of one block's contribution.
        return exact, 4 * eps * size * math.sqrt(size) + 1e-12
    if op == "filter":
        return sum(1 for i in range(size) if counter_value(seed, i, dtype) > 0), 0.0
    # matmul: sum_ij (A B)_ij = sum_k colsum(A)_k rowsum(B)_k
    n = size
    col_a = [math.fsum(counter_value(seed, i * n + k, dtype) for i in range(n)) for k in range(n)]
    row_b = [math.fsum(counter_value(seed + 1, k * n + j, dtype) for j in range(n)) for k in range(n)]
    exact = math.fsum(col_a[k] * row_b[k] for k in range(n))
    eps = 2.0 ** -23 if dtype == "float32" else 2.0 ** -52
    return exact, 8 * eps * n ** 3 + 1e-9


def amdahl_cost(ranks, times, s, t1):
    return sum(((t1 * (s + (1 - s) / p) - t) / t) ** 2 for p, t in zip(ranks, times))


def tree_depth(p):
    d = 0
    while (1 << d) < p:
        d += 1
    return d


def fit_pings(pings):
    """(ranks, small_s, large_s, bytes): alpha from small = alpha depth, beta from large - alpha depth = bytes / beta."""
    pings = [q for q in pings if q[0] >= 2]
    dd = sum(tree_depth(p) ** 2 for p, _, _, _ in pings)
    if dd == 0:
        return 0.0, 0.0
    alpha = max(0.0, sum(tree_depth(p) * t for p, t, _, _ in pings) / dd)
    xx = sum(b * b for _, _, _, b in pings if b > 0)
    xy = sum(b * (t - alpha * tree_depth(p)) for p, _, t, b in pings if b > 0)
    return alpha, (xx / xy if xx > 0 and xy > 0 else 0.0)


# The collectives each operation makes per call, written here from the algorithms' documentation
# (a sum: one allreduce of an element; a scan: one allgather of a rank's total with two 32-bit flags;
# a filter: one allgather of a 64-bit count with the flags), and how the cost model charges each.
def expected_collectives(op, element_bytes):
    record = lambda b: ((max(b, 4) + 8 + max(b, 4) - 1) // max(b, 4)) * max(b, 4)
    return {"sum": [("allreduce", element_bytes)],
            "scan": [("allgather", record(element_bytes))],
            "filter": [("allgather", 16)]}[op]


# Open MPI 4.1's tuned choice for a commutative allreduce (coll_tuned_decision_fixed.c), as rows of
# (communicator size below, [(bytes below, algorithm)], otherwise): 1 linear, 2 reduce + bcast,
# 3 recursive doubling, 4 ring, 5 segmented ring, 6 Rabenseifner.
OMPI_ALLREDUCE = [(4, [(8, 4), (4096, 3), (8192, 4), (16384, 3), (65536, 4), (262144, 5)], 6),
                  (8, [(16, 4), (8192, 3)], 6), (16, [(8192, 3)], 6), (32, [(64, 5), (4096, 3)], 6),
                  (64, [(128, 5)], 6), (128, [(128, 1), (512, 3), (8192, 1), (262144, 3)], 6),
                  (256, [(2048, 2), (16384, 1), (131072, 2), (262144, 3)], 6), (512, [(4096, 2)], 6),
                  (2048, [(2048, 2), (16384, 3)], 6), (4096, [(2048, 2), (4096, 5), (16384, 3)], 6),
                  (1 << 30, [(2048, 2), (16384, 5), (32768, 3)], 6)]


def ompi_cost(kind, p, b):
    """(rounds, bytes) of the algorithm Open MPI 4.1 runs: alpha rounds + bytes / beta."""
    if p <= 1:
        return 0.0, 0.0
    d = tree_depth(p)
    pow2 = p & (p - 1) == 0
    if kind == "allreduce":
        alg = next((next((a for below, a in steps if b < below), other) for below_p, steps, other in OMPI_ALLREDUCE
                    if p < below_p))
        if alg >= 4 and b // 8 < p:
            alg = 3  # the ring and Rabenseifner hand vectors shorter than p to recursive doubling
        fold = 0 if pow2 else 2
        return {1: (2 * (p - 1), 2 * (p - 1) * b), 2: (2 * d, 2 * d * b), 3: (d + fold, (d + fold) * b),
                4: (2 * (p - 1), 2 * (p - 1) / p * b), 5: (2 * (p - 1), 2 * (p - 1) / p * b),
                6: (2 * d + fold, 2 * (p - 1) / p * b)}[alg]
    if kind == "allgather":
        return (d, (p - 1) * b) if b * p < 65536 else (p - 1, (p - 1) * b)
    raise ValueError(kind)


def charged(machine_rows, kind, p, b, alpha, beta):
    """A collective charged from the launch's measurements: measured at p, else scaled as Open MPI's algorithm."""
    if p <= 1:
        return 0.0
    f = lambda q: alpha * ompi_cost(kind, q, b)[0] + (ompi_cost(kind, q, b)[1] / beta if beta else 0.0)
    cls = lambda x: int(math.floor(math.log2(x))) if x >= 2 else 0
    rows = sorted((r for r in machine_rows if r["kind"] == kind and r["ranks"] >= 2 and cls(r["bytes"]) == cls(b)
                   and r["seconds"] > 0), key=lambda r: r["ranks"])
    if not rows:
        return f(p)
    by_p = {r["ranks"]: r["seconds"] for r in rows}
    if p in by_p:
        return by_p[p]
    edge = rows[-1] if p > rows[-1]["ranks"] else rows[0] if p < rows[0]["ranks"] else None
    if edge is not None:
        return edge["seconds"] * f(p) / f(edge["ranks"]) if f(edge["ranks"]) > 0 else edge["seconds"]
    lo = max(r for r in by_p if r < p)
    hi = min(r for r in by_p if r > p)
    w = ((f(p) - f(lo)) / (f(hi) - f(lo)) if f(hi) > f(lo)
         else (math.log2(p) - math.log2(lo)) / (math.log2(hi) - math.log2(lo)))
    return by_p[lo] + (by_p[hi] - by_p[lo]) * w


def slowdown(sharing, k):
    ks, ts = sharing["active_ranks"], sharing["seconds"]
    if not ks or ks[0] != 1 or not ts[0] > 0 or k <= 1:
        return 1.0
    for i in range(1, len(ks)):
        if k <= ks[i]:
            w = (k - ks[i - 1]) / (ks[i] - ks[i - 1])
            return ((1 - w) * ts[i - 1] + w * ts[i]) / ts[0]
    return ts[-1] / ts[0]


def grid(p):
    cols = max(c for c in range(1, int(math.isqrt(p)) + 1) if p % c == 0)
    return p // cols, cols


def summa_time(n, p, b, e, seconds_per_flop, alpha, beta):
    """Step by step: the first panel's broadcast, then per step the longer of its GEMM and the next broadcast."""
    rows, cols = grid(p)
    mb, nb = -(-n // rows), -(-n // cols)
    widths = [min(b, n - k) for k in range(0, n, b)]

    def bcast(w):
        t = 0.0
        for ranks, nbytes in ((cols, mb * w * e), (rows, w * nb * e)):
            if ranks > 1:
                t += alpha * tree_depth(ranks) + (nbytes / beta if beta > 0 else 0.0)
        return t

    time = bcast(widths[0]) if widths else 0.0
    for s, w in enumerate(widths):
        time += max(seconds_per_flop * 2 * mb * nb * w, bcast(widths[s + 1]) if s + 1 < len(widths) else 0.0)
    return time


def median_interval(x):
    """(median, low, high, level): [x_(k), x_(n+1-k)] with the largest k of coverage >= 95%, else k = 1."""
    x = sorted(x)
    n = len(x)
    median = x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2
    below = lambda j: sum(math.comb(n, i) for i in range(j + 1)) / 2 ** n  # P(B <= j)
    k = 1
    for cand in range(2, n // 2 + 1):
        if 1 - 2 * below(cand - 1) >= 0.95:
            k = cand
    return median, x[k - 1], x[n - k], max(0.0, 1 - 2 * below(k - 1))


def check_points_statistics(report, block, mode):
    """Median, interval, spread and noisy flag of every point, from its round times."""
    first = None
    for p in block["points"]:
        rt = p["round_times_s"]
        check(len(rt) == p["rounds"] == report["rounds"], f"{mode}: {len(rt)} round times, {p['rounds']} rounds at {p['ranks']} ranks")
        med, lo, hi, level = median_interval(rt)
        check(math.isclose(p["time_s"], med, rel_tol=1e-12), f"{mode}: time {p['time_s']} is not the median {med} of {rt}")
        check(math.isclose(p["time_ci95_s"][0], lo, rel_tol=1e-12) and math.isclose(p["time_ci95_s"][1], hi, rel_tol=1e-12),
              f"{mode}: interval {p['time_ci95_s']} at {p['ranks']} ranks, expected [{lo}, {hi}] of {rt}")
        check(math.isclose(p["ci_level"], level, rel_tol=1e-9, abs_tol=1e-12), f"{mode}: ci_level {p['ci_level']} vs {level}")
        check(p["time_min_s"] == min(rt) and p["time_max_s"] == max(rt), f"{mode}: min/max over rounds")
        spread = (hi - lo) / med
        check(math.isclose(p["spread"], spread, rel_tol=1e-9, abs_tol=1e-15), f"{mode}: spread {p['spread']} vs {spread}")
        check(p["noisy"] == (spread > block["max_spread"]), f"{mode}: noisy {p['noisy']} with spread {spread}")
        phases = p["phases_s"]
        within = phases["local"] + phases["communication"] + phases["fixup"] + phases["host"]
        check(within <= p["time_s"] * (1 + 1e-9), f"{mode}: phases add up to {within} > time {p['time_s']} at {p['ranks']} ranks")
        check(math.isclose(within + phases["other"], p["time_s"], rel_tol=1e-9), f"{mode}: phases + other != time")
        if first is None:
            first = p
            check(p["efficiency_interval"] == [1, 1], f"{mode}: first point's efficiency interval {p['efficiency_interval']}")
            continue
        k = p["ranks"] / first["ranks"] if mode == "strong" else 1
        want = [first["time_ci95_s"][0] / (k * hi), first["time_ci95_s"][1] / (k * lo)]
        got = p["efficiency_interval"]
        check(all(math.isclose(g, w, rel_tol=1e-9) for g, w in zip(got, want)), f"{mode}: efficiency interval {got} vs {want}")
        check(got[0] <= p["efficiency"] * (1 + 1e-9) and p["efficiency"] <= got[1] * (1 + 1e-9),
              f"{mode}: efficiency {p['efficiency']} outside its interval {got}")


def check_mode(report, mode, args):
    block = report.get(mode)
    check(block is not None, f"{mode}: missing from the report")
    if block is None:
        return
    points = block["points"]
    ranks = [p["ranks"] for p in points]
    times = [p["time_s"] for p in points]
    check(ranks == args.expect_ranks, f"{mode}: points at ranks {ranks}, expected {args.expect_ranks}")
    check(all(t > 0 for t in times), f"{mode}: non-positive times {times}")
    t_first, p_first = times[0], ranks[0]
    check_points_statistics(report, block, mode)

    for p in points:
        size = p["size"]
        if mode == "strong":
            check(size == args.strong_n, f"strong: size {size} at {p['ranks']} ranks, expected {args.strong_n}")
        elif args.op == "matmul":
            check(size == max(1, round(args.weak_n_per_rank * p["ranks"] ** (1 / 3))), f"weak: matmul side {size}")
        else:
            check(size == args.weak_n_per_rank * p["ranks"], f"weak: size {size} at {p['ranks']} ranks")
        ref, tol = reference_checksum(args.op, args.dtype, args.seed, size)
        check(abs(p["checksum"] - ref) <= tol,
              f"{mode}: checksum {p['checksum']!r} at {p['ranks']} ranks, reference {ref!r} (tolerance {tol:.3g})")
        phases = p["phases_s"]
        check(all(v >= 0 for v in phases.values()), f"{mode}: negative phase time {phases}")

    if mode == "strong":
        for p in points:
            speedup = t_first * p_first / p["time_s"]
            check(math.isclose(p["speedup"], speedup, rel_tol=1e-6), f"strong: speedup {p['speedup']} vs {speedup}")
            check(math.isclose(p["efficiency"], speedup / p["ranks"], rel_tol=1e-6), "strong: efficiency")
            if p["ranks"] == 1:
                check(p["karp_flatt"] is None, "strong: Karp-Flatt at 1 rank must be null")
            else:
                kf = (1 / speedup - 1 / p["ranks"]) / (1 - 1 / p["ranks"])
                check(math.isclose(p["karp_flatt"], kf, rel_tol=1e-5, abs_tol=1e-9),
                      f"strong: Karp-Flatt {p['karp_flatt']} at {p['ranks']} ranks, expected {kf}")
        fit = block["amdahl"]
        check(fit["valid"], "strong: Amdahl fit not valid")
        s, t1 = fit["serial_fraction"], fit["t1_s"]
        check(fit["describes_points"] == (fit["residual_max"] <= block["max_fit_error"]),
              f"strong: Amdahl describes_points {fit['describes_points']} with residual {fit['residual_max']}")
        check(0.0 <= s <= 1.0, f"strong: serial fraction {s} outside [0, 1]")
        check(t1 > 0, f"strong: fitted T(1) {t1}")
        # The fitted curve reproduces every fitted time within the residual the app reports.
        for p, t, reported in zip(ranks, times, fit["fitted_time_s"]):
            model = t1 * (s + (1 - s) / p)
            check(math.isclose(model, reported, rel_tol=1e-6), f"strong: fitted time {reported} vs {model}")
            check(abs(model - t) / t <= fit["residual_max"] * (1 + 1e-6) + 1e-9,
                  f"strong: fit {model} vs measured {t} at {p} ranks exceeds residual {fit['residual_max']}")
        rms = math.sqrt(amdahl_cost(ranks, times, s, t1) / len(ranks))
        check(math.isclose(rms, fit["residual_rms"], rel_tol=1e-4, abs_tol=1e-9),
              f"strong: residual_rms {fit['residual_rms']} vs recomputed {rms}")
        # Least squares: no nearby admissible (s, T1) does better.
        best = amdahl_cost(ranks, times, s, t1)
        for ds in (-1e-3, 0.0, 1e-3):
            for dt in (-1e-3, 0.0, 1e-3):
                s2 = s + ds
                if 0 <= s2 <= 1 and (ds or dt):
                    check(amdahl_cost(ranks, times, s2, t1 * (1 + dt)) >= best * (1 - 1e-6) - 1e-15,
                          f"strong: (s={s2}, T1={t1 * (1 + dt)}) fits better than the reported optimum")
    else:
        for p in points:
            scaled = p["ranks"] * t_first / p["time_s"] / p_first
            check(math.isclose(p["scaled_speedup"], scaled, rel_tol=1e-6), f"weak: scaled speedup {p['scaled_speedup']} vs {scaled}")
            check(math.isclose(p["efficiency"], t_first / p["time_s"], rel_tol=1e-6), "weak: efficiency")
        g = block["gustafson"]
        check(g["valid"] and 0.0 <= g["serial_fraction"] <= 1.0, f"weak: Gustafson fit {g}")

    mc = block["model_check"]
    worst = max([abs(q["relative_error"]) for q in mc["points"]], default=0.0)
    check(math.isclose(mc["max_abs_relative_error"], worst, rel_tol=1e-9, abs_tol=1e-15), f"{mode}: model check worst error")
    errors = sorted(abs(q["relative_error"]) for q in mc["points"])
    if errors:
        mid = (errors[(len(errors) - 1) // 2] + errors[len(errors) // 2]) / 2
        check(math.isclose(mc["median_abs_relative_error"], mid, rel_tol=1e-9, abs_tol=1e-15), f"{mode}: median error")
        verdict = "PASS" if mid <= 0.15 and worst <= 0.25 else "FAIL"
        check(f": {verdict} median" in mc["verdict"], f"{mode}: verdict {mc['verdict']!r}, expected {verdict}")
        check(verdict == "PASS" or mc["missed_term"].split(":")[0] in ("local (shared node bandwidth)", "collectives", "host"),
              f"{mode}: the term that missed: {mc['missed_term']!r}")
    else:
        check(": NONE" in mc["verdict"], f"{mode}: verdict {mc['verdict']!r} without held-out points")
    held_out = bool(mc["points"])
    passed = held_out and worst <= block["max_fit_error"]
    check(mc["passed"] == (passed if held_out else None), f"{mode}: model check passed = {mc['passed']}, error {worst}")
    status = block["projection_status"]
    check(status == ("withheld" if held_out and not passed else "checked" if held_out else "unchecked"),
          f"{mode}: projection status {status} with check error {worst} (limit {block['max_fit_error']})")
    if args.expect_projection:
        check((status == "withheld") == (args.expect_projection == "withheld"),
              f"{mode}: projection {status}, expected {args.expect_projection}")
    check(mc["fit_ranks"] == args.expect_ranks[:2], f"{mode}: model check fitted on {mc['fit_ranks']}")
    predicted_ranks = [q["ranks"] for q in mc["points"]]
    check(predicted_ranks == args.expect_ranks[2:], f"{mode}: model check predicts {predicted_ranks}")
    for q in mc["points"]:
        measured = times[ranks.index(q["ranks"])]
        check(math.isclose(q["measured_s"], measured, rel_tol=1e-6), f"{mode}: model check measured time")
        check(math.isclose(q["relative_error"], (q["predicted_s"] - measured) / measured, rel_tol=1e-5, abs_tol=1e-9),
              f"{mode}: model check relative error")

    model = block["model"]
    if args.op == "matmul":
        check(model.get("network_path") == "device", f"{mode}: matmul model charged to {model.get('network_path')}")
        net = report["network"]
        check(math.isclose(model["device_latency_s"], net["device_latency_s"], rel_tol=1e-9, abs_tol=1e-15)
              and math.isclose(model["device_bandwidth_Bps"], net["device_bandwidth_Bps"], rel_tol=1e-9, abs_tol=1e-6),
              f"{mode}: model's device network differs from the report's")
        spf = 1 / model["local_rate"] if model["local_rate"] else 0.0
        e = 8 if args.dtype == "float64" else 4
        for q in block["projection"]:
            p = q["ranks"]
            n = args.strong_n if mode == "strong" else max(1, round(args.weak_n_per_rank * p ** (1 / 3)))
            ref = model["local_overhead_s"] + model["host_s"] + summa_time(
                n, p, report["panel_width"], e, spf, model["device_latency_s"], model["device_bandwidth_Bps"])
            check(math.isclose(q["time_s"], ref, rel_tol=1e-6, abs_tol=1e-15),
                  f"{mode}: matmul projection {q['time_s']} at {p} ranks, step-by-step reference {ref}")
    else:
        check(model.get("network_path") == "host", f"{mode}: {args.op} model charged to {model.get('network_path')}")
        e = 8 if args.dtype in ("float64", "int64") else 4
        made = [(c["kind"], c["bytes"]) for c in model["collectives"]]
        check(made == expected_collectives(args.op, e), f"{mode}: {args.op} charged for {made}")
        machine = report["machine"]
        g = machine["ranks_per_node"]
        sharing = machine["node_sharing"]
        for k, t, slow in zip(sharing["active_ranks"], sharing["seconds"], sharing["slowdown"]):
            check(math.isclose(slow, t / sharing["seconds"][0], rel_tol=1e-12), f"probe slowdown at {k}: {slow}")
        check(sharing["active_ranks"] == list(range(1, g + 1)), f"probe at {sharing['active_ranks']}, node of {g}")
        n_arg = args.strong_n if mode == "strong" else args.weak_n_per_rank
        spw = 1 / model["local_rate"] if model["local_rate"] else 0.0
        for q in block["projection"]:
            p = q["ranks"]
            comm = sum(charged(machine["collectives"], c["kind"], p, c["bytes"], model["latency_s"], model["bandwidth_Bps"])
                       for c in model["collectives"])
            check(math.isclose(q["terms_s"]["latency"] + q["terms_s"]["bandwidth"], comm, rel_tol=1e-6, abs_tol=1e-15),
                  f"{mode}: {args.op} communication at {p} ranks {q['terms_s']} vs {comm} charged from the measured collectives")
            size = n_arg if mode == "strong" else n_arg * p
            work = -(-size // p) * e * {"sum": 1.0, "scan": 3.0, "filter": 1.5}[args.op]
            local = model["local_overhead_s"] + spw * slowdown(machine["node_sharing"], min(p, g)) * work
            check(math.isclose(q["terms_s"]["local"], local, rel_tol=1e-6, abs_tol=1e-15),
                  f"{mode}: {args.op} local term at {p} ranks {q['terms_s']['local']} vs {local} (shared bandwidth)")
            lo, hi = q["time_ci95_s"]
            check(lo <= q["time_s"] <= hi, f"{mode}: projected time {q['time_s']} outside its interval {lo, hi}")

    proj = block["projection"]
    proj_ranks = [q["ranks"] for q in proj]
    if status == "withheld":
        check(proj == [] and "misses" in block["projection_note"], f"{mode}: a withheld projection has {len(proj)} points")
        return
    check(math.isclose(block["projection_extrapolation"], max(proj_ranks) / max(ranks), rel_tol=1e-12),
          f"{mode}: extrapolation {block['projection_extrapolation']}")
    g = report["machine"]["ranks_per_node"]
    for nodes in [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]:
        if nodes * g > max(args.expect_ranks):
            check(nodes * g in proj_ranks, f"{mode}: projection lacks {nodes} nodes of {g} ranks")
    for q in proj:
        terms = q["terms_s"]
        check(all(v >= 0 for v in terms.values()), f"{mode}: negative term {terms}")
        check(q["hidden_s"] >= 0 and (args.op == "matmul" or q["hidden_s"] == 0), f"{mode}: hidden {q['hidden_s']}")
        check(math.isclose(sum(terms.values()), q["time_s"], rel_tol=1e-6), f"{mode}: terms do not add up at {q['ranks']}")
        check(q["dominant"] == max(terms, key=terms.get), f"{mode}: dominant {q['dominant']} of {terms}")
        if mode == "strong":
            check(math.isclose(q["efficiency"], q["speedup"] / q["ranks"], rel_tol=1e-6), f"strong: projected efficiency")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--op", required=True)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--expect-ranks", required=True, type=lambda s: [int(x) for x in s.split(",")])
    ap.add_argument("--strong-n", type=int)
    ap.add_argument("--weak-n-per-rank", type=int)
    ap.add_argument("--expect-projection", choices=["shown", "withheld"])
    args = ap.parse_args()
    with open(args.report) as f:
        report = json.load(f)
    check(report.get("op") == args.op, f"op {report.get('op')} expected {args.op}")
    check(isinstance(report.get("version"), str) and isinstance(report.get("revision"), str) and report["revision"],
          f"version {report.get('version')!r}, revision {report.get('revision')!r}")
    check(isinstance(report.get("timestamp"), str) and len(report["timestamp"]) == 20 and report["timestamp"].endswith("Z"),
          f"timestamp {report.get('timestamp')!r} (UTC, ISO 8601)")
    check(isinstance(report.get("hosts"), list) and report.get("host") in report["hosts"], f"hosts {report.get('hosts')!r}")
    check(isinstance(report.get("threads", {}).get("per_rank"), int), f"threads {report.get('threads')!r}")
    check(report.get("ranks") == args.expect_ranks, f"ranks {report.get('ranks')}")
    col = report.get("collectives", [])
    check([c["ranks"] for c in col] == args.expect_ranks, "collectives: one sample per rank count")
    check(all(c["allreduce_8B_s"] >= 0 and c["allreduce_large_s"] >= 0 for c in col), "collectives: negative time")
    check(all(c["device_bcast_small_s"] >= 0 and c["device_bcast_large_s"] >= 0 for c in col),
          "collectives: negative device time")
    check(all(c["device_large_bytes"] == c["large_bytes"] > 0 and c["device_small_bytes"] == 8 for c in col),
          "collectives: device ping sizes")
    net = report["network"]
    for key, pings in (("", [(c["ranks"], c["allreduce_8B_s"], c["allreduce_large_s"],
                              (2 * (c["ranks"] - 1) / c["ranks"]) * c["large_bytes"]) for c in col]),
                       ("device_", [(c["ranks"], c["device_bcast_small_s"], c["device_bcast_large_s"],
                                     c["device_large_bytes"]) for c in col])):
        alpha, beta = fit_pings(pings)
        check(math.isclose(net[key + "latency_s"], alpha, rel_tol=1e-9, abs_tol=1e-15)
              and math.isclose(net[key + "bandwidth_Bps"], beta, rel_tol=1e-9, abs_tol=1e-6),
              f"network: {key}latency/bandwidth {net[key + 'latency_s']}, {net[key + 'bandwidth_Bps']} vs refit {alpha}, {beta}")
    check(net.get("path") == "mpi-host" and net.get("device_path") == ("mpi-host" if report.get("backend") == "cpu" else net.get("device_path")),
          f"network: paths {net.get('path')}, {net.get('device_path')}")
    # Rounds: at least the minimum; fewer than the maximum only when no point was noisy.
    rounds = report["rounds"]
    check(report["min_rounds"] <= rounds <= report["max_rounds"], f"rounds {rounds} outside [{report['min_rounds']}, {report['max_rounds']}]")
    if rounds < report["max_rounds"]:
        noisy = [(m, p["ranks"]) for m in ("strong", "weak") if report.get(m) for p in report[m]["points"] if p["noisy"]]
        check(not noisy, f"stopped after {rounds} < {report['max_rounds']} rounds with noisy points {noisy}")
    if args.strong_n is not None:
        check_mode(report, "strong", args)
    if args.weak_n_per_rank is not None:
        check_mode(report, "weak", args)
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print(f"OK: {args.report}: {args.op} {args.dtype}, points {args.expect_ranks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
