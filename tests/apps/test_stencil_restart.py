#!/usr/bin/env python3
"""stencil: checkpoints in a directory and --restart auto, as a requeued batch job uses them:
  - a run stopped by SIGUSR1 (sent to mpiexec, which forwards it to the ranks, as srun does) writes
    a checkpoint at the next step boundary and exits with status 75; the same command with
    --restart auto, on another rank count, process grid and SLURM_RESTART_COUNT=1, resumes from it
    and ends bitwise equal to a run never interrupted, reporting the restart count and the iteration
    it resumed from;
  - --checkpoint-keep: the directory holds the newest K checkpoints;
  - a checkpoint with bytes flipped in its field's data is found by its checksum: one warning line
    naming it, the file kept as NAME.corrupt, and the run resumes from the one before it, bitwise;
  - a rank that fails while a checkpoint is written (TESSERA_INJECT_FAULT=RANK:write:2) ends the job
    and leaves the previous checkpoint whole under its name, and nothing else in the directory;
    --restart auto resumes from it, bitwise;
  - --restart auto in an empty directory starts from the beginning."""
import glob
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, h5py, np, read_h5, signal_after_pause  # noqa: E402

h = Harness(__doc__)
S = "stencil"
REQUEUE = 75
other_ranks = 2 if h.ranks != 2 else 3

nx, ny, iters, every = 35, 23, 3000, 500
problem = ["--op", "jacobi9", "--dtype", "float64", "--nx", nx, "--ny", ny, "--check-every", 50]
common = problem + ["--iters", iters]


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def run_report(args, ranks=None, env=None, expect=0, what=""):
    """Runs the app with --json; (report or None, stderr)."""
    report = h.path(f"report_{len(os.listdir(h.work))}.json")
    status, out, err = h.run(S, [*args, "--json", report], ranks=ranks, env=env)
    if not h.check(status == expect, f"{what}: status {status}, expected {expect}: {h.last_command}\n{out}\n{err}"):
        return None, err
    with open(report) as f:
        return json.load(f), err


def checkpoints(d):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, "*")))


def name(iteration):
    return f"checkpoint-{iteration:012d}.h5"


def flip_field_bytes(path):
    with h5py.File(path, "r") as f:
        offset = f["/field"].id.get_offset()
    with open(path, "r+b") as f:
        f.seek(offset + 8 * (nx * 3 + 5))  # a cell inside the field
        b = bytearray(f.read(4))
        f.seek(offset + 8 * (nx * 3 + 5))
        f.write(bytes(x ^ 0x5a for x in b))


reference = h.path("uninterrupted.h5")
ref, _ = run_report(common + ["--output", f"{reference}:/u", "--repeat", 1, "--warmup", 0], what="uninterrupted")
want = read_h5(reference, "/u")[0] if ref else None

# ---- SIGUSR1: checkpoint at the next step, exit 75; resumed elsewhere, bitwise ---------------------------
d = h.path("ck")
shutil.rmtree(d, ignore_errors=True)
grid = ["--grid", f"{h.ranks}x1"]
cmd = h.command(S, common + grid + ["--checkpoint-dir", d, "--checkpoint-every", every, "--checkpoint-keep", 3,
                                    "--restart", "auto"])
status, lines, paused = signal_after_pause(h, cmd, f"iteration {every} ")
h.check(paused, f"the run never paused after its first checkpoint: {' '.join(map(str, cmd))}\n{''.join(lines)}")
err = "".join(lines)
stop_lines = [ln for ln in lines if "SIGUSR1" in ln and "requeue" in ln]
h.check(status == REQUEUE, f"SIGUSR1: status {status}, expected {REQUEUE}\n{err}")
h.check(len(stop_lines) == 1, f"SIGUSR1: expected one line saying where it stopped, got {err!r}")
files = checkpoints(d)
stopped_at = int(files[-1][11:23]) if files else -1
h.check(len(files) == 2 and files[0] == name(every) and every < stopped_at < iters,
        f"SIGUSR1: the directory holds {files}, expected {name(every)} and one written at the signal")
if stop_lines:
    h.check(name(stopped_at) in stop_lines[0], f"SIGUSR1: the line names {stop_lines[0]!r}, not {name(stopped_at)}")

rep, err = run_report(common + ["--checkpoint-dir", d, "--checkpoint-every", every, "--checkpoint-keep", 3,
                                 "--restart", "auto", "--output", f"{h.path('resumed.h5')}:/u"], ranks=other_ranks,
                      env={"SLURM_RESTART_COUNT": "1"}, what="resumed after SIGUSR1")
if rep and ref:
    h.check(rep["result"]["iterations"] == iters and rep["result"]["resumed_iteration"] == stopped_at,
            f"resumed run: {rep['result']}, expected to resume at {stopped_at}")
    h.check(rep["parameters"]["slurm_restart_count"] == 1 and rep["parameters"]["restart"] == "auto",
            f"resumed run: parameters {rep['parameters']}")
    h.check(same_bits(read_h5(h.path("resumed.h5"), "/u")[0], want),
            "SIGUSR1 + --restart auto on another rank count: the field differs from the uninterrupted run's")
# --checkpoint-keep 3: the newest three of those written (every 500 to 2500; the last iteration
# writes none, the run being done).
files = checkpoints(d)
h.check(files == [name(1500), name(2000), name(2500)], f"--checkpoint-keep 3: the directory holds {files}")

# ---- a corrupted newest checkpoint: found, kept aside, the previous one used --------------------------------
if files == [name(1500), name(2000), name(2500)]:
    flip_field_bytes(os.path.join(d, name(2500)))
    rep, err = run_report(common + ["--checkpoint-dir", d, "--checkpoint-every", every, "--restart", "auto",
                                    "--output", f"{h.path('after_corrupt.h5')}:/u"], what="resumed past a corrupt file")
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    h.check(len(warnings) == 1 and name(2500) in warnings[0] and "checksum" in warnings[0] and "'/field'" in warnings[0],
            f"a corrupt checkpoint: expected one warning naming it and its checksum, got {err!r}")
    h.check(os.path.exists(os.path.join(d, name(2500) + ".corrupt")), f"the corrupt file was not kept: {checkpoints(d)}")
    if rep and ref:
        h.check(rep["result"]["resumed_iteration"] == 2000, f"past a corrupt checkpoint: resumed {rep['result']}")
        h.check(same_bits(read_h5(h.path("after_corrupt.h5"), "/u")[0], want),
                "resumed from the checkpoint before a corrupt one: the field differs from the uninterrupted run's")

# ---- a rank failing while a checkpoint is written -------------------------------------------------------------
d2 = h.path("ck_fault")
shutil.rmtree(d2, ignore_errors=True)
status, out, err = h.run(S, common + ["--checkpoint-dir", d2, "--checkpoint-every", every, "--restart", "auto"],
                         env={"TESSERA_INJECT_FAULT": f"{h.ranks - 1}:write:2"})
h.check(status not in (0, REQUEUE, None), f"a fault in the second checkpoint's write: status {status}\n{err}")
files = checkpoints(d2)
h.check(files == [name(every)], f"after a fault in a checkpoint's write the directory holds {files}, "
                                f"expected only {name(every)}")
rep, err = run_report(common + ["--checkpoint-dir", d2, "--restart", "auto", "--output", f"{h.path('after_fault.h5')}:/u"],
                      ranks=other_ranks, what="resumed after a fault")
if rep and ref:
    h.check(rep["result"]["resumed_iteration"] == every and not [ln for ln in err.splitlines() if "warning" in ln],
            f"after a fault: resumed {rep['result']}, stderr {err!r}")
    h.check(same_bits(read_h5(h.path("after_fault.h5"), "/u")[0], want),
            "resumed after a fault in a checkpoint's write: the field differs from the uninterrupted run's")
    # The defaults of --checkpoint-dir: keep 2, and the interval auto, by the clock (the first
    # checkpoint after 10 minutes of solving: none in a run this short, the fault's survivor kept).
    h.check(rep["parameters"]["checkpoint_every"] == "auto" and rep["parameters"]["checkpoint_keep"] == 2
            and checkpoints(d2) == [name(every)], f"defaults: {rep['parameters']}, files {checkpoints(d2)}")

# ---- no checkpoint yet: from the beginning ----------------------------------------------------------------------
d3 = h.path("ck_empty")
shutil.rmtree(d3, ignore_errors=True)
rep, err = run_report(problem + ["--iters", 100, "--checkpoint-dir", d3, "--restart", "auto"], what="empty directory")
if rep:
    h.check(rep["result"]["resumed_iteration"] == 0 and rep["result"]["iterations"] == 100 and
            rep["parameters"]["slurm_restart_count"] == 0, f"an empty directory: {rep['result']} {rep['parameters']}")

# ---- by the clock: --checkpoint-every 1s -------------------------------------------------------------------
# A run of more than 2 s of solving writes at least one, the run's time permitting (a run under
# 2 s proves nothing either way and is only reported).
d4 = h.path("ck_clock")
shutil.rmtree(d4, ignore_errors=True)
rep, err = run_report(["--op", "jacobi9", "--dtype", "float64", "--nx", 301, "--ny", 299, "--check-every", 50,
                       "--iters", 40000, "--checkpoint-dir", d4,
                                 "--checkpoint-every", "1s", "--checkpoint-keep", 100], what="by the clock")
if rep:
    took = rep["timing"]["total"]
    written = checkpoints(d4)
    h.check(rep["parameters"]["checkpoint_every"] == "1s", f"by the clock: parameters {rep['parameters']}")
    if took > 2.0:
        h.check(len(written) >= 1, f"by the clock: {took:.1f} s of solving wrote no checkpoint")
    else:
        print(f"by the clock: the run took {took:.2f} s, too short to require a checkpoint ({len(written)} written)")
h.finish()
