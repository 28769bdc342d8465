#!/usr/bin/env python3
"""--output into files that already hold data, and writes that end abnormally. Everything a file held
before must still be there, bit for bit (read back with h5py); a new dataset appears only complete;
an existing dataset is replaced only with --overwrite; and no temporary file is left behind by any
end the job can see: a full disk, SIGINT or SIGTERM to mpiexec, a killed rank, a fault after the
write. A job killed outright (SIGKILL to every process) leaves its temporary, and the next write
into that directory removes it. Both HDF5 paths: parallel (MPI-IO, where the library has it) and
serial (the token path, TESSERA_IO_SERIAL=1)."""
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, h5py, np, program, random_array, write_h5  # noqa: E402

h = Harness(__doc__)
G, P, M = "global_sum", "prefix_sum", "matmul"
SERIAL = {"TESSERA_IO_SERIAL": "1"}
# The host as temporary names spell it (framework/src/temporary_file.cpp).
HOST_TAG = "".join(c if c.isalnum() or c in "._" else "_" for c in socket.gethostname())[:64]


def snapshot(path):
    """Every dataset of an HDF5 file (name -> (values, attributes)), and the file's attributes."""
    content = {}
    with h5py.File(path, "r") as f:
        content["<file attrs>"] = (None, {k: np.asarray(v).tolist() for k, v in f.attrs.items()})

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                content["/" + name] = (obj[...].copy(), {k: np.asarray(v).tolist() for k, v in obj.attrs.items()})
        f.visititems(visit)
    return content


def same_content(before, after, ignore=()):
    """Names of what differs between two snapshots, ignoring the names in `ignore`."""
    differ = []
    for name in sorted(set(before) | set(after)):
        if name in ignore:
            continue
        if name not in before or name not in after:
            differ.append(name)
            continue
        (a, aa), (b, ba) = before[name], after[name]
        if aa != ba or (a is not None and (a.dtype != b.dtype or a.shape != b.shape or
                                           not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))):
            differ.append(name)
    return differ


def make_rich_file(path):
    """A file with datasets of several types and layouts, groups and attributes: what must survive."""
    if os.path.exists(path):
        os.remove(path)
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "kept"
        f["x"] = random_array(h.rng, np.dtype("float64"), 1000)
        f["ints"] = np.arange(-50, 50, dtype=np.int32)
        f.create_dataset("g/deflated", data=random_array(h.rng, np.dtype("float32"), (40, 30)), chunks=(7, 7),
                         compression="gzip")
        f["g/deeper/m"] = random_array(h.rng, np.dtype("float64"), (6, 4))
        f["g/deeper/m"].attrs["unit"] = "m"
        f["A"] = random_array(h.rng, np.dtype("float64"), (9, 5))
        f["B"] = random_array(h.rng, np.dtype("float64"), (5, 7))
        for i in range(8):
            f[f"many/d{i}"] = np.full(3, i, dtype=np.int64)


def temporaries(directory):
    return sorted(n for n in os.listdir(directory) if ".tmp-" in n)


def status_line(app, stderr):
    return [line for line in stderr.splitlines() if line.startswith(program(app) + ":")]


def expect_refused(what, status, stderr, app, words):
    h.check(status == 2, f"{what}: status {status}, expected 2\n{stderr}")
    ours = status_line(app, stderr)
    h.check(len(ours) == 1 and all(w in ours[0] for w in words), f"{what}: expected one line with {words}, got {ours}")


# ---- writing into an existing file keeps everything else ---------------------------------------------
for mode, env in (("parallel", None), ("serial", SERIAL)):
    rich = h.path(f"rich_{mode}.h5")
    make_rich_file(rich)
    os.chmod(rich, 0o640)
    before = snapshot(rich)
    x = before["/x"][0]

    # prefix_sum reads /x and writes /y into the same file.
    status, out, err = h.run(P, ["--input", f"{rich}:/x", "--output", f"{rich}:/y"], env=env)
    if h.check(status == 0, f"{mode}: prefix_sum into its own input file: status {status}\n{err}"):
        after = snapshot(rich)
        h.check(same_content(before, after, ignore={"/y"}) == [],
                f"{mode}: datasets changed or lost by writing /y: {same_content(before, after, ignore={'/y'})}")
        h.check("/y" in after and np.allclose(after["/y"][0], np.cumsum(x), rtol=1e-12, atol=1e-9),
                f"{mode}: /y is not the prefix sum of /x")
        h.check(stat.S_IMODE(os.stat(rich).st_mode) == 0o640, f"{mode}: the file's permissions changed")
    h.check(temporaries(h.work) == [], f"{mode}: temporaries left: {temporaries(h.work)}")

    # matmul reads /A and /B and writes /C into the same file.
    before = snapshot(rich)
    status, out, err = h.run(M, ["--a", f"{rich}:/A", "--b", f"{rich}:/B", "--output", f"{rich}:/results/C"], env=env)
    if h.check(status == 0, f"{mode}: matmul into its own input file: status {status}\n{err}"):
        after = snapshot(rich)
        h.check(same_content(before, after, ignore={"/results/C"}) == [],
                f"{mode}: datasets changed by writing /results/C: {same_content(before, after, ignore={'/results/C'})}")
        h.check("/results/C" in after and np.allclose(after["/results/C"][0], before["/A"][0] @ before["/B"][0]),
                f"{mode}: /results/C is not A @ B")

    # The same dataset again: refused before any work, the file untouched to the byte.
    with open(rich, "rb") as f:
        raw = f.read()
    status, out, err = h.run(P, ["--input", f"{rich}:/x", "--output", f"{rich}:/y", "--exclusive"], env=env)
    expect_refused(f"{mode}: existing /y without --overwrite", status, err, P, ["--output", "'/y'", "--overwrite"])
    h.check(out.strip() == "", f"{mode}: work was done before the refusal: {out!r}")
    with open(rich, "rb") as f:
        h.check(f.read() == raw, f"{mode}: the file changed although the write was refused")

    # With --overwrite it is replaced, and nothing else changes.
    before = snapshot(rich)
    status, out, err = h.run(P, ["--input", f"{rich}:/x", "--output", f"{rich}:/y", "--exclusive", "--overwrite"], env=env)
    if h.check(status == 0, f"{mode}: --overwrite: status {status}\n{err}"):
        after = snapshot(rich)
        h.check(same_content(before, after, ignore={"/y"}) == [], f"{mode}: --overwrite changed other datasets")
        expected = np.concatenate([[0.0], np.cumsum(x)[:-1]])
        h.check(np.allclose(after["/y"][0], expected, rtol=1e-12, atol=1e-9) and
                after["/y"][1].get("scan") == "exclusive", f"{mode}: --overwrite did not replace /y")

    # Names that cannot be made in this file: under a dataset, or a group's name.
    for target, words in (("/x/z", ["'/x'", "not a group"]), ("/g", ["'/g'", "group"]),
                          ("/g/deeper", ["'/g/deeper'", "group"])):
        status, out, err = h.run(G, ["--n", "10", "--output", f"{rich}:{target}", "--overwrite"], env=env)
        expect_refused(f"{mode}: --output {target}", status, err, G, ["--output", *words])
    h.check(temporaries(h.work) == [], f"{mode}: temporaries left: {temporaries(h.work)}")

# ---- destinations that are not plain files -------------------------------------------------------------
target = h.path("link_target.h5")
write_h5(target, "/kept", np.arange(4.0))
with open(target, "rb") as f:
    target_bytes = f.read()
link = h.path("link.h5")
os.symlink(target, link)
status, _, err = h.run(G, ["--n", "10", "--output", f"{link}:/r"])
expect_refused("--output through a symbolic link", status, err, G, ["--output", "symbolic link"])
h.check(os.path.islink(link), "the symbolic link was replaced")
with open(target, "rb") as f:
    h.check(f.read() == target_bytes, "the link's target changed")
fifo = h.path("fifo.h5")
os.mkfifo(fifo)
status, _, err = h.run(G, ["--n", "10", "--output", f"{fifo}:/r"])
expect_refused("--output to a FIFO", status, err, G, ["--output", "not a regular file"])
h.check(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced")
# A device node of our own (a copy of /dev/null's), never /dev/null itself: code that replaced the
# device would replace a system file.
device = h.path("null_device.h5")
try:
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
except OSError as e:
    print(f"SKIP --output to a device: cannot make a device node here ({e})")
    device = None
if device:
    status, _, err = h.run(G, ["--n", "10", "--output", f"{device}:/r"])
    expect_refused("--output to a device", status, err, G, ["--output", "not a regular file"])
    h.check(stat.S_ISCHR(os.lstat(device).st_mode), "the device node was replaced")
text_file = h.path("notes.h5")
with open(text_file, "w") as f:
    f.write("not HDF5\n")
status, _, err = h.run(G, ["--n", "10", "--output", f"{text_file}:/r"])
expect_refused("--output into a file that is not HDF5", status, err, G, ["--output", "not an HDF5 file"])
with open(text_file, "rb") as f:
    h.check(f.read() == b"not HDF5\n", "a file that is not HDF5 was replaced")

# ---- --json naming a file of the run ------------------------------------------------------------------
data = h.path("data.h5")
write_h5(data, "/v", np.arange(10.0))
with open(data, "rb") as f:
    data_bytes = f.read()
os.makedirs(h.path("sub"), exist_ok=True)
os.link(data, h.path("sub/hardlink.h5"))
for what, args in (
        ("the input file", ["--input", f"{data}:/v", "--json", data]),
        ("the input file, spelt another way", ["--input", f"{data}:/v", "--json", h.path("sub/../data.h5")]),
        ("the input file through a hard link", ["--input", f"{data}:/v", "--json", h.path("sub/hardlink.h5")]),
        ("the output file", ["--input", f"{data}:/v", "--output", f"{data}:/w", "--json", data]),
        ("a new output file", ["--n", "10", "--output", f"{h.path('new.h5')}:/w", "--json", h.path("./new.h5")])):
    status, _, err = h.run(G, args)
    expect_refused(f"--json naming {what}", status, err, G, ["--json"])
with open(data, "rb") as f:
    h.check(f.read() == data_bytes, "--json overwrote an HDF5 file of the run")
h.check(not os.path.exists(h.path("new.h5")), "the refused run wrote its output")
status, _, err = h.run(G, ["--input", f"{data}:/v", "--json", h.path("report.json")])
h.check(status == 0, f"--json beside the input: status {status}\n{err}")


# ---- writes that end abnormally ----------------------------------------------------------------------
PAUSE_LINE = "paused for a test after writing half of its slab"


def process_tree(root_pid):
    """The descendants of root_pid (Linux /proc), mapped to their MPI rank where their environment names one."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parent[int(entry)] = int(fields[1])
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
        except OSError:
            continue
        for key in (b"OMPI_COMM_WORLD_RANK", b"PMI_RANK", b"PMIX_RANK"):
            if key in env and os.path.basename(os.readlink(f"/proc/{p}/exe")).startswith("tessera"):
                ranks[int(env[key])] = p
                break
    return ranks


def start_paused_write(output, ranks, env, n=400000):
    """Starts prefix_sum writing `output` with each rank pausing half-way; returns (process, stderr
    lines, rank pids) once rank 0 has paused, or None after a recorded failure."""
    cmd = h.command(P, ["--n", str(n), "--dtype", "float64", "--output", output], ranks)
    environment = {**os.environ, **(env or {}), "TESSERA_TEST_PAUSE_IN_WRITE": "60"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
                            cwd=h.work, env=environment)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.time() + 60
    while time.time() < deadline and not any(PAUSE_LINE in line and "rank 0 " in line for line in lines):
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if not any(PAUSE_LINE in line for line in lines):
        proc.kill()
        proc.wait()
        h.fail(f"the writer never paused half-way (TESSERA_TEST_PAUSE_IN_WRITE): {' '.join(cmd)}\n{''.join(lines)}")
        return None
    pids = process_tree(proc.pid)
    if len(pids) != ranks:
        h.fail(f"found the processes of ranks {sorted(pids)}, expected 0..{ranks - 1}")
    return proc, lines, pids


def finish(proc, timeout=60):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        h.fail("the job did not end after the interruption (hang)")
        return proc.wait()


def check_intact(what, path, before, new_name):
    after = snapshot(path)
    h.check(same_content(before, after) == [], f"{what}: the existing file changed: {same_content(before, after)}")
    h.check(new_name not in after, f"{what}: a half-written {new_name} appeared under its final name")


multi = h.ranks if h.ranks > 1 else 2  # a killed rank needs another that survives it
for mode, env in (("parallel", None), ("serial", SERIAL)):
    victim = h.path(f"victim_{mode}.h5")
    make_rich_file(victim)
    before = snapshot(victim)

    # SIGINT and SIGTERM to mpiexec: mpiexec passes them to the ranks, which remove the temporary.
    for sig in (signal.SIGINT,) if mode == "parallel" else (signal.SIGTERM,):  # one signal per write path
        started = start_paused_write(f"{victim}:/new", h.ranks, env)
        if started:
            proc, lines, _ = started
            proc.send_signal(sig)
            status = finish(proc)
            what = f"{mode}: {signal.Signals(sig).name} to mpiexec mid-write"
            h.check(status != 0, f"{what}: status 0")
            check_intact(what, victim, before, "/new")
            h.check(temporaries(h.work) == [], f"{what}: temporaries left: {temporaries(h.work)}")

    # One rank killed: mpiexec ends the others (SIGTERM), and rank 0 removes the temporary.
    started = start_paused_write(f"{victim}:/new", multi, env)
    if started:
        proc, lines, pids = started
        if multi - 1 in pids:
            os.kill(pids[multi - 1], signal.SIGKILL)
        status = finish(proc)
        what = f"{mode}: rank {multi - 1} of {multi} killed mid-write"
        h.check(status != 0, f"{what}: status 0")
        check_intact(what, victim, before, "/new")
        h.check(temporaries(h.work) == [], f"{what}: temporaries left: {temporaries(h.work)}")

    # Every process killed outright: the temporary stays (nothing can remove it), the file is intact;
    # the next write into the directory removes the stale temporary and adds its dataset.
    started = start_paused_write(f"{victim}:/new", h.ranks, env)
    if started:
        proc, lines, pids = started
        for pid in pids.values():
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        finish(proc)
        what = f"{mode}: every process killed mid-write"
        check_intact(what, victim, before, "/new")
        stale = temporaries(h.work)
        h.check(len(stale) == 1 and f".tmp-{HOST_TAG}-" in stale[0],
                f"{what}: expected the one temporary of the killed job (named after this host), found {stale}")
        status, _, err = h.run(G, ["--n", "100", "--output", f"{h.path('other_' + mode + '.h5')}:/sum"], env=env)
        h.check(status == 0, f"{what}: the next write failed: {err}")
        h.check(temporaries(h.work) == [], f"{what}: the next write left the stale temporaries {temporaries(h.work)}")
        status, _, err = h.run(P, ["--n", "1000", "--output", f"{victim}:/new"], env=env)
        if h.check(status == 0, f"{what}: writing /new after the kill: status {status}\n{err}"):
            after = snapshot(victim)
            h.check(same_content(before, after, ignore={"/new"}) == [] and after["/new"][0].shape == (1000,),
                    f"{what}: writing /new after the kill changed the file: {same_content(before, after)}")
        make_rich_file(victim)
        before = snapshot(victim)

    # A fault after the slabs are written, before the rename: on rank 0 and on the last rank.
    for rank in (0,) if mode == "parallel" else (h.ranks - 1,):  # rank 0 on one path, the last on the other
        status, _, err = h.run(P, ["--n", "5000", "--output", f"{victim}:/new"], env={**(env or {}),
                                                                                    "TESSERA_INJECT_FAULT": f"{rank}:write"})
        what = f"{mode}: fault on rank {rank} after the write"
        h.check(status not in (0, None) and "injected fault" in err, f"{what}: status {status}\n{err}")
        check_intact(what, victim, before, "/new")
        h.check(temporaries(h.work) == [], f"{what}: temporaries left: {temporaries(h.work)}")

# Every app's output goes through the one commit: a fault after its datasets are written and before
# the rename leaves the existing file as it was, with none of the app's datasets (neither of a pair:
# the sorted keys and their argsort, the counts and the edges), and no temporary. Without the fault
# the datasets appear together and the rest of the file is kept.
victim = h.path("victim_apps.h5")
make_rich_file(victim)
before = snapshot(victim)
outputs = [
    ("filter", ["--n", 1000], ["/new"]),
    ("matmul", ["--size", 17], ["/new"]),
    ("histogram", ["--n", 1000, "--bins", 7], ["/new", "/new_edges"]),
    ("transpose", ["--m", 13, "--n", 7], ["/new"]),
    ("sort", ["--n", 1000, "--values"], ["/new", "/new_index"]),
    ("stencil", ["--nx", 9, "--ny", 7, "--iters", 3], ["/new"]),
    ("stencil", ["--op", "convolve1d", "--n", 1000], ["/new"]),
]
for app, args, datasets in outputs:
    what = f"{app} {' '.join(map(str, args))}: fault at the commit"
    status, _, err = h.run(app, [*args, "--output", f"{victim}:/new"], env={"TESSERA_INJECT_FAULT": "0:write"})
    h.check(status not in (0, None) and "injected fault" in err, f"{what}: status {status}\n{err}")
    check_intact(what, victim, before, datasets[0])
    for name in datasets[1:]:
        h.check(name not in snapshot(victim), f"{what}: {name} appeared alone")
    h.check(temporaries(h.work) == [], f"{what}: temporaries left: {temporaries(h.work)}")
    if len(datasets) > 1:
        status, _, err = h.run(app, [*args, "--output", f"{victim}:/new", "--overwrite"])
        after = snapshot(victim)
        h.check(status == 0 and all(name in after for name in datasets) and same_content(before, after, datasets) == [],
                f"{app}: the datasets {datasets} did not appear together in the kept file: status {status}\n{err}")
        make_rich_file(victim)
        before = snapshot(victim)

# Stale temporaries: only those of this naming, this host and a process that is gone are removed.
dead = subprocess.Popen(["true"])
dead.wait()
host_tag = HOST_TAG
stale_names = {
    f".x.h5.tmp-{host_tag}-{dead.pid}-1a2b": False,     # its writer is gone: removed
    f".x.h5.tmp-{host_tag}-{os.getpid()}-1a2b": True,   # its writer (this test) is alive: kept
    f".x.h5.tmp-someotherhost-{dead.pid}-1a2b": True,   # another host's: kept
    f".x.h5.tmp-{host_tag}-{dead.pid}-notahex": True,   # not our naming: kept
    f"x.h5.tmp-{host_tag}-{dead.pid}-1a2b": True,       # not hidden: kept
}
for name in stale_names:
    with open(h.path(name), "w") as f:
        f.write("stale\n")
status, _, err = h.run(G, ["--n", "10", "--output", f"{h.path('fresh.h5')}:/s"])
h.check(status == 0, f"write beside stale temporaries: {status} {err}")
for name, kept in stale_names.items():
    h.check(os.path.exists(h.path(name)) == kept, f"stale temporary {name}: {'removed' if kept else 'kept'}")
    if os.path.exists(h.path(name)):
        os.remove(h.path(name))


# ---- a full disk -----------------------------------------------------------------------------------------
# A 1 MiB tmpfs, mounted in a private mount namespace (it vanishes with the namespace), holding an
# existing file; the output (8 MB) cannot fit. Needs unshare and mount (root); skipped otherwise.
def full_disk(mode, env):
    disk = h.path(f"disk_{mode}")
    os.makedirs(disk)
    existing = h.path(f"disk_existing_{mode}.h5")
    make_rich_file(existing)
    before = snapshot(existing)
    app = " ".join(map(str, h.command(P, ["--n", "1000000", "--dtype", "float64", "--output", f"{disk}/f.h5:/new"])))
    script = (f"mount -t tmpfs -o size=1m tmpfs {disk} || exit 99; cp {existing} {disk}/f.h5; {app}; "
              f"echo status=$?; ls -a {disk}; cp {disk}/f.h5 {existing}.after")
    unshare = shutil.which("unshare")
    if unshare is None:
        print(f"SKIP full-disk case ({mode}): no unshare")
        return
    p = subprocess.run([unshare, "-m", "--propagation", "private", "sh", "-c", script], capture_output=True, text=True,
                       errors="replace", cwd=h.work, env={**os.environ, **(env or {})}, timeout=120)
    if p.returncode == 99 or "status=" not in p.stdout:
        print(f"SKIP full-disk case ({mode}): cannot mount a tmpfs in a private mount namespace here ({p.stderr.strip()[:200]})")
        return
    status = int(p.stdout.split("status=")[1].split()[0])
    listing = p.stdout.split("status=")[1].split()[1:]
    what = f"{mode}: a full disk"
    h.check(status != 0, f"{what}: status 0")
    h.check([n for n in listing if ".tmp-" in n] == [], f"{what}: temporaries left: {listing}")
    h.check("f.h5" in listing, f"{what}: the existing file is gone: {listing}")
    if os.path.exists(existing + ".after"):
        check_intact(what, existing + ".after", before, "/new")
    print(f"full disk ({mode}): a 1 MiB tmpfs, status {status}")


for mode, env in (("parallel", None), ("serial", SERIAL)):
    full_disk(mode, env)

h.finish()
