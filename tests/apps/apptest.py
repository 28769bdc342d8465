"""Shared harness of the app tests: runs an app under mpiexec, writes inputs with h5py (a writer
independent of Tessera's), and collects failures so that one run reports all of them.

Environment:
  TESSERA_TEST_BACKEND   backend the apps run on (default cpu; cuda on the GPU machine)
  TESSERA_TEST_SEED      seed of the random inputs (default 20240611)
"""
import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

SKIP = 77  # registered as SKIP_RETURN_CODE: h5py or numpy missing

try:
    import numpy as np
    import h5py
except ImportError as e:  # skip, never pass, without the independent writer and reference
    print(f"SKIP: the app tests need numpy and h5py ({e}); run them with a Python that has both")
    sys.exit(SKIP)

APP_TIMEOUT = 120  # seconds; a hang shows as a timeout, never as a pass


def program(app):
    """The installed name of an app: global_sum -> tessera-global-sum."""
    return "tessera-" + app.replace("_", "-")


class Harness:
    def __init__(self, description):
        p = argparse.ArgumentParser(description=description)
        p.add_argument("--bin", required=True, help="directory of the app executables")
        p.add_argument("--ranks", type=int, required=True)
        p.add_argument("--mpiexec", required=True)
        p.add_argument("--np-flag", default="-n")
        p.add_argument("--mpiexec-flags", default="", help="extra mpiexec flags (one string)")
        p.add_argument("--workdir", required=True)
        a = p.parse_args()
        self.bin = a.bin
        self.ranks = a.ranks
        self.mpiexec = a.mpiexec
        self.np_flag = a.np_flag
        self.mpiexec_flags = shlex.split(a.mpiexec_flags)
        self.work = a.workdir
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.backend = os.environ.get("TESSERA_TEST_BACKEND", "cpu")
        self.seed = int(os.environ.get("TESSERA_TEST_SEED", "20240611"))
        self.rng = np.random.default_rng(self.seed)
        self.failures = []
        self.checks = 0
        print(f"app tests: {self.ranks} rank(s), backend {self.backend}, seed {self.seed}, work {self.work}")

    def path(self, name):
        return os.path.join(self.work, name)

    def run(self, app, args, ranks=None, backend=True, env=None, unset=()):
        """Runs app under mpiexec (env: extra environment variables, unset: names to remove); returns
        (status, stdout, stderr)."""
        cmd = self.command(app, args, ranks, backend)
        try:
            environment = {k: v for k, v in {**os.environ, **(env or {})}.items() if k not in unset}
            # Once a rank has ended with a non-zero status, mpiexec waits odls_base_sigkill_timeout
            # (1 s) before it sends the other ranks SIGTERM and again before SIGKILL, even where every
            # rank has already ended by itself: 1-2 s of nothing per refused run. Ranks that end on
            # their own (every refusal, every verdict) need no such grace; a launch where one rank's
            # fault must let the others remove what they wrote (TESSERA_INJECT_FAULT) keeps it, as do
            # the drivers' own Popen launches (signals, killed ranks).
            if "TESSERA_INJECT_FAULT" not in environment:
                environment.setdefault("OMPI_MCA_odls_base_sigkill_timeout", "0")
            p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=APP_TIMEOUT,
                               cwd=self.work, env=environment)
        except subprocess.TimeoutExpired:
            self.fail(f"timed out after {APP_TIMEOUT} s (hang?): {shlex.join(cmd)}")
            return None, "", ""
        self.last_command = shlex.join(cmd)
        return p.returncode, p.stdout, p.stderr

    def command(self, app, args, ranks=None, backend=True):
        """The mpiexec command line that run() uses."""
        ranks = self.ranks if ranks is None else ranks
        cmd = [self.mpiexec, self.np_flag, str(ranks), *self.mpiexec_flags, os.path.join(self.bin, program(app))]
        if backend:
            cmd += ["--backend", self.backend]
        return cmd + [str(a) for a in args]

    def run_json(self, app, args, ranks=None, expect_status=0):
        """Runs app with --json; returns (report, raw text), or None after a recorded failure."""
        report = self.path(f"report_{app}_{len(os.listdir(self.work))}.json")
        status, out, err = self.run(app, [*args, "--json", report], ranks)
        if status != expect_status:
            self.fail(f"status {status}, expected {expect_status}: {self.last_command}\n{out}\n{err}")
            return None
        with open(report) as f:
            text = f.read()
        return json.loads(text), text

    def check(self, condition, message):
        self.checks += 1
        if not condition:
            self.fail(message)
        return condition

    def fail(self, message):
        self.failures.append(message)
        print("FAIL:", message, flush=True)

    def finish(self):
        if self.failures:
            print(f"{len(self.failures)} of {self.checks} checks failed")
            sys.exit(1)
        print(f"all {self.checks} checks passed")
        sys.exit(0)


# ---- inputs ---------------------------------------------------------------------------------------

DTYPES = {"int32": np.int32, "int64": np.int64, "float32": np.float32, "float64": np.float64}


def signal_after_pause(h, cmd, paused_at, signo=signal.SIGUSR1, timeout=90):
    """Runs `cmd` (h.command's list) with TESSERA_TEST_PAUSE_AFTER_CHECKPOINT=60; once rank 0 says it
    paused after a checkpoint (a line holding `paused_at`, such as "iteration 10 "), sends `signo` to
    mpiexec, which forwards it to every rank. Returns (exit status, rank 0's stderr lines, whether it
    paused there)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                            cwd=h.work, env={**os.environ, "TESSERA_TEST_PAUSE_AFTER_CHECKPOINT": "60"})
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None and not any("paused for a test" in ln for ln in lines):
        time.sleep(0.05)
    paused = any("paused for a test" in ln and paused_at in ln for ln in lines)
    if paused:
        proc.send_signal(signo)
    try:
        status = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        status = proc.wait()
    reader.join(timeout=5)
    return status, lines, paused


def random_array(rng, dtype, shape):
    """Integers in [-1000, 1000]; floats in [-1, 1) at full precision (not the app's generator)."""
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1001, size=shape).astype(dtype)
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def write_h5(path, dataset, data, layout="contiguous"):
    """layout: contiguous, chunked, or deflate (chunked and compressed)."""
    with h5py.File(path, "a") as f:
        if dataset in f:
            del f[dataset]
        kwargs = {}
        if layout in ("chunked", "deflate") and data.size > 0:
            kwargs["chunks"] = tuple(max(1, min(s, 7)) for s in data.shape)
        if layout == "deflate" and data.size > 0:
            kwargs["compression"] = "gzip"
            kwargs["compression_opts"] = 4
        f.create_dataset(dataset, data=data, **kwargs)


def read_h5(path, dataset):
    with h5py.File(path, "r") as f:
        d = f[dataset]
        return d[...], dict(d.attrs)


def check_output_attributes(h, attrs, app, ranks, backend):
    def text(v):
        return v.decode() if isinstance(v, bytes) else str(v)
    h.check(text(attrs.get("app")) == program(app), f"output attribute app = {attrs.get('app')!r}, expected {program(app)}")
    h.check(int(attrs.get("ranks", -1)) == ranks, f"output attribute ranks = {attrs.get('ranks')!r}, expected {ranks}")
    h.check(text(attrs.get("backend")) == backend, f"output attribute backend = {attrs.get('backend')!r}")
    h.check(len(text(attrs.get("version", ""))) > 0, "output attribute version missing")


def check_h5dump(h, path):
    """Our files must read in the HDF5 command-line tools as well as in h5py."""
    tool = shutil.which("h5dump")
    if tool is None:
        return
    p = subprocess.run([tool, "-H", path], capture_output=True, text=True)
    h.check(p.returncode == 0 and "DATASET" in p.stdout, f"h5dump -H {path} failed: {p.stderr}")


def check_provenance(h, report):
    """What every report says about where it came from: version, source revision, time and hosts."""
    import datetime
    import socket
    h.check(isinstance(report.get("version"), str) and report["version"].count(".") == 2,
            f"json version = {report.get('version')!r}")
    rev = report.get("revision")
    h.check(isinstance(rev, str) and rev != "" and all(c.isalnum() or c in "._-+/" for c in rev),
            f"json revision = {rev!r} (git describe, or unknown)")
    stamp = report.get("timestamp", "")
    try:
        when = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
        age = (datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()
        h.check(-5 <= age <= 3600, f"json timestamp {stamp} is {age:.0f} s from now (UTC)")
    except ValueError:
        h.fail(f"json timestamp = {stamp!r}, expected UTC ISO 8601 (2026-01-31T12:00:00Z)")
    h.check(report.get("hosts") == [socket.gethostname()], f"json hosts = {report.get('hosts')!r}, expected [{socket.gethostname()!r}]")
    env = report.get("environment", {})
    h.check(env.get("tessera") == report.get("version") and env.get("revision") == rev
            and "MPI" in str(env.get("mpi")) and str(env.get("hdf5", "")).count(".") == 2
            and isinstance(env.get("devices"), list) and len(env["devices"]) >= 1
            and (h.backend != "cpu" or env["devices"] == ["cpu"]),
            f"json environment = {env!r}")


def check_common_json(h, report, app, dtype, sizes):
    h.check(report.get("app") == program(app), f"json app = {report.get('app')!r}")
    h.check(report.get("ranks") == h.ranks, f"json ranks = {report.get('ranks')!r}, expected {h.ranks}")
    h.check(report.get("backend") == h.backend, f"json backend = {report.get('backend')!r}")
    h.check(report.get("dtype") == dtype, f"json dtype = {report.get('dtype')!r}, expected {dtype}")
    h.check(report.get("sizes") == sizes, f"json sizes = {report.get('sizes')!r}, expected {sizes}")
    check_provenance(h, report)
    t = report.get("timing", {})
    h.check(isinstance(t.get("total"), (int, float)) and t["total"] >= 0, f"json timing.total = {t.get('total')!r}")
    for phase in ("local", "communication", "fixup", "host"):
        h.check(isinstance(t.get("phases", {}).get(phase), (int, float)), f"json timing.phases.{phase} missing")
    # The phases are one rank's in one repeat whose time is at most the median: never more than the total.
    phase_sum = sum(v for v in t.get("phases", {}).values() if isinstance(v, (int, float)))
    h.check(phase_sum <= t.get("total", 0) * (1 + 1e-9), f"json timing: phases add up to {phase_sum} > total {t.get('total')}")
    ranks = t.get("ranks", {})
    h.check(all(isinstance(ranks.get(k), (int, float)) for k in ("min", "avg", "max"))
            and ranks["min"] <= ranks["avg"] * (1 + 1e-12) and ranks["avg"] <= ranks["max"] * (1 + 1e-12),
            f"json timing.ranks (min / avg / max over ranks) = {ranks!r}")
    h.check(isinstance(t.get("repeat_min"), (int, float)) and isinstance(t.get("repeat_max"), (int, float))
            and t["repeat_min"] <= t["total"] <= t["repeat_max"],
            f"json timing: repeats {t.get('repeat_min')!r} to {t.get('repeat_max')!r} around the median {t.get('total')!r}")
    tp = report.get("throughput", {})
    h.check(isinstance(tp.get("value"), (int, float)) and tp.get("unit") in ("GB/s", "GFLOP/s"),
            f"json throughput = {tp!r}")
    h.check("verified" in report, "json verified missing")
