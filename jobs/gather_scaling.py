#!/usr/bin/python3
"""Gathers the JSON reports of `scaling` runs (one or more Slurm jobs' result directories, or the
files themselves) into one table, and draws per operation: speedup and efficiency against ranks,
strong and weak, with the 95% interval of every point, the ideal line, the Amdahl (Gustafson) fit,
and the cost model's projection where the model passed its check on held-out points (else a note
that it was withheld), with how far the projection extrapolates.

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
                ci = p.get("time_ci95_s")
                ei = p.get("efficiency_interval")
                rows.append({
                    "job": r.get("slurm_job_id", "-"), "op": r["op"], "mode": mode, "launch": r["world_size"],
                    "backend": r.get("backend", "?"), "ranks": p["ranks"], "size": p["size"], "time_s": p["time_s"],
                    "time_95%": f"[{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "-",
                    "noisy": ("yes" if p["noisy"] else "no") if "noisy" in p else "-",
                    "speedup": p.get("speedup", p.get("scaled_speedup")), "efficiency": p["efficiency"],
                    "efficiency_95%": f"[{ei[0]:.3g}, {ei[1]:.3g}]" if ei else "-",
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
    cols = ["job", "op", "mode", "backend", "launch", "ranks", "size", "time_s", "time_95%", "noisy", "speedup",
            "efficiency", "efficiency_95%", "karp_flatt", "serial_fraction"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row[c]) for c in cols) + " |")
    return "\n".join(lines) + "\n"


def projection_verdict(block):
    """(draw, note): whether the cost model's projection may be drawn, and what to say about it.
    Not drawn when its held-out check failed beyond the report's threshold (0.25 in reports that do
    not state one), whatever the report carries; when drawn, how far it extrapolates."""
    proj = block.get("projection") or []
    check = block.get("model_check") or {}
    threshold = block.get("max_fit_error", 0.25)
    held_out = bool(check.get("points"))
    error = check.get("max_abs_relative_error")
    if block.get("projection_status") == "withheld" or (held_out and error is not None and error > threshold):
        fit = ",".join(str(r) for r in check.get("fit_ranks", []))
        return False, (f"cost model projection withheld: fitted on ranks {fit}, the model\nmisses the held-out "
                       f"points by {100 * (error or 0):.0f}% (limit {100 * threshold:.0f}%)")
    if not proj:
        return False, ""
    measured = max(p["ranks"] for p in block["points"])
    top = max(q["ranks"] for q in proj)
    how = f"checked on held-out points within {100 * error:.0f}%" if held_out else "unchecked: no point held out"
    return True, f"cost model projection ({how}),\n{top / measured:.0f}x beyond the {measured} ranks measured"


def efficiency_interval(point, strong, t_base):
    """The efficiency's interval: the report's, or (older reports) from the times' min and max.
    E(p) = t_base / (p T(p)) in strong scaling (t_base = p_0 T(p_0)), t_base / T(p) in weak."""
    if "efficiency_interval" in point:
        return point["efficiency_interval"]
    k = point["ranks"] if strong else 1
    lo, hi = point.get("time_min_s", point["time_s"]), point.get("time_max_s", point["time_s"])
    return [t_base / (k * hi), t_base / (k * lo)]


def plot_op(op, reports, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    for row, mode in enumerate(("strong", "weak")):
        ax_s, ax_e = axes[row]
        strong = mode == "strong"
        with_mode = [r for r in reports if r.get(mode)]
        if not with_mode:
            for ax in (ax_s, ax_e):
                ax.text(0.5, 0.5, f"no {mode} scaling data", ha="center", va="center", transform=ax.transAxes)
                ax.set_axis_off()
            continue
        key = "speedup" if strong else "scaled_speedup"
        max_ranks = 1
        noisy_shown = False
        for r in with_mode:
            pts = r[mode]["points"]
            ranks = [p["ranks"] for p in pts]
            max_ranks = max(max_ranks, max(ranks))
            label = f"measured: {os.path.basename(r['_path'])} ({r['world_size']}-rank launch" + \
                (f", job {r['slurm_job_id']})" if "slurm_job_id" in r else ")")
            # The spread: each point's efficiency interval (95% interval of the median times), and the
            # speedup's, which is p times it.
            t_base = pts[0]["time_s"] * (pts[0]["ranks"] if strong else 1)
            intervals = [efficiency_interval(p, strong, t_base) for p in pts]
            eff = [p["efficiency"] for p in pts]
            sp = [p[key] for p in pts]
            e_err = [[max(0.0, e - lo) for e, (lo, hi) in zip(eff, intervals)],
                     [max(0.0, hi - e) for e, (lo, hi) in zip(eff, intervals)]]
            s_err = [[max(0.0, s - lo * p) for s, p, (lo, hi) in zip(sp, ranks, intervals)],
                     [max(0.0, hi * p - s) for s, p, (lo, hi) in zip(sp, ranks, intervals)]]
            line = ax_s.errorbar(ranks, sp, yerr=s_err, fmt="o-", capsize=3, label=label + ", 95% interval")
            ax_e.errorbar(ranks, eff, yerr=e_err, fmt="o-", capsize=3, color=line.lines[0].get_color(),
                          label=label + ", 95% interval")
            noisy = [i for i, p in enumerate(pts) if p.get("noisy")]
            if noisy:
                limit = r[mode].get("max_spread", 0.2)
                noisy_label = None if noisy_shown else f"noisy point (interval wider than {100 * limit:.0f}% of the median)"
                noisy_shown = True
                for ax, ys in ((ax_s, sp), (ax_e, eff)):
                    ax.plot([ranks[i] for i in noisy], [ys[i] for i in noisy], "o", markersize=12, markerfacecolor="none",
                            markeredgecolor="tab:red", label=noisy_label)
        # Fit and projection from the largest launch: the one that saw the most rank counts.
        ref = max(with_mode, key=lambda r: (r["world_size"], len(r[mode]["points"])))
        block = ref[mode]
        draw_projection, note = projection_verdict(block)
        proj = block.get("projection", []) if draw_projection else []
        top = max([max_ranks] + [q["ranks"] for q in proj])
        grid = sorted(set([1, 2] + [2 ** k for k in range(0, 13) if 2 ** k <= top] + [top]))
        amdahl = block.get("amdahl") or {}
        if strong and amdahl.get("valid"):
            s = amdahl["serial_fraction"]
            # The fit's own speedup T_fit(1) / T_fit(p): its efficiency is 1 at one rank.
            sp = [1 / (s + (1 - s) / p) for p in grid]
            poor = amdahl.get("describes_points") is False or amdahl.get("residual_max", 0) > block.get("max_fit_error", 0.25)
            label = f"Amdahl's law fitted to the measured times, s = {s:.3g}" + \
                (f" (poor fit: a point {100 * amdahl['residual_max']:.0f}% off)" if poor else "")
            ax_s.plot(grid, sp, "--", color="gray", label=label)
            ax_e.plot(grid, [v / p for v, p in zip(sp, grid)], "--", color="gray", label=label)
        gustafson = block.get("gustafson") or {}
        if not strong and gustafson.get("valid"):
            s = gustafson["serial_fraction"]
            poor = gustafson.get("describes_points") is False
            label = f"Gustafson's law fitted to the measured speedups, s = {s:.3g}" + (" (poor fit)" if poor else "")
            ax_s.plot(grid, [p - s * (p - 1) for p in grid], "--", color="gray", label=label)
            ax_e.plot(grid, [(p - s * (p - 1)) / p for p in grid], "--", color="gray", label=label)
        if proj:
            pr = [q["ranks"] for q in proj]
            ax_s.plot(pr, [q[key] for q in proj], ":", color="tab:red", marker="x", label=note)
            ax_e.plot(pr, [q["efficiency"] for q in proj], ":", color="tab:red", marker="x", label=note)
            # The band: the projected time's 95% interval (bootstrap refits of the model), as speedup
            # and efficiency against the model's own one-rank time.
            band = [q for q in proj if q.get("time_ci95_s") and q["time_ci95_s"][0] and q["time_ci95_s"][1]]
            if band:
                br = [q["ranks"] for q in band]
                for ax, k in ((ax_s, key), (ax_e, "efficiency")):
                    ax.fill_between(br, [q[k] * q["time_s"] / q["time_ci95_s"][1] for q in band],
                                    [q[k] * q["time_s"] / q["time_ci95_s"][0] for q in band], color="tab:red",
                                    alpha=0.15, linewidth=0, label="model: 95% interval (bootstrap refits)")
        elif note:
            # Said in the legend, where the projection would have been.
            for ax in (ax_s, ax_e):
                ax.plot([], [], " ", label=note)
        ax_s.plot(grid, grid, "-", color="black", linewidth=0.8, label="ideal")
        ax_e.plot(grid, [1.0 for _ in grid], "-", color="black", linewidth=0.8, label="ideal")
        for ax in (ax_s, ax_e):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("ranks (one GPU each)" if ref.get("backend") == "cuda" else "ranks")
            ax.grid(True, which="both", alpha=0.3)
        ax_s.set_yscale("log", base=2)
        ax_s.set_ylabel("speedup T(1)/T(p)" if strong else "scaled speedup p T(1)/T(p)")
        ax_e.set_ylabel("parallel efficiency")
        ax_e.set_ylim(bottom=0)
        size = f"n = {block['n']}" if "n" in block else f"n per rank = {block['n_per_rank']}"
        ax_s.set_title(f"{op}, {mode} scaling ({size})")
        ax_e.set_title(f"{op}, {mode} scaling: efficiency")
        ax_s.legend(fontsize=7, loc="upper left")
        ax_e.legend(fontsize=7, loc="lower left")
    backend = ", ".join(sorted({r.get("backend", "?") for r in reports}))
    fig.suptitle(f"Tessera scaling: {op} ({reports[0].get('dtype', '?')}, backend {backend}); "
                 "points: median over rounds, bars: 95% interval")
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
