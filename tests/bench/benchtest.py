"""Shared pieces of the benchmark tests: a benchmark run under mpiexec on the cpu backend, checks
collected so that one run reports every failure, and a work directory removed when all passed."""
import os
import shutil
import subprocess
import sys
import tempfile


class BenchTest:
    def __init__(self, mpiexec, np_flag, mpiexec_flags, prefix):
        self.mpiexec, self.np_flag, self.mpiexec_flags = mpiexec, np_flag, list(mpiexec_flags)
        self.failures = []
        self.work = tempfile.mkdtemp(prefix=prefix)

    def run(self, ranks, bench, args, timeout):
        """(status, stdout, stderr, command line) of `bench --backend cpu args` on `ranks` ranks."""
        cmd = [self.mpiexec, self.np_flag, str(ranks), *self.mpiexec_flags, bench, "--backend", "cpu", *args]
        # A refused run's ranks end by themselves: no 1 s + 1 s of mpiexec's kill grace after them
        # (tests/apps/apptest.py says more).
        env = {**os.environ}
        env.setdefault("OMPI_MCA_odls_base_sigkill_timeout", "0")
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr, " ".join(cmd)

    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
            print("FAIL:", what, flush=True)
        return cond

    def finish(self):
        """Exit 1 naming the count of failed checks (the work directory kept), else remove it."""
        if self.failures:
            print(f"{len(self.failures)} checks failed (work in {self.work})")
            sys.exit(1)
        shutil.rmtree(self.work, ignore_errors=True)
