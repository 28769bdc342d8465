#!/usr/bin/python3
"""Checks what the multi-node Slurm jobs left, against references computed here with numpy and
exact Python arithmetic (never against other output of the code under test):

  check_multinode.py probe FILE --nodes N1,N2,N3 --per-node 2 --visible 1|all
      the gpu-probe lines of jobs/gpu_binding.sbatch: every rank names its host (one of the test
      hosts, each with --per-node ranks, node-local ranks 0..per-node-1) and the GPU it bound, one
      visible GPU per rank (--visible 1) or all of the node's with device = local_rank % visible
      (--visible all), and no (host, GPU) pair twice;
  check_multinode.py apps --input X.h5:/x --a A.h5:/A --b B.h5:/B --ranks R DIR [DIR...] --one-node DIR1 --ranks-one R1
      the results of jobs/apps.sbatch: each run's JSON (verified, rank count) and HDF5 outputs
      (complete: final name, no temporary file left, shape, attributes) against numpy and
      math.fsum on the inputs; then every multi-node run against the one-node run: the same sum
      (within rounding), the same reproducible sum bitwise (and equal to the correctly rounded
      math.fsum), the same scan (within rounding), the same filtered elements bitwise, the same
      matrix product (within rounding).
Exit status 0: all checks passed; 1: some failed (each printed); 77: numpy or h5py missing.
"""
import argparse
import glob
import json
import math
import os
import re
import struct
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:
    print(f"SKIP: needs numpy and h5py ({e})")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


def finish(label):
    if failures:
        print(f"{label}: {len(failures)} check(s) failed")
        sys.exit(1)
    print(f"{label}: all checks passed")
    sys.exit(0)


# ---- probe -----------------------------------------------------------------------------------------

def check_probe(a):
    nodes = a.nodes.split(",")
    lines = [l for l in open(a.file) if l.startswith("gpu-probe ")]
    expected = len(nodes) * a.per_node
    check(len(lines) == expected, f"{a.file}: {len(lines)} gpu-probe lines, expected {expected}")
    seen, per_host = {}, {}
    for line in lines:
        f = dict(re.findall(r"(\w+)=(\S+)", line))
        rank, host = int(f["rank"]), f["host"]
        cvd = f["cuda_visible_devices"].split(",")
        check(host in nodes, f"rank {rank}: host {host} is not one of the test hosts {nodes}")
        check(f["gpu"] != "none" and f["gpu"] in cvd, f"rank {rank}: gpu {f['gpu']} not among CUDA_VISIBLE_DEVICES {cvd}")
        check(int(f["local_size"]) == a.per_node, f"rank {rank}: local_size {f['local_size']}, expected {a.per_node}")
        if a.visible == "1":
            check(len(cvd) == 1 and f["device"] == "0", f"rank {rank}: expected one visible GPU, bound as device 0: {line}")
        else:
            check(len(cvd) == a.per_node, f"rank {rank}: expected all {a.per_node} GPUs of the node visible: {line}")
            check(int(f["device"]) == int(f["local_rank"]) % len(cvd), f"rank {rank}: device is not local_rank % visible: {line}")
        seen.setdefault((host, f["gpu"]), []).append(rank)
        per_host.setdefault(host, []).append(int(f["local_rank"]))
    dup = {k: v for k, v in seen.items() if len(v) > 1}
    check(not dup, f"ranks share a (node, GPU) pair: {dup}")
    for host, local in per_host.items():
        check(sorted(local) == list(range(a.per_node)), f"host {host}: node-local ranks {sorted(local)}")
    check(sorted(per_host) == sorted(nodes), f"hosts with ranks {sorted(per_host)}, expected {sorted(nodes)}")
    if not failures:
        print("binding:", ", ".join(f"rank {r[0]} -> ({h}, gpu {g})" for (h, g), r in sorted(seen.items(), key=lambda x: x[1])))
    finish(f"probe {os.path.basename(a.file)}")


# ---- apps ------------------------------------------------------------------------------------------

def read_dataset(spec):
    path, dset = spec.split(":", 1)
    with h5py.File(path, "r") as f:
        return f[dset][...]


def bits(x):
    return struct.pack("<d", float(x))


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def load_run(directory, ranks, x, a, b):
    """Checks one run on its own; returns its JSON results and HDF5 outputs."""
    run = {"dir": directory}
    name = os.path.basename(directory.rstrip("/"))
    leftovers = [p for p in glob.glob(os.path.join(directory, ".*")) if ".tmp-" in p]
    check(not leftovers, f"{name}: temporary output files left: {leftovers}")
    n = x.shape[0]
    eps = 2.0 ** -52
    scale = float(np.abs(x).sum())
    for app, dset in (("sum", "/sum"), ("reproducible-sum", "/sum"), ("scan", "/scan"), ("filter", "/kept"), ("matmul", "/c")):
        report = os.path.join(directory, f"{app}.json")
        if not check(os.path.isfile(report), f"{name}: {app}.json missing"):
            continue
        with open(report) as fh:
            j = json.load(fh)
        check(j.get("verified") is True, f"{name}/{app}: --verify did not pass: {j.get('verify_detail')}")
        check(j.get("ranks") == ranks, f"{name}/{app}: ran on {j.get('ranks')} ranks, expected {ranks}")
        out = os.path.join(directory, f"{app}.h5")
        if not check(os.path.isfile(out), f"{name}: {app}.h5 missing"):
            continue
        with h5py.File(out, "r") as f:
            if not check(dset in f, f"{name}/{app}.h5: no dataset {dset}"):
                continue
            data = f[dset][...]
            attrs = dict(f[dset].attrs)
        check(int(attrs.get("ranks", -1)) == ranks, f"{name}/{app}.h5: attribute ranks = {attrs.get('ranks')}, expected {ranks}")
        run[app] = (j, data)

    if "sum" in run:
        j, data = run["sum"]
        exact = math.fsum(x.tolist())
        check(data.shape == (1,) and data[0] == j["result"], f"{name}/sum: file {data} and JSON {j['result']} differ")
        check(abs(j["result"] - exact) <= eps * (4 + math.sqrt(n)) * scale,
              f"{name}/sum: {j['result']!r} is not within rounding of the exact sum {exact!r}")
    if "reproducible-sum" in run:
        j, data = run["reproducible-sum"]
        exact = math.fsum(x.tolist())  # correctly rounded: the reproducible sum must equal it bitwise
        check(bits(j["result"]) == bits(exact), f"{name}/reproducible-sum: {j['result']!r} is not the correctly rounded {exact!r}")
        check(bits(data[0]) == bits(exact), f"{name}/reproducible-sum.h5: {data[0]!r} is not {exact!r}")
    if "scan" in run:
        j, data = run["scan"]
        reference = np.cumsum(x.astype(np.longdouble)).astype(np.float64)
        bound = 4 * eps * (np.abs(reference) + np.cumsum(np.abs(x))) + 1e-300
        check(data.shape == x.shape, f"{name}/scan.h5: shape {data.shape}, expected {x.shape}")
        if data.shape == x.shape:
            bad = np.nonzero(np.abs(data - reference) > bound * math.sqrt(n))[0]
            check(bad.size == 0, f"{name}/scan.h5: {bad.size} elements off the numpy prefix sum, first at {bad[:3]}")
            check(j["result"] == data[-1], f"{name}/scan: JSON last element {j['result']!r} is not the file's {data[-1]!r}")
    if "filter" in run:
        j, data = run["filter"]
        kept = x[x > 0]
        check(j["result"] == kept.size, f"{name}/filter: kept count {j['result']}, numpy keeps {kept.size}")
        check(data.shape == kept.shape and data.tobytes() == kept.tobytes(),
              f"{name}/filter.h5: the kept elements differ from numpy's x[x > 0] (shape {data.shape} vs {kept.shape})")
    if "matmul" in run:
        j, data = run["matmul"]
        reference = (a.astype(np.longdouble) @ b.astype(np.longdouble)).astype(np.float64)
        bound = eps * (a.shape[1] + 4) * (np.abs(a) @ np.abs(b)) + 1e-300
        check(data.shape == reference.shape, f"{name}/matmul.h5: shape {data.shape}, expected {reference.shape}")
        if data.shape == reference.shape:
            bad = np.argwhere(np.abs(data - reference) > bound)
            check(bad.shape[0] == 0, f"{name}/matmul.h5: {bad.shape[0]} elements off numpy's A @ B, first at {bad[:3].tolist()}")
    return run


def compare_runs(run, one):
    """A multi-node run against the one-node run of the same inputs."""
    name = os.path.basename(run["dir"].rstrip("/"))
    ref = os.path.basename(one["dir"].rstrip("/"))
    eps = 2.0 ** -52
    if "sum" in run and "sum" in one:
        s, r = run["sum"][0]["result"], one["sum"][0]["result"]
        x = one["_x"]
        check(abs(s - r) <= 2 * eps * (4 + math.sqrt(x.size)) * float(np.abs(x).sum()),
              f"sum: {name} gives {s!r}, {ref} gives {r!r}: further apart than rounding allows")
    if "reproducible-sum" in run and "reproducible-sum" in one:
        s, r = run["reproducible-sum"][0]["result"], one["reproducible-sum"][0]["result"]
        check(bits(s) == bits(r), f"reproducible sum: {name} gives {s!r}, {ref} gives {r!r}: not bitwise equal")
    if "scan" in run and "scan" in one:
        s, r = run["scan"][1], one["scan"][1]
        x = one["_x"]
        bound = 8 * eps * math.sqrt(x.size) * (np.abs(r) + np.cumsum(np.abs(x))) + 1e-300
        check(s.shape == r.shape and bool(np.all(np.abs(s - r) <= bound)), f"scan: {name} and {ref} differ beyond rounding")
    if "filter" in run and "filter" in one:
        s, r = run["filter"][1], one["filter"][1]
        check(s.tobytes() == r.tobytes(), f"filter: {name} and {ref} keep different elements")
    if "matmul" in run and "matmul" in one:
        s, r = run["matmul"][1], one["matmul"][1]
        a, b = one["_a"], one["_b"]
        bound = 2 * eps * (a.shape[1] + 4) * (np.abs(a) @ np.abs(b)) + 1e-300
        check(s.shape == r.shape and bool(np.all(np.abs(s - r) <= bound)), f"matmul: {name} and {ref} differ beyond rounding")


def check_apps(a):
    x = read_dataset(a.input)
    ma, mb = read_dataset(a.a), read_dataset(a.b)
    one = load_run(a.one_node, a.ranks_one, x, ma, mb)
    one.update({"_x": x, "_a": ma, "_b": mb})
    for directory in a.dirs:
        run = load_run(directory, a.ranks, x, ma, mb)
        compare_runs(run, one)
        if not failures:
            print(f"{os.path.basename(directory)} ({a.ranks} ranks) = {os.path.basename(a.one_node)} ({a.ranks_one} ranks): "
                  f"sum {run['sum'][0]['result']!r}, reproducible sum {run['reproducible-sum'][0]['result']!r} (bitwise), "
                  f"scan last {run['scan'][0]['result']!r}, filter kept {run['filter'][0]['result']}, "
                  f"matmul checksum {run['matmul'][0]['result']!r}")
    finish("apps")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("probe")
    p.add_argument("file")
    p.add_argument("--nodes", required=True)
    p.add_argument("--per-node", type=int, required=True)
    p.add_argument("--visible", choices=("1", "all"), required=True)
    p = sub.add_parser("apps")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--input", required=True)
    p.add_argument("--a", required=True)
    p.add_argument("--b", required=True)
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--one-node", required=True)
    p.add_argument("--ranks-one", type=int, required=True)
    a = ap.parse_args()
    if a.what == "probe":
        check_probe(a)
    else:
        check_apps(a)


if __name__ == "__main__":
    main()
