#!/usr/bin/env python3
"""stencil's user-stencil ops on Field<T, D> end to end:
  - --nz: the 7-point heat step (star:1, the defaults) on a 3-D grid the sizes do not divide, its
    --verify, and its --output against numpy's g^m u0 (the exact solution of the discrete problem);
  - box:2 on a periodic 3-D field with weights from --weights-file: --verify, and --output against a
    numpy loop of one step per iteration (np.roll);
  - checkpoints: a run of star:2 checkpointing every 4 steps, restarted from its first checkpoint on
    another rank count and grid, ends with bitwise the field of the run never interrupted; a run
    stopped by SIGUSR1 (sent to mpiexec, which forwards it) writes a checkpoint after the step it is
    in and exits with status 75, and --restart auto (the interval auto by default) ends it bitwise;
  - --restart auto passes a user's file under a checkpoint's name by, sets a corrupt checkpoint
    aside (NAME.corrupt) and resumes from the one before it, bitwise; --checkpoint-keep removes only
    the app's own checkpoints, never a user's file under a checkpoint's name (named once a run);
  - prk-star:2 (2-D): --verify, and the L1 norm of the --output field over PRK's interior against
    PRK's closed form (iterations + 1) (COEFX + COEFY), with PRK's MFlops/s in the report; a run
    checkpointing every 3 steps, restarted from its first checkpoint on another rank count, ends
    with bitwise the OUT of the run never interrupted, verified;
  - bad input at 1 rank: exit status 2, one line naming the flag, no output file; weights files
    that hold no usable list, and a --json naming the restart file, the weights file or a
    checkpoint's name in the checkpoint directory, refused with those files left as they were and
    no checkpoint directory made; a field too large to number names --nx/--ny/--nz."""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, np, program, read_h5, signal_after_pause, write_h5  # noqa: E402

h = Harness(__doc__)
S = "stencil"
nx, ny, nz = 17, 13, 11


def sine_mode(shape):
    axes = [np.sin(math.pi * (np.arange(n) + 1) / (n + 1)) for n in shape]
    return np.einsum("i,j,k->ijk", *axes) if len(shape) == 3 else np.outer(*axes)


# ---- the heat step, 3-D ----------------------------------------------------------------------------------
steps = 20
out = h.path("heat.h5")
res = h.run_json(S, ["--nx", nx, "--ny", ny, "--nz", nz, "--iters", steps, "--verify", "--output", f"{out}:/u",
                     "--repeat", 1, "--warmup", 0])
if res:
    h.check(res[0]["verified"] is True, f"heat: not verified: {res[0].get('verify_detail')}")
    got = read_h5(out, "/u")[0]
    g = 0.25 + 2 * 0.125 * sum(math.cos(math.pi / (n + 1)) for n in (nx, ny, nz))
    want = g ** steps * sine_mode((nx, ny, nz))
    if h.check(got.shape == (nx, ny, nz) and got.dtype == np.float64, f"heat: output {got.shape} {got.dtype}"):
        err = np.abs(got - want).max()
        h.check(err <= 1e-13, f"heat: max |u - g^m u0| = {err}")

# ---- box:2, periodic, weights from a file ----------------------------------------------------------------
w = [0.25, 0.01, -0.005]
weights_file = h.path("weights.txt")
with open(weights_file, "w") as f:
    f.write("0.25\n0.01, -0.005\n")
box_steps = 3
out = h.path("box.h5")
grid = {3: "1x3x1", 2: "1x1x2"}.get(h.ranks)
res = h.run_json(S, ["--nx", nx, "--ny", ny, "--nz", nz, "--op", "box:2", "--boundary", "periodic", "--weights-file",
                     weights_file, "--iters", box_steps, "--verify", "--output", f"{out}:/u", "--repeat", 1, "--warmup", 0]
                 + (["--grid", grid] if grid else []))
if res:
    h.check(res[0]["verified"] is True, f"box: not verified: {res[0].get('verify_detail')}")
    u = sine_mode((nx, ny, nz))
    mag = np.abs(u)
    for _ in range(box_steps):
        nxt = np.zeros_like(u)
        m = np.zeros_like(u)
        for d0 in range(-2, 3):
            for d1 in range(-2, 3):
                for d2 in range(-2, 3):
                    shifted = np.roll(u, (-d0, -d1, -d2), axis=(0, 1, 2))  # shifted[i] = u[i + d]
                    wk = w[max(abs(d0), abs(d1), abs(d2))]
                    nxt += wk * shifted
                    m += abs(wk) * np.roll(mag, (-d0, -d1, -d2), axis=(0, 1, 2))
        u, mag = nxt, m
    got = read_h5(out, "/u")[0]
    tol = 64 * box_steps * np.finfo(np.float64).eps * mag
    bad = np.argwhere(np.abs(got - u) > tol)
    h.check(bad.size == 0, f"box: {len(bad)} cells differ from numpy's loop, first {bad[:1].tolist()}")

# ---- checkpoint at h.ranks, restart at one rank fewer (or 2), bit for bit -------------------------------
common = ["--nx", nx, "--ny", ny, "--nz", nz, "--op", "star:2", "--weights", "0.4,0.07,0.03", "--iters", 9]
ck_dir = h.path("ck")
full = h.path("full.h5")
status, _, err = h.run(S, [*common, "--checkpoint-dir", ck_dir, "--checkpoint-every", 4, "--output", f"{full}:/u"])
h.check(status == 0, f"checkpointing run: status {status}\n{err}")
first = os.path.join(ck_dir, "checkpoint-000000000004.h5")
h.check(os.path.exists(first) and os.path.exists(os.path.join(ck_dir, "checkpoint-000000000008.h5")),
        f"checkpoints: {sorted(os.listdir(ck_dir)) if os.path.isdir(ck_dir) else 'no directory'}")
restarted = h.path("restarted.h5")
other = max(1, h.ranks - 1) if h.ranks != 1 else 2
status, _, err = h.run(S, [*common, "--restart", first, "--output", f"{restarted}:/u"], ranks=other)
if h.check(status == 0, f"restart at {other} rank(s): status {status}\n{err}"):
    a, b = read_h5(full, "/u")[0], read_h5(restarted, "/u")[0]
    h.check(a.shape == (nx, ny, nz) and a.tobytes() == b.tobytes(),
            f"restart at {other} rank(s) from iteration 4: the field differs from the uninterrupted run's")

# ---- --restart auto past a corrupt checkpoint, pruning past files the app did not write -------------------
# The directory holds the first checkpoint (iteration 4), a file of junk under iteration 6's name and
# HDF5 files of the user's under iteration 2's and 12's names (one with a /field of its own, one
# without). --restart auto passes the user's newest file by (a warning, the file as it was: an HDF5
# file that opens is never taken for a damaged checkpoint), sets the junk aside as NAME.corrupt and resumes
# from 4 (bitwise the uninterrupted run); --checkpoint-keep 1 then removes the run's own older
# checkpoints after each one (every step), never the user's files, and names each of those once.
auto_dir = h.path("ck_auto")
os.makedirs(auto_dir, exist_ok=True)
with open(first, "rb") as f_in, open(os.path.join(auto_dir, "checkpoint-000000000004.h5"), "wb") as f_out:
    f_out.write(f_in.read())
junk = os.path.join(auto_dir, "checkpoint-000000000006.h5")
with open(junk, "w") as f:
    f.write("not a checkpoint\n")
users = os.path.join(auto_dir, "checkpoint-000000000002.h5")
write_h5(users, "/field", np.arange(5.0))
users_bytes = open(users, "rb").read()
users_newest = os.path.join(auto_dir, "checkpoint-000000000012.h5")
write_h5(users_newest, "/data", np.arange(3.0))
newest_bytes = open(users_newest, "rb").read()
resumed_auto = h.path("resumed_auto.h5")
status, _, err = h.run(S, [*common, "--checkpoint-dir", auto_dir, "--restart", "auto", "--checkpoint-every", 1,
                           "--checkpoint-keep", 1, "--output", f"{resumed_auto}:/u"])
if h.check(status == 0, f"--restart auto past a corrupt checkpoint: status {status}\n{err}"):
    h.check(read_h5(full, "/u")[0].tobytes() == read_h5(resumed_auto, "/u")[0].tobytes(),
            "--restart auto from iteration 4: the field differs from the uninterrupted run's")
    left = sorted(os.listdir(auto_dir))
    aside = junk + ".corrupt"
    h.check(os.path.exists(aside) and open(aside).read() == "not a checkpoint\n", f"the corrupt checkpoint not set aside: {left}")
    h.check(os.path.exists(users) and open(users, "rb").read() == users_bytes, f"the user's file was removed or changed: {left}")
    h.check(open(users_newest, "rb").read() == newest_bytes, "the user's file under iteration 12's name changed")
    # The run's own checkpoints from 4 on (every step: 5 to 8): only the newest is kept.
    h.check(left == ["checkpoint-000000000002.h5", "checkpoint-000000000006.h5.corrupt", "checkpoint-000000000008.h5",
                     "checkpoint-000000000012.h5"], f"--checkpoint-keep 1 left {left}")
    for name in ("checkpoint-000000000002.h5", "checkpoint-000000000012.h5"):
        said = [ln for ln in err.splitlines() if name in ln and "not a checkpoint of this app" in ln]
        h.check(len(said) == 1, f"the user's {name}: {len(said)} warnings, expected one:\n{err}")

# ---- SIGUSR1: a checkpoint after the current step, exit 75; --restart auto ends it bitwise -----------------
long_run = [*common[:-1], 60]  # the same problem, 60 steps
reference = h.path("uninterrupted.h5")
status, _, err = h.run(S, [*long_run, "--output", f"{reference}:/u"])
h.check(status == 0, f"uninterrupted run of 60 steps: status {status}\n{err}")
sig_dir = h.path("ck_signal")
cmd = h.command(S, [*long_run, "--checkpoint-dir", sig_dir, "--checkpoint-every", 10])
status, lines, paused = signal_after_pause(h, cmd, "iteration 10 ")
h.check(paused, f"the run never paused after its first checkpoint: {' '.join(map(str, cmd))}\n{''.join(lines)}")
stop_lines = [ln for ln in lines if "SIGUSR1" in ln and "requeue" in ln]
h.check(status == 75, f"SIGUSR1: status {status}, expected 75\n{''.join(lines)}")
files = sorted(os.listdir(sig_dir)) if os.path.isdir(sig_dir) else []
stopped_at = int(files[-1][11:23]) if files else -1
h.check(len(files) == 2 and files[0] == "checkpoint-000000000010.h5" and 10 < stopped_at < 60,
        f"SIGUSR1: the directory holds {files}, expected the checkpoint at 10 and one written at the signal")
h.check(len(stop_lines) == 1 and files and files[-1] in stop_lines[0],
        f"SIGUSR1: expected one line naming the last checkpoint, got {''.join(lines)!r}")
resumed = h.path("resumed.h5")
report = h.path("resumed.json")
status, _, err = h.run(S, [*long_run, "--checkpoint-dir", sig_dir, "--restart", "auto", "--output", f"{resumed}:/u",
                           "--json", report], ranks=other)
if h.check(status == 0, f"--restart auto at {other} rank(s): status {status}\n{err}"):
    with open(report) as f:
        rep = json.load(f)
    h.check(rep["result"]["resumed_iteration"] == stopped_at and rep["result"]["iterations"] == 60
            and rep["parameters"]["checkpoint_every"] == "auto",
            f"--restart auto: result {rep['result']}, checkpoint_every {rep['parameters'].get('checkpoint_every')!r}")
    h.check(read_h5(resumed, "/u")[0].tobytes() == read_h5(reference, "/u")[0].tobytes(),
            "SIGUSR1 + --restart auto: the field differs from the uninterrupted run's")

# ---- PRK's star, 2-D ------------------------------------------------------------------------------------
n, r, iters = 41, 2, 6
out = h.path("prk.h5")
res = h.run_json(S, ["--nx", n, "--ny", n, "--op", f"prk-star:{r}", "--iters", iters, "--verify", "--output",
                     f"{out}:/out", "--repeat", 1, "--warmup", 0])
if res:
    report = res[0]
    h.check(report["verified"] is True, f"prk: not verified: {report.get('verify_detail')}")
    h.check(report["result"].get("prk_mflops", 0) > 0, f"prk: no MFlops/s in {report['result']}")
    got = read_h5(out, "/out")[0]
    norm = np.abs(got[r:n - r, r:n - r]).sum() / (n - 2 * r) ** 2
    h.check(abs(norm - (iters + 1) * 2.0) <= 1e-8, f"prk: L1 norm {norm}, PRK's reference {(iters + 1) * 2.0}")
    outside = np.concatenate([got[:r].ravel(), got[n - r:].ravel(), got[:, :r].ravel(), got[:, n - r:].ravel()])
    h.check(not outside.any(), "prk: cells outside PRK's interior changed")
    # Checkpoints hold IN and OUT: a restart on another rank count ends bitwise where this run ended.
    prk_args = ["--nx", n, "--ny", n, "--op", f"prk-star:{r}", "--iters", iters, "--repeat", 1, "--warmup", 0]
    prk_dir = h.path("ck_prk")
    status, _, err = h.run(S, [*prk_args, "--checkpoint-dir", prk_dir, "--checkpoint-every", 3])
    prk_first = os.path.join(prk_dir, "checkpoint-000000000003.h5")
    if h.check(status == 0 and os.path.exists(prk_first), f"prk checkpoints: status {status}\n{err}"):
        prk_restarted = h.path("prk_restarted.h5")
        res = h.run_json(S, [*prk_args, "--restart", prk_first, "--verify", "--output", f"{prk_restarted}:/out"],
                         ranks=other)
        if res:
            h.check(res[0]["verified"] is True and res[0]["result"]["resumed_iteration"] == 3
                    and res[0]["result"]["prk_mflops"] > 0,
                    f"prk restart: verified {res[0].get('verified')}, result {res[0]['result']}")
            h.check(read_h5(prk_restarted, "/out")[0].tobytes() == got.tobytes(),
                    f"prk restart at {other} rank(s) from iteration 3: OUT differs from the uninterrupted run's")
        # A checkpoint whose OUT fails its checksum (one cell changed behind the checksum's back):
        # --restart auto sets it aside and starts from the beginning, with OUT as a first start has it.
        import h5py  # noqa: E402
        bad_dir = h.path("ck_prk_bad")
        os.makedirs(bad_dir, exist_ok=True)
        bad_first = os.path.join(bad_dir, "checkpoint-000000000003.h5")
        with open(prk_first, "rb") as f_in, open(bad_first, "wb") as f_out:
            f_out.write(f_in.read())
        with h5py.File(bad_first, "r+") as f:
            f["out"][n // 2, n // 2] += 1.0
        prk_fresh = h.path("prk_fresh.h5")
        status, _, err = h.run(S, [*prk_args, "--checkpoint-dir", bad_dir, "--restart", "auto", "--output",
                                   f"{prk_fresh}:/out"])
        if h.check(status == 0 and os.path.exists(bad_first + ".corrupt"),
                   f"prk --restart auto past a corrupt checkpoint: status {status}, {os.listdir(bad_dir)}\n{err}"):
            h.check(read_h5(prk_fresh, "/out")[0].tobytes() == got.tobytes(),
                    "prk --restart auto from the beginning: OUT differs from the uninterrupted run's")

# ---- bad input, at 1 rank --------------------------------------------------------------------------------
small = ["--nx", 5, "--ny", 4, "--nz", 3, "--iters", 2]
bad_cases = [
    ([*small, "--grid", "1x2x1"], ["--grid", "2 ranks"]),
    ([*small, "--op", "box:4", "--boundary", "periodic"], ["--op", "radius 4", "--nz"]),
    ([*small, "--weights", "1,2,3"], ["--weights", "2 weights"]),
    ([*small, "--op", "star:2", "--weights-file", weights_file, "--weights", "1"], ["--weights-file"]),
    ([*small, "--op", "box:1", "--weights-file", weights_file], ["--weights-file", "2 weights", "got 3"]),
    ([*small, "--tol", "1e-3"], ["--tol", "does not apply"]),
    ([*small, "--op", "jacobi9"], ["--op", "jacobi9"]),
    ([*small, "--op", "prk-star:2"], ["--op", "prk-star", "--nz"]),
    (["--nx", 6, "--ny", 4, "--nz", 3, "--op", "star:2", "--weights", "0.4,0.07,0.03", "--restart", first],
     ["--restart", "17 x 13 x 11"]),
]
# Weights files that hold no usable list (never the defaults, never a part of the file), and a --json
# that names a file the run reads or a checkpoint it writes.
def text_file(name, text):
    path = h.path(name)
    with open(path, "w") as f:
        f.write(text)
    return path


star2 = [*small, "--op", "star:2"]
json_restart = h.path("json_restart.h5")
with open(first, "rb") as f_in, open(json_restart, "wb") as f_out:
    f_out.write(f_in.read())
keep_dir = h.path("json_ck")
os.makedirs(keep_dir, exist_ok=True)
kept_files = {p: open(p, "rb").read() for p in (json_restart, weights_file)}
bad_cases += [
    ([*star2, "--weights-file", text_file("empty.txt", "")], ["--weights-file", "no numbers"]),
    ([*star2, "--weights-file", text_file("blank.txt", " \n\t\n")], ["--weights-file", "no numbers"]),
    ([*star2, "--weights-file", h.path("")], ["--weights-file", "directory"]),
    ([*star2, "--weights-file", text_file("huge.txt", " " * (1 << 20) + "0.5 0.25 0.125\n")], ["--weights-file", "1 MiB"]),
    ([*star2, "--weights-file", text_file("comma.txt", "0.5,,0.25,0.125\n")], ["--weights-file", "empty field"]),
    ([*star2, "--weights-file", text_file("tail.txt", "0.5,0.25,0.125,\n")], ["--weights-file", "comma"]),
    ([*star2, "--weights-file", text_file("bin.txt", "\x01HDF\n")], ["--weights-file", "\\x01HDF", "not a number"]),
    (["--nx", 17, "--ny", 13, "--nz", 11, "--op", "star:2", "--weights", "0.4,0.07,0.03", "--iters", 8, "--restart",
      json_restart, "--json", json_restart], ["--json", "--restart"]),
    ([*small, "--op", "box:2", "--weights-file", weights_file, "--json", weights_file], ["--json", "--weights-file"]),
    ([*star2, "--checkpoint-dir", keep_dir, "--json", os.path.join(keep_dir, "checkpoint-000000000001.h5")],
     ["--json", "--checkpoint-dir"]),
    # A refused run makes no --checkpoint-dir (field ops and the Jacobi ops alike).
    ([*star2, "--checkpoint-dir", h.path("never_made"), "--json", h.path("never_made")], ["--json", "--checkpoint-dir"]),
    (["--nx", 8, "--ny", 8, "--checkpoint-dir", h.path("never_made_2d"), "--json", h.path("never_made_2d")],
     ["--json", "--checkpoint-dir"]),
    (["--nx", "4000000000", "--ny", "4000000000", "--nz", "4000000000", "--op", "star:1", "--checkpoint-dir",
      h.path("never_made_3d")], ["--nx/--ny/--nz", "2^63"]),
    (["--nx", 8, "--ny", 8, "--checkpoint-dir", h.path("never_made_slash") + "/", "--json", h.path("never_made_slash")],
     ["--json", "--checkpoint-dir"]),
]
# A file of the user's under the name of a checkpoint the run would write: refused before the first
# step (it is never replaced; the run would stop there), after --restart auto found where to resume.
way_dir = h.path("in_the_way")
os.makedirs(way_dir, exist_ok=True)
with open(first, "rb") as f_in, open(os.path.join(way_dir, "checkpoint-000000000004.h5"), "wb") as f_out:
    f_out.write(f_in.read())
write_h5(os.path.join(way_dir, "checkpoint-000000000006.h5"), "/data", np.arange(4.0))
way_2d = h.path("in_the_way_2d")
os.makedirs(way_2d, exist_ok=True)
write_h5(os.path.join(way_2d, "checkpoint-000000000003.h5"), "/field", np.arange(4.0))
kept_files.update({p: open(p, "rb").read() for p in (os.path.join(way_dir, "checkpoint-000000000006.h5"),
                                                   os.path.join(way_2d, "checkpoint-000000000003.h5"))})
bad_cases += [
    ([*common, "--checkpoint-dir", way_dir, "--restart", "auto", "--checkpoint-every", 1],
     ["--checkpoint-dir", "checkpoint-000000000006.h5", "not a checkpoint", "iteration 6"]),
    (["--nx", 8, "--ny", 8, "--iters", 8, "--checkpoint-dir", way_2d, "--checkpoint-every", 1],
     ["--checkpoint-dir", "checkpoint-000000000003.h5", "not a checkpoint", "iteration 3"]),
]
for args, words in bad_cases:
    bad_out = h.path("bad_out.h5")
    status, _, err = h.run(S, [*args, "--output", f"{bad_out}:/u"], ranks=1)
    lines = [ln for ln in err.splitlines() if ln.startswith(program(S)) and not ln.startswith(program(S) + ": warning:")]
    what = f"bad input {args}"
    h.check(status == 2, f"{what}: status {status}, expected 2\n{err}")
    h.check(len(lines) == 1 and all(x in lines[0] for x in words), f"{what}: expected one line naming {words}, got {err!r}")
    h.check(not os.path.exists(bad_out), f"{what}: an output file was written")
for path, data in kept_files.items():
    h.check(open(path, "rb").read() == data, f"{path}: changed by a refused run")
h.check(os.listdir(keep_dir) == [], f"{keep_dir}: a refused run wrote {os.listdir(keep_dir)}")
h.check(sorted(os.listdir(way_dir)) == ["checkpoint-000000000004.h5", "checkpoint-000000000006.h5"]
        and os.listdir(way_2d) == ["checkpoint-000000000003.h5"],
        f"a run refused for a file in the way wrote checkpoints: {os.listdir(way_dir)} {os.listdir(way_2d)}")
for never in ("never_made", "never_made_2d", "never_made_3d", "never_made_slash"):
    h.check(not os.path.exists(h.path(never)), f"a refused run made its --checkpoint-dir {never}")
h.finish()
