#!/usr/bin/env python3
"""Runs every command line that the docs show, at small sizes, so that no documented command stops
working.

Each shell block of the docs (a fenced block marked sh, bash, console or nothing) is read line by
line; every line in it must be a command (blocks of formulas, trees or output are marked `text`).
A command is rewritten to run here: the build's programs and the source's scripts by their paths,
sizes and iteration counts capped (`--n 64M` runs as `--n 3001`), `--backend cuda` as cpu, mpirun
and mpiexec with --oversubscribe and at most 2 ranks (unless the command names a process grid), in one temporary directory per doc (so a later command finds
what an earlier one wrote, as a reader's shell would). A command that needs what this machine or
this build lacks is skipped with the reason. Any other command that exits non-zero fails the test.

  run_doc_commands.py --source SRC --build BUILD [--mpiexec mpiexec] [--list] [DOC ...]

--list prints what would run and what is skipped, without running anything.
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

# The docs whose commands are run, relative to the source tree. A doc whose commands should be
# checked too is added here.
DOCS = [
    "README.md",
    "docs/API.md",
    "docs/APPS.md",
    "docs/DEVELOPING.md",
    "docs/KERNELS.md",
    "docs/PERFORMANCE.md",
    "docs/RELIABILITY.md",
    "docs/SCALING.md",
    "jobs/README.md",
]

SHELL_LANGUAGES = {"", "sh", "bash", "console", "shell"}
COMMAND_TIMEOUT = 120  # seconds; a hang shows as a failure, never as a pass

# Programs that only a build with CUDA has (the GPU benchmarks).
GPU_ONLY_PROGRAMS = {
    "tessera_bench_kernels", "tessera_bench_generic", "tessera_bench_histogram",
    "tessera_bench_transpose", "tessera_bench_sort", "tessera_bench_stencil",
    "tessera_bench_stencil_overlap", "tessera_gpu_tests", "tessera_gpu_sort_tests",
    "tessera_gpu_stencil_tests",
}
GPU_TOOLS = {"nvidia-smi", "compute-sanitizer", "ncu", "nsys", "nvidia-cuda-mps-control"}
# Environment settings that ask for a GPU path this machine cannot take.
GPU_ENV = {"CUDA_VISIBLE_DEVICES", "TESSERA_HALO", "TESSERA_DEVICE_COMM"}

# Small sizes: (program pattern, flag) -> the largest value run here. The first matching row wins;
# "*" matches every program. Lists (--sizes 2048,4096) are capped element by element.
SIZE_CAPS = [
    ("tessera-matmul", {"--size": 96, "--m": 96, "--n": 80, "--k": 112, "--panel": 32}),
    ("tessera-transpose", {"--m": 67, "--n": 45}),
    ("tessera-stencil", {"--nx": 40, "--ny": 36, "--n": 3001, "--iters": 30, "--check-every": 10,
                         "--checkpoint-every": 10}),
    ("tessera-scaling:matmul", {"--n": 96, "--n-per-rank": 64, "--repeat": 1, "--panel-width": 32}),
    ("tessera-scaling", {"--n": 20000, "--n-per-rank": 5000, "--repeat": 1, "--ping-bytes": 4096}),
    ("tessera_bench_transpose_distributed", {"--m": 64, "--n": 96, "-n": 2, "--iters": 2, "-w": 1,
                                             "--warmup": 1}),
    ("tessera-fft", {"--shape": 24}),
    ("tessera_bench_fft_distributed", {"--shape": 24, "-n": 2, "--iters": 2, "-w": 1, "--warmup": 1}),
    ("tessera_bench_stencil_step", {"--sizes": 64, "--iters": 2, "--run": 3, "--warmup": 1}),
    ("tessera_bench_", {"--min": 1024, "--max": 4096, "-b": 4096, "-e": 16384, "--matmul-min": 64,
                        "--matmul-max": 128, "-n": 2, "--iters": 2, "-w": 1, "--warmup": 1}),
    ("*", {"--n": 3001, "--n-per-rank": 1000, "--size": 96, "--m": 67, "--k": 112, "--bins": 1000,
           "--repeat": 1, "--iters": 10}),
]
# Flags added where absent, to keep a launch short (each is a documented flag of its program).
ADDED_FLAGS = [
    ("tessera-scaling", ["--rounds", "1", "--max-rounds", "1", "--ping-bytes", "4096"]),
]

LAUNCHERS = {"mpirun", "mpiexec"}
# The rank count of a launch is capped like a size (each rank of an oversubscribed launch costs about
# a quarter of a second of CPU to start): a command that names a process grid or a layout of one
# keeps its count, which the grid must match.
MAX_RANKS = 2
GRID_FLAGS = {"--grid", "--from", "--to"}
# Inputs the docs' examples read that no documented command writes; made by fixtures().
FIXTURE_FILES = ("data.h5", "in.h5", "edges.h5")


def size_value(text):
    """The apps' size syntax: 1000, 1e6, 2^20, 64M, 1.5K (K, M, G, T are powers of 1024)."""
    t = text.strip()
    m = re.fullmatch(r"(\d+)\^(\d+)", t)
    if m:
        return int(m.group(1)) ** int(m.group(2))
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT])", t)
    if m:
        return int(float(m.group(1)) * 1024 ** ("KMGT".index(m.group(2)) + 1))
    m = re.fullmatch(r"\d+(?:\.\d+)?(?:[eE]\d+)?", t)
    if m:
        return int(float(t))
    return None


class Command:
    def __init__(self, doc, line, text):
        self.doc, self.line, self.text = doc, line, text
        self.env = {}
        self.argv = []
        self.skip = None  # the reason, where skipped


def shell_lines(path):
    """(line number, text) of each command line of the doc's shell blocks, continuations joined."""
    out, in_block, lang, pending, start = [], False, "", "", 0
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            m = re.match(r"^\s*```\s*(\S*)", raw)
            if m:
                in_block, lang = (not in_block), m.group(1).lower()
                continue
            if not in_block or lang not in SHELL_LANGUAGES:
                continue
            line = raw.rstrip("\n")
            if not pending:
                start = number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            text = (pending + line).strip()
            pending = ""
            if text and not text.startswith("#"):
                out.append((start, text))
    return out


def is_command_word(word):
    return (word in LAUNCHERS or word in GPU_TOOLS or
            word in {"bash", "sh", "python3", "cmake", "ctest", "sbatch", "srun", "for", "/usr/bin/python3"} or
            re.match(r"^(build[^/]*|scripts|jobs|bench|examples)/", word) is not None)


def parse(cmd):
    """Splits a command line into environment settings and argv; marks what it needs."""
    try:
        words = shlex.split(cmd.text, comments=True)
    except ValueError as e:
        raise SystemExit(f"{cmd.doc}:{cmd.line}: cannot split '{cmd.text}': {e}")
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        name, value = words.pop(0).split("=", 1)
        cmd.env[name] = value
    if not words or not is_command_word(words[0]):
        raise SystemExit(f"{cmd.doc}:{cmd.line}: not a command in a shell block: '{cmd.text}' "
                         "(mark blocks that hold no commands as ```text)")
    cmd.argv = words


def program_of(argv):
    """(index, name) of the program a launcher starts, or of the command itself."""
    i = 0
    if argv[0] in LAUNCHERS:
        i = 1
        while i < len(argv) and argv[i].startswith("-"):
            i += 2 if argv[i] in ("-n", "-np", "--np", "-c", "--map-by", "--bind-to", "-x") else 1
    return i, (os.path.basename(argv[i]) if i < len(argv) else "")


def classify(cmd, have):
    """The reason a command cannot run here, or None."""
    argv = cmd.argv
    first = argv[0]
    if first == "for" or first in ("sbatch", "srun") or "sbatch" in argv:
        return "needs Slurm (tests/slurm submits the scripts to a Slurm of its own)"
    if first in GPU_TOOLS:
        return "needs a GPU"
    for name in GPU_ENV:
        if name in cmd.env and not (name == "TESSERA_DEVICE_COMM" and cmd.env[name] in ("auto", "staged")):
            return f"{name}={cmd.env[name]} asks for a GPU path"
    if first in ("cmake", "ctest"):
        return "configures, builds, installs or tests a whole tree (this test runs inside such a build)"
    if first in ("bash", "sh") and len(argv) > 1:
        script = argv[1]
        if script.startswith("bench/gpu"):
            return "a GPU machine's batch of benchmarks"
        if script == "scripts/run.sh" and "--dry-run" not in argv:
            return "installs packages and builds the tree (tests install_deps_dry_run and demo_scripts run its parts)"
    if any(w in ("scripts/demo.sh", "scripts/scaling_demo.sh") for w in argv[:2]):
        return "the demo, at its own sizes (test demo_scripts runs it)"
    _, prog = program_of(argv)
    if prog in GPU_ONLY_PROGRAMS:
        return f"{prog} is built only with CUDA"
    if (prog.startswith("tessera_bench_") or any("/tessera_bench_" in w for w in argv)) and not have["bench"]:
        return f"{prog}: benchmarks not built (TESSERA_BUILD_BENCH=OFF)"
    if any(re.match(r"^build/python(/|$)", part) for v in cmd.env.values() for part in v.split(":")) and \
            not have["python_package"]:
        return "the Python package is not built (TESSERA_BUILD_PYTHON, docs/PYTHON.md)"
    if prog.startswith("tessera-") and not have["apps"]:
        return f"{prog}: apps not built (TESSERA_BUILD_APPS=OFF)"
    if any(w.endswith(".py") for w in argv[:2]) and not have["matplotlib"] and \
            any(s in " ".join(argv) for s in ("gather_scaling", "plot_field", "plot_histogram")):
        return "needs matplotlib"
    if not have["h5py"] and any(w.startswith(f + ":") for w in argv for f in FIXTURE_FILES):
        return "reads an input that the test writes with h5py, which this Python lacks"
    return None


def caps_for(prog, argv):
    key = prog
    if prog == "tessera-scaling" and "--op" in argv and argv[argv.index("--op") + 1] == "matmul":
        key = "tessera-scaling:matmul"
    merged = {}
    for pattern, caps in SIZE_CAPS:
        if pattern == "*" or key == pattern or (pattern.endswith("_") and key.startswith(pattern)):
            for flag, cap in caps.items():
                merged.setdefault(flag, cap)
    return merged


def expand(word, env):
    """$NAME and ${NAME} as a shell expands them (unset: empty)."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), word)


def rewrite(cmd, source, build, tmp, python, base_env):
    """The argv and environment to run here."""
    argv = list(cmd.argv)
    env = dict(base_env)
    env.update({k: expand(v, env) for k, v in cmd.env.items()})
    # Settings that name the build tree (PYTHONPATH=build/python) name this build's.
    for k in cmd.env:
        env[k] = ":".join(re.sub(r"^build(?=/|$)", build, part) for part in env[k].split(":"))
    i, prog = program_of(argv)
    caps = caps_for(prog, argv)
    # Paths: programs of the build tree, scripts of the source tree.
    for k, w in enumerate(argv):
        m = re.match(r"^build(/.*)?$", w)
        if m:
            argv[k] = build + (m.group(1) or "")
        elif re.match(r"^(scripts|jobs|bench|examples|tests)/", w):
            argv[k] = os.path.join(source, w)
        elif w in ("python3", "/usr/bin/python3"):
            argv[k] = python
    if argv[0].endswith(".py"):
        argv.insert(0, python)
        i += 1
    # Sizes and counts after the program.
    k = i + 1
    while k < len(argv):
        flag = argv[k]
        name, joined = (flag.split("=", 1) + [None])[:2] if flag.startswith("--") and "=" in flag else (flag, None)
        if name in caps and (joined is not None or k + 1 < len(argv)):
            value = joined if joined is not None else argv[k + 1]
            parts = value.split(",")
            sizes = [size_value(p) for p in parts]
            shapes = [[size_value(d) for d in p.split("x")] for p in parts]
            if name == "--shape" and all(None not in dims for dims in shapes):
                # Shapes N0xN1[xN2] (tessera-fft): each axis capped.
                value = ",".join("x".join(str(min(d, caps[name])) for d in dims) for dims in shapes)
                if joined is not None:
                    argv[k] = f"{name}={value}"
                else:
                    argv[k + 1] = value
            elif all(s is not None for s in sizes):
                capped = []
                for s in sizes:  # a list capped element by element, each size once
                    if min(s, caps[name]) not in capped:
                        capped.append(min(s, caps[name]))
                value = ",".join(str(s) for s in capped)
                if joined is not None:
                    argv[k] = f"{name}={value}"
                else:
                    argv[k + 1] = value
        if name == "--backend" and k + 1 < len(argv) and argv[k + 1] == "cuda":
            argv[k + 1] = "cpu"
        k += 1
    for pattern, extra in ADDED_FLAGS:
        if prog == pattern:
            for j in range(0, len(extra), 2):
                if extra[j] not in argv:
                    argv += extra[j:j + 2]
    if argv[0] in LAUNCHERS:
        if not any(w.split("=", 1)[0] in GRID_FLAGS for w in argv):
            for k in range(1, i):
                if argv[k] in ("-n", "-np", "--np") and k + 1 < i and argv[k + 1].isdigit():
                    argv[k + 1] = str(min(int(argv[k + 1]), MAX_RANKS))
        argv[0:1] = cmd.mpiexec
    # Shell expansions a reader's shell would make: variables and globs.
    expanded = []
    for w in argv:
        w = expand(w, env)
        matches = sorted(glob.glob(w, root_dir=tmp)) if any(c in w for c in "*?[") else []
        expanded += matches if matches else [w]
    return expanded, env


def fixtures(doc, tmp, build, mpiexec, env):
    """Files a doc's commands read that none of its commands writes."""
    if doc == "jobs/README.md":
        # A scaling job's result directory, as jobs/scaling.sbatch leaves it.
        results = os.path.join(tmp, "scratch", "tessera-results", "scaling-1")
        os.makedirs(results)
        env["SCRATCH"] = os.path.join(tmp, "scratch")
        subprocess.run(mpiexec + ["-n", "2", os.path.join(build, "bin", "tessera-scaling"),
                        "--op", "sum", "--mode", "both", "--n", "4000", "--n-per-rank", "2000", "--repeat", "1",
                        "--rounds", "1", "--max-rounds", "1", "--ping-bytes", "4096", "--quiet",
                        "--json", os.path.join(results, "sum-nodes1-ranks2.json")],
                       cwd=tmp, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=COMMAND_TIMEOUT)
    try:
        import numpy as np
        import h5py
    except ImportError:
        return
    rng = np.random.default_rng(7)
    with h5py.File(os.path.join(tmp, "data.h5"), "w") as f:
        f["x"] = rng.uniform(-1, 1, 3001).astype(np.float32)
    with h5py.File(os.path.join(tmp, "in.h5"), "w") as f:
        f["A"] = rng.uniform(-1, 1, (67, 45)).astype(np.float32)
    with h5py.File(os.path.join(tmp, "edges.h5"), "w") as f:
        f["e"] = np.array([-np.inf, -0.5, 0.0, 0.25, 1.0, np.inf])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--mpiexec", default="mpiexec")
    p.add_argument("--mpiexec-flags", default="--oversubscribe", help="added after mpiexec (one string)")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--bench", default="ON", help="ON where the build has the benchmarks")
    p.add_argument("--apps", default="ON", help="ON where the build has the apps")
    p.add_argument("--list", action="store_true", help="print the plan, run nothing")
    p.add_argument("docs", nargs="*", help=f"docs to check (default: {' '.join(DOCS)})")
    a = p.parse_args()
    source, build = os.path.abspath(a.source), os.path.abspath(a.build)
    def importable(module):
        return subprocess.run([a.python, "-c", f"import {module}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0
    have = {"bench": a.bench.upper() in ("ON", "1", "TRUE", "YES"),
            "apps": a.apps.upper() in ("ON", "1", "TRUE", "YES"),
            "matplotlib": importable("matplotlib"), "h5py": importable("h5py"),
            "python_package": os.path.isdir(os.path.join(build, "python", "tessera"))}

    plan = []
    for doc in a.docs or DOCS:
        for number, text in shell_lines(os.path.join(source, doc)):
            cmd = Command(doc, number, text)
            cmd.mpiexec = [a.mpiexec] + shlex.split(a.mpiexec_flags)
            parse(cmd)
            cmd.skip = classify(cmd, have)
            plan.append(cmd)

    failures, ran, started = [], 0, time.monotonic()
    by_doc = {}
    for cmd in plan:
        by_doc.setdefault(cmd.doc, []).append(cmd)
    for doc, cmds in by_doc.items():
        tmp = tempfile.mkdtemp(prefix="tessera-docs-")
        env_base = dict(os.environ)
        if not a.list and any(c.skip is None for c in cmds):
            fixtures(doc, tmp, build, [a.mpiexec] + shlex.split(a.mpiexec_flags), env_base)
        for cmd in cmds:
            where = f"{cmd.doc}:{cmd.line}"
            if cmd.skip:
                print(f"skip {where}: {cmd.text}\n     ({cmd.skip})")
                continue
            argv, env = rewrite(cmd, source, build, tmp, a.python, env_base)
            print(f"run  {where}: {cmd.text}\n     as: {shlex.join(argv)}", flush=True)
            if a.list:
                continue
            t0 = time.monotonic()
            try:
                r = subprocess.run(argv, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=COMMAND_TIMEOUT, text=True, errors="replace")
                status, output = r.returncode, r.stdout
            except subprocess.TimeoutExpired as e:
                status, output = "timeout", (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            except OSError as e:
                status, output = "not started", str(e)
            ran += 1
            print(f"     exit {status} in {time.monotonic() - t0:.1f} s", flush=True)
            if status != 0:
                failures.append(where)
                print("     output (last 30 lines):\n       " + "\n       ".join(output.splitlines()[-30:]))
        shutil.rmtree(tmp, ignore_errors=True)

    skipped = sum(1 for c in plan if c.skip)
    print(f"\n{ran} documented commands run, {skipped} skipped, {len(failures)} failed "
          f"({time.monotonic() - started:.1f} s)")
    for where in failures:
        print(f"FAILED {where}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
