#!/usr/bin/env python3
"""stencil end to end:
  - jacobi5 and jacobi9 on fields the grids do not divide, with ghost widths 1 and 2, overlapped and
    not: the --output field bitwise equal to a numpy loop with the same arithmetic (float32 and
    float64 arrays, each product and sum rounded alone, in the stencil's order), on every grid of
    the rank count; stopped by --tol at the same check as the numpy loop; --verify against the
    exact solution;
  - checkpoint and restart: a run killed between two checkpoints, restarted on another grid and
    killed in the middle of writing its next checkpoint (which must leave the last one whole under
    its name), then restarted to the end, gives bitwise the field of a run never interrupted;
  - convolve1d against numpy.convolve on data numpy wrote (zero and periodic ends, radii wider
    than the blocks, weights given or read from HDF5);
  - bad input (at more than one rank: a refused run costs mpiexec seconds; flags that every rank
    parses alike at 1 rank): exit status 2, one line naming the flag, no output file."""
import math
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, h5py, program, random_array, write_h5, read_h5, check_output_attributes, \
    check_common_json  # noqa: E402

h = Harness(__doc__)
S = "stencil"
grids = {1: [None], 2: [None, "2x1"], 3: [None, "1x3", "3x1"], 4: [None, "2x2", "4x1"], 6: [None, "2x3", "3x2"]}
grids = grids.get(h.ranks, [None])


# ---- the numpy reference of the heat problem (apps/stencil/stencil_problem.hpp) ---------------------------

def exact(i, j, nx, ny):
    """The exact solution at cell (i, j), sin(pi x) sinh(pi (Ly - y)) / sinh(pi Ly), in the app's
    overflow-free form with Python's math (the C library's sin, exp and expm1, as the app)."""
    hh = 1.0 / (nx + 1)
    height = (ny + 1) * hh
    x, y = (j + 1) * hh, (i + 1) * hh
    a, b = math.pi * (height - y), math.pi * height
    return math.sin(math.pi * x) * math.exp(a - b) * (math.expm1(-2 * a) / math.expm1(-2 * b))


LAPLACE = {"jacobi5": [0, 0.25, 0.25, 0.25, 0.25], "jacobi9": [0, 0.2, 0.2, 0.2, 0.2, 0.05, 0.05, 0.05, 0.05]}


def numpy_jacobi(op, nx, ny, dtype, iters, weights=None, check_every=None, tol=0.0):
    """The Jacobi loop on a field with its ring of boundary cells; returns (field, iterations)."""
    w = [dtype(v) for v in (weights or LAPLACE[op])]
    u = np.zeros((ny + 2, nx + 2), dtype=dtype)
    for i in range(-1, ny + 1):
        for j in range(-1, nx + 1):
            if i < 0 or i >= ny or j < 0 or j >= nx:
                u[i + 1, j + 1] = dtype(exact(i, j, nx, ny))
    c = (slice(1, -1), slice(1, -1))
    n, s = (slice(0, -2), slice(1, -1)), (slice(2, None), slice(1, -1))
    we, ea = (slice(1, -1), slice(0, -2)), (slice(1, -1), slice(2, None))
    nw, ne = (slice(0, -2), slice(0, -2)), (slice(0, -2), slice(2, None))
    sw, se = (slice(2, None), slice(0, -2)), (slice(2, None), slice(2, None))
    k = 0
    while k < iters:
        acc = w[0] * u[c]
        acc = acc + w[1] * u[n]
        acc = acc + w[2] * u[s]
        acc = acc + w[3] * u[we]
        acc = acc + w[4] * u[ea]
        if op == "jacobi9":
            for weight, where in zip(w[5:], (nw, ne, sw, se)):
                acc = acc + weight * u[where]
        residual = np.max(np.abs(acc - u[c])) if acc.size else 0.0
        u[c] = acc
        k += 1
        if tol > 0 and check_every and k % check_every == 0 and residual < tol:
            break
    return u[c].copy(), k


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


# ---- jacobi: bitwise against numpy on every grid -------------------------------------------------------------

cases = [("jacobi5", "float32", 37, 23, 1, False, None), ("jacobi9", "float64", 31, 17, 2, True, None),
         ("jacobi5", "float64", 9, 40, 2, False, [0.1, 0.2, 0.3, 0.15, 0.25]),
         ("jacobi9", "float32", 20, 11, 1, False, [0.04, 0.2, 0.21, 0.19, 0.2, 0.04, 0.04, 0.03, 0.05])]
for c, (op, dtype, nx, ny, ghost, no_overlap, weights) in enumerate(cases):
    iters = 41
    want, _ = numpy_jacobi(op, nx, ny, np.dtype(dtype).type, iters, weights)
    for grid in (grids[c % len(grids)],):  # the grids of this rank count alternate over the cases
        what = f"{op} {dtype} {ny}x{nx} ghost {ghost} grid {grid}{' no-overlap' if no_overlap else ''} seed={h.seed}"
        out = h.path(f"jacobi_{op}_{dtype}_{nx}_{grid}.h5")
        args = ["--op", op, "--dtype", dtype, "--nx", nx, "--ny", ny, "--iters", iters, "--check-every", 7,
                "--ghost", ghost, "--output", f"{out}:/u", "--repeat", 1, "--warmup", 0]
        args += ["--grid", grid] if grid else []
        args += ["--no-overlap"] if no_overlap else []
        args += ["--weights", ",".join(repr(v) for v in weights)] if weights else []
        res = h.run_json(S, args)
        if not res:
            continue
        report, _ = res
        check_common_json(h, report, S, dtype, {"nx": nx, "ny": ny})
        h.check(report["result"]["iterations"] == iters, f"{what}: iterations {report['result']}")
        got, attrs = read_h5(out, "/u")
        check_output_attributes(h, attrs, S, h.ranks, h.backend)
        if h.check(got.shape == (ny, nx) and got.dtype == np.dtype(dtype), f"{what}: output {got.shape} {got.dtype}"):
            bad = np.argwhere(got.view(np.uint8).reshape(ny, -1) != want.view(np.uint8).reshape(ny, -1))
            h.check(same_bits(got, want), f"{what}: differs from the numpy loop at {len(bad)} bytes, first cell "
                                          f"{(bad[0][0], bad[0][1] // np.dtype(dtype).itemsize) if len(bad) else None}")

# Stopped by --tol: the same iteration (a multiple of --check-every) and field as the numpy loop.
nx, ny, tol, every = 16, 12, 1e-4, 10
want, want_iters = numpy_jacobi("jacobi5", nx, ny, np.float64, 10000, check_every=every, tol=tol)
for grid in grids[-1:]:
    out = h.path(f"tol_{grid}.h5")
    args = ["--dtype", "float64", "--nx", nx, "--ny", ny, "--iters", 10000, "--check-every", every, "--tol", tol,
            "--output", f"{out}:/u", "--repeat", 1, "--warmup", 0] + (["--grid", grid] if grid else [])
    res = h.run_json(S, args)
    if res:
        h.check(res[0]["result"]["iterations"] == want_iters and res[0]["result"]["converged"] is True,
                f"--tol on grid {grid}: {res[0]['result']}, numpy stopped at {want_iters}")
        h.check(same_bits(read_h5(out, "/u")[0], want), f"--tol on grid {grid}: field differs from the numpy loop")

# --verify: converged runs agree with the exact solution within the bound the app derives; the
# maximum error it reports is the one numpy finds in the output.
for op, tol in (("jacobi5", 1e-9), ("jacobi9", 1e-10)):
    out = h.path(f"verify_{op}.h5")
    res = h.run_json(S, ["--op", op, "--dtype", "float64", "--nx", 40, "--ny", 30, "--iters", 100000, "--check-every", 50,
                         "--tol", tol, "--verify", "--output", f"{out}:/u", "--repeat", 1, "--warmup", 0])
    if res:
        report = res[0]
        h.check(report["verified"] is True, f"--verify {op}: {report.get('verify_detail')}")
        field = read_h5(out, "/u")[0]
        ex = np.array([[exact(i, j, 40, 30) for j in range(40)] for i in range(30)])
        err = np.max(np.abs(field - ex))
        said = float(report["verify_detail"].split("max |u - exact| ")[1].split(" ")[0])
        h.check(math.isclose(err, said, rel_tol=2e-3), f"--verify {op}: reports max error {said}, numpy finds {err}")

# ---- checkpoint, kill, restart ------------------------------------------------------------------------------

PAUSED = "paused for a test"


def process_tree(root_pid):
    """The MPI ranks among root_pid's descendants: {rank: pid}."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    descendants, frontier = [], [root_pid]
    while frontier:
        p = frontier.pop()
        children = [c for c, pp in parent.items() if pp == p]
        descendants += children
        frontier += children
    ranks = {}
    for p in descendants:
        try:
            with open(f"/proc/{p}/environ", "rb") as f:
                env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
            exe = os.path.basename(os.readlink(f"/proc/{p}/exe"))
        except OSError:
            continue
        for key in (b"OMPI_COMM_WORLD_RANK", b"PMI_RANK", b"PMIX_RANK"):
            if key in env and exe.startswith("tessera"):
                ranks[int(env[key])] = p
                break
    return ranks


def run_until_paused(args, env, line_has):
    """Starts the app; once rank 0's stderr has a line with PAUSED and `line_has`, kills every process
    outright (SIGKILL). Returns the stderr lines, or None after a recorded failure."""
    cmd = h.command(S, args)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                            cwd=h.work, env={**os.environ, **env})
    lines = []
    threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True).start()
    deadline = time.time() + 90
    while time.time() < deadline and not any(PAUSED in ln and line_has in ln for ln in lines) and proc.poll() is None:
        time.sleep(0.05)
    if not any(PAUSED in ln and line_has in ln for ln in lines):
        proc.kill()
        proc.wait()
        h.fail(f"the run never paused ({line_has}): {' '.join(map(str, cmd))}\n{''.join(lines)}")
        return None
    for pid in process_tree(proc.pid).values():
        os.kill(pid, signal.SIGKILL)
    proc.kill()
    proc.wait()
    return lines


def checkpoint_state(path):
    with h5py.File(path, "r") as f:
        d = f["/field"]
        it = d.attrs["iteration"]
        return (it.decode() if isinstance(it, bytes) else str(it)), d[...]


nx, ny, iters = 33, 21, 300
common = ["--op", "jacobi9", "--dtype", "float32", "--nx", nx, "--ny", ny, "--iters", iters, "--check-every", 25]
reference = h.path("uninterrupted.h5")
res = h.run_json(S, common + ["--output", f"{reference}:/u", "--repeat", 1, "--warmup", 0])
ck = h.path("ck.h5")
first_grid = ["--grid", grids[1]] if len(grids) > 1 else []  # the restarts take MPI_Dims_create's grid
if res and run_until_paused(common + ["--checkpoint", ck, "--checkpoint-every", 100] + first_grid,
                            {"TESSERA_TEST_PAUSE_AFTER_CHECKPOINT": "60"}, "iteration 100 "):
    h.check(os.path.exists(ck), "no checkpoint after the first was written")
    first = checkpoint_state(ck)
    h.check(first[0] == "100", f"the checkpoint holds iteration {first[0]}, expected 100")
    # Restarted (on MPI_Dims_create's grid), killed half-way through writing the next checkpoint: the
    # file under the final name is still the whole checkpoint of iteration 100.
    if run_until_paused(common + ["--restart", ck, "--checkpoint", ck, "--checkpoint-every", 100],
                        {"TESSERA_TEST_PAUSE_IN_WRITE": "60"}, "half of its slab"):
        again = checkpoint_state(ck)
        h.check(again[0] == "100" and same_bits(again[1], first[1]),
                f"a checkpoint killed mid-write changed the last one: iteration {again[0]}")
    restarted = h.path("restarted.h5")
    res2 = h.run_json(S, common + ["--restart", ck, "--output", f"{restarted}:/u"])
    if res2:
        h.check(res2[0]["result"]["iterations"] == iters, f"restarted run: {res2[0]['result']}")
        h.check(same_bits(read_h5(restarted, "/u")[0], read_h5(reference, "/u")[0]),
                "kill + restart: the final field differs from the uninterrupted run's")
    with h5py.File(ck, "r") as f:
        h.check(f["/field"].attrs["app"] in (b"tessera-stencil", "tessera-stencil"), "checkpoint attribute app")

# ---- convolve1d against numpy.convolve ---------------------------------------------------------------------

inp = h.path("conv_in.h5")
# The FFT path (--method fft, or auto past the crossover) within its bound (fft_convolve.hpp),
# (21 log2 N + 5) u ||w||_1 sqrt(N) max|a|, N from the report.
for k, (dtype, n, radius, boundary, from_file, method) in enumerate(
        [("float64", 1000, 3, "zero", False, None), ("float32", 257, 8, "periodic", True, None),
         ("float64", 50, 20, "zero", False, None), ("float64", 50, 20, "periodic", True, None),
         ("float64", 7, 0, "zero", False, None), ("float32", 3, 5, "zero", False, None),
         ("float64", 2, 1, "periodic", False, None), ("float64", 5003, 50, "zero", False, "fft"),
         ("float32", 3001, 45, "periodic", False, "fft"), ("float64", 50, 20, "periodic", False, "fft"),
         ("float32", 20011, 300, "zero", True, "auto"), ("float64", 4099, 60, "zero", False, "direct")]):
    a = random_array(h.rng, np.dtype(dtype), n)
    w = random_array(h.rng, np.dtype("float64"), 2 * radius + 1)
    write_h5(inp, f"/a{k}", a)
    what = f"convolve1d {dtype} n={n} radius={radius} {boundary} weights {'file' if from_file else 'list'} seed={h.seed}"
    args = ["--op", "convolve1d", "--input", f"{inp}:/a{k}", "--boundary", boundary, "--output", f"{h.path('conv_out.h5')}:/c{k}",
            "--verify"]
    if method:
        args += ["--method", method]
        what += f" --method {method}"
    if from_file:
        write_h5(inp, f"/w{k}", w)
        args += ["--weights", f"{inp}:/w{k}"]
    else:
        args += ["--weights", ",".join(repr(float(v)) for v in w)]
    res = h.run_json(S, args)
    if not res:
        continue
    h.check(res[0]["verified"] is True, f"{what}: not verified: {res[0].get('verify_detail')}")
    got = read_h5(h.path("conv_out.h5"), f"/c{k}")[0]
    wt = w.astype(dtype).astype(np.float64)  # the weights the app used, in its type
    x = a.astype(np.float64)
    if boundary == "zero":
        ref = np.convolve(x, wt)[radius:radius + n]
        mag = np.convolve(np.abs(x), np.abs(wt))[radius:radius + n]
    else:
        wrapped = np.concatenate([x[n - radius:], x, x[:radius]]) if radius else x
        ref = np.convolve(wrapped, wt, "valid")
        mag = np.convolve(np.abs(wrapped), np.abs(wt), "valid")
    tol = (2 * radius + 2) * np.finfo(dtype).eps * mag + np.finfo(dtype).tiny
    params = res[0].get("parameters", {})
    if method == "direct":
        h.check(params.get("method") == "direct", f"{what}: took {params.get('method')}")
    if method == "fft" and n > 2 * radius * h.ranks:  # every rank has inner outputs
        h.check(params.get("method") == "fft", f"{what}: took {params.get('method')}")
    if method == "auto" and radius >= 40 and n // h.ranks - 2 * radius >= 4096:  # past the cpu crossover, a segment a rank
        h.check(params.get("method") == "fft", f"{what}: auto took {params.get('method')}")
    if params.get("method") == "fft":
        nfft = params["fft_length"]
        u = np.finfo(dtype).eps / 2
        fft_bound = (21 * np.log2(nfft) + 5) * u * np.abs(wt).sum() * np.sqrt(nfft) * np.abs(x).max()
        tol = np.maximum(tol, fft_bound)
    if h.check(got.shape == (n,) and got.dtype == np.dtype(dtype), f"{what}: output {got.shape} {got.dtype}"):
        bad = np.argwhere(np.abs(got - ref) > tol)
        h.check(bad.size == 0, f"{what}: {len(bad)} outputs beyond tolerance, first {bad[:1].tolist()}")

# ---- bad input --------------------------------------------------------------------------------------------

write_h5(h.path("other.h5"), "/field", np.zeros((5, 7), dtype=np.float32))  # not a checkpoint
# Files a checkpoint must never replace: one with a dataset of the user's, and the run's --weights.
precious = h.path("precious.h5")
write_h5(precious, "/precious", np.arange(7.0))
weights_file = h.path("weights.h5")
write_h5(weights_file, "/w", np.array(LAPLACE["jacobi5"]))
kept = {path: open(path, "rb").read() for path in (precious, weights_file)}
bad_cases = [
    (["--nx", 8, "--ny", 8, "--iters", 4, "--checkpoint", precious, "--checkpoint-every", 2],
     ["--checkpoint", "'/precious'"]),
    (["--nx", 8, "--ny", 8, "--iters", 4, "--weights", f"{weights_file}:/w", "--checkpoint", weights_file,
      "--checkpoint-every", 2], ["--checkpoint", "--weights"]),
    (common[:-4] + ["--iters", 50, "--restart", ck], ["--restart", "iteration 100", "beyond --iters 50"]),
    (["--grid", "2x2" if h.ranks != 4 else "3x1"], ["--grid"]),
    (["--grid", f"1x{h.ranks}", "--nx", h.ranks - 1, "--ny", 8], ["--nx", "cannot be cut"]),
    (["--grid", f"{h.ranks}x1", "--ny", h.ranks - 1, "--nx", 8], ["--ny", "cannot be cut"]),
    # Flags every rank parses alike, to a verdict that does not depend on the rank count: 1 rank.
    (["--ny", "-3"], ["--ny", "negative"], 1),
    (["--op", "convolve1d", "--radius", "-1"], ["--radius", "negative"], 1),
    (["--op", "convolve1d", "--n", 5, "--radius", 6, "--boundary", "periodic"], ["--radius", "wraps"], 1),
    (["--op", "convolve1d", "--weights", "1,2"], ["--weights", "odd"], 1),
    (["--op", "convolve1d", "--method", "fast"], ["--method", "fast"], 1),
    (["--op", "jacobi5", "--method", "fft"], ["--method", "does not apply"], 1),
    (["--op", "jacobi5", "--weights", "1,2,3,4"], ["--weights", "5 weights"], 1),
    (["--op", "convolve1d", "--nx", 10], ["--nx", "does not apply"], 1),
    (["--checkpoint-every", 10], ["--checkpoint-every", "--checkpoint"], 1),
    (["--nx", 5, "--ny", 5, "--restart", h.path("other.h5")], ["--restart", "not a checkpoint"]),
    (["--op", "jacobi9", "--dtype", "float32", "--nx", 34, "--ny", ny, "--iters", 5, "--restart", ck], ["--restart", "33"]),
    (["--op", "jacobi5", "--dtype", "float32", "--nx", nx, "--ny", ny, "--restart", ck], ["--restart", "jacobi9"]),
    (["--restart", ck, "--repeat", 3], ["--repeat"]),
    (["--restart", "auto"], ["--restart auto", "--checkpoint-dir"], 1),
]
for args, words, *count in bad_cases if h.ranks > 1 else []:
    out = h.path("bad_out.h5")
    status, stdout, err = h.run(S, [*args, "--output", f"{out}:/u", "--repeat", 1, "--warmup", 0]
                                if "--repeat" not in args else [*args, "--output", f"{out}:/u"],
                                ranks=count[0] if count else None)
    lines = [ln for ln in err.splitlines() if ln.startswith(program(S))]
    what = f"bad input {args}"
    h.check(status == 2, f"{what}: status {status}, expected 2\n{err}")
    h.check(len(lines) == 1 and all(w in lines[0] for w in words), f"{what}: expected one line naming {words}, got {err!r}")
    h.check(not os.path.exists(out), f"{what}: an output file was written")
for path, content in kept.items() if h.ranks > 1 else []:
    h.check(open(path, "rb").read() == content, f"{path}: a refused checkpoint changed the file")
h.finish()
