#!/usr/bin/env python3
"""Checks the "two_level" part of a scaling app report against references computed here from the
report's own measurements: the intra- and inter-node latency and bandwidth refitted by least
squares (written out below, not the app's code), the collectives' predictions on more than two
nodes recomputed from the network fitted on at most two, the model check's arithmetic and the
projection's (nodes x ranks per node, terms adding up to the time). Prints the 3-node prediction
errors. Standard library only.

usage: check_two_level_json.py REPORT.json --nodes N --ranks-per-node G
                               [--max-inter-Bps B]   the shaped link's rate: the measured inter-node
                                                      bandwidths must not exceed it (x 1.25)
"""
import argparse
import json
import math
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def close(a, b, rel=1e-9):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def depth(p):
    return 0 if p <= 1 else math.ceil(math.log2(p) - 1e-12)


def ring(p):
    return 0.0 if p <= 1 else 2.0 * (p - 1) / p


def fit_level(samples, size_key, small, large, bytes_key, per_byte):
    """alpha: least squares of t_small = alpha depth(p); 1/beta: least squares through the origin of
    t_large - alpha depth(p) = per_byte(p) bytes / beta. Samples on one rank carry nothing."""
    use = [s for s in samples if s[size_key] >= 2]
    dd = sum(depth(s[size_key]) ** 2 for s in use)
    if dd == 0:
        return 0.0, 0.0
    alpha = max(0.0, sum(depth(s[size_key]) * s[small] for s in use) / dd)
    xx = xy = 0.0
    for s in use:
        x = per_byte(s[size_key]) * s[bytes_key]
        if x > 0:
            xx += x * x
            xy += x * (s[large] - alpha * depth(s[size_key]))
    return alpha, (xx / xy if xx > 0 and xy > 0 else 0.0)


def block_shape(p, g):
    return (p + g - 1) // g, min(p, g)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--ranks-per-node", type=int, required=True)
    ap.add_argument("--max-inter-Bps", type=float)
    a = ap.parse_args()
    with open(a.report) as f:
        r = json.load(f)
    t = r.get("two_level")
    if not check(isinstance(t, dict), "no two_level object"):
        return finish(a)
    g = a.ranks_per_node
    check(t.get("nodes") == a.nodes, f"two_level.nodes = {t.get('nodes')}, expected {a.nodes}")
    check(t.get("ranks_per_node") == g, f"two_level.ranks_per_node = {t.get('ranks_per_node')}, expected {g}")
    check(t.get("placement") == "block", f"placement {t.get('placement')}: {t.get('note')}")
    intra, inter = t["collectives"]["intra"], t["collectives"]["inter"]
    expect_intra = sorted({k for k in [2 ** i for i in range(1, 20)] if k < g} | ({g} if g >= 2 else set()))
    expect_inter = sorted({k for k in [2 ** i for i in range(1, 20)] if k < a.nodes} | ({a.nodes} if a.nodes >= 2 else set()))
    check([s["ranks"] for s in intra] == expect_intra, f"intra-node groups {[s['ranks'] for s in intra]}, expected {expect_intra}")
    check([s["nodes"] for s in inter] == expect_inter, f"inter-node groups {[s['nodes'] for s in inter]}, expected {expect_inter}")
    for s in intra + inter:
        for k in ("allreduce_8B_s", "allreduce_large_s", "device_bcast_small_s", "device_bcast_large_s"):
            check(isinstance(s.get(k), (int, float)) and s[k] > 0, f"collective sample {s}: {k} not a positive time")

    # The network, refitted from the samples.
    net = t["network"]
    def levels(inter_samples):
        hi = fit_level(intra, "ranks", "allreduce_8B_s", "allreduce_large_s", "large_bytes", ring)
        he = fit_level(inter_samples, "nodes", "allreduce_8B_s", "allreduce_large_s", "large_bytes", ring)
        di = fit_level(intra, "ranks", "device_bcast_small_s", "device_bcast_large_s", "device_large_bytes", lambda p: 1.0)
        de = fit_level(inter_samples, "nodes", "device_bcast_small_s", "device_bcast_large_s", "device_large_bytes", lambda p: 1.0)
        return hi, he, di, de
    hi, he, di, de = levels(inter)
    for name, (alpha, beta), level, prefix in (("intra host", hi, "intra", ""), ("inter host", he, "inter", ""),
                                              ("intra device", di, "intra", "device_"), ("inter device", de, "inter", "device_")):
        check(close(net[level][prefix + "latency_s"], alpha, 1e-6), f"{name} latency {net[level][prefix + 'latency_s']} != refit {alpha}")
        check(close(net[level][prefix + "bandwidth_Bps"], beta, 1e-6), f"{name} bandwidth {net[level][prefix + 'bandwidth_Bps']} != refit {beta}")
    if a.max_inter_Bps and a.nodes >= 2:
        for key in ("bandwidth_Bps", "device_bandwidth_Bps"):
            bw = net["inter"][key]
            check(0 < bw <= 1.25 * a.max_inter_Bps,
                  f"inter-node {key} {bw:.4g} B/s is not below the shaped link's {a.max_inter_Bps:.4g} B/s: "
                  "the inter-node collectives did not cross the link")

    # Collectives on more than two nodes, from the network fitted on at most two.
    fit = levels([s for s in inter if s["nodes"] <= 2])
    samples = {s["ranks"]: s for s in r["collectives"]}
    expect_checked = [p for p in samples if block_shape(p, g)[0] > 2]
    checked = t["collective_check"]
    check(sorted(q["ranks"] for q in checked) == sorted(expect_checked),
          f"collective_check covers {[q['ranks'] for q in checked]}, expected {expect_checked}")
    for q in checked:
        n, per = block_shape(q["ranks"], g)
        s = samples[q["ranks"]]
        (ai, bi), (ae, be), (dai, dbi), (dae, dbe) = fit
        small = ai * depth(per) + ae * depth(n)
        large = small + (ring(per) * s["large_bytes"] / bi if bi else 0) + (ring(n) * s["large_bytes"] / be if be else 0)
        dev = dai * depth(per) + dae * depth(n) + (s["device_large_bytes"] / dbi if dbi and per > 1 else 0) + \
            (s["device_large_bytes"] / dbe if dbe and n > 1 else 0)
        for key, ref, meas in (("allreduce_8B", small, s["allreduce_8B_s"]), ("allreduce_large", large, s["allreduce_large_s"]),
                               ("device_bcast_large", dev, s["device_bcast_large_s"])):
            v = q[key]
            check(close(v["predicted_s"], ref, 1e-6), f"collective {key} at {q['ranks']} ranks: predicted {v['predicted_s']}, recomputed {ref}")
            check(close(v["measured_s"], meas), f"collective {key} at {q['ranks']} ranks: measured {v['measured_s']} != sample {meas}")
            check(close(v["relative_error"], (ref - meas) / meas, 1e-6), f"collective {key}: relative error")
            print(f"{q['ranks']} ranks on {n} nodes x {per}: {key}: two-level {v['predicted_s']:.4g} s, measured {meas:.4g} s, "
                  f"error {100 * v['relative_error']:+.1f}% (one-level {100 * v['one_level_relative_error']:+.1f}%)")

    for mode in ("strong", "weak"):
        if mode not in t:
            continue
        block = t[mode]
        points = {p["ranks"]: p for p in r[mode]["points"]}
        expect = [p for p in points if block_shape(p, g)[0] > 2]
        got = block["check"]["points"]
        check(sorted(q["ranks"] for q in got) == sorted(expect), f"{mode} check covers {[q['ranks'] for q in got]}, expected {expect}")
        for q in got:
            terms = q["terms_s"]
            check(close(sum(terms.values()), q["predicted_s"], 1e-9), f"{mode} check at {q['ranks']}: terms do not add up")
            check(close(q["measured_s"], points[q["ranks"]]["time_s"]), f"{mode} check at {q['ranks']}: measured time differs from the point")
            check(close(q["relative_error"], (q["predicted_s"] - q["measured_s"]) / q["measured_s"], 1e-9), f"{mode} check: relative error")
            check((q["nodes"], q["per_node"]) == block_shape(q["ranks"], g), f"{mode} check at {q['ranks']}: shape")
            print(f"{r['op']} {mode}, fitted on 1-2 nodes, at {q['nodes']} nodes x {q['per_node']}: two-level {q['predicted_s']:.4g} s, "
                  f"measured {q['measured_s']:.4g} s, error {100 * q['relative_error']:+.1f}% "
                  f"(one-level {100 * q['one_level_relative_error']:+.1f}%)")
        proj = block["projection"]
        check([q["nodes"] for q in proj] == [2 ** i for i in range(11)] if a.nodes >= 2 else [q["nodes"] for q in proj] == [1],
              f"{mode} projection nodes {[q['nodes'] for q in proj]}")
        t1 = None
        for q in proj:
            check(q["gpus_per_node"] == g and q["ranks"] == q["nodes"] * g, f"{mode} projection row {q['nodes']}: nodes x gpus")
            check(close(sum(q["terms_s"].values()), q["time_s"], 1e-9), f"{mode} projection at {q['nodes']} nodes: terms do not add up")
            check(q["dominant"] == max(q["terms_s"], key=q["terms_s"].get), f"{mode} projection at {q['nodes']} nodes: dominant")
            check(q["time_s"] > 0, f"{mode} projection at {q['nodes']} nodes: time {q['time_s']}")
    return finish(a)


def finish(a):
    if failures:
        for f in failures:
            print("FAIL:", f)
        print(f"{a.report}: {len(failures)} two-level check(s) failed")
        sys.exit(1)
    print(f"OK: {a.report}: two levels, {a.nodes} nodes x {a.ranks_per_node}")
    sys.exit(0)


if __name__ == "__main__":
    main()
