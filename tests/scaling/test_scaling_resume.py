#!/usr/bin/env python3
"""tessera-scaling --checkpoint / --restart: a study killed in the middle goes on from the rounds its
checkpoint holds; one resumed to more rounds keeps the rounds it had, bit for bit, and adds the new
ones; --restart auto without a checkpoint starts afresh. Refused with one line and exit 2, the file
left as it was: a checkpoint that exists without --restart, a checkpoint of another study, a file
that is not a checkpoint, a checkpoint with a flipped byte.

  test_scaling_resume.py --app tessera-scaling --mpiexec mpiexec --np 3 [--mpiexec-flags ...] --work DIR
"""
import argparse
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

try:
    import h5py
    import numpy as np
except ImportError as e:
    print(f"SKIP: needs numpy and h5py ({e})")
    sys.exit(77)

p = argparse.ArgumentParser()
p.add_argument("--app", required=True)
p.add_argument("--mpiexec", required=True)
p.add_argument("--np", type=int, default=3)
p.add_argument("--mpiexec-flags", default="")
p.add_argument("--work", required=True)
a = p.parse_args()
shutil.rmtree(a.work, ignore_errors=True)
os.makedirs(a.work)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)


STUDY = ["--op", "sum", "--dtype", "float64", "--repeat", "2", "--probe-bytes", "1M", "--backend", "cpu", "--quiet"]


def command(*args):
    args = [str(x) for x in args]
    n = [] if "--n" in args else ["--n", "20011"]
    return [a.mpiexec, "-n", str(a.np), *shlex.split(a.mpiexec_flags), a.app, *STUDY, *n, *args]


def run(*args):
    r = subprocess.run(command(*args), cwd=a.work, capture_output=True, text=True, timeout=240)
    return r.returncode, r.stdout, r.stderr


def rounds(path):
    """The checkpoint's rounds: (rounds done, rows of ints, rows of reals), each row one point and round."""
    with h5py.File(path, "r") as f:
        width = int(f["rounds_f64_columns"][0])
        ints = f["rounds_i64"][...].reshape(-1, 10)
        reals = f["rounds_f64"][...].reshape(-1, width)
        return int(f["rounds_done"][0]), ints, reals


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def refused(what, args, words, path):
    before = digest(path)
    status, _, err = run(*args)
    ours = [line for line in err.splitlines() if line.startswith("tessera-scaling:")]
    check(status == 2, f"{what}: status {status}, expected 2\n{err[-1500:]}")
    check(len(ours) == 1 and all(w in ours[0] for w in words), f"{what}: expected one line naming {words}, got {ours}")
    check(digest(path) == before, f"{what}: {path} changed")


ck = os.path.join(a.work, "ck.h5")
report = os.path.join(a.work, "r.json")

# A study of 5000 rounds (minutes of work) ended (SIGTERM to mpiexec, which ends its ranks) once its
# first checkpoint is there; resumed with --restart auto and 2 rounds more than its checkpoint holds,
# it keeps those rounds and adds 2.
LONG = 5000
proc = subprocess.Popen(command("--rounds", LONG, "--max-rounds", LONG, "--checkpoint", ck), cwd=a.work,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 120
while not os.path.exists(ck) and proc.poll() is None and time.monotonic() < deadline:
    time.sleep(0.05)
proc.send_signal(signal.SIGTERM)
try:
    proc.wait(timeout=60)
except subprocess.TimeoutExpired:
    proc.kill()
    proc.wait()
    check(False, "mpiexec did not end within 60 s of SIGTERM")
check(os.path.exists(ck), "no checkpoint written by the first study")
if not os.path.exists(ck):
    sys.exit(1)
done_killed, ints_killed, reals_killed = rounds(ck)
check(1 <= done_killed < LONG, f"the killed study's checkpoint says {done_killed} rounds")
points = len(ints_killed) // max(done_killed, 1)
check(points == 3 and len(ints_killed) == points * done_killed, f"{len(ints_killed)} rows for {done_killed} rounds")

target = done_killed + 2
status, out, err = run("--rounds", target, "--max-rounds", target, "--checkpoint", ck, "--restart", "auto",
                       "--json", report)
check(status == 0, f"resumed study: status {status}\n{err[-1500:]}")
done, ints, reals = rounds(ck)
check(done == target, f"the resumed study's checkpoint says {done} rounds, expected {target}")
check(len(ints) == points * target, f"{len(ints)} rows after the resumed study, expected {points * target}")
# Rows of one point keep their order; the killed study's rows come first in each point, bit for bit.
for point in range(points):
    old = [k for k in range(len(ints_killed)) if ints_killed[k][1] == point]
    new = [k for k in range(len(ints)) if ints[k][1] == point]
    check(len(new) == target, f"point {point}: {len(new)} rounds, expected {target}")
    check(np.array_equal(ints_killed[old], ints[new[:len(old)]]), f"point {point}: the old rounds' counts changed")
    check(np.array_equal(reals_killed[old].view(np.uint64), reals[new[:len(old)]].view(np.uint64)),
          f"point {point}: the old rounds' times changed")
    check([int(r) for r in ints[new][:, 2]] == list(range(target)), f"point {point}: rounds {ints[new][:, 2]}")
# The report's rounds of each point are the checkpoint's (the time of each round, in order).
check(os.path.exists(report), "the resumed study wrote no --json report")
if os.path.exists(report):
    import json
    with open(report) as f:
        by_ranks = {p["ranks"]: p for p in json.load(f)["strong"]["points"]}
    for point in range(points):
        rows = [k for k in range(len(ints)) if ints[k][1] == point]
        ranks = int(ints[rows[0]][3])
        check(ranks in by_ranks and by_ranks[ranks]["round_times_s"] == [float(x) for x in reals[rows][:, 0]],
              f"point at {ranks} ranks: the report's round times are not the checkpoint's")

# The same study, run to completion again from its checkpoint: nothing more to measure, same rounds.
before = digest(ck)
status, _, err = run("--rounds", target, "--max-rounds", target, "--checkpoint", ck, "--restart", "auto")
check(status == 0, f"a finished study resumed: status {status}\n{err[-1500:]}")
check(rounds(ck)[0] == target, "a finished study resumed changed its rounds")

# --restart auto without a checkpoint starts afresh.
fresh = os.path.join(a.work, "fresh.h5")
status, _, err = run("--rounds", 1, "--max-rounds", 1, "--checkpoint", fresh, "--restart", "auto")
check(status == 0 and os.path.exists(fresh) and rounds(fresh)[0] == 1, f"--restart auto, no file: status {status}\n{err[-1500:]}")

# Refusals, each leaving the file as it was.
refused("an existing checkpoint without --restart", ["--rounds", 1, "--checkpoint", ck], ["--checkpoint", "exists"], ck)
refused("a checkpoint of another study", ["--rounds", 1, "--checkpoint", ck, "--restart", "auto", "--n", "20013"],
        ["--restart", "another study", "20011", "20013"], ck)
other = os.path.join(a.work, "user.h5")
with h5py.File(other, "w") as f:
    f["precious"] = np.arange(10.0)
refused("a file that is not a checkpoint", ["--rounds", 1, "--checkpoint", other, "--restart", "auto"],
        ["--restart", "not a checkpoint"], other)
broken = os.path.join(a.work, "broken.h5")
shutil.copyfile(ck, broken)
with h5py.File(broken, "r") as f:
    offset = f["rounds_f64"].id.get_offset()
with open(broken, "r+b") as f:
    f.seek(offset + 8 * 3)
    byte = f.read(1)
    f.seek(offset + 8 * 3)
    f.write(bytes([byte[0] ^ 0x40]))
refused("a checkpoint with a flipped byte", ["--rounds", target, "--checkpoint", broken, "--restart", "auto"],
        ["--restart", "checksum"], broken)

if failures:
    print(f"{len(failures)} checks failed")
    sys.exit(1)
print("all checks passed")
