#!/usr/bin/python3
"""Gathers the JSON reports of `scaling` runs (one or more Slurm jobs' result directories, or the
files themselves) into one table, and draws per operation: speedup and efficiency against ranks,
strong and weak, with the ideal line, the Amdahl fit and the cost model's projection.

usage: gather_scaling.py [--out DIR] [--png FILE] [--table FILE] INPUT...
  INPUT      a report .json, or a directory searched recursively for them (results/scaling-<jobid>)
  --out      where the plots go, one per operation: DIR/scaling_<op>.png (default: .)
  --png      the plot's file name, when the inputs hold a single operation
  --table    also write the table (Markdown) to FILE; it is always printed

Needs matplotlib (Agg backend: no display). Run with the Python that has it (/usr/bin/python3 on
the project's machines).
"""
import argparse
import glob
import json
import os
import sys


def load_reports(inputs):
    reports = []
    for item in inputs:
        files = sorted(glob.glob(os.path.join(item, "**", "*.json"), recursive=True)) if os.path.isdir(item) else [item]
        if os.path.isdir(item) and not files:
            print(f"gather_scaling: warning: no .json reports under {item}", file=sys.stderr)
        for path in files:
            try:
                with open(path) as f:
                    data = json.load(f)
            except (OSError, ValueError) as e:
                sys.exit(f"gather_scaling: error: cannot read {path}: {e}")
            if data.get("app") not in ("tessera-scaling", "scaling"):
                continue
            data["_path"] = path
            reports.append(data)
    return reports


def table_rows(reports):
    rows = []
    for r in reports:
        for mode in ("strong", "weak"):
            block = r.get(mode)
            if not block:
                continue
            for p in block["points"]:
                rows.append({
                    "job": r.get("slurm_job_id", "-"), "op": r["op"], "mode": mode, "launch": r["world_size"],
                    "backend": r.get("backend", "?"), "ranks": p["ranks"], "size": p["size"], "time_s": p["time_s"],
                    "speedup": p.get("speedup", p.get("scaled_speedup")), "efficiency": p["efficiency"],
                    "karp_flatt": p.get("karp_flatt"),
                    "serial_fraction": (block.get("amdahl") or block.get("gustafson") or {}).get("serial_fraction"),
                })
    rows.sort(key=lambda x: (x["op"], x["mode"], x["launch"], x["ranks"]))
    return rows


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def markdown(rows):
    cols = ["job", "op", "mode", "backend", "launch", "ranks", "size", "time_s", "speedup", "efficiency", "karp_flatt",
            "serial_fraction"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def plot_op(op, reports, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    for row, mode in enumerate(("strong", "weak")):
        ax_s, ax_e = axes[row]
        with_mode = [r for r in reports if r.get(mode)]
        if not with_mode:
            for ax in (ax_s, ax_e):
                ax.text(0.5, 0.5, f"no {mode} scaling data", ha="center", va="center", transform=ax.transAxes)
                ax.set_axis_off()
            continue
        key = "speedup" if mode == "strong" else "scaled_speedup"
        max_ranks = 1
        for r in with_mode:
            pts = r[mode]["points"]
            ranks = [p["ranks"] for p in pts]
            max_ranks = max(max_ranks, max(ranks))
            label = f"measured: {os.path.basename(r['_path'])} ({r['world_size']}-rank launch" + \
                (f", job {r['slurm_job_id']})" if "slurm_job_id" in r else ")")
            ax_s.plot(ranks, [p[key] for p in pts], "o-", label=label)
            ax_e.plot(ranks, [p["efficiency"] for p in pts], "o-", label=label)
        # Fit and projection from the largest launch: the one that saw the most rank counts.
        ref = max(with_mode, key=lambda r: (r["world_size"], len(r[mode]["points"])))
        block = ref[mode]
        proj = block.get("projection", [])
        top = max([max_ranks] + [q["ranks"] for q in proj])
        grid = sorted(set([1, 2] + [2 ** k for k in range(0, 13) if 2 ** k <= top] + [top]))
        base_ranks = block["points"][0]["ranks"]
        if mode == "strong" and block.get("amdahl", {}).get("valid"):
            s, t1 = block["amdahl"]["serial_fraction"], block["amdahl"]["t1_s"]
            # Speedup against the measured base point, as the measured curve is.
            t_base = block["points"][0]["time_s"] * base_ranks
            sp = [t_base / (t1 * (s + (1 - s) / p)) for p in grid]
            ax_s.plot(grid, sp, "--", color="gray", label=f"Amdahl fit, s = {s:.3g}")
            ax_e.plot(grid, [v / p for v, p in zip(sp, grid)], "--", color="gray", label=f"Amdahl fit, s = {s:.3g}")
        if mode == "weak" and block.get("gustafson", {}).get("valid"):
            s = block["gustafson"]["serial_fraction"]
            ax_s.plot(grid, [p - s * (p - 1) for p in grid], "--", color="gray", label=f"Gustafson fit, s = {s:.3g}")
        if proj:
            pr = [q["ranks"] for q in proj]
            ax_s.plot(pr, [q[key] for q in proj], ":", color="tab:red", marker="x", label="cost model projection")
            ax_e.plot(pr, [q["efficiency"] for q in proj], ":", color="tab:red", marker="x", label="cost model projection")
        ax_s.plot(grid, grid, "-", color="black", linewidth=0.8, label="ideal")
        ax_e.plot(grid, [1.0 for _ in grid], "-", color="black", linewidth=0.8, label="ideal")
        for ax in (ax_s, ax_e):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("ranks (one GPU each)" if ref.get("backend") == "cuda" else "ranks")
            ax.grid(True, which="both", alpha=0.3)
        ax_s.set_yscale("log", base=2)
        ax_s.set_ylabel("speedup T(1)/T(p)" if mode == "strong" else "scaled speedup p T(1)/T(p)")
        ax_e.set_ylabel("parallel efficiency")
        ax_e.set_ylim(bottom=0)
        size = f"n = {block['n']}" if "n" in block else f"n per rank = {block['n_per_rank']}"
        ax_s.set_title(f"{op}, {mode} scaling ({size})")
        ax_e.set_title(f"{op}, {mode} scaling: efficiency")
        ax_s.legend(fontsize=7)
        ax_e.legend(fontsize=7)
    backend = ", ".join(sorted({r.get("backend", "?") for r in reports}))
    fig.suptitle(f"Tessera scaling: {op} ({reports[0].get('dtype', '?')}, backend {backend})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", default=".")
    ap.add_argument("--png")
    ap.add_argument("--table")
    args = ap.parse_args()
    reports = load_reports(args.inputs)
    if not reports:
        sys.exit("gather_scaling: error: no scaling reports found in " + " ".join(args.inputs))
    rows = table_rows(reports)
    text = markdown(rows)
    print(text, end="")
    if args.table:
        os.makedirs(os.path.dirname(os.path.abspath(args.table)), exist_ok=True)
        with open(args.table, "w") as f:
            f.write(text)
    ops = sorted({r["op"] for r in reports})
    if args.png and len(ops) > 1:
        sys.exit(f"gather_scaling: error: --png names one file, but the reports hold {len(ops)} operations ({', '.join(ops)}); use --out")
    os.makedirs(args.out, exist_ok=True)
    for op in ops:
        path = args.png if args.png else os.path.join(args.out, f"scaling_{op}.png")
        plot_op(op, [r for r in reports if r["op"] == op], path)
        print(f"gather_scaling: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
