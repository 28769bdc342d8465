#!/usr/bin/env python3
"""Bad input to the apps: exit status 2, one line on stderr from the app naming the flag or dataset
and what is wrong, no hang (a timeout fails), no output file, and an existing file at the output
path left exactly as it was.

Every rank parses the same argv to the same verdict, so most refusals run at 1 rank (a launch of 3
costs three times the CPU); the ones marked MULTI run at the registered rank count (3), where the
rank count is part of what is checked: the one line comes from rank 0 only, the ranks agree on a
verdict that one of them reached (a dataset probed, a value of one rank's block, a report rank 0
writes), or the refusal depends on the count (a process grid, a rank that does not exist)."""
import json
import os
import socket
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apptest import Harness, h5py, np, program, random_array, write_h5  # noqa: E402

h = Harness(__doc__)
good = h.path("good.h5")
write_h5(good, "/v", random_array(h.rng, np.dtype("float64"), 50))
write_h5(good, "/m", random_array(h.rng, np.dtype("float64"), (4, 6)), "deflate")
write_h5(good, "/m2", random_array(h.rng, np.dtype("float64"), (5, 3)))
with open(h.path("text.h5"), "w") as f:
    f.write("not an HDF5 file\n")

G, P, F, M = "global_sum", "prefix_sum", "filter", "matmul"
MULTI = h.ranks  # the registered rank count (3)
cases = [
    # (app, args, words the message must contain[, ranks]); 1 rank unless MULTI is given
    (G, ["--bogus"], ["unknown flag", "--bogus"], MULTI),
    (P, ["--dtype", "int8"], ["--dtype", "int8"]),
    (G, ["--input", "missing.h5:/v"], ["--input", "missing.h5"], MULTI),
    (F, ["--input", f"{good}:/nothere"], ["--input", "/nothere"]),
    (G, ["--input", f"{h.path('text.h5')}:/v"], ["--input", "not an HDF5 file"]),
    (P, ["--input", f"{good}:/m"], ["--input", "/m", "2-D"]),
    (M, ["--a", f"{good}:/m", "--b", f"{good}:/m2"], ["--a/--b", "do not multiply", "4 x 6", "5 x 3"], MULTI),
    (M, ["--a", f"{good}:/v", "--b", f"{good}:/m2"], ["--a", "/v", "2-D"]),
    (G, ["--n", "-5"], ["--n", "negative", "-5"], MULTI),
    # More than any machine's memory, refused before any allocation (a host allocation past the
    # memory is killed later by the out-of-memory killer, not refused).
    (G, ["--n", "1e15"], ["--n", "out of memory"], MULTI),
    ("sort", ["--n", "1e15", "--values"], ["--n", "out of memory"], MULTI),
    (P, ["--n", "12abc"], ["--n", "12abc"]),
    (F, ["--n", "1e30"], ["--n", "1e30", "too large"]),
    (M, ["--m", "-3"], ["--m", "negative"]),
    (M, ["--size", "x"], ["--size", "'x'"]),
    (F, ["--predicate", "gt"], ["--predicate"]),
    (F, ["--predicate", "gt:abc", "--dtype", "int32"], ["--predicate", "abc"]),
    (F, ["--predicate", "between:5:1"], ["--predicate", "can never match", "exceeds"]),
    (F, ["--predicate", "gt:nan", "--dtype", "float32"], ["--predicate", "can never match", "NaN"]),
    (F, ["--predicate", "lt:-2147483648", "--dtype", "int32"], ["--predicate", "can never match"]),
    # A finite value beyond the dtype's range is refused, not rounded to an infinity.
    (F, ["--predicate", "eq:1e39", "--dtype", "float32"], ["--predicate", "'1e39'", "out of range", "float32"]),
    (F, ["--predicate", "between:0:-1e400", "--dtype", "float64"], ["--predicate", "'-1e400'", "out of range"]),
    (G, ["--op", "avg"], ["--op", "avg"]),
    (M, ["--grid", "2x2"] if h.ranks != 4 else ["--grid", "3x3"], ["--grid", "ranks"], MULTI),
    (G, ["--input", "nocolon.h5"], ["--input", "FILE.h5:/DATASET"]),
    (P, ["--repeat", "0"], ["--repeat"]),
    # Dataset names HDF5 refuses are refused before anything is created.
    (G, ["--n", "10", "--output", f"{h.path('dot.h5')}:/."], ["--output", "'/.'", "not a dataset name"], MULTI),
    (G, ["--n", "10", "--output", f"{h.path('dot.h5')}:/a/../b"], ["--output", "'..'"]),
    (P, ["--n", "10", "--output", f"{h.path('dot.h5')}:/a/./b"], ["--output", "'.'"]),
    # A flag is not the value of the flag before it; a negative number is.
    (G, ["--n", "10", "--json", "--verify"], ["--json", "missing value", "--verify"]),
    (P, ["--n", "10", "--seed", "-1"], ["--seed", "negative", "-1"]),
]
# A GPU asked for where none exists: CUDA_VISIBLE_DEVICES="" hides any GPU the machine has (and a
# build without CUDA has none), so this case runs on every machine.
no_gpu_case = len(cases)
cases.append((G, ["--backend", "cuda"], ["--backend cuda"]))

# An existing HDF5 file at the output path, with a dataset of another name: it must stay as it was.
template = h.path("existing_template.h5")
write_h5(template, "/kept", random_array(h.rng, np.dtype("float64"), 20))
with open(template, "rb") as f:
    existing_bytes = f.read()
os.remove(template)
for i, (app, args, words, *count) in enumerate(cases):
    for existing in (i % 2 == 1,):  # alternate: no file at the output path / an existing one
        out = h.path(f"out_{i}_{int(existing)}.h5")
        if existing:
            with open(out, "wb") as f:
                f.write(existing_bytes)
        before = set(os.listdir(h.work))
        use_backend = "--backend" not in args
        env = {"CUDA_VISIBLE_DEVICES": ""} if i == no_gpu_case else None
        output = [] if "--output" in args else ["--output", f"{out}:/r"]
        ranks = count[0] if count else 1
        status, stdout, stderr = h.run(app, [*args, *output], ranks=ranks, backend=use_backend, env=env)
        what = f"{app} {' '.join(args)} (existing output: {existing}, {ranks} rank(s))"
        if status is None:
            continue
        h.check(status == 2, f"{what}: status {status}, expected 2\n{stdout}\n{stderr}")
        ours = [line for line in stderr.splitlines() if line.startswith(program(app) + ":")]
        h.check(len(ours) == 1, f"{what}: expected one line starting '{program(app)}:', got {ours}")
        if ours:
            h.check(all(w in ours[0] for w in words), f"{what}: message {ours[0]!r} lacks one of {words}")
        h.check(stdout.strip() == "", f"{what}: unexpected standard output {stdout!r}")
        if existing:
            with open(out, "rb") as f:
                h.check(f.read() == existing_bytes, f"{what}: the existing output file changed")
        else:
            h.check(not os.path.exists(out), f"{what}: an output file was created")
        after = set(os.listdir(h.work))
        h.check(after == before, f"{what}: files appeared: {sorted(after - before)}")


def check_refused(what, status, stderr, app, words, where=None):
    """Exit status 2 and exactly one line from the app (on rank 0 only) holding every word."""
    h.check(status == 2, f"{what}: status {status}, expected 2\n{stderr}")
    ours = [line for line in stderr.splitlines() if line.startswith((where or program(app)) + ":")]
    h.check(len(ours) == 1, f"{what}: expected one line starting '{where or program(app)}:', got {ours}")
    h.check(len(stderr.splitlines()) < 20, f"{what}: {len(stderr.splitlines())} lines on stderr (an HDF5 error stack?)")
    if ours:
        h.check(all(w in ours[0] for w in words), f"{what}: message {ours[0]!r} lacks one of {words}")


# Inputs HDF5 cannot read: a filter this library lacks (LZF, which only h5py has), a corrupt chunk
# (in the middle rank's slab at 3 ranks); and values that the requested --dtype cannot hold.
damaged = h.path("damaged.h5")
with h5py.File(damaged, "w") as f:
    f.create_dataset("lzf", data=np.arange(1000.0), chunks=(100,), compression="lzf")
    f.create_dataset("corrupt", data=np.arange(3000.0), chunks=(100,), compression="gzip")
    f["huge"] = np.array([1.0, 1e20, 3.0, -7.0])
    f["nan"] = np.array([1.0, 2.0, np.nan, 4.0])
    f["wide"] = np.array([1, 2**40, 3], dtype=np.int64)
    f["float_overflow"] = np.array([1e300, 1.0])
with h5py.File(damaged, "r") as f:
    chunk = f["corrupt"].id.get_chunk_info_by_coord((1500,))
with open(damaged, "r+b") as f:  # garbage in the middle of one deflated chunk
    f.seek(chunk.byte_offset + chunk.size // 2)
    f.write(b"\xff" * 16)
for app, dset, extra, words in [
    (G, "lzf", [], ["--input", "'/lzf'", "filter", "lzf"]),
    (F, "corrupt", [], ["--input", "cannot read", "'/corrupt'"]),
    (G, "huge", ["--dtype", "int32"], ["--input", "'/huge'", "int32", "1e+20"]),
    (P, "nan", ["--dtype", "int64"], ["--input", "'/nan'", "int64", "nan"]),
    (F, "wide", ["--dtype", "int32"], ["--input", "'/wide'", "int32", "1099511627776"]),
    (G, "float_overflow", ["--dtype", "float32"], ["--input", "'/float_overflow'", "float32"]),
]:
    status, _, stderr = h.run(app, ["--input", f"{damaged}:/{dset}", *extra])
    check_refused(f"{app} --input /{dset} {' '.join(extra)}", status, stderr, app, words)
# A float file into a wider or equal type, and NaN into a float type, are not refused.
status, _, stderr = h.run(G, ["--input", f"{damaged}:/nan", "--dtype", "float32"])
h.check(status == 0, f"NaN read as float32: status {status}\n{stderr}")

# A malformed TESSERA_INJECT_FAULT is refused, not silently ignored.
for spec, words, ranks in [("x", ["'x'", "RANK:SITE"], 1), ("0:nosuchsite", ["unknown site", "nosuchsite"], 1),
                           ("0:allreduce:0", ["COUNT"], 1), (f"{MULTI}:barrier", ["rank", "does not exist"], MULTI)]:
    status, _, stderr = h.run(G, ["--n", "10"], ranks=ranks, env={"TESSERA_INJECT_FAULT": spec})
    check_refused(f"TESSERA_INJECT_FAULT={spec}", status, stderr, G, words, where="tessera")

# A --json that cannot be written (a full device) ends the run non-zero with one line.
status, _, stderr = h.run(G, ["--n", "10", "--json", "/dev/full"])
check_refused("--json /dev/full", status, stderr, G, ["--json", "/dev/full"])
h.check(stat.S_ISCHR(os.stat("/dev/full").st_mode), "--json /dev/full: the device was replaced")

# A --json path that is a symlink is written through: the link stays, its target gets the report.
target, link = h.path("report_target.json"), h.path("report_link.json")
os.symlink(target, link)
status, _, stderr = h.run(G, ["--n", "10", "--json", link], ranks=1)
h.check(status == 0 and os.path.islink(link), f"--json through a symlink: status {status}, link kept {os.path.islink(link)}\n{stderr}")
if os.path.exists(target):
    with open(target) as f:
        h.check(json.load(f).get("app") == program(G), "--json through a symlink: the target lacks the report")
else:
    h.check(False, "--json through a symlink: the target was not written")

# Paths that are not UTF-8 still give valid JSON (the bytes become U+FFFD).
raw_dir = os.fsencode(h.work)
odd_input = os.fsdecode(raw_dir + b"/in\xff\xfe.h5")
write_h5(odd_input, "/v", np.arange(5, dtype=np.int64))
odd_report = h.path("odd_report.json")
status, _, stderr = h.run(G, ["--input", f"{odd_input}:/v", "--json", odd_report], ranks=1)
if h.check(status == 0, f"input path with invalid UTF-8: status {status}\n{stderr}"):
    with open(odd_report, "rb") as f:
        raw = f.read()
    try:
        report = json.loads(raw.decode("utf-8"))
        h.check("\ufffd" in report["input"] and report["result"] == 10, f"odd path report: {report['input']!r}")
    except (UnicodeDecodeError, ValueError) as e:
        h.fail(f"the report of a run on a non-UTF-8 path is not valid UTF-8 JSON: {e}")

# An unwritable output destination is refused before any work.
status, _, stderr = h.run(G, ["--n", "10", "--output", h.path("no/such/dir/x.h5") + ":/r"])
h.check(status == 2 and "--output" in stderr and "no such directory" in stderr, f"bad --output dir: {status} {stderr}")
status, _, stderr = h.run(G, ["--n", "10", "--json", h.path("no/such/dir/r.json")], ranks=1)
h.check(status == 2 and "--json" in stderr, f"bad --json dir: {status} {stderr}")
# The report's temporary never takes an existing file's name (it replaced the file NAME.partial, an
# input here), and a --json that is a symbolic link to the --output file yet to be made is refused.
partial_input = h.path("rep.json.partial")
write_h5(partial_input, "/x", random_array(h.rng, np.dtype("float32"), 100))
partial_bytes = open(partial_input, "rb").read()
status, _, stderr = h.run("sort", ["--input", f"{partial_input}:/x", "--json", h.path("rep.json")], ranks=MULTI)
h.check(status == 0 and open(partial_input, "rb").read() == partial_bytes and os.path.exists(h.path("rep.json")),
        f"--json rep.json beside an input rep.json.partial: status {status}, the input changed or no report: {stderr}")
# The report's temporary is named as the HDF5 outputs' are: what a process killed outright left
# (its process gone) is swept by the next report written in that directory; a running process's is
# kept, and so is a file of another name.
host_tag = "".join(c if c.isalnum() and c.isascii() or c in "._" else "_" for c in socket.gethostname())[:64]
dead = subprocess.Popen(["true"])
dead.wait()
stale = h.path(f".old.json.tmp-{host_tag}-{dead.pid}-1f")
alive = h.path(f".old.json.tmp-{host_tag}-1-2f")
other = h.path(f".old.json.tmp-{host_tag}-{dead.pid}-zz")
for path in (stale, alive, other):
    with open(path, "w") as f:
        f.write("left\n")
status, _, stderr = h.run(G, ["--n", "10", "--json", h.path("swept.json")], ranks=1)
h.check(status == 0 and os.path.exists(h.path("swept.json")) and not os.path.exists(stale) and
        os.path.exists(alive) and os.path.exists(other),
        f"--json: a dead process's temporary not swept, or another file removed: status {status}, "
        f"stale {os.path.exists(stale)}, alive {os.path.exists(alive)}, other {os.path.exists(other)}: {stderr}")
h.check(not [n for n in os.listdir(h.work) if n.startswith(".swept.json.tmp-")],
        f"--json left its temporary: {[n for n in os.listdir(h.work) if '.tmp-' in n]}")
link_target = h.path("linked_out.h5")
if os.path.lexists(h.path("link.json")):
    os.remove(h.path("link.json"))
os.symlink(link_target, h.path("link.json"))
status, _, stderr = h.run("sort", ["--input", f"{partial_input}:/x", "--output", f"{link_target}:/s", "--json",
                                   h.path("link.json")], ranks=MULTI)
check_refused("--json a link to the --output file yet to be made", status, stderr, "sort", ["--json", "--output"])
h.check(not os.path.exists(link_target), "--json a link to the --output file: the output was made")
# float32 samples whose range is wider than float arithmetic holds (upper - lower overflows).
write_h5(h.path("huge32.h5"), "/x", np.array([-3.4e38, 3.4e38, 0.0, 1e38], np.float32))
status, _, stderr = h.run("histogram", ["--input", f"{h.path('huge32.h5')}:/x", "--bins", "10"], ranks=MULTI)
check_refused("histogram of float32 over [-3.4e38, 3.4e38]", status, stderr, "histogram", ["--range", "too wide", "float64"])

# ... also a directory whose permission bits allow writing where no file can be made (procfs: root's
# access(2) says yes).
for flag, target in (("--output", "/proc/tessera_probe.h5:/r"), ("--json", "/proc/tessera_probe.json")):
    status, stdout, stderr = h.run(G, ["--n", "10", flag, target], ranks=MULTI)
    lines = [ln for ln in stderr.splitlines() if ln.startswith("tessera-")]
    h.check(status == 2 and len(lines) == 1 and flag in lines[0] and "'/proc'" in lines[0] and "result" not in stdout,
            f"{flag} in /proc: status {status}, expected 2 and one line before any work: {stdout!r} {stderr!r}")

# --help and --version succeed and print on rank 0 only (the apps share that code: one of them at
# several ranks).
for app in (G, P, F, M, "histogram", "transpose", "sort", "stencil"):
    status, stdout, _ = h.run(app, ["--help"], ranks=MULTI if app == G else 1, backend=False)
    h.check(status == 0 and stdout.count("usage:") == 1 and "--verify" in stdout, f"{app} --help: {status} {stdout!r}")
status, stdout, _ = h.run(G, ["--version"], ranks=MULTI, backend=False)
h.check(status == 0 and len(stdout.strip().splitlines()) == 1, f"{G} --version: {status} {stdout!r}")
# ... and so do the scaling app's.
status, stdout, _ = h.run("scaling", ["--help"], backend=False)
h.check(status == 0 and stdout.count("usage:") == 1 and "--n-per-rank" in stdout, f"scaling --help: {status} {stdout!r}")
# The scaling study's reports are checked before it measures anything: exit 2, one line, at once.
os.makedirs(h.path("a_directory"), exist_ok=True)
for args, words in ((["--csv", h.path("a_directory")], ["--csv", "is a directory"]),
                    (["--csv", h.path("same.txt"), "--json", h.path("same.txt")], ["--csv", "--json file"]),
                    (["--json", h.path("no/such/dir/r.json")], ["--json", "no such directory"])):
    status, stdout, stderr = h.run("scaling", [*args, "--n", "1000", "--rounds", "1", "--max-rounds", "1"], ranks=1)
    lines = [ln for ln in stderr.splitlines() if ln.startswith("tessera-scaling")]
    h.check(status == 2 and len(lines) == 1 and all(w in lines[0] for w in words),
            f"scaling {args}: status {status}, expected 2 and one line naming {words} before any progress: {stderr!r}")
status, stdout, _ = h.run("scaling", ["--version"], ranks=1, backend=False)
h.check(status == 0 and len(stdout.strip().splitlines()) == 1 and "Tessera" in stdout, f"scaling --version: {status} {stdout!r}")
h.finish()
