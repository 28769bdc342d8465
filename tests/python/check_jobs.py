"""Jobs that must end, and how: a communication failure and a Ctrl-C under mpiexec.

usage: check_jobs.py MPIEXEC PYTHON [mpiexec flags...]   (the worker is jobs_worker.py beside this)

  1. One rank, TESSERA_INJECT_FAULT=0:allgather: tessera.CommunicationError is raised, caught, raised
     again by the next call, and the program ends normally (status 0).
  2. Two ranks, TESSERA_INJECT_FAULT=1:allgather, uncaught: the job ends non-zero within the time
     limit, rank 1 having printed the CommunicationError and "ending the job" (rank 0 was waiting in
     the collective: without the abort it would wait for ever).
  3. Two ranks summing in a loop; SIGINT to mpiexec (Ctrl-C): every rank ends.
  4. Two ranks summing in a loop, rank 0 sleeping in Python before each sum; SIGINT to rank 1 alone
     (a signal to one process, as a batch system may send): the KeyboardInterrupt it raises, once its
     call returns, goes uncaught and ends the whole job, rank 0 included.
  5. Two ranks in one long Jacobi solve; SIGINT to rank 1 alone: the ranks agree between runs of
     iterations that one was interrupted, all raise KeyboardInterrupt, and the job ends.
"""

import os
import re
import signal
import subprocess
import sys
import time

mpiexec, python = sys.argv[1], sys.argv[2]
flags = sys.argv[3:]
worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs_worker.py")
failed = []


def launch(ranks, scenario, extra_env=None):
    env = dict(os.environ)
    env.update(extra_env or {})
    return subprocess.Popen([mpiexec, "-n", str(ranks)] + flags + [python, worker, scenario], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(job, limit):
    try:
        out, _ = job.communicate(timeout=limit)
        return job.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        out, _ = job.communicate()
        return None, out


def check(name, condition, out):
    print("%s: %s" % ("PASS" if condition else "FAIL", name))
    if not condition:
        failed.append(name)
        print(out)


# 1
rc, out = finish(launch(1, "fault-caught", {"TESSERA_INJECT_FAULT": "0:allgather"}), 60)
check("one rank: CommunicationError caught, raised again, normal end",
      rc == 0 and "caught CommunicationError" in out and "raised again" in out and "ended normally" in out, out)

# 2
rc, out = finish(launch(2, "fault-uncaught", {"TESSERA_INJECT_FAULT": "1:allgather"}), 60)
check("two ranks: an uncaught CommunicationError ends the job",
      rc not in (0, None) and "CommunicationError" in out and "ending the job" in out and "not reached" not in out,
      out)


def wait_ready(job, ranks, limit=60):
    """Reads lines until every rank said ready; returns {rank: pid} and the lines read."""
    pids, lines = {}, []
    end = time.time() + limit
    while len(pids) < ranks and time.time() < end:
        line = job.stdout.readline()
        if not line:
            break
        lines.append(line)
        for rank, pid in re.findall(r"ready (\d+) (\d+)", "".join(lines)):
            pids[int(rank)] = int(pid)
    return pids, "".join(lines)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


# 3
job = launch(2, "wait")
pids, head = wait_ready(job, 2)
time.sleep(1)
job.send_signal(signal.SIGINT)
rc, out = finish(job, 60)
time.sleep(1)
check("Ctrl-C to mpiexec ends every rank",
      len(pids) == 2 and rc is not None and "finished without a signal" not in out
      and not any(alive(p) for p in pids.values()), head + out)

# 4
job = launch(2, "wait")
pids, head = wait_ready(job, 2)
time.sleep(1)
if 1 in pids:
    os.kill(pids[1], signal.SIGINT)
rc, out = finish(job, 60)
time.sleep(1)
check("Ctrl-C to one rank ends the job",
      len(pids) == 2 and rc not in (0, None) and "KeyboardInterrupt" in head + out
      and not any(alive(p) for p in pids.values()), head + out)

# 5
job = launch(2, "solve")
pids, head = wait_ready(job, 2)
time.sleep(2)
if 1 in pids:
    os.kill(pids[1], signal.SIGINT)
rc, out = finish(job, 60)
time.sleep(1)
check("Ctrl-C to one rank stops a long solve on every rank",
      len(pids) == 2 and rc not in (0, None) and "jacobi interrupted (a signal on rank 1)" in head + out
      and not any(alive(p) for p in pids.values()), head + out)

sys.exit(1 if failed else 0)
